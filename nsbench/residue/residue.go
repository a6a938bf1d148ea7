// Package residue finds what runs left on this host, by their names alone:
// every kind of object a run creates — network namespaces, links, cgroups,
// mounts and tmpfs, processes, and files under /tmp, /run and /etc/netns.
// It reads and never removes; `twnsbench clean` and the tests' leak checks
// build on it.
package residue

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The kinds of object.
const (
	KindNetns   = "netns"
	KindLink    = "link"
	KindCgroup  = "cgroup"
	KindMount   = "mount"
	KindTmpfs   = "tmpfs"
	KindProcess = "process"
	KindFile    = "file"
)

// Kinds lists every kind Find looks for.
var Kinds = []string{KindNetns, KindLink, KindCgroup, KindMount, KindTmpfs, KindProcess, KindFile}

// Object is one thing a run left.
type Object struct {
	Kind string
	Run  string // the run's prefix, e.g. "twnsb-3fa9c1"
	What string // a name, a path, or "pid 123 (sleep): …"
}

func (o Object) String() string { return o.Kind + " " + o.What }

// runName matches a run prefix in a name or a path component: "twnsb-"
// and six hex digits, followed by nothing or a non-alphanumeric character.
var runName = regexp.MustCompile(regexp.QuoteMeta(topology.Prefix) + "[0-9a-f]{6}(?:$|[^0-9a-zA-Z])")

// RunOf returns the run prefix that name starts with, or "".
func RunOf(name string) string {
	m := runName.FindStringIndex(name)
	if m == nil || m[0] != 0 {
		return ""
	}
	return name[:len(topology.Prefix)+6]
}

// runsIn returns every run prefix mentioned anywhere in s.
func runsIn(s string) []string {
	var runs []string
	for _, m := range runName.FindAllStringIndex(s, -1) {
		runs = append(runs, s[m[0]:m[0]+len(topology.Prefix)+6])
	}
	slices.Sort(runs)
	return slices.Compact(runs)
}

// Finder says where to look; the zero value looks at this host.
type Finder struct {
	// LinkNS is the namespace whose links are listed; nil is the caller's
	// (the host's). A run's links live in its own namespaces and are
	// gone with them: one in the host namespace is a leak.
	LinkNS *ns.NS
	// Roots are the directories whose entries (and their subdirectories'
	// entries) are matched by name; nil is DefaultRoots.
	Roots []string
}

// DefaultRoots are where a run writes files: its private directory under
// /tmp, wireguard-go's sockets under /run/wireguard, the resolver files
// of its namespaces under /etc/netns (/run/netns holds the namespaces
// themselves).
var DefaultRoots = []string{"/tmp", "/run", topology.EtcNetns}

// Find lists everything whose run prefix starts with prefix: one run's
// (prefix "twnsb-3fa9c1") or every run's (topology.Prefix).
func Find(prefix string) []Object { return Finder{}.Find(prefix) }

// Find lists everything whose run prefix starts with prefix, in kind
// order. Places it cannot read are skipped: on a host without cgroup v2
// there are no cgroups to leak.
func (f Finder) Find(prefix string) []Object {
	var objs []Object
	add := func(kind, what, run string) {
		if run != "" && strings.HasPrefix(run, prefix) {
			objs = append(objs, Object{Kind: kind, Run: run, What: what})
		}
	}
	netns, _ := ns.List(topology.Prefix)
	nsInodes := map[uint64]string{}
	for _, n := range netns {
		add(KindNetns, n, RunOf(n))
		if ino, err := inode(filepath.Join(ns.RunDir, n)); err == nil {
			nsInodes[ino] = n
		}
	}
	for _, l := range f.links() {
		add(KindLink, l, RunOf(l))
	}
	if root, err := proc.Cgroup2Root(); err == nil {
		m, _ := filepath.Glob(filepath.Join(root, topology.Prefix+"*"))
		for _, p := range m {
			add(KindCgroup, p, RunOf(filepath.Base(p)))
		}
	}
	for _, m := range Mounts() {
		if m.FSType == "nsfs" && filepath.Dir(m.Point) == ns.RunDir {
			continue // a named namespace, listed above
		}
		kind := KindMount
		if m.FSType == "tmpfs" {
			kind = KindTmpfs
		}
		for _, run := range pathRuns(m.Point) {
			add(kind, m.Point+" ("+m.FSType+")", run)
		}
	}
	for _, p := range processes(nsInodes) {
		for _, run := range p.runs {
			add(KindProcess, p.what, run)
		}
	}
	roots := f.Roots
	if roots == nil {
		roots = DefaultRoots
	}
	for _, p := range files(roots) {
		add(KindFile, p, RunOf(filepath.Base(p)))
	}
	slices.SortStableFunc(objs, func(a, b Object) int {
		return slices.Index(Kinds, a.Kind) - slices.Index(Kinds, b.Kind)
	})
	return objs
}

// Runs lists the distinct run prefixes of objs.
func Runs(objs []Object) []string {
	var runs []string
	for _, o := range objs {
		runs = append(runs, o.Run)
	}
	slices.Sort(runs)
	return slices.Compact(runs)
}

func (f Finder) links() []string {
	var h *netlink.Handle
	var err error
	if f.LinkNS != nil {
		h, err = f.LinkNS.Netlink()
	} else {
		h, err = netlink.NewHandle()
	}
	if err != nil {
		return nil
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return nil
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	return names
}

// pathRuns returns the runs named by a component of path.
func pathRuns(path string) []string {
	var runs []string
	for _, c := range strings.Split(path, "/") {
		if r := RunOf(c); r != "" {
			runs = append(runs, r)
		}
	}
	return runs
}

// Mount is one entry of a mount table: where, and what file system.
type Mount struct{ Point, FSType string }

// Mounts reads this mount namespace's mount table (the host's: tests and
// runs keep theirs there; a launcher child's private mounts die with it).
// Its points are the kernel's, symlinks resolved.
func Mounts() []Mount {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var ms []Mount
	for _, line := range strings.Split(string(b), "\n") {
		// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw"
		fields := strings.Fields(line)
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		ms = append(ms, Mount{Point: unescapeMount(fields[4]), FSType: fields[sep+1]})
	}
	return ms
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

type process struct {
	what string
	runs []string
}

// processes lists the live processes (zombies hold nothing) that belong to
// a run: by their cgroup, by their network namespace (one of nsInodes),
// or by a run prefix on their command line (`ip netns exec twnsb-…`,
// `sshd -f /tmp/twnsb-…/sshd_config`). The caller itself is left out.
func processes(nsInodes map[uint64]string) []process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var ps []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil || zombie(stat) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		cmd := strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		var runs, why []string
		if cg, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil {
			for _, line := range strings.Split(string(cg), "\n") {
				if path, ok := strings.CutPrefix(line, "0::"); ok {
					if r := pathRuns(path); len(r) > 0 {
						runs, why = append(runs, r...), append(why, "cgroup "+path)
					}
				}
			}
		}
		if link, err := os.Readlink(filepath.Join(dir, "ns", "net")); err == nil {
			var ino uint64
			if _, err := fmt.Sscanf(link, "net:[%d]", &ino); err == nil && nsInodes[ino] != "" {
				runs, why = append(runs, RunOf(nsInodes[ino])), append(why, "netns "+nsInodes[ino])
			}
		}
		if r := runsIn(cmd); len(r) > 0 {
			runs, why = append(runs, r...), append(why, "command line")
		}
		if len(runs) == 0 {
			continue
		}
		slices.Sort(runs)
		ps = append(ps, process{runs: slices.Compact(runs),
			what: fmt.Sprintf("pid %d (%s; by %s)", pid, truncate(cmd, 80), strings.Join(why, ", "))})
	}
	return ps
}

// zombie reads the state from /proc/PID/stat ("pid (comm) S …": the state
// follows the last ')').
func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// files lists the entries under each root, and under each of its
// subdirectories, whose names start with a run prefix (/tmp/twnsb-…,
// /run/wireguard/twnsb-….sock). /run/netns is left out: it holds the
// namespaces.
func files(roots []string) []string {
	var found []string
	for _, root := range roots {
		entries, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(root, e.Name())
			if RunOf(e.Name()) != "" {
				found = append(found, p)
				continue
			}
			if !e.IsDir() || p == ns.RunDir {
				continue
			}
			sub, err := os.ReadDir(p)
			if err != nil {
				continue
			}
			for _, s := range sub {
				if RunOf(s.Name()) != "" {
					found = append(found, filepath.Join(p, s.Name()))
				}
			}
		}
	}
	return found
}

func inode(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// Package remotetest builds emulated machines for tests of runs across
// hosts: each "machine" is a network namespace running a real OpenSSH sshd
// (its own host key, root and a no-sudo "bench" login by key), joined by
// veth pairs to a bridge in an orchestrator namespace that stands in for
// the switch and the cables. Tests reach the machines only through SSH,
// dialled from the orchestrator namespace (Lab.Dial, or a process started
// there with Lab.Orch).
//
// The machines share this host's filesystem, cgroup tree and kernel; each
// sshd runs in a private mount namespace whose /etc shows the bench
// account (package account), whose root has /bin/sh as its shell, whose
// /run and /tmp are its own tmpfs (sshd needs /run/sshd, which this host
// may lack; a private /tmp proves that a role's files reach its machine
// through the role, not through a filesystem shared with the orchestrator),
// and whose sudo is a fake: no rule for bench, a NOPASSWD rule for
// SudoUser. Everything is named with the
// test's prefix and removed in t.Cleanup, in reverse order of creation.
package remotetest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/account"
	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// BenchUser is the machines' login without sudo rights.
const BenchUser = "bench"

// SudoUser is the machines' login with a NOPASSWD sudo rule for
// everything, as docs/hosts.md suggests.
const SudoUser = "sudoer"

// Iface is each machine's NIC, the one its address is on.
const Iface = "eth0"

// subnet is the emulated LAN: the orchestrator .1, machine i .10+i.
var subnet = netip.MustParsePrefix("10.226.0.0/24")

// StartTimeout bounds one sshd's start (its port accepting).
const StartTimeout = 10 * time.Second

// Lab is the orchestrator namespace and its machines.
type Lab struct {
	Prefix     string
	Orch       *ns.NS // the orchestrator's namespace, holding the bridge
	OrchAddr   netip.Addr
	Machines   []*Machine
	Dir        string // keys, configs, logs
	Identity   string // private key accepted for root and bench on every machine
	KnownHosts string // every machine's true host key
}

// Machine is one emulated host.
type Machine struct {
	Name    string // "m0"
	NS      *ns.NS
	Addr    netip.Addr
	HostKey ssh.PublicKey
	port    string // its veth end in the orchestrator namespace
	sshd    *proc.Process
}

// HostPort is the machine's SSH address.
func (m *Machine) HostPort() string { return net.JoinHostPort(m.Addr.String(), "22") }

// New builds n machines (n ≤ 3) and waits for each sshd's port; it skips
// the test when not root (nstest.RequireRoot).
func New(t testing.TB, n int) *Lab {
	t.Helper()
	nstest.RequireRoot(t)
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		t.Fatalf("remotetest: %v (install openssh-server)", err)
	}
	l := &Lab{Prefix: nstest.Prefix(t)}
	// Not under /tmp, which each machine has of its own (an empty tmpfs:
	// a file the orchestrator writes there is not on any machine), and
	// mode 0755, not t.TempDir's 0700: sshd reads authorized_keys as the
	// bench user.
	l.Dir = filepath.Join("/var/tmp", l.Prefix+"-lab")
	must(t, os.Mkdir(l.Dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(l.Dir) })
	l.Identity = filepath.Join(l.Dir, "id_ed25519")
	keygen(t, l.Identity)
	pub, err := os.ReadFile(l.Identity + ".pub")
	must(t, err)
	authKeys := filepath.Join(l.Dir, "authorized_keys")
	must(t, os.WriteFile(authKeys, pub, 0o644))

	names := make([]string, n)
	for i := range n {
		names[i] = "m" + strconv.Itoa(i)
	}
	lan := nstest.NewLAN(t, nstest.LANSpec{Prefix: l.Prefix, Subnet: subnet, NIC: Iface, Names: names, First: 10, Switch: "orch", SwitchHost: 1})
	l.Orch, l.OrchAddr = lan.Switch, lan.SwitchAddr
	var known []string
	for i, lm := range lan.Machines {
		m := &Machine{Name: names[i], NS: lm.NS, Addr: lm.Addr.Addr(), port: lm.Port}
		l.Machines = append(l.Machines, m)
		m.HostKey = l.startSSHD(t, m, sshd, authKeys)
		known = append(known, knownhosts.Line([]string{knownhosts.Normalize(m.HostPort())}, m.HostKey))
	}
	l.KnownHosts = l.writeKnownHosts(t, "known_hosts", known)
	return l
}

func (l *Lab) startSSHD(t testing.TB, m *Machine, sshd, authKeys string) ssh.PublicKey {
	dir := filepath.Join(l.Dir, m.Name)
	must(t, os.Mkdir(dir, 0o755))
	hostKey := filepath.Join(dir, "ssh_host_ed25519_key")
	keygen(t, hostKey)
	b, err := os.ReadFile(hostKey + ".pub")
	must(t, err)
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	must(t, err)
	mounts, err := account.SSHD(filepath.Join(dir, "account"), BenchUser)
	must(t, err)
	must(t, plainRootShell(filepath.Join(dir, "account", "etc", "passwd")))
	must(t, rootKeyLogin(filepath.Join(dir, "account", "etc", "shadow")))
	sudoUID := addSudoUser(t, filepath.Join(dir, "account"))
	mounts = append(mounts, fakeSudo(t, dir, m, sudoUID, pub)...)
	mounts = append(mounts, ns.Mount{Kind: "tmpfs", Target: "/tmp"})
	conf := filepath.Join(dir, "sshd_config")
	must(t, os.WriteFile(conf, []byte(strings.Join([]string{
		"ListenAddress " + m.HostPort(),
		"HostKey " + hostKey,
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + authKeys,
		"PermitRootLogin prohibit-password",
		"UsePAM no",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"StrictModes no",
		"UseDNS no",
		"PrintMotd no",
		"PrintLastLog no",
		"",
	}, "\n")), 0o644))
	p, err := proc.Start(proc.Program{
		Name:   m.Name + "/sshd",
		NetNS:  m.NS.Path(),
		Argv:   []string{sshd, "-D", "-e", "-f", conf},
		Mounts: mounts,
		Log:    filepath.Join(dir, "sshd.log"),
	})
	must(t, err)
	m.sshd = p
	t.Cleanup(func() {
		if err := p.Stop(2 * time.Second); err != nil {
			t.Error(err)
		}
		// The sessions it forked outlive it: one whose client went with
		// the orchestrator's namespace never hears the connection end
		// (no FIN reaches it) and slept on, parented to init, holding the
		// machine's namespace after its deletion.
		if err := endSessions(m.NS, 5*time.Second); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := proc.WaitTCP(ctx, l.Orch, m.HostPort(), p); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
		t.Fatalf("%s: %v\nsshd log:\n%s", m.Name, err, log)
	}
	return pub
}

// endSessions kills every process left in the machine's namespace (its
// sshd's sessions and what they run: all this lab's) and waits, up to
// bound, until none is left.
func endSessions(n *ns.NS, bound time.Duration) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(n.FD(), &st); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	want := fmt.Sprintf("net:[%d]", st.Ino)
	deadline := time.Now().Add(bound)
	for {
		var left []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net")); err == nil && link == want {
				left = append(left, pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: processes %v still in the machine's namespace after %s", n.Name, left, bound)
		}
		time.Sleep(20 * time.Millisecond) // polling /proc for their exit
	}
}

// Dial opens a TCP connection from inside the orchestrator namespace
// (remote.Config.Dial).
func (l *Lab) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := l.Orch.Do(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Unreachable is an address on the lab's LAN that no machine holds.
func (l *Lab) Unreachable() string { return "10.226.0.99" }

// KnownHostsWithout writes a known_hosts file lacking machine i.
func (l *Lab) KnownHostsWithout(t testing.TB, i int) string {
	var lines []string
	for j, m := range l.Machines {
		if j != i {
			lines = append(lines, knownhosts.Line([]string{knownhosts.Normalize(m.HostPort())}, m.HostKey))
		}
	}
	return l.writeKnownHosts(t, fmt.Sprintf("known_hosts-without-%d", i), lines)
}

// KnownHostsChanged writes a known_hosts file that holds another key for
// machine i, as after a reinstall or under a man in the middle.
func (l *Lab) KnownHostsChanged(t testing.TB, i int) string {
	other := filepath.Join(l.Dir, fmt.Sprintf("other-key-%d", i))
	keygen(t, other)
	b, err := os.ReadFile(other + ".pub")
	must(t, err)
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	must(t, err)
	var lines []string
	for j, m := range l.Machines {
		k := m.HostKey
		if j == i {
			k = pub
		}
		lines = append(lines, knownhosts.Line([]string{knownhosts.Normalize(m.HostPort())}, k))
	}
	return l.writeKnownHosts(t, fmt.Sprintf("known_hosts-changed-%d", i), lines)
}

// Cut takes machine i's cable out: its bridge port goes down, and every
// packet to or from it is dropped from then on.
func (l *Lab) Cut(t testing.TB, i int) {
	h, err := l.Orch.Netlink()
	must(t, err)
	defer h.Close()
	p, err := h.LinkByName(l.Machines[i].port)
	must(t, err)
	must(t, h.LinkSetDown(p))
}

func (l *Lab) writeKnownHosts(t testing.TB, name string, lines []string) string {
	p := filepath.Join(l.Dir, name)
	must(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	return p
}

// addSudoUser adds SudoUser to a machine's own account files (beside
// bench, with the next free uid) and returns its uid.
func addSudoUser(t testing.TB, account string) int {
	etc := filepath.Join(account, "etc")
	b, err := os.ReadFile(filepath.Join(etc, "passwd"))
	must(t, err)
	used := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Split(line, ":"); len(f) > 3 {
			used[f[2]], used[f[3]] = true, true
		}
	}
	uid := 64990
	for ; used[strconv.Itoa(uid)]; uid-- {
	}
	home := filepath.Join(account, "sudoer-home")
	must(t, os.Mkdir(home, 0o700))
	must(t, os.Chown(home, uid, uid))
	for name, line := range map[string]string{
		"passwd": fmt.Sprintf("%s:x:%d:%d:remotetest:%s:/bin/sh\n", SudoUser, uid, uid, home),
		"group":  fmt.Sprintf("%s:x:%d:\n", SudoUser, uid),
		"shadow": SudoUser + ":*:19000:0:99999:7:::\n",
	} {
		f, err := os.OpenFile(filepath.Join(etc, name), os.O_APPEND|os.O_WRONLY, 0)
		must(t, err)
		_, err = f.WriteString(line)
		must(t, err)
		must(t, f.Close())
	}
	return uid
}

// fakeSudo returns the mounts that give machine m a fake sudo, shown over
// /usr/bin in the machine only, whatever this host has installed. For
// bench it answers as sudo -n does for a user without a NOPASSWD rule and
// runs nothing. For SudoUser it runs the command as root, as a NOPASSWD
// rule would, by logging in to the machine's own sshd as root with a key
// only that account reads (no setuid program is made): stdin, output and
// exit status pass through.
func fakeSudo(t testing.TB, dir string, m *Machine, uid int, hostKey ssh.PublicKey) []ns.Mount {
	key := filepath.Join(dir, "sudoer-key")
	b, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "id_ed25519"))
	must(t, err)
	must(t, os.WriteFile(key, b, 0o600))
	must(t, os.Chown(key, uid, uid))
	known := filepath.Join(dir, "sudoer-known_hosts")
	must(t, os.WriteFile(known, []byte(knownhosts.Line([]string{knownhosts.Normalize(m.HostPort())}, hostKey)+"\n"), 0o644))
	bin := filepath.Join(dir, "fake-sudo")
	must(t, os.Mkdir(bin, 0o755))
	script := `#!/bin/sh
# remotetest's fake sudo: a NOPASSWD rule for ` + SudoUser + ` alone
if [ "$(id -un)" != ` + SudoUser + ` ]; then
	echo 'sudo: a password is required' >&2
	exit 1
fi
[ "$1" = -n ] && shift
cmd=
for a in "$@"; do
	cmd="$cmd '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"
done
exec ssh -F /dev/null -i ` + key + ` -o IdentitiesOnly=yes -o IdentityAgent=none -o BatchMode=yes \
	-o UserKnownHostsFile=` + known + ` -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes \
	-o LogLevel=ERROR -p 22 root@` + m.Addr.String() + ` "$cmd"
`
	must(t, os.WriteFile(filepath.Join(bin, "sudo"), []byte(script), 0o755))
	return []ns.Mount{{Kind: "overlay", Source: bin, Target: "/usr/bin"}}
}

// plainRootShell gives root /bin/sh in a machine's own passwd file: a
// fresh machine's root, whose shell does not source this host's
// ~/.bashrc (which may take seconds: pyenv) on every SSH session.
func plainRootShell(passwd string) error {
	b, err := os.ReadFile(passwd)
	if err != nil {
		return err
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if f := strings.Split(l, ":"); len(f) == 7 && f[0] == "root" {
			f[6] = "/bin/sh"
			lines[i] = strings.Join(f, ":")
		}
	}
	return os.WriteFile(passwd, []byte(strings.Join(lines, "\n")), 0o644)
}

// rootKeyLogin gives root the entry in the machine's shadow that a real
// machine's has (account.SSHD writes the bench account's alone), with no
// password ("*"): without one, sshd refuses root's key.
func rootKeyLogin(shadow string) error {
	f, err := os.OpenFile(shadow, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("root:*:19000:0:99999:7:::\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func keygen(t testing.TB, path string) {
	t.Helper()
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "remotetest", "-f", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen %s: %v: %s", path, err, out)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Exec runs cmd as root on machine m over SSH, as a user would to look at
// it, and returns its output (the test fails on an error).
func (l *Lab) Exec(t testing.TB, m *Machine, cmd string) string {
	t.Helper()
	key, err := os.ReadFile(l.Identity)
	must(t, err)
	signer, err := ssh.ParsePrivateKey(key)
	must(t, err)
	hk, err := knownhosts.New(l.KnownHosts)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	tcp, err := l.Dial(ctx, "tcp", m.HostPort())
	must(t, err)
	sc, chans, reqs, err := ssh.NewClientConn(tcp, m.HostPort(), &ssh.ClientConfig{User: "root",
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hk, Timeout: StartTimeout})
	must(t, err)
	c := ssh.NewClient(sc, chans, reqs)
	defer c.Close()
	s, err := c.NewSession()
	must(t, err)
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	if err != nil {
		t.Fatalf("%s: %s: %v\n%s", m.Name, cmd, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Mend puts machine i's cable back.
func (l *Lab) Mend(t testing.TB, i int) {
	h, err := l.Orch.Netlink()
	must(t, err)
	defer h.Close()
	p, err := h.LinkByName(l.Machines[i].port)
	must(t, err)
	must(t, h.LinkSetUp(p))
}

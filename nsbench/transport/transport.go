// Package transport defines how a transport builds the path between the
// client and server roles, and holds the server fixtures every transport
// carries traffic to. A new transport is one file here.
package transport

import (
	"context"
	"errors"
	"fmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/residue"
	"github.com/twnsbench/twnsbench/nsbench/role"
)

// Transport builds one way of carrying the instruments' traffic from the
// server role to the client role.
type Transport interface {
	// Name is the stable id used in results ("ssh", "wireguard", "tw").
	Name() string
	// Label is the report's text ("Pure SSH").
	Label() string
	// About says in one sentence, without the label, what the path is and
	// where its CPU shows: the report puts it under "Reading the numbers".
	About() string
	// Check reports whether the transport can run on this host. It creates
	// nothing; a non-nil error is an *UnavailableError whose reason the
	// report shows as "skipped: …".
	Check() error
	// Up builds the path. If it fails, it removes whatever it had built.
	Up(ctx context.Context, tb *Testbed) (*Path, error)
}

// RoleNeeder is a transport whose path needs roles beyond the client and
// the server (tw: the relay). A run across hosts has only the roles named;
// a transport needing another is skipped, saying which.
type RoleNeeder interface {
	NeedsRoles() []string
}

// Preparer is a transport with set-up done once per run (an enrolment,
// keys) that the path of every condition reuses. Prepare runs once, before
// the first condition and outside the time-to-ready window, so that the
// ready samples of all conditions time the same work.
type Preparer interface {
	Prepare(ctx context.Context, tb *Testbed) error
}

// UnavailableError says why a transport cannot run here and how to fix it.
type UnavailableError struct {
	Transport string
	Reason    string // what is missing
	Fix       string // how to get it; may be empty
}

func (e *UnavailableError) Error() string {
	if e.Fix == "" {
		return e.Reason
	}
	return e.Reason + " — " + e.Fix
}

// IsUnavailable reports whether err says a transport cannot run here.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// Service is a server fixture the instruments talk to.
type Service string

// The fixtures' services.
const (
	ServiceSSH         Service = "ssh"
	ServiceIPerf3      Service = "iperf3"
	ServiceNetperf     Service = "netperf"      // netserver's control port
	ServiceNetperfData Service = "netperf-data" // netperf's pinned remote data port
	ServiceManyRR      Service = "many-rr"      // the many-connections request/response server (manyrr)
	ServiceRPM         Service = "rpm"          // the Responsiveness Test server: HTTP/2 over TLS 1.3 (rpm)
)

// Carriage is what a path carries from the client to the server.
type Carriage uint8

const (
	CarriesTCP Carriage = 1 << iota
	CarriesUDP
	CarriesICMP
	// CarriesPackets is a layer-3 path (a tunnel, the plain network).
	CarriesPackets = CarriesTCP | CarriesUDP | CarriesICMP
)

// Has reports whether c carries all of x.
func (c Carriage) Has(x Carriage) bool { return c&x == x }

func (c Carriage) String() string {
	var names []string
	for _, p := range []struct {
		c    Carriage
		name string
	}{{CarriesTCP, "TCP"}, {CarriesUDP, "UDP"}, {CarriesICMP, "ICMP"}} {
		if c.Has(p.c) {
			names = append(names, p.name)
		}
	}
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

// Target is where the instruments aim from inside the client namespace.
type Target struct {
	Host string // address or name of the server as the client reaches it
	// Ports are where each service answers as the client reaches it: the
	// fixtures' own ports on a layer-3 path, the mapped local ports of a
	// port forwarder. A service without a port is not carried.
	Ports   map[Service]int
	Carries Carriage
	// SSHProgram is the ssh client the instruments' SSH exchanges run
	// (scp's -S): "" for ssh on PATH; a build's chosen ssh.
	SSHProgram string
	// Instructions, when set, counts the instructions of the tunnel's
	// sending daemon (Testbed.CountInstructions); nil where the tunnel
	// has no user-space daemon counted so.
	Instructions InstructionCounter
}

// Port is s's port as the client reaches it, 0 when the path lacks it.
func (t Target) Port(s Service) int { return t.Ports[s] }

// RSSProc is a process whose peak RSS the report lists.
type RSSProc struct {
	Key  string // "role / process"
	PID  int    // on Role's host
	Role *role.Role
}

// Path is a built transport.
type Path struct {
	Target Target
	// Facts are what the path states about itself: its programs'
	// versions, its implementation, negotiated parameters. All are kept
	// with the transport's entry in the results; those with a Label are
	// rows of the report's Environment too (results.Fact).
	Facts results.Facts
	// Label, when set, replaces the transport's label in the results and
	// the report: what the path actually negotiated (a cipher suite read
	// back from the system, never the one merely configured).
	Label string
	// Fallbacks name every fallback the path used, for the report.
	Fallbacks []string
	// Procs are the transport's own processes, for the memory table.
	Procs []RSSProc
	// InKernel, when set, names the kernel part that carries the path's
	// data — encryption and encapsulation — e.g. "kernel WireGuard". No
	// process of the transport does that work: its CPU (softirq, kernel
	// workers) and memory belong to no cgroup, so neither is attributable
	// to the transport; they show only in the host's CPU. The transport's
	// cgroups hold at most a keying daemon (charon, pluto), which is not
	// the tunnel's data path.
	InKernel string
	// Diagnose, when set, captures the path's own state after a cell (for
	// WireGuard: the device's MTU and the peer's transfer counters). It
	// must not change anything. Like Carried, it takes no context.
	Diagnose func() []Diagnostic
	// Carried, when set, reads the bytes the tunnel has carried so far, by
	// its own count (the tunnel device's, or the daemon's): the proof that
	// the instruments' traffic went through it. The orchestrator reads it
	// around every sample and fails a sample whose tool moved more bytes
	// than the tunnel carried (a bypass). It takes no context, as the
	// meters around a sample take none (metrics.Sampler): a read in a
	// role on a lost host fails through the wire's keepalive.
	Carried func() (int64, error)
	// Restarts are the path's pieces that a recovery instrument may
	// restart (Restarter); nil when it has none.
	Restarts Restarts
	// Close undoes Up in reverse order. Safe to call twice. It takes no
	// context: teardown runs on every way out, a cancelled run's too, so
	// what it does in a role runs under context.Background(), bounded by
	// the role's host (a lost host fails it through the wire's keepalive).
	Close func() error
}

func prefix32(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(32, 32)}
}

// LinkBytes reads link name's received plus sent bytes in role r: a
// tunnel device's count of what it carried (both directions, as one
// sample's traffic crosses both ways), for Path.Carried.
func LinkBytes(r *role.Role, name string) func() (int64, error) {
	return func() (int64, error) {
		c, err := role.LinkBytes(context.Background(), r, name)
		if err != nil {
			return 0, fmt.Errorf("tunnel bytes: %w", err)
		}
		return int64(c.Rx + c.Tx), nil
	}
}

// Diagnostic is one named piece of raw state, shown verbatim in the report.
type Diagnostic struct {
	Name   string // "client wg show twnsb0c transfer"
	Output string
}

// Testbed is the run's testbed as a transport sees it: what it may use to
// build its path. Its roles' processes go into the transport's own
// cgroup leaves.
type Testbed struct {
	Prefix   string                // the run's unique prefix, for the names of what a transport creates
	Roles    map[string]*role.Role // where each role's processes run
	Dir      string                // the run's private directory
	LogDir   string
	Fixtures *Fixtures
	Logf     func(format string, args ...any)
	// Copies are the builds' programs on the roles' hosts (ProgramAt);
	// nil on one host.
	Copies Copies
	// CountInstructions asks a user-space tunnel to run its server's
	// daemon under valgrind and count its instructions
	// (Target.Instructions): tens of times slower, for a light, fixed
	// load only.
	CountInstructions bool
}

// Program is a program in role's namespace and cgroup, with the
// namespace's hosts file and a log file named after the program.
func (e *Testbed) Program(role, name string, argv ...string) proc.Program {
	return e.Roles[role].Program(name, argv...)
}

// Proc names p, a process of role, for the memory table ("client /
// what"); its peak is read on the role's host.
func (e *Testbed) Proc(role, what string, p *proc.Process) RSSProc {
	return RSSProc{Key: role + " / " + what, PID: p.PID(), Role: e.Roles[role]}
}

// systemProgram finds a system program on this host (proc.LookPath: PATH,
// else the sbin directories a root shell's or sudo's PATH may lack): for a
// check, or a tool run here. A daemon started in a role gets the bare name,
// which the role's host looks up.
func systemProgram(name string) (string, error) {
	p, err := proc.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found", name)
	}
	return p, nil
}

// placement names files made by generate and the role that reads them.
type placement struct {
	r     *role.Role
	names []string // file names in the scratch directory and in the role's
}

// generate runs make, which writes files with a local tool or library (a
// key pair, certificates), in a scratch directory on this host, and writes
// each file a placement names to sub of its role's directory, on the
// role's host, whose programs read it, with the mode it was made with. The
// scratch directory is removed.
func generate(ctx context.Context, sub string, make func(scratch string) error, places ...placement) error {
	if len(places) == 0 {
		return errors.New("generate: no role to place the files in")
	}
	scratch, err := newScratch(places[0].r.Dir())
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	if err := make(scratch); err != nil {
		return err
	}
	for _, pl := range places {
		dir := filepath.Join(pl.r.Dir(), sub)
		// The files are keys: their directory is root's alone, unless
		// it exists already (made for an account that must pass, say).
		if err := role.MkdirAll(ctx, pl.r, dir, 0o700); err != nil {
			return err
		}
		for _, name := range pl.names {
			src := filepath.Join(scratch, name)
			st, err := os.Stat(src)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(src)
			if err != nil {
				return err
			}
			if err := role.WriteFile(ctx, pl.r, filepath.Join(dir, name), b, st.Mode().Perm()); err != nil {
				return err
			}
		}
	}
	return nil
}

// scratchRoot is where scratch directories go, whatever TMPDIR says: the
// directory clean searches for a run's names (nsbench.PrivateBase).
const scratchRoot = "/tmp"

// newScratch makes a scratch directory, mode 0700, named for the run that
// roleDir, a role's directory, belongs to (<run>-make-…): generated keys
// pass through it, and when a killed run leaves it, clean finds it by
// that name.
func newScratch(roleDir string) (string, error) {
	for _, c := range strings.Split(roleDir, "/") {
		if run := residue.RunOf(c); run != "" {
			return os.MkdirTemp(scratchRoot, run+"-make-")
		}
	}
	return "", fmt.Errorf("scratch directory: %s names no run", roleDir)
}

// stopAll stops the processes a path started, in the order given (nil
// ones were never started), and joins their errors.
func stopAll(ps ...*proc.Process) error {
	var errs []error
	for _, p := range ps {
		if p != nil {
			errs = append(errs, p.Stop(stopGrace))
		}
	}
	return errors.Join(errs...)
}

// lastSubmatch is re's last match in b with its groups, or nil: a daemon's
// log holds one report per condition's path, and the newest counts.
func lastSubmatch(re *regexp.Regexp, b []byte) []string {
	all := re.FindAllSubmatch(b, -1)
	if len(all) == 0 {
		return nil
	}
	out := make([]string, len(all[len(all)-1]))
	for i, g := range all[len(all)-1] {
		out[i] = string(g)
	}
	return out
}

// Start starts a daemon from spec, a program of role, and waits until addr
// accepts TCP as the role sees it.
func (e *Testbed) Start(ctx context.Context, role string, spec proc.Program, addr string) (*proc.Process, error) {
	r := e.Roles[role]
	p, err := r.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := r.WaitTCP(ctx, addr, p); err != nil {
		p.Stop(stopGrace)
		return nil, fmt.Errorf("%s: not ready (log: %s): %w", spec.Name, spec.Log, err)
	}
	return p, nil
}

// Package instrument runs the measuring tools in the client role and turns
// their output into one measurement each. Each tool is one file; its parser
// is a pure function beside it (parse_*.go), tested on captured output.
package instrument

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// Instrument measures one thing through a transport's path.
type Instrument interface {
	// Name is the results' instrument id ("iperf3-1", "tcp_rr", "scp").
	Name() string
	// Tool is the program it runs in the client role, which names its
	// log (client-<tool>.log).
	Tool() string
	// Needs says which server services it talks to and what the path
	// must carry; Applicable checks a path against it.
	Needs() Needs
	// Metrics declares what its samples carry: results, compare and the
	// reports summarise and render these, and nothing else.
	Metrics() []results.Metric
	// Measure runs the tool once and returns its measurement. A tool error
	// comes back with the tool's own message. The orchestrator bounds it
	// by Budget's deadline: ctx ends then, and the tool with it.
	Measure(ctx context.Context, job *Job) (Measurement, error)
	// Budget is how long a healthy sample takes, from what it was asked
	// to do: the orchestrator kills a sample that outlasts it by
	// Allowance.
	Budget(job *Job) Budget
}

// Allowance is what a sample may take beyond its planned time before it
// is killed: connecting (a tunnel's first connection through a loaded
// path), the tool's start-up and its result exchange. Seen on this kind
// of host: under 2 s; the rest is margin for a loaded host.
const Allowance = 10 * time.Second

// ScpFloorRate is the copy rate (bytes/s) a path is assumed to hold at the
// least when it has not shown its own yet: 0.5 MB/s (4 Mbit/s), under the
// slowest WAN copy seen here (sshuttle, ~1 MB/s).
const ScpFloorRate = 500_000

// Budget is a sample's planned time and what it was derived from, for
// the message of a sample that outlasts it.
type Budget struct {
	Planned time.Duration
	Basis   string // "its 10 s test", "256 MiB at 0.5 MB/s"
}

// Deadline is when the orchestrator gives up on the sample.
func (b Budget) Deadline() time.Duration { return b.Planned + Allowance }

// DeadlineError is a sample that outlasted its Budget's deadline: the
// tool was killed with its children.
type DeadlineError struct {
	Tool   string
	Budget Budget
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("%s: no result %s after %s; killed with its children", e.Tool, fmtSeconds(Allowance), e.Budget.Basis)
}

// errDeadline is the cause of a sample's context that ran out of time.
var errDeadline = errors.New("the sample's deadline passed")

// MeasureBounded runs in.Measure under its deadline. A sample that runs
// out of it returns a *DeadlineError; the run's own cancellation is
// returned as it is.
func MeasureBounded(ctx context.Context, in Instrument, env *Job) (Measurement, error) {
	b := in.Budget(env)
	sctx, cancel := context.WithTimeoutCause(ctx, b.Deadline(), errDeadline)
	defer cancel()
	m, err := in.Measure(sctx, env)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(sctx), errDeadline) {
		return m, &DeadlineError{Tool: in.Tool(), Budget: b}
	}
	return m, err
}

// timeBound is the budget of a tool that runs for d.
func timeBound(d time.Duration) Budget {
	return Budget{Planned: d, Basis: "its " + fmtSeconds(d) + " test"}
}

// fmtSeconds writes d in whole seconds, or tenths below 10 s.
func fmtSeconds(d time.Duration) string {
	if d < 10*time.Second && d%time.Second != 0 {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + " s"
}

// Needs is what an instrument needs of a path.
type Needs struct {
	Services []transport.Service
	Carries  transport.Carriage
	// Exclusive are the services that serve one test at a time (iperf3):
	// before the meters start, the orchestrator waits until each holds no
	// open connection, since a transport may pass the previous test's
	// close on late.
	Exclusive []transport.Service
	// Restarts is the piece of the path it restarts ("" none): a path
	// that cannot restart it is not applicable.
	Restarts transport.Piece
	// Fault: it makes a fault (a link down, a restart) with traffic
	// through the path for a lead before it. It is not warmed up: the
	// lead warms the path, and a fault the path does not come back from
	// would cost the first timed sample.
	Fault bool
	// Instructions asks for the tunnel's daemon counted under valgrind
	// (transport.Target.Instructions): a path without it cannot be
	// measured.
	Instructions bool
}

// errNotCounted is a path whose tunnel has no daemon counted under
// valgrind.
var errNotCounted = errors.New("not applicable: the tunnel has no user-space daemon counted under valgrind (wireguard-go on one host with valgrind installed)")

// Applicable returns nil, or why in cannot measure through path (the
// report shows it once as "not applicable"). Nothing is attempted.
func Applicable(in Instrument, path *transport.Path) error {
	n := in.Needs()
	if n.Restarts != "" && path.Restarts[n.Restarts] == nil {
		return fmt.Errorf("not applicable: the path has no %s that twnsbench can restart", n.Restarts)
	}
	target := path.Target
	if missing := n.Carries &^ target.Carries; missing != 0 {
		return fmt.Errorf("not applicable: the path carries %s, not %s", target.Carries, missing)
	}
	if n.Instructions && target.Instructions == nil {
		return errNotCounted
	}
	for _, s := range n.Services {
		if target.Port(s) == 0 {
			return fmt.Errorf("not applicable: the path does not reach the server's %s", s)
		}
	}
	return nil
}

// Job is what an instrument needs for one measurement.
type Job struct {
	Target   transport.Target
	Duration time.Duration // for time-bound tools
	// Run runs a program in the client role (namespace and cgroup);
	// SelfTool runs twnsbench itself, its first argument the subcommand.
	Run func(ctx context.Context, name string, argv ...string) (proc.Result, error)
	SSH SSHClient
	// SocketBuffer is the UDP socket buffer (bytes) the packet-rate test
	// asks for: at most MaxUDPBuffer and what the kernel allows; 0 leaves
	// iperf3's default.
	SocketBuffer int
	// UDPRcvbufErrors, when set, reads the client namespace's cumulative
	// UDP RcvbufErrors counter (datagrams dropped for lack of buffer).
	UDPRcvbufErrors func(context.Context) (uint64, error)
	// ServerIdle, when set, waits until the server's service on port (its
	// port in the server's namespace) holds no open connection, and says
	// how long that took. The orchestrator calls it before the meters
	// start (Needs.Exclusive); an instrument calls it again only when the
	// server still answered "busy".
	ServerIdle func(ctx context.Context, port int) (time.Duration, error)
	Copy
	Faults
}

// Faults are the faults a recovery instrument measures the tunnel across.
type Faults struct {
	// FlapLink, when set, takes the client role's link down for d and up
	// again, and says when on the client's host's clock.
	FlapLink func(ctx context.Context, d time.Duration) (down, up time.Time, err error)
	// Restarts are the path's pieces that can be restarted
	// (transport.Path.Restarts).
	Restarts transport.Restarts
	// EndConnection, when set, ends the TCP connection of the server's
	// namespace from local to remote (as the server sees it): a session
	// the fault broke, whose client is gone.
	EndConnection func(ctx context.Context, local, remote netip.AddrPort) error
}

// Copy is what scp's copy is given: the file and its size, and the copy
// rate (bytes/s) this path has shown, its slowest so far; 0 when it has
// shown none (ScpFloorRate then).
type Copy struct {
	Payload      string
	PayloadBytes int64
	ExpectedRate float64
}

// ErrNothingMeasured marks a tool that ran to its end and reported 0 (0
// Gbit/s, 0 packets/s, 0 transactions/s): nothing crossed the path, so
// the sample failed. The error carries what the tool reported; its 0 never
// reaches a median.
var ErrNothingMeasured = errors.New("the tool measured nothing")

// nothing is ErrNothingMeasured with the tool's own account of it.
func nothing(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrNothingMeasured)
}

// Measurement is one sample's instrument-side numbers. Optional values are
// nil when the tool does not produce them.
type Measurement struct {
	Value   float64
	Unit    string
	WallSec float64 // the tool's own run time
	MeanUs  *float64
	P50Us   *float64
	P99Us   *float64
	// PayloadBytes is set by instruments that move a known payload (scp).
	PayloadBytes *int64
	// MovedBytes is what the tool itself counts as carried through the
	// path (iperf3's received bytes, scp's payload); 0 when it does not
	// say. The orchestrator holds the tunnel's own count against it.
	MovedBytes int64
	Extra      map[string]float64
	// Series are the tool's values over time (see results.Series).
	Series []results.Series
	// Method says how this sample was measured, for an instrument that
	// chooses by path (rrul's latency probe); "" for one way only.
	Method string
}

// NeedsPayload reports whether any of ins copies the random payload, so
// that it is written (and its tmpfs room checked) only for those.
func NeedsPayload(ins []Instrument) bool {
	for _, in := range ins {
		if p, ok := in.(interface{ CopiesPayload() bool }); ok && p.CopiesPayload() {
			return true
		}
	}
	return false
}

// NeedsService reports whether an instrument of ins needs service s.
func NeedsService(ins []Instrument, s transport.Service) bool {
	for _, in := range ins {
		if slices.Contains(in.Needs().Services, s) {
			return true
		}
	}
	return false
}

// Default is the reference's instrument set, in its run order.
func Default() []Instrument {
	return []Instrument{IPerf3{Streams: 1}, IPerf3{Streams: 4}, TCPRR{}, Scp{}}
}

// All is every instrument in run order, what a run measures by default:
// the reference's four, then seed 001's ICMP latency and UDP packet rate,
// then latency under load.
func All() []Instrument {
	return append(Default(), Ping{}, UDPRate{}, RRUL{})
}

// App is the application-level set (--instruments app): what a user of
// the tunnel feels per connection, per login, with many connections at
// once and while it is loaded (RPM). It is not in All, so the default
// run's time does not grow; it runs when named.
func App() []Instrument { return []Instrument{TCPCRR{}, SSHSetup{}, ManyRR{Conns: 50}, RPM{}} }

// Sets are the named groups of instruments --instruments takes beside
// single names.
var Sets = map[string]func() []Instrument{"app": App, "sizes": Sizes, "recovery": Recovery, "cost": Cost, "instr": Instr}

// Recovery is the recovery set: the link flaps, then the restarts.
func Recovery() []Instrument { return append(Flaps(), Restarts()...) }

// Ready names the time-to-ready sample: seconds from the start of a
// transport's set-up until the first SSH exchange through it, recorded by
// the orchestrator once per transport and condition (it is not a tool run
// per sample, so it is not an Instrument).
const Ready = "ready"

// ReadyMetrics are the ready sample's.
var ReadyMetrics = []results.Metric{{Key: "value", Label: "time to ready", Unit: "s", Better: results.BetterLower}}

// Declarations lists the instruments of a run with their metrics, for the
// results document.
func Declarations(ins []Instrument, ready bool) []results.Instrument {
	var out []results.Instrument
	for _, in := range ins {
		out = append(out, results.Instrument{Name: in.Name(), Tool: in.Tool(), Metrics: in.Metrics()})
	}
	if ready {
		out = append(out, results.Instrument{Name: Ready, Tool: "ssh", Metrics: ReadyMetrics, OncePerPath: true})
	}
	return out
}

// registered are the instruments added through Register, after the
// built-in ones.
var registered []Instrument

// Register adds an instrument defined outside this package: it can be
// named in --instruments (after the built-in ones in run order) and runs
// like them; a run without --instruments measures the built-in ones only.
// Call it from an init function.
func Register(in Instrument) {
	for _, k := range known() {
		if k.Name() == in.Name() {
			panic("instrument " + in.Name() + " registered twice")
		}
	}
	registered = append(registered, in)
}

// known is every instrument, built-in and registered, in run order.
func known() []Instrument {
	return slices.Concat(All(), App(), Sizes(), Cost(), Restarts(), Instr(), registered)
}

// Names lists every selectable instrument name, Ready included; beside
// them, a link flap of any drop is "flap-D" (ParseFlap).
func Names() []string {
	var names []string
	for _, in := range known() {
		names = append(names, in.Name())
	}
	return append(names, Ready)
}

// Select returns the named instruments in run order, and whether Ready was
// named; a set's name (Sets) names its instruments. No names selects All
// and Ready.
func Select(names []string) (ins []Instrument, ready bool, err error) {
	if len(names) == 0 {
		return All(), true, nil
	}
	want := map[string]bool{}
	var flaps []Instrument // any drop's flap, named "flap-D" (ParseFlap)
	for _, n := range expandSets(names) {
		if f, ok, err := ParseFlap(n); ok {
			if err != nil {
				return nil, false, err
			}
			if want[f.Name()] {
				return nil, false, fmt.Errorf("instrument %q given twice", n)
			}
			want[f.Name()] = true
			flaps = append(flaps, f)
			continue
		}
		if !slices.Contains(Names(), n) {
			return nil, false, fmt.Errorf("unknown instrument %q (known: %s; flap-D for the client's link down D, e.g. flap-5s)", n, strings.Join(Names(), ", "))
		}
		if want[n] {
			return nil, false, fmt.Errorf("instrument %q given twice", n)
		}
		want[n] = true
	}
	for _, in := range known() {
		if want[in.Name()] {
			ins = append(ins, in)
		}
	}
	ins = append(ins, flaps...)
	return ins, want[Ready], nil
}

// expandSets replaces each set's name in names by its instruments' names.
func expandSets(names []string) []string {
	var out []string
	for _, n := range names {
		set, ok := Sets[n]
		if !ok {
			out = append(out, n)
			continue
		}
		for _, in := range set() {
			out = append(out, in.Name())
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func seconds(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s < 1 {
		s = 1
	}
	return itoa(s)
}

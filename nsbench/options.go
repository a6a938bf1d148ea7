// Package nsbench runs a benchmark: it validates the options into a Plan,
// builds the topology and the server fixtures, brings each transport up in
// turn, runs every instrument in the reference's order with meters around
// each sample, writes the results after every sample, and tears everything
// down on every exit path.
package nsbench

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/fanout"
	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/safedir"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// Options are the user's choices, unvalidated. The groups are embedded:
// o.Runs, o.Impairment and the rest read as one flat set.
type Options struct {
	Transports []string // empty: every transport available on this host
	Measure
	AutoRuns
	WANOptions
	OutDir string
	Keep   bool
	Network
	Schedule
	// Hosts puts roles on other machines (run --host); empty: this one.
	Hosts Hosts
	// Builds are a run of two builds of a transport's options (rows
	// NAME@LABEL).
	Builds Builds
}

// Measure is how much each cell measures.
type Measure struct {
	Runs      int
	SizeBytes int64
	Duration  time.Duration
	Warmup    time.Duration
}

// AutoRuns (--runs auto) gives each cell a pilot of Runs (AutoMinRuns) runs, whose
// spread fixes the cell's number of runs for a 95 % interval of the median
// within Precision (relative) of it, at most MaxRuns
// (stats.TwoStageRuns); every run then counts. A difference (rrul's
// latency increase, which can lie near 0) is held to the wider of
// Precision and PrecisionMs (stats.Tolerance).
type AutoRuns struct {
	RunsAuto    bool
	Precision   float64
	PrecisionMs float64
	MaxRuns     int
}

// WANOptions are the impaired conditions and how they are made.
type WANOptions struct {
	// WAN is the impaired conditions, each measured after the LAN:
	// "RTTms:LOSS%[:jitter=D][:rate=R]" profiles, or just "off".
	WAN []string
	// Impairment is how the WAN condition is made: "auto" (netem when the
	// kernel has it, else the userspace impairment), "netem" or
	// "userspace".
	Impairment string
	// Seed fixes the userspace impairment's loss sequence; nil draws one
	// per run. Every transport of a run gets the same sequence.
	Seed *uint64
	// Strict makes a WAN cell that fails verification fail the run.
	Strict bool
}

// Schedule is what a run measures, and in which order.
type Schedule struct {
	// Order is OrderInterleaved or OrderReference.
	Order string
	// Clients are the many-client sweep's client counts (run --clients):
	// the run measures how one server carries that many clients at once,
	// Runs times over, instead of the instruments' cells. Empty: the
	// instruments' cells.
	Clients []int
	// DriftProbe: plain iperf3 on the host before the first transport and after the last.
	DriftProbe bool
}

// Sweep reports whether the run is the many-client sweep.
func (s Schedule) Sweep() bool { return len(s.Clients) > 0 }

// AutoMinRuns is --runs auto's pilot per cell: the first count for which a
// 95 % order-statistic interval of the median exists.
const AutoMinRuns = 6

// Defaults are the reference's settings.
func Defaults() Options {
	return Options{
		Measure:    Measure{Runs: 3, SizeBytes: 5 << 30, Duration: 10 * time.Second, Warmup: 2 * time.Second},
		AutoRuns:   AutoRuns{Precision: 0.05, PrecisionMs: 1, MaxRuns: 20},
		WANOptions: WANOptions{WAN: []string{"30ms:0.1%"}, Impairment: ImpairmentAuto},
		OutDir:     "results",
		Network:    Network{Congestion: "cubic"},
		Schedule:   Schedule{Order: OrderInterleaved, DriftProbe: true},
		Builds:     BuildsDefaults,
	}
}

// The --impairment choices.
const (
	ImpairmentAuto      = wan.Auto
	ImpairmentNetem     = wan.Netem
	ImpairmentUserspace = wan.Userspace
)

// Quick are the smoke-run settings: about a minute for one transport.
func Quick() Options {
	o := Defaults()
	o.Runs, o.Duration, o.Warmup, o.SizeBytes = 1, 2*time.Second, time.Second, 64<<20
	return o
}

// WarmBytes is the warm-up payload: 256 MiB as in the reference, or the
// payload itself when that is smaller.
func (o Options) WarmBytes() int64 { return min(o.SizeBytes, 256<<20) }

var sizeRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B|B)?$`)

// ParseSize parses a payload size: "5GiB", "256MiB", "1.5GiB", "100MB",
// or plain bytes.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("size %q: want a positive number with a unit such as 256MiB or 5GiB", s)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[m[2]]
	b := n * mult
	if b < 1 || b > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q: out of range", s)
	}
	return int64(b), nil
}

// ParseSizeGB parses BENCH_SIZE_GB (GiB, as in the reference).
func ParseSizeGB(s string) (int64, error) {
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || n <= 0 || n > 1<<20 {
		return 0, fmt.Errorf("BENCH_SIZE_GB=%q: want a positive number of GiB", s)
	}
	return int64(n * (1 << 30)), nil
}

// FormatSize renders bytes the way the report's column headers do.
func FormatSize(b int64) string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b >= u.n {
			return strconv.FormatFloat(float64(b)/float64(u.n), 'f', -1, 64) + " " + u.name
		}
	}
	return strconv.FormatInt(b, 10) + " B"
}

// Plan is validated options: everything Run needs, checked before anything
// is created.
type Plan struct {
	Options
	// WANs are the impaired conditions, in order; empty with --wan off.
	WANs []wan.Profile
}

// minPayload keeps scp's MB/s meaningful (its ~0.1 s handshake is excluded
// nowhere).
const minPayload = 1 << 20

// NewPlan validates o against the known transports. It creates nothing.
func NewPlan(o Options, known []string) (*Plan, error) {
	errs := o.checkTransports(known)
	if o.Sweep() {
		return o.sweepPlan(errs)
	}
	wans, err := wan.ParseAll(o.WAN)
	if err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.Hosts.validate(o)...)
	conds := []string{results.LAN}
	for _, w := range wans {
		conds = append(conds, w.Name)
	}
	errs = append(errs, o.validateBuilds(conds)...)
	switch o.Impairment {
	case ImpairmentAuto, ImpairmentNetem, ImpairmentUserspace:
	default:
		errs = append(errs, fmt.Errorf("--impairment %q: want auto, netem or userspace", o.Impairment))
	}
	for _, w := range wans {
		if o.Impairment == ImpairmentNetem && w.Narrow.MTU > 0 {
			errs = append(errs, fmt.Errorf("--impairment netem with --wan %s: %w", w, impair.ErrNarrowNeedsUserspace))
		}
	}
	switch o.Order {
	case OrderInterleaved, OrderReference:
	default:
		errs = append(errs, fmt.Errorf("--order %q: want interleaved or reference", o.Order))
	}
	if o.RunsAuto {
		if o.Precision <= 0 || o.Precision >= 1 {
			errs = append(errs, fmt.Errorf("--precision %g %%: want above 0 and below 100 %%", o.Precision*100))
		}
		if o.PrecisionMs <= 0 || o.PrecisionMs > 1000 {
			errs = append(errs, fmt.Errorf("--precision-ms %g: want above 0 and at most 1000 ms", o.PrecisionMs))
		}
		if o.MaxRuns < o.Runs || o.MaxRuns > 1000 {
			errs = append(errs, fmt.Errorf("--max-runs %d: want %d to 1000", o.MaxRuns, o.Runs))
		}
	}
	if o.Runs < 1 || o.Runs > 1000 {
		errs = append(errs, fmt.Errorf("--runs %d: want 1 to 1000", o.Runs))
	}
	if o.SizeBytes < minPayload {
		errs = append(errs, fmt.Errorf("--size %d bytes: want at least 1MiB", o.SizeBytes))
	}
	if o.Duration < time.Second || o.Duration%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--duration %s: want whole seconds, at least 1s (iperf3 and netperf take seconds)", o.Duration))
	}
	if o.Warmup < 0 || o.Warmup%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--warmup %s: want whole seconds, or 0 for none", o.Warmup))
	}
	o.Network = o.Network.resolve(o.Hosts.On())
	errs = append(errs, o.Network.validate(o.WAN, o.Hosts.On())...)
	if err := checkOutDir(o.OutDir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Plan{Options: o, WANs: wans}, nil
}

// checkTransports checks the transports' names against the known ones.
func (o Options) checkTransports(known []string) []error {
	var errs []error
	seen := map[string]bool{}
	for _, t := range o.Transports {
		switch {
		case !slices.Contains(known, strings.SplitN(strings.SplitN(t, "@", 2)[0], ":", 2)[0]):
			errs = append(errs, fmt.Errorf("--transports: unknown transport %q (known: %s)", t, strings.Join(known, ", ")))
		case seen[t]:
			errs = append(errs, fmt.Errorf("--transports: %q given twice", t))
		}
		seen[t] = true
	}
	return errs
}

// checkOutDir accepts an existing directory, or a path whose nearest
// existing ancestor is a directory (Run creates the rest), when no other
// user can change it or its ancestors (safedir.Check).
func checkOutDir(dir string) error { return safedir.Check("--out", dir) }

// Deps are what Run uses but does not decide.
type Deps struct {
	Transports  []transport.Transport // in run order; unavailable ones are reported as skipped
	Instruments []instrument.Instrument
	Versions    map[string]string // tool → version, from preflight
	Logf        Logf
	// Ready records the time-to-ready sample of every path.
	Ready bool
	// Status, when set, is told which sample is about to run (for a live
	// progress line on a terminal).
	Status func(Status)
	// TransportOptions are the transports' option values that are not
	// host paths, recorded so a rerun uses them too.
	TransportOptions map[string]string
	// Recipe is what Transports were built from: across hosts each row is
	// rebuilt from it on its roles' hosts (with the builds' copies there)
	// and checked there.
	Recipe transport.Recipe
	// Sites are the Options' hosts already reached (OpenSites), the
	// builds of Transports copied to them (CopyBuilds), which the run then
	// builds on and closes; nil with hosts: Run opens them and copies the
	// builds.
	Sites *Sites
}

// Logf is a printf-style logger.
type Logf func(format string, args ...any)

// The --order choices.
const (
	// OrderInterleaved brings the transports up together under each
	// condition and runs run 1 of every transport and instrument, then
	// run 2, …: a host that drifts during the run moves every transport
	// alike instead of landing on whichever ran at the time.
	OrderInterleaved = "interleaved"
	// OrderReference is the reference's order: each transport in turn,
	// all its runs under one condition before the next.
	OrderReference = "reference"
)

// Hosts puts roles on other machines: the inventory and how to reach it,
// as data. An empty inventory keeps every role on this host. A run holds
// the machines themselves, reached, as Sites.
type Hosts struct {
	Inventory hosts.Inventory
	SSH       remote.Config
	// Fan are the many-client sweep's clients on the client's host, at
	// their addresses (hosts.Inventory.Fan, the largest count's); the
	// first is the inventory's client. Nil for a run.
	Fan []hosts.Host
}

// On reports whether any role is on another host.
func (h Hosts) On() bool { return len(h.Inventory.Hosts) > 0 }

// AnyLocal reports whether a role is on this machine beside the others.
func (h Hosts) AnyLocal() bool {
	return slices.ContainsFunc(h.Inventory.Hosts, func(x hosts.Host) bool { return x.Local })
}

// validate refuses what a run across hosts cannot do yet, before anything
// exists anywhere.
func (h Hosts) validate(o Options) []error {
	if !h.On() {
		return nil
	}
	errs := h.validateRoles()
	wans, _ := wan.ParseAll(o.WAN) // NewPlan reports a malformed one
	for _, w := range wans {
		if w.Narrow.MTU > 0 {
			errs = append(errs, fmt.Errorf("--wan %s: %w", w, impair.ErrNarrowAcrossHosts))
		}
	}
	if o.Keep {
		errs = append(errs, errors.New("--keep: not with --host (the hosts' copies remove their roles when the run ends)"))
	}
	return errs
}

// validateRoles wants the client's and the server's host, and an address
// of its own for every role.
func (h Hosts) validateRoles() []error {
	var errs []error
	for _, r := range []string{topology.Client, topology.Server} {
		if _, ok := h.Inventory.Role(r); !ok {
			errs = append(errs, fmt.Errorf("--host: name the %s's host too, or keep it on this machine with --host %s=local,addr=A.B.C.D/NN", r, r))
		}
	}
	seen := map[netip.Addr]string{}
	for _, host := range h.Inventory.Hosts {
		if !host.RoleAddr.IsValid() {
			errs = append(errs, fmt.Errorf("--host %s: add ,addr=A.B.C.D/NN, a free address on its network for the %s's namespace (twnsbench never picks one on your network)", host.Role, host.Role))
			continue
		}
		if prev, dup := seen[host.RoleAddr.Addr()]; dup {
			errs = append(errs, fmt.Errorf("--host %s: addr %s is %s's too", host.Role, host.RoleAddr.Addr(), prev))
		}
		seen[host.RoleAddr.Addr()] = host.Role
	}
	return errs
}

// fan plans the sweep's clients on the client's host for counts, the
// largest of which it builds at once; a WAN condition is refused: the
// sweep's impairment is made on this host's switch, and across hosts it
// would have to be each client's edge.
func (h Hosts) fan(counts []int, wans []wan.Profile) ([]hosts.Host, []error) {
	errs := h.validateRoles()
	if len(wans) > 0 {
		errs = append(errs, fmt.Errorf("--clients with --host: --wan %s: the many-client sweep across hosts runs on the LAN only (--wan off)", wans[0]))
	}
	if len(errs) > 0 || len(counts) == 0 {
		return nil, errs
	}
	fan, err := h.Inventory.Fan(fanout.ClientRoles(slices.Max(counts)))
	if err != nil {
		errs = append(errs, err)
	}
	return fan, errs
}

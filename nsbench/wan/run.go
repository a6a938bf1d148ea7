package wan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// The WAN conditions. Each WAN block (one transport's cell in the
// reference order, a round of transports interleaved otherwise):
//
//	Set the profile's impairment → fresh paths, set up under it (timed:
//	ready) → probe the RTT → counters snapshot → the cells → counters
//	snapshot → diagnostics and verification → close the paths → Clear
//
// so LAN blocks always run on the plain bridge.

// Run is the run's impairment, chosen and proven at set-up, and the
// condition of each impaired profile, by condition name. A nil *Run is a
// run without a WAN condition: nothing is impaired.
type Run struct {
	conds  map[string]impair.Condition
	order  []string // the profiles' names, in order
	seed   uint64
	imp    impair.Impairment
	probe  *impair.Probe // the RTT target and the loss probe's two ends
	client *role.Role    // where the probes are sent from
	// roles are every role, whose learnt path MTUs a narrow hop's block
	// flushes before and after it.
	roles []*role.Role
	setUp setUpSpans
	logf  func(format string, args ...any)
	// hosts: the roles stand on their own hosts (hosts.go).
	hosts bool
}

// setUpSpans are the narrow hop's counts over each row's set-up and
// warm-up under a narrow condition, by "transport/condition": a tunnel
// usually meets the hop there first (and learns its MTU).
type setUpSpans struct {
	counts map[string]impair.NarrowCounts
	// unread names the rows a span of which the hop's counts could not
	// be read for: their counts are not the evidence of a failed set-up.
	unread map[string]bool
}

// Impaired returns the impairment of the condition named name, if it is an
// impaired one (never, without a WAN).
func (w *Run) Impaired(name string) (impair.Condition, bool) {
	if w == nil {
		return impair.Condition{}, false
	}
	c, ok := w.conds[name]
	return c, ok
}

// SetUp chooses how p's WAN conditions are made on b, proves that it
// works here with one Set and Clear before any transport runs, names the
// method to rec and pushes its Clear onto b's teardown. It returns nil
// without a WAN condition.
func SetUp(ctx context.Context, p Plan, b Bed, rec Recorder) (*Run, error) {
	if len(p.Profiles) == 0 {
		return nil, nil
	}
	seed := rand.Uint64()
	if p.Seed != nil {
		seed = *p.Seed
	}
	client := b.Roles[topology.Client]
	w := &Run{conds: map[string]impair.Condition{}, seed: seed, client: client, logf: b.Logf,
		hosts: b.Switch == nil}
	for _, name := range slices.Sorted(maps.Keys(b.Roles)) { // across hosts there is no switch's spec
		w.roles = append(w.roles, b.Roles[name])
	}
	rec.Seed(seed)
	for _, pr := range p.Profiles {
		w.conds[pr.Name] = pr.Condition(seed)
		w.order = append(w.order, pr.Name)
	}
	probe, err := impair.StartProbe(ctx, client, b.Roles[topology.Server], "")
	if err != nil {
		return nil, err
	}
	w.probe = probe
	b.OnTeardown("WAN probes", func(context.Context) error { return probe.Close() })

	var netemErr error
	method := p.Impairment
	if method == Auto {
		method = Userspace
		if narrow := firstNarrow(p.Profiles); narrow != "" {
			// netem cannot make a narrow hop: the forwarder makes every
			// profile, so all of them are measured the same way.
			netemErr = fmt.Errorf("--wan %s: %w", narrow, impair.ErrNarrowNeedsUserspace)
		} else if w.hosts {
			// Each host's kernel answers for itself, in the proof below.
			method = Netem
		} else if ok, how := preflight.KernelFeature("netem"); ok {
			method = Netem
		} else {
			netemErr = errors.New(how)
		}
	}
	if method == Netem {
		w.imp = impair.NewNetem(netemTargets(b))
		netemErr = w.prove(ctx, b)
		if netemErr == nil || p.Impairment == Netem {
			if netemErr != nil {
				return nil, fmt.Errorf("--impairment netem: %w", netemErr)
			}
			rec.Impairment(w.imp.Method(), w.describe(), nil)
			return w, nil
		}
	}
	if w.imp, err = newUserspace(ctx, b); err != nil {
		return nil, err
	}
	if err := w.prove(ctx, b); err != nil {
		return nil, err
	}
	if netemErr != nil {
		rec.Fallback("wan: the userspace impairment instead of netem (netem: " + netemErr.Error() + ")")
	}
	seedp := &w.seed
	rec.Impairment(w.imp.Method(), w.describe(), seedp)
	return w, nil
}

// prove sets and clears every profile once, pushing the Clear onto the
// teardown first so a half-made impairment is undone too: a setting the
// mechanism cannot hold fails here, before any transport runs.
func (w *Run) prove(ctx context.Context, b Bed) error {
	imp := w.imp
	b.OnTeardown("impairment ("+imp.Method()+")", func(ctx context.Context) error { return imp.Clear(ctx) })
	for _, name := range w.order {
		c := w.conds[name]
		t0 := time.Now()
		_, err := imp.Set(ctx, c)
		if err = errors.Join(err, imp.Clear(ctx)); err != nil {
			return fmt.Errorf("%s %s: %w", name, c, err)
		}
		w.logf("%s %s through %s: set and cleared in %.0f ms", name, c, imp.Method(), float64(time.Since(t0))/1e6)
	}
	return nil
}

// newUserspace configures the forwarder on the switch (switchForwarder),
// metered per sample. Across hosts: one forwarder on each of the client's
// and the server's hosts (newEdges).
func newUserspace(ctx context.Context, b Bed) (impair.Impairment, error) {
	if b.Switch == nil {
		return newEdges(ctx, b)
	}
	imp, usage, err := switchForwarder(*b.Switch, b.OnTeardown)
	if err != nil {
		return nil, err
	}
	b.Meters[ImpairCgroup] = usage
	return imp, nil
}

// switchForwarder configures the forwarder in s's switch namespace, in its
// own cgroup (its CPU: usage): every role's switch port (named after the
// role), every role's but the relay's impaired — the client's and the
// server's, or a sweep's clients' and the server's, so that every
// client's path crosses the same WAN to the server. Its switch handle's
// Close goes onto the teardown.
func switchForwarder(s Switch, onTeardown func(string, func(context.Context) error)) (imp impair.Impairment, usage func() (uint64, error), err error) {
	cg, err := s.Tree.Beside(ImpairCgroup)
	if err != nil {
		return nil, nil, err
	}
	sw, err := topology.OpenSwitch(*s.Spec)
	if err != nil {
		return nil, nil, err
	}
	onTeardown("switch handle", func(context.Context) error { return sw.Close() })
	var ports []impair.Port
	for _, role := range s.Spec.Roles {
		ports = append(ports, impair.Port{Name: role, Role: role, Impaired: role != topology.Relay})
	}
	return impair.NewUserspace(impair.UserspaceConfig{
		Switch:  sw,
		Ports:   ports,
		Control: filepath.Join(s.Dir, "impair.sock"),
		Process: proc.Program{
			Name:   "switch/" + impair.ForwarderArg,
			NetNS:  sw.Path(),
			Cgroup: cg,
			Log:    filepath.Join(s.LogDir, "switch-"+impair.ForwarderArg+".log"),
		},
		RTPriority: impair.DefaultRTPriority,
	}), cg.UsageUsec, nil
}

// describe is the method and its settings, for the env block.
func (w *Run) describe() string {
	var description string
	settings := w.settings()
	limit := w.conds[w.order[0]].QueueLimit()
	switch w.imp.Method() {
	case impair.MethodNetem:
		description = fmt.Sprintf("netem through netlink on the client's and the server's eth0 egress (the relay has none): "+
			"%s, limit %d; set after each transport's LAN cells, removed after its WAN cell; %s",
			strings.Join(settings, "; "), limit, impair.NetemSeedNote)
		if hasJitter(w.conds) {
			description += "; with jitter netem may reorder packets whose draws cross"
		}
	default:
		if w.hosts {
			return describeEdges(settings, limit, w.seed)
		}
		seed := w.seed
		description = fmt.Sprintf("userspace impairment (this kernel has no sch_netem): twnsbench's AF_PACKET forwarder in the switch "+
			"namespace replaces the bridge during each WAN cell (the ports leave br0 and return after the cell); "+
			"frames the client and the server send get %s, independent random loss each; "+
			"limit %d frames per direction; the relay's are forwarded at once. Loss seed %d: every transport meets drops at the "+
			"same packet positions (pass --seed %d to repeat them). Forwarder threads SCHED_FIFO %d; its CPU, including the "+
			"kernel's delivery of the frames it sends on (which under the bridge falls to the sending role), is "+
			"container_cpu_sec.%s in the samples and counts in the host CPU",
			strings.Join(settings, "; "), limit, seed, seed, impair.DefaultRTPriority, ImpairCgroup)
		if hasJitter(w.conds) {
			description += "; jitter never reorders: a frame waits for the one ahead of it"
		}
	}
	return description
}

// settings are each condition's delay, jitter, loss and rate, in words.
func (w *Run) settings() []string {
	var settings []string
	for _, name := range w.order {
		c := w.conds[name]
		s := fmt.Sprintf("delay %s each way (RTT/2)", fmtMs(c.OneWay()))
		if c.Jitter > 0 {
			s += fmt.Sprintf(" ±%s uniform jitter", fmtMs(c.Jitter))
		}
		s += fmt.Sprintf(", loss %s %% each way", strconv.FormatFloat(c.LossPct, 'f', -1, 64))
		if c.RateBps > 0 {
			s += ", rate " + impair.FormatRate(c.RateBps) + " each way"
		}
		if len(w.order) > 1 {
			s = name + ": " + s
		}
		settings = append(settings, s)
	}
	return settings
}

func hasJitter(conds map[string]impair.Condition) bool {
	for _, c := range conds {
		if c.Jitter > 0 {
			return true
		}
	}
	return false
}

// NarrowCounts reads the narrow hop's cumulative counts when the condition
// named cond has one; ok is false without one (or without an answer).
func (w *Run) NarrowCounts(ctx context.Context, cond string) (n impair.NarrowCounts, ok bool) {
	c, impaired := w.Impaired(cond)
	if !impaired || c.Narrow.MTU == 0 {
		return n, false
	}
	np, can := w.imp.(impair.NarrowPath)
	if !can {
		return n, false
	}
	n, err := np.Narrow(ctx)
	return n, err == nil
}

// NarrowStart begins a row's span under cond's narrow hop (its set-up,
// warm-up or one sample): it flushes the path MTUs every role has learnt,
// so that the row meets the hop itself rather than inheriting what another
// row's traffic taught the shared namespaces (rows of a block share the
// client's and the server's), and returns the hop's counts. ok is false
// without a narrow hop.
func (w *Run) NarrowStart(ctx context.Context, cond string) (impair.NarrowCounts, bool) {
	if _, ok := w.NarrowCounts(ctx, cond); !ok {
		return impair.NarrowCounts{}, false
	}
	if err := w.flushPMTU(ctx); err != nil {
		w.logf("%s: %v", cond, err)
	}
	return w.NarrowCounts(ctx, cond)
}

// flushPMTU forgets the path MTUs every role's kernel learnt (from the
// narrow hop's ICMP): they last 10 minutes, and would carry one block's
// narrow path into the next block's cells.
func (w *Run) flushPMTU(ctx context.Context) error {
	var errs []error
	for _, r := range w.roles {
		if err := role.WriteFile(ctx, r, "/proc/sys/net/ipv4/route/flush", []byte("1\n"), 0); err != nil {
			errs = append(errs, fmt.Errorf("flush the path MTUs of %s: %w", r.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// NarrowSpan runs f, a row's set-up or warm-up under cond, and adds the
// narrow hop's counts over it to the row's setUp counts (rows are set up
// and warmed up one at a time, so the counts are the row's own).
func (w *Run) NarrowSpan(ctx context.Context, cond, transport string, f func() error) error {
	before, ok := w.NarrowStart(ctx, cond)
	err := f()
	key := transport + "/" + cond
	after, ok2 := w.NarrowCounts(ctx, cond)
	switch c, _ := w.Impaired(cond); {
	case ok && ok2:
		if w.setUp.counts == nil {
			w.setUp.counts = map[string]impair.NarrowCounts{}
		}
		w.setUp.counts[key] = w.setUp.counts[key].Add(after.Sub(before))
	case c.Narrow.MTU > 0:
		if w.setUp.unread == nil {
			w.setUp.unread = map[string]bool{}
		}
		w.setUp.unread[key] = true
	}
	return err
}

// setUpCounts is the narrow hop's counts over transport's set-up and
// warm-up under cond; read is false when some span of them could not be
// read.
func (w *Run) setUpCounts(transport, cond string) (c impair.NarrowCounts, read bool) {
	if w == nil {
		return impair.NarrowCounts{}, true
	}
	key := transport + "/" + cond
	return w.setUp.counts[key], !w.setUp.unread[key]
}

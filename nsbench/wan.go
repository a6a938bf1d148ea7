package nsbench

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

// impairCgroup is the forwarder's cgroup under the run's, beside the
// roles': its CPU is recorded per sample as container_cpu_sec.impair.
const impairCgroup = "impair"

// wanRun is the run's impairment, chosen and proven at set-up, and the
// condition of each impaired profile, by condition name.
type wanRun struct {
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
	logf  Logf
	// hosts: the roles stand on their own hosts (wanhosts.go).
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

// impaired returns the impairment of the condition named name, if it is an
// impaired one (never, without a WAN).
func (w *wanRun) impaired(name string) (impair.Condition, bool) {
	if w == nil {
		return impair.Condition{}, false
	}
	c, ok := w.conds[name]
	return c, ok
}

// setUpWAN chooses how the WAN conditions are made, proves that it works
// here with one Set and Clear before any transport runs, names the method
// in the env block and pushes its Clear onto the testbed's teardown. It
// returns nil without a WAN condition.
func setUpWAN(ctx context.Context, plan *Plan, tb *testbed, rec *recorder) (*wanRun, error) {
	if len(plan.WANs) == 0 {
		return nil, nil
	}
	seed := rand.Uint64()
	if plan.Seed != nil {
		seed = *plan.Seed
	}
	client := tb.role(topology.Client)
	w := &wanRun{conds: map[string]impair.Condition{}, seed: seed, client: client, logf: tb.logf,
		hosts: tb.cfg.Sites.On()}
	for _, name := range slices.Sorted(maps.Keys(tb.view.Roles)) { // across hosts there is no tb.spec
		w.roles = append(w.roles, tb.role(name))
	}
	rec.setup.seed(seed)
	for _, p := range plan.WANs {
		w.conds[p.Name] = p.Condition(seed)
		w.order = append(w.order, p.Name)
	}
	probe, err := impair.StartProbe(ctx, client, tb.role(topology.Server), "")
	if err != nil {
		return nil, err
	}
	w.probe = probe
	tb.onTeardown("WAN probes", func(context.Context) error { return probe.Close() })

	var netemErr error
	method := plan.Impairment
	if method == ImpairmentAuto {
		method = ImpairmentUserspace
		if narrow := plan.narrowWAN(); narrow != "" {
			// netem cannot make a narrow hop: the forwarder makes every
			// profile, so all of them are measured the same way.
			netemErr = fmt.Errorf("--wan %s: %w", narrow, impair.ErrNarrowNeedsUserspace)
		} else if w.hosts {
			// Each host's kernel answers for itself, in the proof below.
			method = ImpairmentNetem
		} else if ok, how := preflight.KernelFeature("netem"); ok {
			method = ImpairmentNetem
		} else {
			netemErr = errors.New(how)
		}
	}
	if method == ImpairmentNetem {
		w.imp = impair.NewNetem(netemTargets(tb.bed, topology.Client, topology.Server))
		netemErr = w.prove(ctx, tb)
		if netemErr == nil || plan.Impairment == ImpairmentNetem {
			if netemErr != nil {
				return nil, fmt.Errorf("--impairment netem: %w", netemErr)
			}
			rec.setup.impairment(w.imp.Method(), w.describe(), nil)
			return w, nil
		}
	}
	if w.imp, err = newUserspace(ctx, tb); err != nil {
		return nil, err
	}
	if err := w.prove(ctx, tb); err != nil {
		return nil, err
	}
	if netemErr != nil {
		rec.fallback("wan: the userspace impairment instead of netem (netem: " + netemErr.Error() + ")")
	}
	seedp := &w.seed
	rec.setup.impairment(w.imp.Method(), w.describe(), seedp)
	return w, nil
}

// prove sets and clears every profile once, pushing the Clear onto the
// teardown first so a half-made impairment is undone too: a setting the
// mechanism cannot hold fails here, before any transport runs.
func (w *wanRun) prove(ctx context.Context, tb *testbed) error {
	imp := w.imp
	tb.onTeardown("impairment ("+imp.Method()+")", func(ctx context.Context) error { return imp.Clear(ctx) })
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

// narrowWAN is the first profile with a narrow hop, "" when none has one.
func (p *Plan) narrowWAN() string {
	for _, w := range p.WANs {
		if w.Narrow.MTU > 0 {
			return w.String()
		}
	}
	return ""
}

// netemTargets are the egresses netem impairs: the eth0 of each of roles.
func netemTargets(b *bed, roles ...string) []impair.Target {
	var ts []impair.Target
	for _, name := range roles {
		ts = append(ts, impair.Target{Role: b.role(name), Link: topology.RoleLink})
	}
	return ts
}

// newUserspace configures the forwarder on the switch (switchForwarder),
// metered per sample. Across hosts: one forwarder on each of the client's
// and the server's hosts (newEdges).
func newUserspace(ctx context.Context, tb *testbed) (impair.Impairment, error) {
	if tb.cfg.Sites.On() {
		return newEdges(ctx, tb)
	}
	imp, usage, err := switchForwarder(tb.bed)
	if err != nil {
		return nil, err
	}
	tb.sampler.Roles[impairCgroup] = usage
	return imp, nil
}

// switchForwarder configures the forwarder in b's switch namespace, in its
// own cgroup (its CPU: usage): every role's switch port (named after the
// role), every role's but the relay's impaired — the client's and the
// server's, or a sweep's clients' and the server's, so that every
// client's path crosses the same WAN to the server.
func switchForwarder(b *bed) (imp impair.Impairment, usage func() (uint64, error), err error) {
	cg, err := b.tree.Beside(impairCgroup)
	if err != nil {
		return nil, nil, err
	}
	sw, err := topology.OpenSwitch(*b.spec)
	if err != nil {
		return nil, nil, err
	}
	b.onTeardown("switch handle", func(context.Context) error { return sw.Close() })
	var ports []impair.Port
	for _, role := range b.spec.Roles {
		ports = append(ports, impair.Port{Name: role, Role: role, Impaired: role != topology.Relay})
	}
	return impair.NewUserspace(impair.UserspaceConfig{
		Switch:  sw,
		Ports:   ports,
		Control: filepath.Join(b.view.Dir, "impair.sock"),
		Process: proc.Program{
			Name:   "switch/" + impair.ForwarderArg,
			NetNS:  sw.Path(),
			Cgroup: cg,
			Log:    filepath.Join(b.logDir(), "switch-"+impair.ForwarderArg+".log"),
		},
		RTPriority: impair.DefaultRTPriority,
	}), cg.UsageUsec, nil
}

// describe is the method and its settings, for the env block.
func (w *wanRun) describe() string {
	var description string
	settings := w.settings()
	limit := w.conds[w.order[0]].QueueLimit()
	switch w.imp.Method() {
	case impair.MethodNetem:
		description = fmt.Sprintf("netem through netlink on the client's and the server's eth0 egress (the relay has none): "+
			"%s, limit %d; set after each transport's LAN cells, removed after its WAN cell; %s",
			strings.Join(settings, "; "), limit, impair.NetemSeedNote)
		if w.hasJitter() {
			description += "; with jitter netem may reorder packets whose draws cross"
		}
	default:
		if w.hosts {
			return w.describeEdges(settings, limit)
		}
		seed := w.seed
		description = fmt.Sprintf("userspace impairment (this kernel has no sch_netem): twnsbench's AF_PACKET forwarder in the switch "+
			"namespace replaces the bridge during each WAN cell (the ports leave br0 and return after the cell); "+
			"frames the client and the server send get %s, independent random loss each; "+
			"limit %d frames per direction; the relay's are forwarded at once. Loss seed %d: every transport meets drops at the "+
			"same packet positions (pass --seed %d to repeat them). Forwarder threads SCHED_FIFO %d; its CPU, including the "+
			"kernel's delivery of the frames it sends on (which under the bridge falls to the sending role), is "+
			"container_cpu_sec.%s in the samples and counts in the host CPU",
			strings.Join(settings, "; "), limit, seed, seed, impair.DefaultRTPriority, impairCgroup)
		if w.hasJitter() {
			description += "; jitter never reorders: a frame waits for the one ahead of it"
		}
	}
	return description
}

// settings are each condition's delay, jitter, loss and rate, in words.
func (w *wanRun) settings() []string {
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

func (w *wanRun) hasJitter() bool {
	for _, c := range w.conds {
		if c.Jitter > 0 {
			return true
		}
	}
	return false
}

// narrowCounts reads the narrow hop's cumulative counts when the condition
// named cond has one; ok is false without one (or without an answer).
func (w *wanRun) narrowCounts(ctx context.Context, cond string) (n impair.NarrowCounts, ok bool) {
	c, impaired := w.impaired(cond)
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

// narrowStart begins a row's span under cond's narrow hop (its set-up,
// warm-up or one sample): it flushes the path MTUs every role has learnt,
// so that the row meets the hop itself rather than inheriting what another
// row's traffic taught the shared namespaces (rows of a block share the
// client's and the server's), and returns the hop's counts. ok is false
// without a narrow hop.
func (w *wanRun) narrowStart(ctx context.Context, cond string) (impair.NarrowCounts, bool) {
	if _, ok := w.narrowCounts(ctx, cond); !ok {
		return impair.NarrowCounts{}, false
	}
	if err := w.flushPMTU(ctx); err != nil {
		w.logf("%s: %v", cond, err)
	}
	return w.narrowCounts(ctx, cond)
}

// flushPMTU forgets the path MTUs every role's kernel learnt (from the
// narrow hop's ICMP): they last 10 minutes, and would carry one block's
// narrow path into the next block's cells.
func (w *wanRun) flushPMTU(ctx context.Context) error {
	var errs []error
	for _, r := range w.roles {
		if err := role.WriteFile(ctx, r, "/proc/sys/net/ipv4/route/flush", []byte("1\n"), 0); err != nil {
			errs = append(errs, fmt.Errorf("flush the path MTUs of %s: %w", r.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// narrowSpan runs f, a row's set-up or warm-up under cond, and adds the
// narrow hop's counts over it to the row's setUp counts (rows are set up
// and warmed up one at a time, so the counts are the row's own).
func (w *wanRun) narrowSpan(ctx context.Context, cond, transport string, f func() error) error {
	before, ok := w.narrowStart(ctx, cond)
	err := f()
	key := transport + "/" + cond
	after, ok2 := w.narrowCounts(ctx, cond)
	switch c, _ := w.impaired(cond); {
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
func (w *wanRun) setUpCounts(transport, cond string) (c impair.NarrowCounts, read bool) {
	if w == nil {
		return impair.NarrowCounts{}, true
	}
	key := transport + "/" + cond
	return w.setUp.counts[key], !w.setUp.unread[key]
}

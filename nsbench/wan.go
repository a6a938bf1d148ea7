package nsbench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
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
	conds map[string]impair.Condition
	order []string // the profiles' names, in order
	seed  uint64
	imp   impair.Impairment
	probe *impair.ProbeListener // in the server namespace
}

// impaired returns the impairment of the condition named name, if it is an
// impaired one.
func (r *runner) impaired(name string) (impair.Condition, bool) {
	if r.wan == nil {
		return impair.Condition{}, false
	}
	c, ok := r.wan.conds[name]
	return c, ok
}

// setUpImpairment chooses how the WAN condition is made, proves that it
// works here with one Set and Clear before any transport runs, names the
// method in the env block and pushes its Clear onto the teardown.
func (r *runner) setUpImpairment(ctx context.Context, cgroupRoot string) error {
	if len(r.plan.WANs) == 0 {
		return nil
	}
	seed := rand.Uint64()
	if r.plan.Seed != nil {
		seed = *r.plan.Seed
	}
	r.wan = &wanRun{conds: map[string]impair.Condition{}, seed: seed}
	r.rec.seed(seed)
	for _, w := range r.plan.WANs {
		r.wan.conds[w.Name] = w.Condition(seed)
		r.wan.order = append(r.wan.order, w.Name)
	}
	probe, err := impair.ListenProbe(r.topo.Roles[topology.Server].NS,
		net.JoinHostPort(r.topo.Spec.Addr(topology.Server).String(), strconv.Itoa(impair.ProbePort)))
	if err != nil {
		return err
	}
	r.wan.probe = probe
	r.stack.push("RTT probe listener", func(context.Context) error { return probe.Close() })

	var netemErr error
	method := r.plan.Impairment
	if method == ImpairmentAuto {
		method = ImpairmentUserspace
		if ok, how := preflight.KernelFeature("netem"); ok {
			method = ImpairmentNetem
		} else {
			netemErr = errors.New(how)
		}
	}
	if method == ImpairmentNetem {
		r.wan.imp = impair.NewNetem(r.netemTargets())
		netemErr = r.proveImpairment(ctx)
		if netemErr == nil || r.plan.Impairment == ImpairmentNetem {
			if netemErr != nil {
				return fmt.Errorf("--impairment netem: %w", netemErr)
			}
			r.describeImpairment()
			return nil
		}
		method = ImpairmentUserspace
	}
	u, err := r.newUserspace(cgroupRoot)
	if err != nil {
		return err
	}
	r.wan.imp = u
	if err := r.proveImpairment(ctx); err != nil {
		return err
	}
	if netemErr != nil {
		r.rec.fallback("wan: the userspace impairment instead of netem (netem: " + netemErr.Error() + ")")
	}
	r.describeImpairment()
	return nil
}

// proveImpairment sets and clears every profile once, pushing the Clear
// onto the teardown first so a half-made impairment is undone too: a
// setting the mechanism cannot hold fails here, before any transport runs.
func (r *runner) proveImpairment(ctx context.Context) error {
	imp := r.wan.imp
	r.stack.push("impairment ("+imp.Method()+")", func(ctx context.Context) error { return imp.Clear(ctx) })
	for _, name := range r.wan.order {
		c := r.wan.conds[name]
		t0 := time.Now()
		_, err := imp.Set(ctx, c)
		if err = errors.Join(err, imp.Clear(ctx)); err != nil {
			return fmt.Errorf("%s %s: %w", name, c, err)
		}
		r.logf("%s %s through %s: set and cleared in %.0f ms", name, c, imp.Method(), float64(time.Since(t0))/1e6)
	}
	return nil
}

func (r *runner) netemTargets() []impair.Target {
	var ts []impair.Target
	for _, role := range []string{topology.Client, topology.Server} {
		ts = append(ts, impair.Target{Role: role, NS: r.topo.Roles[role].NS, Link: topology.RoleLink})
	}
	return ts
}

// newUserspace configures the forwarder: every role's switch port (named
// after the role), the client's and the server's impaired, in its own
// cgroup, metered per sample.
func (r *runner) newUserspace(cgroupRoot string) (*impair.Userspace, error) {
	cg, err := proc.NewCgroup(filepath.Join(cgroupDir(cgroupRoot, r.prefix), impairCgroup))
	if err != nil {
		return nil, err
	}
	r.sampler.Roles[impairCgroup] = cg.UsageUsec
	var ports []impair.Port
	for _, role := range r.topo.Spec.Roles {
		ports = append(ports, impair.Port{Name: role, Role: role, Impaired: role == topology.Client || role == topology.Server})
	}
	return impair.NewUserspace(impair.UserspaceConfig{
		Switch:  r.topo.Switch,
		Ports:   ports,
		Control: filepath.Join(r.env.Dir, "impair.sock"),
		Process: proc.Spec{
			Name:   "switch/" + impair.ForwarderArg,
			NetNS:  r.topo.Switch.Path(),
			Cgroup: cg,
			Log:    filepath.Join(r.logDir, "switch-"+impair.ForwarderArg+".log"),
		},
		RTPriority: impair.DefaultRTPriority,
	}), nil
}

// describeImpairment names the method and its settings in the env block.
func (r *runner) describeImpairment() {
	var description string
	var seedp *uint64
	var settings []string
	for _, name := range r.wan.order {
		c := r.wan.conds[name]
		s := fmt.Sprintf("delay %s each way (RTT/2)", fmtMs(c.OneWay()))
		if c.Jitter > 0 {
			s += fmt.Sprintf(" ±%s uniform jitter", fmtMs(c.Jitter))
		}
		s += fmt.Sprintf(", loss %s %% each way", strconv.FormatFloat(c.LossPct, 'f', -1, 64))
		if c.RateBps > 0 {
			s += ", rate " + impair.FormatRate(c.RateBps) + " each way"
		}
		if len(r.wan.order) > 1 {
			s = name + ": " + s
		}
		settings = append(settings, s)
	}
	limit := r.wan.conds[r.wan.order[0]].QueueLimit()
	switch r.wan.imp.Method() {
	case impair.MethodNetem:
		description = fmt.Sprintf("netem through netlink on the client's and the server's eth0 egress (the relay has none): "+
			"%s, limit %d; set after each transport's LAN cells, removed after its WAN cell; %s",
			strings.Join(settings, "; "), limit, impair.NetemSeedNote)
		if r.hasJitter() {
			description += "; with jitter netem may reorder packets whose draws cross"
		}
	default:
		seed := r.wan.seed
		seedp = &seed
		description = fmt.Sprintf("userspace impairment (this kernel has no sch_netem): twnsbench's AF_PACKET forwarder in the switch "+
			"namespace replaces the bridge during each WAN cell (the ports leave br0 and return after the cell); "+
			"frames the client and the server send get %s, independent random loss each; "+
			"limit %d frames per direction; the relay's are forwarded at once. Loss seed %d: every transport meets drops at the "+
			"same packet positions (pass --seed %d to repeat them). Forwarder threads SCHED_FIFO %d; its CPU, including the "+
			"kernel's delivery of the frames it sends on (which under the bridge falls to the sending role), is "+
			"container_cpu_sec.%s in the samples and counts in the host CPU",
			strings.Join(settings, "; "), limit, seed, seed, impair.DefaultRTPriority, impairCgroup)
		if r.hasJitter() {
			description += "; jitter never reorders: a frame waits for the one ahead of it"
		}
	}
	r.rec.impairment(r.wan.imp.Method(), description, seedp)
}

func (r *runner) hasJitter() bool {
	for _, c := range r.wan.conds {
		if c.Jitter > 0 {
			return true
		}
	}
	return false
}

func fmtMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + " ms"
}

// setImpairment applies the WAN condition for a block and returns what
// the kernel or the forwarder holds, and the function that clears it again
// (wrapping its error into *err).
func (r *runner) setImpairment(ctx context.Context, b block, cond results.Condition) ([]impair.Applied, func(err *error), error) {
	w := r.wan
	applied, err := w.imp.Set(ctx, w.conds[cond.Name])
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("%s / %s: impairment: %w", strings.Join(rowNames(b.rows), ", "), cond.Name, err), w.imp.Clear(ctx))
	}
	clear := func(err *error) {
		if cerr := w.imp.Clear(context.WithoutCancel(ctx)); cerr != nil {
			*err = errors.Join(*err, fmt.Errorf("%s / %s: clear impairment: %w", strings.Join(rowNames(b.rows), ", "), cond.Name, cerr))
		}
	}
	return applied, clear, nil
}

// wanCell is what a WAN block measured of its condition before its cells:
// the RTT, the end-to-end loss with the impairment's counters over the
// loss probe (its fallback), and the counters' snapshot the cell starts
// from.
type wanCell struct {
	rtt       impair.RTT
	rttErr    error
	loss      impair.EndToEnd
	lossErr   error
	during    []impair.Counters // over the loss probe; nil when unread
	before    []impair.Counters
	beforeErr error
}

// beginWANCell probes the RTT and the loss end to end, and snapshots the
// impairment's counters around the loss probe and before the cell, once
// the block's paths are up and before their warm-ups. The loss probe takes
// impair.LossProbeDuration plus about a round trip and 0.2 s.
func (r *runner) beginWANCell(ctx context.Context, cond results.Condition) *wanCell {
	w := r.wan
	cc := w.conds[cond.Name]
	count, gap := cc.Probes()
	client := r.topo.Roles[topology.Client].NS
	var c wanCell
	c.rtt, c.rttErr = impair.ProbeRTTEvery(ctx, client, w.probe.Addr(), count, gap)
	pre, preErr := w.imp.Counters(ctx)
	c.loss, c.lossErr = w.probe.ProbeLoss(ctx, client, cc.LossProbe(), cc.RTT+2*cc.Jitter)
	c.before, c.beforeErr = w.imp.Counters(ctx)
	if preErr == nil && c.beforeErr == nil {
		c.during = impair.SubAll(c.before, pre)
	}
	return &c
}

// endWANCell records the block's impairment counters, each path's own
// diagnostics, and every row's verification. With several rows in the
// block the RTT probe and the counters are the block's, shared by all.
func (r *runner) endWANCell(ctx context.Context, c *wanCell, live []*row, cond results.Condition, applied []impair.Applied) {
	w := r.wan
	after, afterErr := w.imp.Counters(ctx)
	cell := impair.SubAll(after, c.before)
	names := rowNames(live)
	shared := func(name string) []string {
		if len(names) < 2 {
			return nil
		}
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == name })
	}
	for _, d := range cell {
		r.rec.diagnostic(results.Diagnostic{
			Transport: names[0], Condition: cond.Name, Name: diagnosticName(w.imp.Method(), d),
			Output: d.Text(w.imp.Method(), appliedFor(applied, d.Role)), SharedWith: shared(names[0]),
		})
	}
	for _, rw := range live {
		if rw.path.Diagnose != nil {
			for _, d := range rw.path.Diagnose() {
				r.rec.diagnostic(results.Diagnostic{Transport: rw.t.Name(), Condition: cond.Name, Name: d.Name, Output: d.Output})
			}
		}
		r.verify(rw.t, cond, c, cell, errors.Join(c.beforeErr, afterErr), shared(rw.t.Name()))
	}
}

func diagnosticName(method string, c impair.Counters) string {
	if method == impair.MethodNetem {
		return c.Where + " netem (netlink qdisc statistics)"
	}
	return c.Where + " (userspace impairment counters)"
}

func appliedFor(applied []impair.Applied, role string) *impair.Applied {
	for i := range applied {
		if applied[i].Role == role {
			return &applied[i]
		}
	}
	return nil
}

// verify judges the cell and records configured against measured.
func (r *runner) verify(t transport.Transport, cond results.Condition, probed *wanCell, cell []impair.Counters, countersErr error, sharedWith []string) {
	c := r.wan.conds[cond.Name]
	rtt := probed.rtt
	v := impair.Judge(c, rtt, probed.loss, probed.during, cell)
	note := v.Note
	goodput, measured := r.cellMedian(t.Name(), cond.Name, "iperf3-1")
	rate := impair.JudgeRate(c, goodput*1e9, measured)
	if !rate.OK {
		v.OK = false
	}
	note = joinNote(note, rate.Note)
	if probed.rttErr != nil {
		note = joinNote(note, "RTT probe: "+probed.rttErr.Error())
	}
	if probed.lossErr != nil {
		v.OK = false
		note = joinNote(note, "loss probe: "+probed.lossErr.Error())
	}
	if countersErr != nil {
		note = joinNote(note, "counters: "+countersErr.Error())
	}
	rec := results.Verification{
		Transport: t.Name(), Condition: cond.Name, Method: r.wan.imp.Method(),
		ConfiguredRTTMs: durationMs(c.RTT), RTTProbes: rtt.N,
		ConfiguredLossPct: c.LossPct, LossProbeDatagrams: v.Packets, LossProbeLost: v.Lost,
		Packets: v.CounterPackets, Lost: v.CounterLost,
		LossFallback: v.LossFallback,
		LossJudged:   v.LossJudged, OK: v.OK, Note: note, SharedWith: sharedWith,
	}
	if rtt.N > 0 {
		m := durationMs(rtt.Median)
		rec.MeasuredRTTMs = &m
	}
	if c.Jitter > 0 {
		exp, got := durationMs(v.ExpectedRTTIQR), durationMs(v.MeasuredRTTIQR)
		rec.ExpectedRTTIQRMs, rec.MeasuredRTTIQRMs = &exp, &got
	}
	if c.RateBps > 0 {
		rec.ConfiguredRateBps = c.RateBps
		if measured {
			g := goodput * 1e9
			rec.MeasuredRateBps = &g
		}
	}
	if v.LossJudged {
		l, lo, hi := v.MeasuredLossPct, v.LossLowPct, v.LossHighPct
		rec.MeasuredLossPct, rec.LossLowPct, rec.LossHighPct = &l, &lo, &hi
		rec.LossConfidence = impair.LossConfidence
	}
	if v.CounterPackets > 0 && countersErr == nil {
		l := v.CounterLossPct
		rec.CounterLossPct = &l
	}
	r.rec.verification(rec)
	verdict := "ok"
	if !v.OK {
		verdict = "NOT VERIFIED"
		r.res.Unverified++
	}
	lossBy := fmt.Sprintf("end to end of %d datagrams", v.Packets)
	if v.LossFallback != "" {
		lossBy = fmt.Sprintf("by the impairment's loss draws over the probe, of %d frames (fallback)", v.LossDrawn)
	}
	r.logf("%s / %s: verification %s: RTT %.2f ms (configured %v), loss %.3f %% (%.3f–%.3f %%) %s (configured %v %%; the impairment's counters %.3f %% of %d packets)%s",
		t.Name(), cond.Name, verdict, durationMs(rtt.Median), durationMs(c.RTT), v.MeasuredLossPct, v.LossLowPct, v.LossHighPct, lossBy, c.LossPct,
		v.CounterLossPct, v.CounterPackets,
		map[bool]string{true: "; " + note, false: ""}[note != ""])
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func durationMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// scpPayload is the file scp copies under cond: the full payload on the
// LAN, the warm-up file elsewhere (as the reference does on its WAN).
func (r *runner) scpPayload(cond results.Condition) string {
	if r.payload == nil {
		return ""
	}
	if _, ok := r.impaired(cond.Name); ok {
		return r.payload.Warm
	}
	return r.payload.Large
}

// cellMedian is the median value of a cell's samples so far (for the
// rate verdict: iperf3's goodput in Gbit/s).
func (r *runner) cellMedian(transport, condition, instrument string) (float64, bool) {
	var xs []float64
	for _, s := range r.doc.Samples {
		if s.Transport == transport && s.Condition == condition && s.Instrument == instrument {
			xs = append(xs, s.Value)
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	return stats.Summarize(xs).Median, true
}

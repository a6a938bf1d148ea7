package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// SelfCheckText renders the harness parity check for the console: one
// line per instrument and the verdict.
func SelfCheckText(c *results.SelfCheck) string {
	var b strings.Builder
	fmt.Fprintf(&b, "harness parity: each tool through twnsbench's own code vs as a bare command (%s), %d pairs of %s s, alternating which goes first\n",
		c.Direct, c.Pairs, trimNum(c.DurationSec))
	if c.CapBps > 0 {
		fmt.Fprintf(&b, "  the path capped at %s Gbit/s for the whole check (tbf on the client's and the server's eth0)\n", num(float64(c.CapBps)/1e9, 3))
	}
	if c.DirectCapBps > 0 {
		fmt.Fprintf(&b, "  the bare command's path capped at %s Gbit/s (tbf on the client's and the server's eth0): a known-bad case, the verdict should be fail\n",
			num(float64(c.DirectCapBps)/1e9, 3))
	}
	lo, hi := 1-c.Tolerance, 1+c.Tolerance
	for _, r := range c.Checks {
		fmt.Fprintf(&b, "  %-9s harness/direct %.3f (%.0f %% CI %.3f–%.3f); direct median %s %s, CV %.1f %% → %s\n",
			r.Instrument, r.Ratio, 100*r.CILevel, r.CILow, r.CIHigh, num(stats.Median(r.Direct), 3), r.Unit, 100*r.DirectCV, parityWhy(r, lo, hi))
	}
	fmt.Fprintf(&b, "verdict: %s (passes when every interval lies within %s–%s)\n", c.Verdict, trimNum(lo), trimNum(hi))
	if c.RPM != nil {
		b.WriteString(rpmCrossText(c.RPM))
	}
	return b.String()
}

func parityWhy(r results.SelfCheckRatio, lo, hi float64) string {
	switch r.Verdict {
	case results.VerdictPass:
		return "pass"
	case results.VerdictFail:
		return fmt.Sprintf("fail: the harness measures %+.1f %% off the bare command", 100*(r.Ratio-1))
	}
	if r.CILevel < 0.95 {
		return fmt.Sprintf("inconclusive: %d pairs give no 95 %% interval", len(r.Ratios))
	}
	return fmt.Sprintf("inconclusive: the host is too noisy (CV %.1f %%): the interval reaches outside %s–%s", 100*r.DirectCV, trimNum(lo), trimNum(hi))
}

// rpmCrossText renders the RPM cross-check: both clients' figures
// (medians of the pairs), how far apart, and what differs in their probe
// times, load and method.
func rpmCrossText(c *results.RPMCrossCheck) string {
	if c.Skipped != "" {
		return "rpm cross-check: skipped: " + c.Skipped + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rpm cross-check: twnsbench's RPM client (harness) and goresponsiveness (%s %s, as a bare command), %d pairs against the same rpm server on the plain path, alternating which goes first; at most %d load-generating connections per direction, limit %s s\n",
		c.Tool, c.Args, len(c.Runs), c.Connections, trimNum(c.LimitSec))
	if len(c.Runs) == 0 {
		return b.String()
	}
	m := func(f func(results.RPMCrossRun) float64) float64 {
		xs := make([]float64, len(c.Runs))
		for i, r := range c.Runs {
			xs[i] = f(r)
		}
		return stats.Median(xs)
	}
	ours, theirs, draft := m(func(r results.RPMCrossRun) float64 { return r.Ours }), m(func(r results.RPMCrossRun) float64 { return r.Theirs }), m(func(r results.RPMCrossRun) float64 { return r.TheirsDraft })
	oSelf, tSelf := m(func(r results.RPMCrossRun) float64 { return r.OursSelfMs }), m(func(r results.RPMCrossRun) float64 { return r.TheirsSelfMs })
	oFor, tFor := m(func(r results.RPMCrossRun) float64 { return r.OursForeignMs }), m(func(r results.RPMCrossRun) float64 { return r.TheirsForeignMs })
	oMbps, tMbps := m(func(r results.RPMCrossRun) float64 { return r.OursMbps }), m(func(r results.RPMCrossRun) float64 { return r.TheirsMbps })
	fmt.Fprintf(&b, "  RPM (medians): twnsbench %s, goresponsiveness %s by its own formula 60000/((self+foreign)/2), %s by the draft's (60000/foreign + 60000/self)/2 from its trimmed means\n",
		num(ours, 0), num(theirs, 0), num(draft, 0))
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range c.Runs {
		lo, hi = math.Min(lo, r.Ours/r.TheirsDraft), math.Max(hi, r.Ours/r.TheirsDraft)
	}
	fmt.Fprintf(&b, "  apart: twnsbench/goresponsiveness %.2f (%.2f against the draft's formula of its means; pair by pair %.2f–%.2f)\n", ours/theirs, ours/draft, lo, hi)
	fmt.Fprintf(&b, "  probe times (ms, medians): self twnsbench %s, goresponsiveness %s; foreign per round trip %s, %s; load goodput (Mbit/s, both directions) %s, %s\n",
		num(oSelf, 1), num(tSelf, 1), num(oFor, 1), num(tFor, 1), num(oMbps, 0), num(tMbps, 0))
	for _, why := range rpmCrossWhy(c, ours/draft, tSelf/oSelf, tFor/oFor, tMbps/oMbps) {
		b.WriteString("  - " + why + "\n")
	}
	return b.String()
}

// rpmCrossWhy says where the two clients' figures part, from what they
// measured: the formula, each probe kind, the load, the stopping rule.
func rpmCrossWhy(c *results.RPMCrossCheck, draftRatio, selfRatio, foreignRatio, loadRatio float64) []string {
	var why []string
	if draftRatio > 0.9 && draftRatio < 1.1 {
		why = append(why, "within 10 % by the draft's formula: the two implementations agree")
	}
	why = append(why, "goresponsiveness's own formula takes the mean of the probe times, not of the two responsivenesses: the slower kind weighs more, so its figure is lower from the same means")
	if selfRatio > 1.1 || selfRatio < 0.9 {
		why = append(why, fmt.Sprintf("its self probes (on the load-generating connections) took %.2f× ours", selfRatio))
	}
	if foreignRatio > 1.1 || foreignRatio < 0.9 {
		why = append(why, fmt.Sprintf("its foreign probes (new connections) took %.2f× ours per round trip", foreignRatio))
	}
	if loadRatio > 1.1 || loadRatio < 0.9 {
		why = append(why, fmt.Sprintf("its load moved %.2f× our goodput with as many connections: both clients' TLS load is CPU-bound on this host, and the probes share the CPU with it", loadRatio))
	}
	unstable := 0
	for _, r := range c.Runs {
		if !r.TheirsStable {
			unstable++
		}
	}
	if unstable > 0 {
		why = append(why, fmt.Sprintf("in %d of %d runs goresponsiveness's throughput never became stable: it then measures 15 s more and averages every probe of the test, where ours averages the last 4 intervals' probes", unstable, len(c.Runs)))
	}
	return why
}

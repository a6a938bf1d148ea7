package report

import (
	"fmt"
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

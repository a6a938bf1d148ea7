package nsbench

import (
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// The verdict follows the interval: inside 1 ± tolerance passes, wholly
// outside fails, anything else — a wide interval, too few pairs — is
// inconclusive, never a pass.
func TestJudgeParity(t *testing.T) {
	direct := []float64{10, 10.2, 9.9, 10.1, 10, 9.8, 10.3, 10}
	scale := func(k float64, xs []float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = k * x
		}
		return out
	}
	for _, c := range []struct {
		name            string
		harness, direct []float64
		want            string
	}{
		{"equal", scale(1.01, direct), direct, results.VerdictPass},
		{"harness 20 % slow", scale(0.8, direct), direct, results.VerdictFail},
		{"noisy", []float64{10, 13, 8, 12, 7, 10, 14, 9}, direct, results.VerdictInconclusive},
		{"five pairs", scale(1, direct[:5]), direct[:5], results.VerdictInconclusive},
	} {
		r := results.SelfCheckRatio{Harness: c.harness, Direct: c.direct}
		judgeParity(&r, 0.05)
		if r.Verdict != c.want {
			t.Errorf("%s: verdict %s (ratio %.3f, CI %.3f–%.3f at %.2f), want %s", c.name, r.Verdict, r.Ratio, r.CILow, r.CIHigh, r.CILevel, c.want)
		}
		if len(r.Ratios) != len(c.harness) || r.Ratios[0] != c.harness[0]/c.direct[0] {
			t.Errorf("%s: ratios %v", c.name, r.Ratios)
		}
	}
	if v := overallVerdict([]results.SelfCheckRatio{{Verdict: results.VerdictPass}, {Verdict: results.VerdictInconclusive}}); v != results.VerdictInconclusive {
		t.Errorf("pass + inconclusive = %s", v)
	}
	if v := overallVerdict([]results.SelfCheckRatio{{Verdict: results.VerdictInconclusive}, {Verdict: results.VerdictFail}}); v != results.VerdictFail {
		t.Errorf("inconclusive + fail = %s", v)
	}
	if v := overallVerdict(nil); v != results.VerdictInconclusive {
		t.Errorf("nothing checked = %s", v)
	}
}

package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// noisyDoc gives every sample of twnsbenchDoc a noise reading: 10 s windows
// on 2 online CPUs, 1 CPU-s of steal each, and one sample whose background
// estimate came out below zero.
func noisyDoc() *results.Document {
	d := twnsbenchDoc()
	d.Env.CPUsOnline = &results.CPUSet{List: "0-1", Count: 2}
	d.Env.Affinity = &results.CPUSet{List: "1", Count: 1}
	for i := range d.Samples {
		steal := 1.0
		d.Samples[i].Noise = &results.Noise{BackgroundCPUSec: 0.1, BackgroundPct: 0.5, StealCPUSec: &steal, StealPct: 5, WindowSec: 10}
	}
	d.Samples[0].Noise.BackgroundCPUSec, d.Samples[0].Noise.BackgroundPct = -0.08, -0.4
	d.Cells = results.Cells(d)
	return d
}

// Steal is its own figure beside the host's busy CPU, never inside it; a
// background estimate below zero is shown as it came out and said to be
// one; the environment names the CPUs online and the run's affinity.
func TestHostCPUStealAndBelowZero(t *testing.T) {
	d := noisyDoc()
	busy := 0.0
	for _, s := range d.Samples {
		busy += s.HostCPUSec
	}
	n := len(d.Samples)
	md := string(Markdown(d))
	for _, want := range []string{
		"Host CPU over the " + plural(n, "sample", "samples") + " metered (" + num(float64(10*n), 1) + " s): busy " + num(busy, 1) +
			" CPU-s (" + num(100*busy/float64(20*n), 1) + " % of 2 CPUs online), steal " + num(float64(n), 2) + " CPU-s (5.0 %), counted apart",
		fmt.Sprintf("1 of %d samples' background estimate came out below zero (lowest -0.4 %%)", n),
		"| CPU | Test CPU (2 CPUs online: 0-1; the run's affinity: 1) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// A document whose samples carry no steal apart (written before
	// steal_cpu_sec) gets no host CPU sentence: its host CPU held steal.
	for i := range d.Samples {
		d.Samples[i].Noise.StealCPUSec = nil
	}
	if strings.Contains(string(Markdown(d)), "Host CPU over the") {
		t.Error("a host-CPU sentence for samples without steal apart")
	}
}

// A cell whose most background is below zero says so in the Noise table.
func TestBackgroundCellBelowZero(t *testing.T) {
	x := -0.4
	if got := backgroundCell(&x); got != "-0.4 % (below zero: estimate)" {
		t.Errorf("backgroundCell(-0.4) = %q", got)
	}
	y := 12.0
	if got := backgroundCell(&y); got != "12.0 %" {
		t.Errorf("backgroundCell(12) = %q", got)
	}
}

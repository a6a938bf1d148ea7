package nsbench

import (
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/metrics"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// newDocument starts the results with what is known before anything runs.
func newDocument(plan *Plan, versions map[string]string) *results.Document {
	d := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Env: results.Env{
			Generated: time.Now().UTC().Format(time.RFC3339),
			CPUModel:  cpuModel(),
			Cores:     runtime.NumCPU(),
			Kernel:    kernelRelease(),
			// The reference's Environment table has Docker and image rows:
			// say what stands in their place here.
			Docker:      "none: network namespaces on the host",
			Image:       "none: the host's own programs (" + osRelease() + ")",
			WAN:         "off",
			Runs:        plan.Runs,
			SizeGB:      results.GiBOf(plan.SizeBytes),
			Harness:     harnessVersion(),
			Provenance:  ReadProvenance().results(),
			SizeBytes:   plan.SizeBytes,
			DurationSec: plan.Duration.Seconds(),
			WarmupSec:   plan.Warmup.Seconds(),
			Impairment:  "none (LAN only)",
		},
		Timings:     &results.Timings{},
		Conditions:  []results.Condition{{Name: results.LAN, Label: "LAN (0 ms RTT, no loss)", ScpPayloadBytes: plan.SizeBytes}},
		Samples:     []results.Sample{},
		RSS:         []results.RSS{},
		Diagnostics: []results.Diagnostic{},
	}
	if plan.RunsAuto {
		d.Env.RunsAuto = &results.RunsAuto{Precision: plan.Precision, PrecisionMs: plan.PrecisionMs, MaxRuns: plan.MaxRuns}
	}
	recordCPUs(&d.Env)
	if pin, err := hostPinLayout(plan.Pin); err == nil { // NewPlan refused the layout otherwise
		d.Env.Pin = pin.record(topology.DefaultRoles)
	}
	for _, t := range toolFacts {
		d.Env.Facts.Add(results.Fact{Key: t.key, Label: t.label, Value: versions[t.tool]})
	}
	// Said once for the run, not per cell: this host's counters are the
	// roles' only when the roles run here.
	if !plan.Hosts.On() {
		d.Env.Facts.Add(results.Fact{Key: HardwareCountersFact, Label: "Hardware counters", Value: metrics.ProbeHardwareCounters(metrics.EventSources).String()})
	}
	var specs []string
	for _, w := range plan.WANs {
		c := w.Condition(0)
		specs = append(specs, c.String())
		// WAN scp copies the warm-up file: a loss-bound copy of the full
		// payload would take hours (the reference's choice).
		d.Conditions = append(d.Conditions, results.Condition{Name: w.Name, Label: w.Label(), ScpPayloadBytes: plan.WarmBytes(),
			Profile: wan.ProfileOf(c)})
	}
	if len(specs) > 0 {
		d.Env.WAN = strings.Join(specs, " ") // BENCH_WAN's form: profiles separated by spaces
		d.Env.Impairment = ""                // named once the method is chosen (setUpImpairment)
	}
	return d
}

// HardwareCountersFact is the Environment's fact saying whether this
// host's CPU counts instructions and cycles (metrics.HardwareCounters).
const HardwareCountersFact = "hardware_counters"

// toolFacts are the programs every run uses whose versions the
// Environment states: the fixtures' and scp's OpenSSH (the client's `ssh
// -V`, which names the distribution's build) and the instruments' tools.
// A transport's own programs are its path's facts.
var toolFacts = []struct{ tool, key, label string }{
	{"ssh", "openssh", "OpenSSH"},
	{"iperf3", "iperf3", "iperf3"},
	{"netperf", "netperf", "netperf"},
}

// recordCPUs records the CPUs online and the run's affinity; one it
// cannot read is named among the fallbacks, and Cores stands alone.
func recordCPUs(e *results.Env) {
	if on, err := metrics.OnlineCPUs(); err == nil {
		e.CPUsOnline = &results.CPUSet{List: on.List, Count: on.Count}
	} else {
		e.Fallbacks = append(e.Fallbacks, "CPUs online unknown ("+err.Error()+"): host CPU shares are of runtime.NumCPU's cores")
	}
	if aff, err := metrics.Affinity(); err == nil {
		e.Affinity = &results.CPUSet{List: aff.List, Count: aff.Count}
	} else {
		e.Fallbacks = append(e.Fallbacks, "CPU affinity unknown: "+err.Error())
	}
}

// cpuModel and kernelRelease read what a host of a run across hosts
// states of itself (preflight.ReadHost), with the same code.
func cpuModel() string {
	if m, err := preflight.CPUModel(); err == nil {
		return m
	}
	return "unknown"
}

// osRelease is the host's PRETTY_NAME from os-release.
func osRelease() string {
	for _, path := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				return strings.Trim(v, `"'`)
			}
		}
	}
	return "unknown OS"
}

func kernelRelease() string {
	if r := preflight.KernelRelease(); r != "" {
		return r
	}
	return "unknown"
}

func harnessVersion() string { return ReadProvenance().String() }

package results

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// HistoryLine is one cell of one run as `run --history DIR` appends it to
// DIR/<fingerprint>.jsonl: one JSON object per line, so a history is
// read, filtered (jq, grep) and appended without parsing what came before.
type HistoryLine struct {
	// Time is the run's Env.Generated (RFC 3339, UTC): the lines of one
	// run share it.
	Time string `json:"time"`
	// Fingerprint is Fingerprint(Env): runs are compared with runs of the
	// same fingerprint only.
	Fingerprint string `json:"fingerprint"`
	HistoryCell
	// Settings are the run's settings that change what a figure means
	// (HistorySettings): a trend compares only runs of the same settings.
	Settings string `json:"settings"`
	// Harness is the twnsbench build that made the run (Env.Harness:
	// version, commit and Go), when the document records it.
	Harness string `json:"harness,omitempty"`
	// Provenance is the same build in fields (Env.Provenance), when the
	// document records it.
	Provenance *Provenance `json:"provenance,omitempty"`
	// Facts are what the cell's transport recorded of its path
	// (Transport.Facts: its programs' versions, the implementation), so
	// a change point can be read against what changed.
	Facts map[string]string `json:"facts,omitempty"`
	// Env are the fingerprint's parts, so a reader can say why two
	// fingerprints differ.
	Env FingerprintEnv `json:"env"`
}

// HistoryCell is a cell's figures as history keeps them (see Cell).
type HistoryCell struct {
	Transport string `json:"transport"`
	Condition string `json:"condition"`
	// ConditionLabel states the condition's profile ("WAN (30 ms RTT,
	// 0.1 % loss)"): two runs' "wan" may be different WANs.
	ConditionLabel string   `json:"condition_label,omitempty"`
	Instrument     string   `json:"instrument"`
	Metric         string   `json:"metric"`
	Unit           string   `json:"unit,omitempty"`
	Better         string   `json:"better,omitempty"`
	N              int      `json:"n"`
	Median         float64  `json:"median"`
	Interval       Interval `json:"interval"`
}

// Interval is a cell's interval of the median (Cell.CILow..CIHigh at
// Cell.CILevel); LowerBounds names the cell's figures that are lower
// bounds (Cell.LowerBounds: "median", "ci_low", …).
type Interval struct {
	Low         float64  `json:"low"`
	High        float64  `json:"high"`
	Level       float64  `json:"level"`
	LowerBounds []string `json:"lower_bounds,omitempty"`
}

// Series names the trend a line belongs to: one metric of one transport,
// condition (by its label, which states the profile) and instrument.
func (c HistoryCell) Series() string {
	cond := c.ConditionLabel
	if cond == "" {
		cond = c.Condition
	}
	return c.Transport + " · " + cond + " · " + c.Instrument + " · " + c.Metric
}

// MedianAtLeast says whether the median is a lower bound (a censored
// reading at or below it).
func (c HistoryCell) MedianAtLeast() bool {
	return slices.Contains(c.Interval.LowerBounds, BoundMedian)
}

// FingerprintEnv is what makes runs comparable: the same kernel, CPU
// model, number of CPUs online and measuring tools' versions. The
// versions of the programs under test (tw, WireGuard, …) are left out on
// purpose: a history exists to show what their changes do.
type FingerprintEnv struct {
	Kernel      string `json:"kernel"`
	CPUModel    string `json:"cpu_model"`
	CoresOnline int    `json:"cores_online"`
	// Tools are the versions of the programs every run measures with
	// (FingerprintTools), by fact key; a tool the run lacked is absent.
	Tools map[string]string `json:"tools,omitempty"`
	// Hosts, in a run across hosts, describe each machine the same way
	// ("client,relay: 6.8.0 · AMD EPYC · 4 CPUs · iperf3 …"), in the
	// document's order.
	Hosts []string `json:"hosts,omitempty"`
}

// FingerprintTools are the Env.Facts keys whose versions are part of the
// fingerprint: the tools that measure (see toolFacts in nsbench), not the
// transports under test.
var FingerprintTools = []string{"openssh", "iperf3", "netperf"}

// FingerprintHostTools are the programs of a host's Tools whose versions
// are part of the fingerprint across hosts: the measuring tools, as
// FingerprintTools on one host. A transport's own programs (openvpn) are
// not: they are reported only by runs of its rows, and a selection of
// rows must not split the history of the others.
var FingerprintHostTools = []string{"iperf3", "netperf", "netserver", "ssh", "sshd"}

// FingerprintOf takes the fingerprint's parts from a results document:
// Kernel, CPUModel, CPUsOnline.Count (Cores when the run could not read
// it), the FingerprintTools facts and, across hosts, each host's own (its
// FingerprintHostTools).
func FingerprintOf(e Env) FingerprintEnv {
	f := FingerprintEnv{Kernel: e.Kernel, CPUModel: e.CPUModel, CoresOnline: e.Cores}
	if e.CPUsOnline != nil {
		f.CoresOnline = e.CPUsOnline.Count
	}
	for _, k := range FingerprintTools {
		if v := e.Facts.Get(k); v != "" {
			if f.Tools == nil {
				f.Tools = map[string]string{}
			}
			f.Tools[k] = v
		}
	}
	for _, h := range e.HostsAcross() {
		tools := make([]string, 0, len(h.Tools))
		for name, v := range h.Tools {
			if slices.Contains(FingerprintHostTools, name) {
				tools = append(tools, name+" "+v)
			}
		}
		slices.Sort(tools)
		f.Hosts = append(f.Hosts, fmt.Sprintf("%s: %s · %s · %d CPUs · %s",
			strings.Join(h.Roles, ","), h.Kernel, h.CPUModel, h.Cores, strings.Join(tools, "; ")))
	}
	return f
}

// Fingerprint is the environment's identity: the first 16 hex digits of
// the SHA-256 of its canonical text, one "key=value" line per part in a
// fixed order (kernel, cpu_model, cores_online, then tool.KEY for each
// tool in sorted key order, then host=… for each host). The same machine
// with the same tools gives the same fingerprint run after run; any
// change in a part gives another.
func Fingerprint(f FingerprintEnv) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel=%s\ncpu_model=%s\ncores_online=%d\n", f.Kernel, f.CPUModel, f.CoresOnline)
	keys := make([]string, 0, len(f.Tools))
	for k := range f.Tools {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "tool.%s=%s\n", k, f.Tools[k])
	}
	for _, h := range f.Hosts {
		fmt.Fprintf(&b, "host=%s\n", h)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])[:16]
}

// Differences names the parts in which f and g differ ("kernel 6.1.0 ≠
// 6.8.0"), in the canonical order.
func (f FingerprintEnv) Differences(g FingerprintEnv) []string {
	var out []string
	diff := func(name, a, b string) {
		if a != b {
			out = append(out, fmt.Sprintf("%s %s ≠ %s", name, orNone(a), orNone(b)))
		}
	}
	diff("kernel", f.Kernel, g.Kernel)
	diff("CPU", f.CPUModel, g.CPUModel)
	diff("CPUs online", fmt.Sprint(f.CoresOnline), fmt.Sprint(g.CoresOnline))
	for _, k := range KeysOf(f.Tools, g.Tools) {
		diff(k, f.Tools[k], g.Tools[k])
	}
	diff("hosts", strings.Join(f.Hosts, " | "), strings.Join(g.Hosts, " | "))
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// HistoryLines are d's cells as history lines (every cell, in the
// document's order), all carrying d's time, fingerprint and harness.
func HistoryLines(d *Document) []HistoryLine {
	env := FingerprintOf(d.Env)
	fp := Fingerprint(env)
	labels := map[string]string{}
	for _, c := range d.Conditions {
		labels[c.Name] = c.Label
	}
	settings := HistorySettings(d.Env)
	if d.Config != nil && d.Config.NIC == "own" { // reference's runs keep the line they always had
		settings += ", the interfaces' own offloads"
	}
	if d.Env.Pin != nil { // unpinned runs keep the line they always had
		settings += ", roles pinned (" + d.Env.Pin.String() + ")"
	}
	facts := map[string]map[string]string{}
	for _, t := range d.Transports {
		facts[t.Name] = t.Facts
	}
	cells := d.Cells
	if len(cells) == 0 {
		cells = Cells(d)
	}
	out := make([]HistoryLine, 0, len(cells))
	for _, c := range cells {
		out = append(out, HistoryLine{
			Time: d.Env.Generated, Fingerprint: fp, Settings: settings, Harness: d.Env.Harness, Provenance: d.Env.Provenance, Facts: facts[c.Transport], Env: env,
			HistoryCell: HistoryCell{
				Transport: c.Transport, Condition: c.Condition, ConditionLabel: labels[c.Condition],
				Instrument: c.Instrument, Metric: c.Metric, Unit: c.Unit, Better: c.Better,
				N: c.N, Median: c.Median,
				Interval: Interval{Low: c.CILow, High: c.CIHigh, Level: c.CILevel, LowerBounds: c.LowerBounds},
			},
		})
	}
	return out
}

// HistorySettings are the settings of a run that change what its figures
// mean, in one line: each sample's duration and warm-up, the scp
// payload, the congestion control and the order of the runs (and, when the
// interfaces kept their own offloads, that: see HistoryLines).
func HistorySettings(e Env) string {
	return fmt.Sprintf("duration %g s, warm-up %g s, payload %g MiB, congestion %s, order %s",
		e.DurationSec, e.WarmupSec, float64(e.SizeBytes)/(1<<20), orNone(e.Congestion), orNone(e.Order))
}

// KeysOf is every key of the maps, sorted, each once.
func KeysOf(ms ...map[string]string) []string {
	var keys []string
	for _, m := range ms {
		for k := range m {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

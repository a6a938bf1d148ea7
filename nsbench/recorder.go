package nsbench

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/profile"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/safedir"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// recorder owns the results document: every change to it goes through
// one of its methods, and save writes it whole (atomically) after each.
// The orchestrator decides what happened; the recorder writes it down.
type recorder struct {
	doc      *results.Document
	file     string        // OUT/bench-results.json
	setup    setupRecorder // what the run was set up as
	profiles *profileRecorder
}

// setupRecorder writes what the run was set up as: its configuration, the
// testbed and how its conditions are made, known before the first sample.
type setupRecorder struct {
	doc *results.Document
}

// newRecorder records into doc, saved as outDir's results document; with
// outDir "" it is kept in memory only.
func newRecorder(doc *results.Document, outDir string) *recorder {
	rc := &recorder{doc: doc, setup: setupRecorder{doc: doc}, profiles: &profileRecorder{}}
	if outDir != "" {
		rc.file = filepath.Join(outDir, results.FileName)
		rc.profiles.dir = outDir
	}
	return rc
}

// save derives the cells and writes the document atomically.
func (rc *recorder) save() error {
	rc.doc.Cells = results.Cells(rc.doc)
	if rc.file == "" {
		return nil
	}
	return results.WriteAtomic(rc.file, rc.doc)
}

func (rc setupRecorder) instruments(decl []results.Instrument) { rc.doc.Instruments = decl }

// topology records the built topology on this host.
func (rc setupRecorder) topology(spec topology.Spec, prefix string, up time.Duration) {
	rc.doc.Timings.TopologyUpSec = up.Seconds()
	var parts []string
	for _, role := range spec.Roles {
		parts = append(parts, fmt.Sprintf("%s %s", role, spec.Addr(role)))
	}
	mtu := spec.MTU
	if mtu == 0 {
		mtu = 1500
	}
	rc.doc.Env.Topology = fmt.Sprintf("network namespaces %s-{%s} joined by veth pairs to one Linux bridge (switch namespace); %s; MTU %d",
		prefix, strings.Join(spec.Roles, ","), strings.Join(parts, ", "), mtu)
}

// hosts records a run whose roles are on hosts of their own: its network
// in words.
func (rc setupRecorder) hosts(network string, up time.Duration) {
	rc.doc.Timings.TopologyUpSec = up.Seconds()
	rc.doc.Env.Topology = network
}

// machines records the machines the roles stood on, each as read there,
// and the role links' offloads, congestion control and the global
// sysctls changed (and restored) to set it: the machines' own where they
// agree, else "per host", each host's then in its RoleLinks.
func (rc setupRecorder) machines(hs []results.Host) {
	e := &rc.doc.Env
	for _, h := range hs {
		e.AddHost(h)
	}
	agreed := func(field func(*results.RoleLinks) string) string {
		var v string
		for i, h := range hs {
			if h.RoleLinks == nil {
				return ""
			}
			if i > 0 && field(h.RoleLinks) != v {
				return "per host (Hosts)"
			}
			v = field(h.RoleLinks)
		}
		return v
	}
	e.Offloads = agreed(func(l *results.RoleLinks) string { return l.Offloads })
	e.Congestion = agreed(func(l *results.RoleLinks) string { return l.Congestion })
	e.SysctlChanges = nil
	for _, h := range hs {
		if h.RoleLinks != nil {
			for _, c := range h.RoleLinks.SysctlChanges {
				if !slices.Contains(e.SysctlChanges, c) {
					e.SysctlChanges = append(e.SysctlChanges, c)
				}
			}
		}
	}
	if len(e.SysctlChanges) > 0 {
		e.CongestionNote = "set as each namespace's default (net.ipv4.tcp_congestion_control), so every TCP socket of every tool uses it"
	}
}

func (rc setupRecorder) scp(form, options string) {
	rc.doc.Env.ScpForm, rc.doc.Env.ScpOptions = form, options
}

// noPayload records that no condition copied a payload.
func (rc setupRecorder) noPayload() {
	for i := range rc.doc.Conditions {
		rc.doc.Conditions[i].ScpPayloadBytes = 0
	}
}

// fallback names a fallback the run used, once.
func (rc *recorder) fallback(f string) {
	if !slices.Contains(rc.doc.Env.Fallbacks, f) {
		rc.doc.Env.Fallbacks = append(rc.doc.Env.Fallbacks, f)
	}
}

// impairment names how the impaired conditions were made.
func (rc setupRecorder) impairment(method, description string, seed *uint64) {
	rc.doc.Env.ImpairmentMethod, rc.doc.Env.Impairment, rc.doc.Env.WANSeed = method, description, seed
	seeded := seed != nil
	rc.doc.Env.LossSeeded = &seeded
}

// config records the run's configuration in `run`'s words.
func (rc setupRecorder) config(plan *Plan, deps Deps) {
	c := &results.RunConfig{
		CellRuns: results.CellRuns{Runs: strconv.Itoa(plan.Runs)},
		Measure:  results.Measure{SizeBytes: plan.SizeBytes, DurationSec: plan.Duration.Seconds(), WarmupSec: plan.Warmup.Seconds()},
		Network:  results.Network{Congestion: plan.Congestion, NIC: plan.NIC, Pin: plan.Pin},
		Schedule: results.Schedule{Order: plan.Order}, Impairment: plan.Impairment, Seed: plan.Seed,
	}
	if !plan.DriftProbe {
		// Recorded only when off: absent means probed, as in earlier files.
		c.DriftProbe = new(bool)
	}
	if plan.RunsAuto {
		c.Runs, c.Precision, c.PrecisionMs, c.MaxRuns = "auto", plan.Precision, plan.PrecisionMs, plan.MaxRuns
	}
	for _, t := range deps.Transports {
		c.Transports = append(c.Transports, t.Name())
	}
	for _, w := range plan.WANs {
		c.WAN = append(c.WAN, w.Condition(0).String())
	}
	if len(c.WAN) == 0 {
		c.WAN = []string{"off"}
	}
	for _, in := range deps.Instruments {
		c.Instruments = append(c.Instruments, in.Name())
	}
	if deps.Ready {
		c.Instruments = append(c.Instruments, instrument.Ready)
	}
	if len(deps.TransportOptions) > 0 {
		c.Options = deps.TransportOptions
	}
	rc.doc.Config = c
}

// seed records the loss seed the run drew.
func (rc setupRecorder) seed(seed uint64) {
	if rc.doc.Config != nil {
		rc.doc.Config.Seed = &seed
	}
}

// order records how the runs are laid out, and the rounds of an
// interleaved run whose paths could not all be up at once.
func (rc setupRecorder) order(order string, rounds [][]string) {
	rc.doc.Env.Order = order
	if len(rounds) > 1 {
		rc.doc.Env.Rounds = rounds
	}
}

func (rc *recorder) transport(t transport.Transport) {
	spec, _ := transport.SpecOf(t.Name())
	rc.doc.Transports = append(rc.doc.Transports, results.Transport{Name: t.Name(), Label: t.Label(), About: t.About(), Plain: spec.Plain, Build: buildOf(t)})
}

// buildOf is what the results record of a build's row (its programs'
// versions once its path was up), nil for another row.
func buildOf(t transport.Transport) *results.Build {
	b, ok := t.(*transport.Built)
	if !ok {
		return nil
	}
	build := b.Build()
	return &build
}

// path records a transport's facts, fallbacks and whether a kernel part
// carries its data (once: every condition builds the same path again).
func (rc *recorder) path(t transport.Transport, p *transport.Path) {
	rc.doc.RecordFacts(t.Name(), p.Facts)
	for i := range rc.doc.Transports {
		if rc.doc.Transports[i].Name == t.Name() {
			if p.Label != "" {
				rc.doc.Transports[i].Label = p.Label
			}
			rc.doc.Transports[i].InKernel = p.InKernel
			rc.doc.Transports[i].Build = buildOf(t)
		}
	}
	for _, f := range p.Fallbacks {
		rc.fallback(t.Name() + ": " + f)
	}
}

// verdicts records the verdicts on two builds of a transport.
func (rc *recorder) verdicts(v *results.Verdicts) {
	if v != nil {
		v.CPUProfile = rc.profiles.profile
	}
	rc.doc.Verdicts = v
}

// skip records that t cannot run under condition ("" for every condition).
func (rc *recorder) skip(t transport.Transport, condition, reason string) {
	rc.doc.Skipped = append(rc.doc.Skipped, results.Skipped{Transport: t.Name(), Label: t.Label(), Condition: condition, Reason: reason})
}

// notApplicable records, once, that an instrument cannot measure through a
// transport's path.
func (rc *recorder) notApplicable(t transport.Transport, condition, instrument, reason string) {
	rc.doc.Skipped = append(rc.doc.Skipped, results.Skipped{Transport: t.Name(), Condition: condition, Instrument: instrument, Reason: reason})
}

// sample records s. Where the transport's own CPU is not attributable (no
// tunnel, or a kernel one), its empty cgroups' 0 is not kept as a figure:
// the sample says why instead.
func (rc *recorder) sample(s results.Sample, harnessCPUSec float64) {
	if t, ok := rc.doc.TransportOf(s.Transport); ok {
		if why := t.OwnCPUAbsent(); why != "" {
			s.TransportCPUSec, s.TransportCPUAbsent = nil, why
		}
	}
	rc.doc.Samples = append(rc.doc.Samples, s)
	rc.doc.Timings.HarnessCPUSec += harnessCPUSec
}

func (rc *recorder) failure(f results.Failure) { rc.doc.Failures = append(rc.doc.Failures, f) }
func (rc *recorder) diagnostic(d results.Diagnostic) {
	rc.doc.Diagnostics = append(rc.doc.Diagnostics, d)
}
func (rc *recorder) verification(v results.Verification) {
	rc.doc.Verification = append(rc.doc.Verification, v)
}
func (rc *recorder) driftProbe(p results.DriftProbe) {
	rc.doc.DriftProbes = append(rc.doc.DriftProbes, p)
}

// rss records a row's peak memory, naming the kernel part a kernel
// tunnel's memory is in.
func (rc *recorder) rss(r results.RSS) {
	if t, ok := rc.doc.TransportOf(r.Transport); ok && r.Label == "" {
		r.InKernel = t.InKernel
	}
	rc.doc.RSS = append(rc.doc.RSS, r)
}

// end records how the run ended. The completion mark is written last: a
// document without it was written by a run that never got here.
func (rc *recorder) end(interrupted bool, runErr error, elapsed, teardown time.Duration) {
	if interrupted {
		rc.doc.Interrupted = "interrupted after " + elapsed.Round(time.Second).String()
	}
	switch {
	case rc.doc.Interrupted != "":
		rc.doc.Incomplete = rc.doc.Interrupted
	case runErr != nil:
		rc.doc.Incomplete = "failed: " + runErr.Error()
	default:
		rc.doc.Complete = true
	}
	rc.doc.Timings.TeardownSec = teardown.Seconds()
	rc.doc.Timings.TotalSec = elapsed.Seconds()
}

// profileRecorder writes the builds' profiles: each build's folded stacks
// beside the results, the comparisons kept until the verdicts carry them
// (run --profile).
type profileRecorder struct {
	dir     string // the output directory; "" keeps nothing on disk
	profile *results.CPUProfile
}

// files writes folded stacks into the output directory.
func (rc *profileRecorder) files(files map[string]profile.Stacks) error {
	if rc.dir == "" {
		return nil
	}
	d, err := safedir.Open("output directory", rc.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	for name, s := range files {
		var buf bytes.Buffer
		if err := s.WriteFolded(&buf); err != nil {
			return fmt.Errorf("profile %s: %w", name, err)
		}
		if err := d.WriteFile(name, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("profile %s: %w", name, err)
		}
	}
	return nil
}

// diff records one comparison of profiles.
func (rc *profileRecorder) diff(d results.ProfileDiff) {
	if rc.profile == nil {
		rc.profile = &results.CPUProfile{Method: profile.Method}
	}
	rc.profile.Comparisons = append(rc.profile.Comparisons, d)
}

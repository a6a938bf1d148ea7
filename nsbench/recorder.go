package nsbench

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// recorder owns the results document: every change to it goes through
// one of its methods, and save writes it whole (atomically) after each.
// The orchestrator decides what happened; the recorder writes it down.
type recorder struct {
	doc  *results.Document
	file string // OUT/bench-results.json
}

func newRecorder(doc *results.Document, outDir string) *recorder {
	return &recorder{doc: doc, file: filepath.Join(outDir, results.FileName)}
}

// save derives the cells and writes the document atomically.
func (rc *recorder) save() error {
	rc.doc.Cells = results.Cells(rc.doc)
	return results.WriteAtomic(rc.file, rc.doc)
}

func (rc *recorder) instruments(decl []results.Instrument) { rc.doc.Instruments = decl }

// topology records the built topology, its offloads, congestion control
// and the global sysctls it changed (and restored).
func (rc *recorder) topology(t *topology.Topology, prefix string, up time.Duration) {
	rc.doc.Timings.TopologyUpSec = up.Seconds()
	var parts []string
	for _, role := range t.Spec.Roles {
		parts = append(parts, fmt.Sprintf("%s %s", role, t.Spec.Addr(role)))
	}
	mtu := t.Spec.MTU
	if mtu == 0 {
		mtu = 1500
	}
	e := &rc.doc.Env
	e.Topology = fmt.Sprintf("network namespaces %s-{%s} joined by veth pairs to one Linux bridge (switch namespace); %s; MTU %d",
		prefix, strings.Join(t.Spec.Roles, ","), strings.Join(parts, ", "), mtu)
	e.Offloads = t.Offloads
	e.Congestion = t.Congestion
	e.SysctlChanges = t.SysctlChanges
	if len(t.SysctlChanges) > 0 {
		e.CongestionNote = "set as each namespace's default (net.ipv4.tcp_congestion_control), so every TCP socket of every tool uses it"
	}
}

func (rc *recorder) scp(form, options string) {
	rc.doc.Env.ScpForm, rc.doc.Env.ScpOptions = form, options
}

// noPayload records that no condition copied a payload.
func (rc *recorder) noPayload() {
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
func (rc *recorder) impairment(method, description string, seed *uint64) {
	rc.doc.Env.ImpairmentMethod, rc.doc.Env.Impairment, rc.doc.Env.WANSeed = method, description, seed
}

func (rc *recorder) transport(t transport.Transport) {
	spec, _ := transport.SpecOf(t.Name())
	rc.doc.Transports = append(rc.doc.Transports, results.Transport{Name: t.Name(), Label: t.Label(), About: t.About(), Plain: spec.Plain})
}

// path records a transport's facts and fallbacks (once: every condition
// builds the same path again).
func (rc *recorder) path(t transport.Transport, p *transport.Path) {
	rc.doc.RecordFacts(t.Name(), p.Facts)
	if p.Label != "" {
		for i := range rc.doc.Transports {
			if rc.doc.Transports[i].Name == t.Name() {
				rc.doc.Transports[i].Label = p.Label
			}
		}
	}
	for _, f := range p.Fallbacks {
		rc.fallback(t.Name() + ": " + f)
	}
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

func (rc *recorder) sample(s results.Sample, harnessCPUSec float64) {
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

func (rc *recorder) rss(r results.RSS) { rc.doc.RSS = append(rc.doc.RSS, r) }

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

package report

import "github.com/twnsbench/twnsbench/nsbench/results"

// Instrument names, as the results document spells them.
const (
	instIperf1 = "iperf3-1"
	instIperf4 = "iperf3-4"
	instTCPRR  = "tcp_rr"
	instScp    = "scp"
)

// view is a results document indexed for rendering. It is built once per
// Markdown call and only read afterwards.
type view struct {
	doc *results.Document
	// twnsbench is false for documents of the reference (Docker) harness,
	// which get the reference report's own prose.
	twnsbench bool
	order     []string // transport names, in report order
	labels    map[string]string
	cells     map[cellKey][]results.Sample
}

type cellKey struct{ transport, condition, instrument string }

func newView(d *results.Document) *view {
	v := &view{
		doc:       d,
		twnsbench: d.SchemaVersion > 0 || d.Env.Harness != "" || len(d.Transports) > 0,
		labels:    map[string]string{},
		cells:     map[cellKey][]results.Sample{},
	}
	for _, s := range d.Samples {
		k := cellKey{s.Transport, s.Condition, s.Instrument}
		v.cells[k] = append(v.cells[k], s)
	}
	v.order = transportOrder(d)
	for _, sk := range d.Skipped {
		if sk.Label != "" {
			v.labels[sk.Transport] = sk.Label
		}
	}
	// Declared labels win over labels carried by a skip record.
	for _, t := range d.Transports {
		if t.Label != "" {
			v.labels[t.Name] = t.Label
		}
	}
	return v
}

// transportOrder is d.Transports' order, then any transport first seen in the
// samples, then any seen only in a skip record: every transport that appears
// anywhere gets its row, once.
func transportOrder(d *results.Document) []string {
	var order []string
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			order = append(order, name)
		}
	}
	for _, t := range d.Transports {
		add(t.Name)
	}
	for _, s := range d.Samples {
		add(s.Transport)
	}
	for _, s := range d.Skipped {
		add(s.Transport)
	}
	return order
}

func (v *view) label(transport string) string {
	if l, ok := v.labels[transport]; ok {
		return l
	}
	if l := results.ReferenceLabel(transport); l != "" {
		return l
	}
	return transport
}

func (v *view) samples(transport, condition, instrument string) []results.Sample {
	return v.cells[cellKey{transport, condition, instrument}]
}

// skipReason reports whether transport was skipped under condition; a skip
// record without a condition covers every condition. A skip of one
// instrument does not skip the row.
func (v *view) skipReason(transport, condition string) (string, bool) {
	for _, s := range v.doc.Skipped {
		if s.Instrument == "" && s.Transport == transport && (s.Condition == "" || s.Condition == condition) {
			return s.Reason, true
		}
	}
	return "", false
}

// measured reports whether transport has at least one sample: prose about
// a transport that was skipped everywhere would describe nothing shown.
func (v *view) measured(transport string) bool {
	for _, s := range v.doc.Samples {
		if s.Transport == transport {
			return true
		}
	}
	return false
}

// fullRuns is the number of runs every full cell holds, for rangeCell; 0
// under --runs auto, where each cell's pilot fixes its own n and every
// cell shows it.
func (v *view) fullRuns() int {
	if v.doc.Env.RunsAuto != nil {
		return 0
	}
	return v.doc.Env.Runs
}

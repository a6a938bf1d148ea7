package report

import (
	"slices"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// A censored run's reading (rrul's loaded latency when a probe outlasted
// its test) is a lower bound: a bar drawn from one says "≥", and the
// footer says what that means.

// atLeastMark prefixes a figure that is a lower bound.
func atLeastMark(atLeast bool) string {
	if atLeast {
		return "≥ "
	}
	return ""
}

// readings are the samples' readings of one metric, as results.Cells
// collects them, of the samples whose metric was probed so (probeOfKey)
// when probe is set.
func (v *view) readings(ss []results.Sample, metric, probe string) []results.Reading {
	var rs []results.Reading
	for _, s := range ss {
		if probe != "" && probeOfKey(s, metric) != probe {
			continue
		}
		if r, ok := v.doc.ReadingOf(s, metric); ok {
			rs = append(rs, r)
		}
	}
	return rs
}

// boundsCaption explains "≥" when a bar drawn is a lower bound.
func (c *chart) boundsCaption(bars [][]bar) string {
	for _, bs := range bars {
		if slices.ContainsFunc(bs, func(b bar) bool { return b.spread.atLeast || b.spread.hiAtLeast }) {
			return " ≥: a lower bound (censored)."
		}
	}
	return ""
}

// probesOfKey are the panels a time metric or latency series key of
// instrument gets under condition, one per probe: TCP_RR alone for a key
// of the TCP_RR flow beside ICMP (probeOfKey), else probesOf's.
func (v *view) probesOfKey(condition, instrument, key string) []string {
	if instrument == instRRUL && strings.HasPrefix(key, results.TCPRRFlow) {
		return []string{probeTCPRR}
	}
	return v.probesOf(condition, instrument)
}

// probesOf are the latency probes instrument's samples under condition
// used, in probeOf's order, when they used more than one: their time
// metrics then get a panel per probe, never one for both.
func (v *view) probesOf(condition, instrument string) []string {
	used := map[string]bool{}
	for _, s := range v.doc.Samples {
		if s.Condition == condition && s.Instrument == instrument && s.Method != "" {
			used[probeOf(s)] = true
		}
	}
	if len(used) < 2 {
		return []string{""}
	}
	return []string{probeICMP, probeTCPRR}
}

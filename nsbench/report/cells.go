package report

import (
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Each column of a results row is its own median over the runs, never the
// values of one "median run": that is what reproduces the reference report
// cell for cell.

// resultsHeader is the reference's column set; payload sizes the scp column.
func resultsHeader(payload int64) []string {
	scp := "scp (MB/s)"
	if payload > 0 {
		scp = "scp " + sizeLabel(payload) + " (MB/s)"
	}
	return []string{
		"Transport",
		"iperf3 1 stream (Gbit/s)",
		"iperf3 4 streams (Gbit/s)",
		"TCP_RR (trans/s)",
		"TCP_RR p50 / p99 (µs)",
		scp,
		"scp wall (s)",
		"wire overhead",
		"Gbit/s per busy core",
		"CPU-s per scp run client / server / relay",
	}
}

// resultsInstruments are the instruments whose figures fill each column of
// the results row ("" for a column that is not one instrument's median).
var resultsInstruments = []string{"", instIperf1, instIperf4, instTCPRR, "", instScp, "", "", "", ""}

// resultsRow is one transport's row under one condition.
func (v *view) resultsRow(transport, condition string) []string {
	label := v.label(transport)
	if _, ok := v.skipReason(transport, condition); ok {
		row := []string{label, skippedCell}
		for len(row) < len(resultsHeader(0)) {
			row = append(row, dash)
		}
		return row
	}
	runs := v.fullRuns()
	iperf1 := v.samples(transport, condition, instIperf1)
	iperf4 := v.samples(transport, condition, instIperf4)
	rr := v.samples(transport, condition, instTCPRR)
	scp := v.samples(transport, condition, instScp)
	return []string{
		label,
		rangeCell(values(iperf1), precGbps, runs),
		rangeCell(values(iperf4), precGbps, runs),
		rangeCell(values(rr), precTrans, runs),
		latencyCell(rr),
		rangeCell(values(scp), precMBps, runs),
		medianCell(walls(scp), precWall),
		overheadCell(scp),
		medianCell(perBusyCore(iperf1), precGbps),
		cpuCell(scp),
	}
}

func values(ss []results.Sample) []float64 {
	xs := make([]float64, 0, len(ss))
	for _, s := range ss {
		xs = append(xs, s.Value)
	}
	return xs
}

func walls(ss []results.Sample) []float64 {
	xs := make([]float64, 0, len(ss))
	for _, s := range ss {
		xs = append(xs, s.WallSec)
	}
	return xs
}

// latencyCell is "p50 / p99": the median of the p50s and the median of the
// p99s, each over the samples that carry it.
func latencyCell(rr []results.Sample) string {
	var p50, p99 []float64
	for _, s := range rr {
		if s.P50Us != nil {
			p50 = append(p50, *s.P50Us)
		}
		if s.P99Us != nil {
			p99 = append(p99, *s.P99Us)
		}
	}
	if len(p50) == 0 && len(p99) == 0 {
		return dash
	}
	return medianCell(p50, precMicros) + " / " + medianCell(p99, precMicros)
}

// overheadCell is the median over the scp samples of wire/payload − 1 (the
// per-sample ratio, not the ratio of medians), as a percentage.
func overheadCell(scp []results.Sample) string {
	var xs []float64
	for _, s := range scp {
		if s.WireBytes == nil || s.PayloadBytes == nil || *s.PayloadBytes <= 0 {
			continue
		}
		xs = append(xs, (float64(*s.WireBytes)/float64(*s.PayloadBytes)-1)*100)
	}
	if len(xs) == 0 {
		return dash
	}
	return medianCell(xs, precPercent) + " %"
}

// perBusyCore is, per iperf3 1-stream sample, the goodput divided by the
// average number of host cores busy during it (host busy CPU-s ÷ wall).
// Samples without a CPU or wall reading are left out rather than divided by
// zero.
func perBusyCore(iperf1 []results.Sample) []float64 {
	var xs []float64
	for _, s := range iperf1 {
		if s.HostCPUSec <= 0 || s.WallSec <= 0 {
			continue
		}
		xs = append(xs, s.Value/(s.HostCPUSec/s.WallSec))
	}
	return xs
}

// cpuRoles is the order of the CPU-s column's parts.
var cpuRoles = []string{"client", "server", "relay"}

// roleCPU is each sample's cgroup CPU-seconds of role, where measured.
func roleCPU(ss []results.Sample, role string) []float64 {
	var xs []float64
	for _, s := range ss {
		if sec, ok := s.RoleCPUSec[role]; ok {
			xs = append(xs, sec)
		}
	}
	return xs
}

// cpuCell is "client / server / relay": per role, the median of the scp
// samples' cgroup CPU-seconds. A role no sample measured shows a dash.
func cpuCell(scp []results.Sample) string {
	parts := make([]string, len(cpuRoles))
	measured := false
	for i, role := range cpuRoles {
		xs := roleCPU(scp, role)
		measured = measured || len(xs) > 0
		parts[i] = medianCell(xs, precCPU)
	}
	if !measured {
		return dash
	}
	return strings.Join(parts, " / ")
}

// Package results owns the results document: its JSON schema, atomic writes
// after every sample, and reading it back.
//
// Field names follow tw's Docker benchmark (bench-results.json) so that a
// result from either harness can be read by the other's tooling. New fields
// are additions, never renames.
package results

import (
	"encoding/json"
	"fmt"
	"math"
)

// SchemaVersion is bumped when a field changes meaning. The reference
// harness's files carry none (read as 0).
const SchemaVersion = 1

// FileName is the results document's name inside the output directory.
const FileName = "bench-results.json"

// Document is one run's results.
type Document struct {
	SchemaVersion int          `json:"schema_version"`
	Env           Env          `json:"env"`
	Timings       *Timings     `json:"timings,omitempty"`
	Transports    []Transport  `json:"transports,omitempty"`
	Instruments   []Instrument `json:"instruments,omitempty"`
	Conditions    []Condition  `json:"conditions"`
	Samples       []Sample     `json:"samples"`
	RSS           []RSS        `json:"rss"`
	Diagnostics   []Diagnostic `json:"diagnostics"`
	Skipped       []Skipped    `json:"skipped,omitempty"`
	Failures      []Failure    `json:"failures,omitempty"`
	Cells         []Cell       `json:"cells,omitempty"`
	// Verdicts, in a run of two builds of a transport, are its verdicts.
	Verdicts    *Verdicts `json:"verdicts,omitempty"`
	Interrupted string    `json:"interrupted,omitempty"`

	// Complete is set only when the run reached its end: a document
	// without it (a killed harness, one still running) is incomplete.
	// Incomplete says why a finished run is not complete ("interrupted
	// after 2m", "failed: …"). The reference harness's documents carry
	// neither and are complete by construction (see IsComplete).
	Complete   bool   `json:"complete,omitempty"`
	Incomplete string `json:"incomplete,omitempty"`

	// Verification holds, per impaired cell, the condition configured
	// against the one measured (present when the run had a WAN condition).
	Verification []Verification `json:"verification,omitempty"`

	// DriftProbes are the host's own figures at the start and the end of
	// the run (see DriftProbe).
	DriftProbes []DriftProbe `json:"drift_probes,omitempty"`

	// Config is the run's configuration as `run` takes it: `twnsbench
	// rerun` runs it again.
	Config *RunConfig `json:"config,omitempty"`
}

// Env describes where and how the run was made. The first block of fields is
// the reference's; the rest are twnsbench's additions.
type Env struct {
	Generated string `json:"generated"`
	CPUModel  string `json:"cpu_model"`
	Cores     int    `json:"cores"`
	Kernel    string `json:"kernel"`
	Docker    string `json:"docker,omitempty"`
	Image     string `json:"image,omitempty"`
	// Facts are the programs' versions and the implementations the run
	// used, as the transports and the harness state them (see Fact), in
	// the Environment's order. The reference's own rows among them (tw,
	// openssh, iperf3, netperf, wireguard) are written at the top of env
	// too, where its reader looks (compat.go).
	Facts      Facts  `json:"facts,omitempty"`
	WAN        string `json:"wan"`
	Offloads   string `json:"offloads"`
	ScpForm    string `json:"scp_form"`
	ScpOptions string `json:"scp_options"`
	Runs       int    `json:"runs"`
	// SizeGB is the LAN payload in whole GiB, an integer as the
	// reference's loader requires; SizeBytes holds the exact size.
	SizeGB WholeGiB `json:"size_gb"`

	Harness string `json:"harness,omitempty"`
	// Provenance is Harness in fields: the build that made the run.
	Provenance     *Provenance `json:"provenance,omitempty"`
	SizeBytes      int64       `json:"size_bytes,omitempty"`
	DurationSec    float64     `json:"duration_sec,omitempty"`
	WarmupSec      float64     `json:"warmup_sec,omitempty"`
	Congestion     string      `json:"congestion,omitempty"`
	CongestionNote string      `json:"congestion_note,omitempty"`
	Impairment     string      `json:"impairment,omitempty"`
	Topology       string      `json:"topology,omitempty"`
	SysctlChanges  []string    `json:"sysctl_changes,omitempty"`
	Fallbacks      []string    `json:"fallbacks,omitempty"`

	// ImpairmentMethod is "netem" or "userspace"; WANSeed is the loss
	// sequence's seed where the method uses one.
	ImpairmentMethod string  `json:"impairment_method,omitempty"`
	WANSeed          *uint64 `json:"wan_seed,omitempty"`
	// LossSeeded says whether the loss draws followed WANSeed (the
	// userspace impairment) or were the kernel's own (netem: unseeded).
	LossSeeded *bool `json:"loss_seeded,omitempty"`

	// Order is how the runs were laid out: "interleaved" (every transport
	// up together under each condition, run k of each in turn) or
	// "reference" (one transport after the other). Absent: the reference.
	Order string `json:"order,omitempty"`
	// Rounds, in an interleaved run whose paths could not all be up at
	// once, are the groups that were, in order (by transport id).
	Rounds [][]string `json:"rounds,omitempty"`
	// RunsAuto is set when the number of runs was --runs auto; Runs is
	// then the least per cell.
	RunsAuto *RunsAuto `json:"runs_auto,omitempty"`

	// CPUs are the CPUs the run had and where its roles ran on them.
	CPUs

	// Hosts are the machines a run across hosts put its roles on (see
	// Host); absent when every role was on this one.
	Hosts []Host `json:"hosts,omitempty"`
}

// RunsAuto is --runs auto's rule: per cell, a pilot of Env.Runs runs fixes
// the cell's number of runs from its spread and Precision (relative to the
// median), at most MaxRuns (Document.PlannedRuns); every run then counts.
type RunsAuto struct {
	Precision float64 `json:"precision"`
	MaxRuns   int     `json:"max_runs"`
	// PrecisionMs is the half-width (ms) a difference's interval may have
	// whatever its median (Metric.Difference): a median near 0 has no
	// relative precision. Absent in documents written before it, whose
	// differences were held to Precision alone.
	PrecisionMs float64 `json:"precision_ms,omitempty"`
}

// Timings are the harness's own costs, in seconds.
type Timings struct {
	TopologyUpSec float64 `json:"topology_up_sec"`
	TeardownSec   float64 `json:"teardown_sec"`
	TotalSec      float64 `json:"total_sec,omitempty"`
	HarnessCPUSec float64 `json:"harness_cpu_sec,omitempty"`
}

// Transport is a transport that took part, with its report label, what
// it says of itself, and the facts its path recorded (implementation,
// versions, negotiated parameters).
type Transport struct {
	Name  string            `json:"name"`
	Label string            `json:"label"`
	About string            `json:"about,omitempty"`
	Facts map[string]string `json:"facts,omitempty"`
	// Plain marks the path without a tunnel: the baseline of the tunnel
	// comparison.
	Plain bool `json:"plain,omitempty"`
	// InKernel names the kernel part that carried the path's data ("kernel
	// WireGuard", "kernel ESP (xfrm), manual SAs"): no process of the
	// transport did that work, so its CPU and memory are not attributable
	// to it (they show only in the host's CPU).
	InKernel string `json:"in_kernel,omitempty"`
	// Build, on a build's row (NAME@LABEL), is its label and programs.
	Build *Build `json:"build,omitempty"`
}

// OwnCPUAbsent says why the transport's own CPU is not a figure, or "":
// a path without a tunnel has no transport processes, and a kernel tunnel
// does its work in no process. The report shows a dash with this reason,
// and samples carry it (TransportCPUAbsent) instead of a 0.
func (t Transport) OwnCPUAbsent() string {
	switch {
	case t.Plain:
		return "no tunnel: the plain path has no transport process"
	case t.InKernel != "":
		return t.InKernel + ": in the kernel, not attributable per transport — see host CPU"
	}
	return ""
}

// TransportOf returns the entry of transport name, if d has one.
func (d *Document) TransportOf(name string) (Transport, bool) {
	for _, t := range d.Transports {
		if t.Name == name {
			return t, true
		}
	}
	return Transport{}, false
}

// Condition is a network condition the transports were measured under.
type Condition struct {
	Name            string `json:"name"`
	Label           string `json:"label"`
	ScpPayloadBytes int64  `json:"scp_payload_bytes"`
	// Profile is an impaired condition's settings; absent on the LAN.
	Profile *Profile `json:"profile,omitempty"`
}

// Profile is an impaired condition as configured: each impaired direction
// (the client's and the server's egress) gets RTT/2 of delay, ±JitterMs of
// jitter, the full loss, and the rate cap.
type Profile struct {
	Spec     string  `json:"spec"` // as --wan takes it: "40ms:0.2%:jitter=5ms:rate=100mbit"
	RTTMs    float64 `json:"rtt_ms"`
	LossPct  float64 `json:"loss_pct"`
	JitterMs float64 `json:"jitter_ms,omitempty"`
	RateBps  uint64  `json:"rate_bps,omitempty"`
}

// Sample is one measurement of one instrument. Pointer fields are absent when
// the instrument does not produce them: a report never shows a number that
// was not measured.
type Sample struct {
	Transport    string   `json:"transport"`
	Condition    string   `json:"condition"`
	Instrument   string   `json:"instrument"`
	Run          int      `json:"run"`
	WallSec      float64  `json:"wall_sec"`
	Value        float64  `json:"value"`
	Unit         string   `json:"unit,omitempty"`
	MeanUs       *float64 `json:"mean_us,omitempty"`
	P50Us        *float64 `json:"p50_us,omitempty"`
	P99Us        *float64 `json:"p99_us,omitempty"`
	PayloadBytes *int64   `json:"payload_bytes,omitempty"`
	WireBytes    *int64   `json:"wire_bytes,omitempty"`
	// MovedBytes is what the tool counted as carried (iperf3's received
	// bytes, scp's payload); TunnelBytes what the tunnel's own counter
	// (its device's, or its daemon's) carried meanwhile, both directions:
	// at least MovedBytes, or the traffic bypassed the tunnel.
	MovedBytes  *int64 `json:"moved_bytes,omitempty"`
	TunnelBytes *int64 `json:"tunnel_bytes,omitempty"`
	// HostCPUSec is the host's busy CPU-s (every process and the kernel),
	// steal excluded (Noise.StealCPUSec).
	HostCPUSec float64 `json:"host_cpu_sec"`
	// RoleCPUSec is CPU-s per role's cgroup (client, server, relay, and
	// impair for the userspace impairment): the reference's
	// container_cpu_sec, whose roles were containers.
	RoleCPUSec map[string]float64 `json:"container_cpu_sec"`
	// TransportCPUSec is, per role, the CPU-s of the transport's own
	// processes (its cgroup: daemons and their children, not the fixtures'
	// sshd, iperf3 or netserver, nor the instruments). Kernel work (kernel
	// WireGuard, xfrm) shows only in host_cpu_sec. Absent (null) where
	// the transport's own CPU is not attributable: TransportCPUAbsent says
	// why (Transport.OwnCPUAbsent).
	TransportCPUSec    map[string]float64 `json:"transport_cpu_sec,omitempty"`
	TransportCPUAbsent string             `json:"transport_cpu_absent,omitempty"`
	Extra              map[string]float64 `json:"extra,omitempty"`
	// Series are what the tool saw over the sample's time (iperf3's
	// per-interval throughput, rrul's latency probes), for time-series
	// and distribution charts.
	Series []Series `json:"series,omitempty"`
	// Method names how the sample was measured when its instrument
	// chooses by path (rrul's latency probe: ICMP echo or netperf TCP_RR).
	Method string `json:"method,omitempty"`
	// Noise is what the host did for others during the sample.
	Noise *Noise `json:"noise,omitempty"`
}

// Noise is the host's work besides this run during one sample, as shares
// of the host's CPU capacity over the metered window (100 = every core
// online). Background is process-context CPU outside the run's cgroups,
// the harness and kernel threads (metrics.Noise says what it cannot
// see): at least 0 as twnsbench reads it now; documents whose estimate
// summed the processes' CPU can hold values below zero, kept as they came. Steal is a
// hypervisor running others: not in host_cpu_sec (documents before
// steal_cpu_sec counted it there).
type Noise struct {
	BackgroundCPUSec float64  `json:"background_cpu_sec"`
	BackgroundPct    float64  `json:"background_pct"`
	StealCPUSec      *float64 `json:"steal_cpu_sec,omitempty"`
	StealPct         float64  `json:"steal_pct"`
	WindowSec        float64  `json:"window_sec"`
	// Machines are, in a run across hosts, each machine's own shares, by
	// its login; the fields above are the machines' together, over their
	// CPUs summed.
	Machines map[string]MachineNoise `json:"machines,omitempty"`
}

// MachineNoise is one machine's other work during a sample, as shares of
// its own CPUs.
type MachineNoise struct {
	BackgroundPct float64 `json:"background_pct"`
	StealPct      float64 `json:"steal_pct"`
}

// Series is one quantity over a sample's time: V[i] measured at T[i]
// seconds from the start of the tool's run (an interval's end, a probe's
// send time). Key names it within the sample ("throughput",
// "throughput_up", "latency_idle", "latency_loaded"). rrul's loaded series
// share one time axis, from the start of the load; its idle latency counts
// from the idle probe's start.
type Series struct {
	Key  string    `json:"key"`
	Unit string    `json:"unit"`
	T    []float64 `json:"t"`
	V    []float64 `json:"v"`
}

// DriftProbe is one measurement of the host itself: iperf3 with one
// stream for a couple of seconds straight to the server, no tunnel, taken
// before the first transport and after the last. A gap between the two is
// the host drifting under the run (other load, thermal, frequency): it
// lands on whichever transports ran in between.
type DriftProbe struct {
	When    string  `json:"when"` // "start" or "end"
	At      string  `json:"at"`   // RFC 3339
	Gbps    float64 `json:"gbps"`
	WallSec float64 `json:"wall_sec"`
}

// RSS holds a transport's peak memory, by two different measures kept
// apart: PeakKB is each process's own peak resident set (VmHWM, keyed
// "role / process"); CgroupPeakKB is, per role, the transport's cgroup's
// memory.peak (every process of it together, forked children included,
// with the kernel memory charged to them), where the kernel keeps it.
// InKernel names a kernel data path (see Transport.InKernel), whose
// memory no process or cgroup holds: it is not attributable, never 0.
type RSS struct {
	Transport    string           `json:"transport"`
	Label        string           `json:"label,omitempty"`
	PeakKB       map[string]int64 `json:"peak_kb"`
	CgroupPeakKB map[string]int64 `json:"cgroup_peak_kb,omitempty"`
	InKernel     string           `json:"in_kernel,omitempty"`
}

// Diagnostic is raw state captured for a cell, so a result can be reconciled
// against the kernel's own counters.
type Diagnostic struct {
	Transport string `json:"transport"`
	Condition string `json:"condition"`
	Name      string `json:"name"`
	Output    string `json:"output"`
	// SharedWith are the other transports whose interleaved cells the
	// counters also span.
	SharedWith []string `json:"shared_with,omitempty"`
}

// Verification is one impaired cell's condition, configured and measured:
// the RTT probed just before the cell (median of kernel-timed TCP
// handshakes from the client to a listener in the server's namespace), the
// loss counted end to end just before it (a UDP datagram stream to that
// listener and back), and the impairment's own counters during it.
// OK is false when the RTT is off by more than 1 ms, or the end-to-end
// loss's interval does not hold the configured loss (Note says which, or
// why the loss was not judged).
type Verification struct {
	Transport         string   `json:"transport"`
	Condition         string   `json:"condition"`
	Method            string   `json:"method,omitempty"`
	ConfiguredRTTMs   float64  `json:"configured_rtt_ms"`
	MeasuredRTTMs     *float64 `json:"measured_rtt_ms"` // null: no probe completed
	RTTProbes         int      `json:"rtt_probes,omitempty"`
	ConfiguredLossPct float64  `json:"configured_loss_pct"`
	// MeasuredLossPct is the loss end to end: of the loss probe's
	// datagrams (client → server, and the server's echoes back), those
	// that never arrived, with its interval (LossLowPct–LossHighPct at
	// LossConfidence, Wilson). null: no datagram counted. Documents before
	// the loss probe (no loss_probe_datagrams) hold the counters' figure.
	MeasuredLossPct    *float64 `json:"measured_loss_pct"`
	LossLowPct         *float64 `json:"loss_low_pct,omitempty"`
	LossHighPct        *float64 `json:"loss_high_pct,omitempty"`
	LossConfidence     float64  `json:"loss_confidence,omitempty"`
	LossProbeDatagrams uint64   `json:"loss_probe_datagrams,omitempty"` // offered, both directions
	LossProbeLost      uint64   `json:"loss_probe_lost,omitempty"`
	// LossFallback, when set, says why the end-to-end count was not
	// usable (the probe's own sockets dropped datagrams, a receiver fell
	// behind, the impairment lost probe frames other than by its loss
	// draws); MeasuredLossPct and its interval are then the impairment's
	// loss draws over the probe, and LossProbeLost / LossProbeDatagrams
	// stay the datagrams' count.
	LossFallback string `json:"loss_fallback,omitempty"`
	// Packets and Lost are the impairment's own counters over the cell
	// (offered to the impaired directions, and lost), CounterLossPct their
	// ratio: diagnostics beside the end-to-end count.
	Packets        uint64   `json:"packets"`
	Lost           uint64   `json:"lost"`
	CounterLossPct *float64 `json:"counter_loss_pct,omitempty"`
	LossJudged     bool     `json:"loss_judged"`
	RTTSpread
	// With a rate cap: the cap, and the bulk TCP goodput through it (the
	// median of the cell's iperf3 1-stream samples).
	ConfiguredRateBps uint64   `json:"configured_rate_bps,omitempty"`
	MeasuredRateBps   *float64 `json:"measured_rate_bps,omitempty"`
	OK                bool     `json:"ok"`
	Note              string   `json:"note,omitempty"`
	// SharedWith are the transports interleaved in the same block: the
	// RTT probe and the loss counters span their cells too.
	SharedWith []string `json:"shared_with,omitempty"`
	// Narrow is the verdict at a narrow hop (a --wan with mtu=); nil
	// without one.
	Narrow *NarrowPath `json:"narrow_path,omitempty"`
}

// RTTSpread is, with jitter, the RTT's interquartile range the jitter
// makes, and the probes'.
type RTTSpread struct {
	ExpectedRTTIQRMs *float64 `json:"expected_rtt_iqr_ms,omitempty"`
	MeasuredRTTIQRMs *float64 `json:"measured_rtt_iqr_ms,omitempty"`
}

// Skipped is a transport that could not run, with the reason the report shows.
type Skipped struct {
	Transport string `json:"transport"`
	Label     string `json:"label,omitempty"`
	Condition string `json:"condition,omitempty"`
	// Instrument, when set, says only that instrument could not measure
	// through the transport (e.g. no ICMP over a port forwarder); the rest
	// of the transport's row stands.
	Instrument string `json:"instrument,omitempty"`
	Reason     string `json:"reason"`
}

// Failure is a sample that could not be measured, with the tool's own
// message. Its cell shows the other runs' values, or "—" when none remain.
type Failure struct {
	Transport  string `json:"transport"`
	Condition  string `json:"condition"`
	Instrument string `json:"instrument"`
	Run        int    `json:"run"`
	Error      string `json:"error"`
	// Checks are what the harness found when it checked, after the
	// failure, each part the sample went through ("path: answered an SSH
	// exchange"); Repairs what it built again because of it.
	Checks  []string `json:"checks,omitempty"`
	Repairs []string `json:"repairs,omitempty"`
	// LostSec is the time from the sample's start until the run could go
	// on (checks and repairs done).
	LostSec *float64 `json:"lost_sec,omitempty"`
	// Narrow is the narrow hop's counts over the failed sample, under a
	// condition with one: whether the hop dropped its packets meanwhile.
	Narrow *NarrowCounts `json:"narrow,omitempty"`
}

// WholeGiB is a size in whole GiB. It is written as an integer and read
// from any number: documents of schema 1 before this type wrote fractions
// (0.0625 for 64 MiB), and reading them rounds to the nearest GiB.
type WholeGiB int64

// GiBOf rounds bytes to the nearest whole GiB.
func GiBOf(bytes int64) WholeGiB { return WholeGiB(math.Round(float64(bytes) / (1 << 30))) }

func (g *WholeGiB) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("size_gb: %w", err)
	}
	*g = WholeGiB(math.Round(f))
	return nil
}

// PayloadBytes is the LAN scp payload: size_bytes where the document has
// it, else the reference's whole GiB.
func (e Env) PayloadBytes() int64 {
	if e.SizeBytes > 0 {
		return e.SizeBytes
	}
	return int64(e.SizeGB) << 30
}

// IsComplete reports whether the run that wrote d reached its end. The
// reference harness writes its document once, at the end, so a document
// without a schema version is complete.
func (d *Document) IsComplete() bool { return d.SchemaVersion == 0 || d.Complete }

// IncompleteReason says why d is not complete, for reports and compare.
func (d *Document) IncompleteReason() string {
	switch {
	case d.IsComplete():
		return ""
	case d.Incomplete != "":
		return d.Incomplete
	case d.Interrupted != "":
		return d.Interrupted
	default:
		return "no completion mark: the harness was killed, crashed, or is still running"
	}
}

package results

// Metric is one quantity an instrument yields, as its samples carry it.
type Metric struct {
	// Key is where a sample holds it: "value", "p50_us", "p99_us", or the
	// name of one of its extra values.
	Key    string `json:"key"`
	Label  string `json:"label"`
	Unit   string `json:"unit"`
	Better string `json:"better,omitempty"` // BetterHigher, BetterLower, or "" when neither is
	// CensoredBy names the extra value (CensoredWaitMs, or AtLeastKey of
	// a metric) whose presence makes a sample's reading of this metric a
	// lower bound; "" for a metric that is always exact.
	CensoredBy string `json:"censored_by,omitempty"`
	// Difference marks a difference of two readings (rrul's value: loaded
	// minus idle latency), which can lie at or near 0: it has no CV, and
	// --runs auto holds it to RunsAuto.PrecisionMs besides the relative
	// precision (stats.Tolerance).
	Difference bool `json:"difference,omitempty"`
	// Curve names the sweep this metric is one point of ("transactions
	// by message size"), and At is its size in bytes: the report draws
	// the metrics of one instrument and curve against At (a table and a
	// line per transport). "" and 0 for a metric that is not a point.
	Curve string `json:"curve,omitempty"`
	At    int    `json:"at,omitempty"`
	// MinEffect is the two-builds verdict's min effect for this metric
	// when the run gives no --min-effect (relative; 0: the verdict's
	// default): a metric whose readings repeat far closer than that
	// default declares a smaller one.
	MinEffect float64 `json:"min_effect,omitempty"`
}

// The directions a metric improves in.
const (
	BetterHigher = "higher"
	BetterLower  = "lower"
)

// Instrument is an instrument that took part and the metrics it declared.
type Instrument struct {
	Name    string   `json:"name"`
	Tool    string   `json:"tool,omitempty"`
	Metrics []Metric `json:"metrics"`
	// OncePerPath marks a sample recorded once per path brought up (the
	// time to ready), not once per run: --runs does not apply to it.
	OncePerPath bool `json:"once_per_path,omitempty"`
}

// referenceMetrics are what a document without declarations (the reference
// harness's, or one written before instruments declared theirs) is read
// with: every sample's value, and TCP_RR's latency percentiles.
var referenceMetrics = []Metric{{Key: "value"}, {Key: "p50_us"}, {Key: "p99_us"}}

// Metric returns the sample's value of metric key, and whether it has one.
func (s Sample) Metric(key string) (float64, bool) {
	switch key {
	case "value":
		return s.Value, true
	case "p50_us":
		if s.P50Us != nil {
			return *s.P50Us, true
		}
	case "p99_us":
		if s.P99Us != nil {
			return *s.P99Us, true
		}
	case "mean_us":
		if s.MeanUs != nil {
			return *s.MeanUs, true
		}
	case HostCPUPerGB:
		if s.MovedBytes != nil && *s.MovedBytes > 0 && s.HostCPUSec > 0 {
			return s.HostCPUSec / (float64(*s.MovedBytes) / 1e9), true
		}
	case TransportCPUPerGB:
		return s.ownCPUPerGB()
	case CostCPUPerGB:
		// A sample short of its offered rate has no cost at that rate.
		if _, below := s.Extra[BelowOfferedRate]; !below {
			return s.ownCPUPerGB()
		}
	case TransportCPUPerTrans:
		if n := s.Extra[Transactions]; n > 0 && s.TransportCPUSec != nil {
			return s.ownCPUSec() * 1e6 / n, true
		}
	default:
		v, ok := s.Extra[key]
		return v, ok
	}
	return 0, false
}

// ownCPUSec is the transport's own CPU-s in the sample, every role's.
func (s Sample) ownCPUSec() float64 {
	total := 0.0
	for _, sec := range s.TransportCPUSec {
		total += sec
	}
	return total
}

// ownCPUPerGB is the transport's own CPU-s per GB the tool moved.
func (s Sample) ownCPUPerGB() (float64, bool) {
	if s.MovedBytes != nil && *s.MovedBytes > 0 && s.TransportCPUSec != nil {
		return s.ownCPUSec() / (float64(*s.MovedBytes) / 1e9), true
	}
	return 0, false
}

// Metrics derived from a sample's meters and what its tool moved: CPU-s
// per GB (10^9 bytes) moved, of the whole host (every process and the
// kernel: the iperf3 endpoints, the tunnel, softirq crypto) and of the
// transport's own cgroups (its daemons; kernel tunnels have none).
// CostCPUPerGB is the latter at a fixed offered rate (iperf3-cost), absent
// from a sample that fell short of the rate (BelowOfferedRate).
// TransportCPUPerTrans is the transport's own CPU-µs per transaction the
// tool counted (Transactions): a request and its response, or a whole
// connection for a connection-per-transaction test.
const (
	HostCPUPerGB         = "host_cpu_sec_per_gb"
	TransportCPUPerGB    = "transport_cpu_sec_per_gb"
	CostCPUPerGB         = "transport_cpu_sec_per_gb_at_rate"
	TransportCPUPerTrans = "transport_cpu_us_per_trans"
)

// OwnCPUMetric reports whether metric key is derived from the transport's
// own CPU, which a path without a tunnel or a kernel tunnel does not have
// (Transport.OwnCPUAbsent).
func OwnCPUMetric(key string) bool {
	return key == TransportCPUPerGB || key == CostCPUPerGB || key == TransportCPUPerTrans
}

// Extra values of a counted-instructions sample (iperf3-instr): the
// tunnel daemon's instructions, all of them, per byte it sent into the
// tunnel, and those bytes.
const (
	DaemonInstrPerByte = "daemon_instr_per_byte"
	InstrSentBytes     = "instr_sent_bytes"
)

// Extra values the cost metrics read: Transactions is how many the tool
// completed in the sample; OfferedGbps the rate a fixed-rate test offered,
// and BelowOfferedRate, present only when its goodput fell short of that
// (goodput / offered), marks a sample whose cost is not at the rate.
const (
	Transactions     = "transactions"
	OfferedGbps      = "offered_gbps"
	BelowOfferedRate = "below_offered_rate"
)

// The extra values of an scp sample (seconds): the SSH connection's
// set-up, from the tool's start to ssh's request for the copy, and the
// copy's own time, from that request to the tool's exit, which its MB/s
// divides the payload by. wall_sec is both.
const (
	ScpConnectSec  = "ssh_connect_sec"
	ScpTransferSec = "transfer_sec"
)

// ScpTimesCopyApart reports whether d's scp samples time the copy apart
// from the SSH connection (ScpConnectSec): their MB/s divides the payload
// by the copy's own time. The reference's and older documents divide it
// by the whole wall, connection included: a lower rate for the same copy.
func (d *Document) ScpTimesCopyApart() bool {
	for _, s := range d.Samples {
		if _, ok := s.Extra[ScpConnectSec]; ok && s.Instrument == "scp" {
			return true
		}
	}
	return false
}

// CellKey names one metric of one transport × condition × instrument: a
// cell of Cells and a row of compare.
type CellKey struct {
	Transport  string `json:"transport"`
	Condition  string `json:"condition"`
	Instrument string `json:"instrument"`
	Metric     string `json:"metric"` // a declared metric's key: "value", "p50_us", "loss_pct", …
}

// MetricOf returns the declaration of instrument's metric key, if d has one.
func (d *Document) MetricOf(instrument, key string) (Metric, bool) {
	for _, in := range d.Instruments {
		if in.Name != instrument {
			continue
		}
		for _, m := range in.Metrics {
			if m.Key == key {
				return m, true
			}
		}
	}
	return Metric{}, false
}

// MetricValues collects every declared metric's values per cell, in first
// appearance order (see MetricReadings), bounds as values: for a reader
// that needs no distinction, or treats bounds itself.
func (d *Document) MetricValues() ([]CellKey, map[CellKey][]float64) {
	order, readings := d.MetricReadings()
	values := make(map[CellKey][]float64, len(readings))
	for k, rs := range readings {
		values[k] = ValuesOf(rs)
	}
	return order, values
}

// MetricReadings collects every declared metric's readings per cell, in
// first appearance order; the one place samples become cells. A reading
// is a lower bound where its sample is censored for the metric
// (Metric.CensoredBy). A transport whose own CPU is not attributable
// (Transport.OwnCPUAbsent) has no metric of it (OwnCPUMetric), whatever its samples
// hold (documents written before transport_cpu_absent carried a 0 for it).
func (d *Document) MetricReadings() ([]CellKey, map[CellKey][]Reading) {
	declared := map[string][]Metric{}
	for _, in := range d.Instruments {
		declared[in.Name] = in.Metrics
	}
	unattributed := map[string]bool{}
	for _, t := range d.Transports {
		unattributed[t.Name] = t.OwnCPUAbsent() != ""
	}
	var order []CellKey
	readings := map[CellKey][]Reading{}
	for _, s := range d.Samples {
		metrics, ok := declared[s.Instrument]
		if !ok {
			metrics = referenceMetrics
		}
		for _, m := range metrics {
			r, ok := s.Reading(m)
			if !ok || OwnCPUMetric(m.Key) && unattributed[s.Transport] {
				continue
			}
			k := CellKey{s.Transport, s.Condition, s.Instrument, m.Key}
			if _, seen := readings[k]; !seen {
				order = append(order, k)
			}
			readings[k] = append(readings[k], r)
		}
	}
	return order, readings
}

// NotConverged is the key in a sample's extra that marks it not
// converged: the instrument's own stopping rule did not find its figure
// stable within the sample's time limit (rpm: the draft's responsiveness
// never stable), so the figure is the last intervals' at the limit, not
// the instrument's. The sample stays in the document, and the report
// lists it, but it has no reading (Sample.Reading): no cell, no --runs
// auto pilot, no two-builds verdict.
const NotConverged = "not_converged"

// Excluded says why s is kept out of cells and verdicts ("not converged"),
// or "" for a sample that counts.
func (s Sample) Excluded() string {
	if _, ok := s.Extra[NotConverged]; ok {
		return "not converged"
	}
	return ""
}

// Reading returns the sample's reading of its instrument's metric m, and
// whether it has one: a sample kept out (Sample.Excluded) has none.
func (s Sample) Reading(m Metric) (Reading, bool) {
	v, ok := s.Metric(m.Key)
	if !ok || s.Excluded() != "" {
		return Reading{}, false
	}
	by := censoredBy(s.Instrument, m)
	_, censored := s.Extra[by]
	return Reading{Value: v, AtLeast: by != "" && censored}, true
}

// ReadingOf returns s's reading of metric key as d declares it.
func (d *Document) ReadingOf(s Sample, key string) (Reading, bool) {
	m, ok := d.MetricOf(s.Instrument, key)
	if !ok {
		m = Metric{Key: key}
	}
	return s.Reading(m)
}

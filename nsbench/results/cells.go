package results

import (
	"fmt"
	"slices"

	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// Cell summarises one metric of one transport × condition × instrument over
// its runs. The raw samples stay in Samples; cells are derived from them.
type Cell struct {
	CellKey
	Unit   string `json:"unit,omitempty"`
	Better string `json:"better,omitempty"`
	Summary
	Warning string `json:"warning,omitempty"`
	// Planned is, under --runs auto, the runs the cell's pilot fixed
	// (stats.TwoStageRuns), or 1 for a sample recorded once per path (the
	// time to ready); N below it means some of them failed.
	Planned *int `json:"planned,omitempty"`

	// CV is the runs' coefficient of variation (from 2 runs on).
	CV *float64 `json:"cv,omitempty"`
	NoiseMax
	// Marks say why the cell's numbers deserve doubt: MarkBackground,
	// MarkSteal, MarkSpread, MarkPrecision.
	Marks []string `json:"marks,omitempty"`
	Censoring
}

// Summary is a cell's runs: how many, their median and range, and the
// median's interval.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// The median's interval: the narrowest order-statistic interval
	// reaching 95 % (stats.MedianCI: not always symmetric), or, with fewer
	// than 6 runs, [min, max] and its real (lower) level.
	MedianCI
	// CI95Low and CI95High are set only when a 95 % interval exists.
	CI95Low  *float64 `json:"ci95_low,omitempty"`
	CI95High *float64 `json:"ci95_high,omitempty"`
}

// MedianCI is an interval of a median: CILow..CIHigh covers the true
// median with probability CILevel.
type MedianCI struct {
	CILow   float64 `json:"ci_low"`
	CIHigh  float64 `json:"ci_high"`
	CILevel float64 `json:"ci_level"`
}

// NoiseMax is the most background CPU and steal any of a cell's samples
// ran beside (see Noise).
type NoiseMax struct {
	BackgroundPctMax *float64 `json:"background_pct_max,omitempty"`
	StealPctMax      *float64 `json:"steal_pct_max,omitempty"`
}

// Censoring is what of a cell is a lower bound. Censored is how many of
// the runs' readings are lower bounds (a probe outlasted its test: see
// CensoredWaitMs). LowerBounds names the cell's figures that are lower
// bounds in turn (BoundMedian, …): those a censored reading at or below
// them can raise. CV, undefined on bounds, is then absent.
type Censoring struct {
	Censored    int      `json:"censored,omitempty"`
	LowerBounds []string `json:"lower_bounds,omitempty"`
}

// The figures of a cell that can be lower bounds, as LowerBounds names
// them (their JSON keys).
const (
	BoundMedian = "median"
	BoundMin    = "min"
	BoundMax    = "max"
	BoundCILow  = "ci_low"
	BoundCIHigh = "ci_high"
)

// MedianAtLeast says whether the cell's median is a lower bound.
func (c Cell) MedianAtLeast() bool { return slices.Contains(c.LowerBounds, BoundMedian) }

// lowerBounds names the figures of c that are lower bounds of rs's.
func (c Cell) lowerBounds(rs []Reading) []string {
	if Censored(rs) == 0 {
		return nil
	}
	var out []string
	if MedianAtLeast(rs) {
		out = append(out, BoundMedian)
	}
	for _, f := range []struct {
		name string
		x    float64
	}{{BoundMin, c.Min}, {BoundMax, c.Max}, {BoundCILow, c.CILow}, {BoundCIHigh, c.CIHigh}} {
		if OrderStatAtLeast(rs, f.x) {
			out = append(out, f.name)
		}
	}
	return out
}

// Why a cell is marked, and the thresholds (the report states them).
const (
	// MarkBackground: a sample ran beside other work of at least
	// NoisyBackgroundPct of the host's CPU.
	MarkBackground     = "background"
	NoisyBackgroundPct = 10.0
	// MarkSteal: a hypervisor took at least NoisyStealPct of the host's
	// CPU during a sample.
	MarkSteal     = "steal"
	NoisyStealPct = 5.0
	// MarkSpread: the runs' coefficient of variation is at least NoisyCV.
	MarkSpread = "spread"
	NoisyCV    = 0.10
	// MarkPrecision: under --runs auto, the median's 95 % interval is not
	// within the precision asked for (a difference's: within the wider of
	// it and RunsAuto.PrecisionMs), or the cell has fewer valid runs
	// than its pilot fixed (some failed: the rest cannot claim the
	// precision on their own).
	MarkPrecision = "precision"
	// MarkCensored: under --runs auto, an end of the median's 95 %
	// interval is a lower bound (a censored reading at or below it), so
	// the interval is unbounded above and no precision can be claimed or
	// denied; its pilot planned --max-runs if a censored reading was in it.
	MarkCensored = "censored"
)

// Cells summarises d's samples per transport, condition, instrument and
// declared metric, in first-appearance order.
func Cells(d *Document) []Cell {
	order, readings := d.MetricReadings()
	noise := noiseMax(d)
	cells := make([]Cell, 0, len(order))
	for _, k := range order {
		xs := ValuesOf(readings[k])
		sum := stats.Summarize(xs)
		ci := stats.MedianCI(xs, 0.95)
		m, _ := d.MetricOf(k.Instrument, k.Metric)
		c := Cell{CellKey: k, Unit: m.Unit, Better: m.Better, Summary: Summary{
			N: sum.N, Median: sum.Median, Min: sum.Min, Max: sum.Max,
			MedianCI: MedianCI{CILow: ci.Low, CIHigh: ci.High, CILevel: ci.Level},
		}}
		if ci.Reached {
			c.CI95Low, c.CI95High = &ci.Low, &ci.High
		} else {
			c.Warning = fmt.Sprintf("%d runs: no 95 %% interval exists (needs at least %d); [min, max] covers the median with %.1f %%",
				sum.N, stats.MinSamplesFor(0.95), 100*ci.Level)
		}
		c.Censored, c.LowerBounds = Censored(readings[k]), c.lowerBounds(readings[k])
		if cv, ok := stats.CV(xs); ok && c.Censored == 0 && !m.Difference { // a difference's mean can be 0
			c.CV = &cv
			if cv >= NoisyCV {
				c.Marks = append(c.Marks, MarkSpread)
			}
		}
		if n, ok := noise[CellKey{k.Transport, k.Condition, k.Instrument, ""}]; ok {
			c.BackgroundPctMax, c.StealPctMax = &n.BackgroundPct, &n.StealPct
			if n.BackgroundPct >= NoisyBackgroundPct {
				c.Marks = append(c.Marks, MarkBackground)
			}
			if n.StealPct >= NoisyStealPct {
				c.Marks = append(c.Marks, MarkSteal)
			}
		}
		if d.Env.RunsAuto != nil && k.Metric == "value" {
			planned := d.PlannedRuns(k.Transport, k.Condition, k.Instrument)
			c.Planned = &planned
			// An end of the interval that is a lower bound leaves it
			// unbounded: no precision verdict, reached or missed.
			unbounded := slices.Contains(c.LowerBounds, BoundCILow) || slices.Contains(c.LowerBounds, BoundCIHigh)
			if unbounded {
				c.Marks = append(c.Marks, MarkCensored)
			}
			if sum.N < planned || !d.oncePerPath(k.Instrument) && !unbounded && !stats.WithinTolerance(xs, d.tolerance(k.Instrument)) {
				c.Marks = append(c.Marks, MarkPrecision)
			}
		}
		cells = append(cells, c)
	}
	return cells
}

// noiseMax is, per transport × condition × instrument (Metric empty), the
// most background CPU and steal of its samples.
func noiseMax(d *Document) map[CellKey]Noise {
	out := map[CellKey]Noise{}
	for _, s := range d.Samples {
		if s.Noise == nil {
			continue
		}
		k := CellKey{s.Transport, s.Condition, s.Instrument, ""}
		n, seen := out[k]
		if !seen {
			n = *s.Noise
		}
		n.BackgroundPct = max(n.BackgroundPct, s.Noise.BackgroundPct)
		n.StealPct = max(n.StealPct, s.Noise.StealPct)
		out[k] = n
	}
	return out
}

// PlannedRuns is how many runs --runs auto gives a cell: fixed once from
// its pilot, the valid values of runs 1 to Env.Runs (stats.TwoStageRuns),
// whatever the later runs show, and never fewer than the pilot: a pilot
// whose runs failed still planned them. A pilot with a censored reading
// (a lower bound: Metric.CensoredBy) plans RunsAuto.MaxRuns. It is
// Env.Runs without --runs auto, and 1 for a sample recorded once per path
// (Instrument.OncePerPath).
func (d *Document) PlannedRuns(transport, condition, instrument string) int {
	a := d.Env.RunsAuto
	switch {
	case d.oncePerPath(instrument):
		return 1
	case a == nil:
		return d.Env.Runs
	}
	value, ok := d.MetricOf(instrument, "value")
	if !ok {
		value = Metric{Key: "value"}
	}
	var pilot []float64
	for _, s := range d.Samples {
		if s.Transport == transport && s.Condition == condition && s.Instrument == instrument && s.Run <= d.Env.Runs {
			r, ok := s.Reading(value)
			if !ok {
				continue // excluded: no run of the pilot's
			}
			if r.AtLeast {
				// A lower bound: the quantity may lie anywhere above it
				// (+Inf, taken conservatively), so the pilot's spread
				// is unbounded and Stein's rule asks for every run.
				return max(a.MaxRuns, d.Env.Runs)
			}
			pilot = append(pilot, s.Value)
		}
	}
	return max(stats.TwoStageRunsWithin(pilot, d.tolerance(instrument), a.MaxRuns), d.Env.Runs)
}

// tolerance is what --runs auto asks of instrument's value: the relative
// precision, and for a difference also the absolute one.
func (d *Document) tolerance(instrument string) stats.Tolerance {
	a := d.Env.RunsAuto
	tol := stats.Tolerance{Relative: a.Precision}
	if m, _ := d.MetricOf(instrument, "value"); m.Difference {
		tol.Absolute = a.PrecisionMs
	}
	return tol
}

// oncePerPath reports whether instrument is recorded once per path, not
// per run (Instrument.OncePerPath).
func (d *Document) oncePerPath(instrument string) bool {
	for _, in := range d.Instruments {
		if in.Name == instrument {
			return in.OncePerPath
		}
	}
	return false
}

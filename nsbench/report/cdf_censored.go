package report

import (
	"sort"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// probeLine is transport's line on a latency panel of series sec: its
// readings, and the waits of its probes never answered (the censored
// series, or, in documents written before it, the sample's censored
// wait), of its samples probed so when probe is set.
func (v *view) probeLine(transport, condition string, sec seriesKey, probe string) cdfLine {
	l := cdfLine{transport: transport}
	for _, s := range v.samples(transport, condition, sec.instrument) {
		if probe != "" && probeOfKey(s, sec.key) != probe {
			continue
		}
		held, censoredSeries := false, false
		for _, se := range s.Series {
			f, isTime := msPer[se.Unit]
			if !isTime {
				continue
			}
			switch se.Key {
			case sec.key:
				held = true
				for _, pt := range points(se) {
					l.values = append(l.values, pt[1]*f)
				}
			case results.CensoredSeries(sec.key):
				held, censoredSeries = true, true
				for _, pt := range points(se) {
					l.censored = append(l.censored, pt[1]*f)
				}
			}
		}
		if wait, ok := s.Extra[results.CensoredWaitMs]; ok && held && !censoredSeries && sec.key == "latency_loaded" {
			l.censored = append(l.censored, wait)
		}
		if held {
			l.runs++
		}
	}
	sort.Float64s(l.values)
	sort.Float64s(l.censored)
	return l
}

// censored says whether a line of the panel holds censored waits.
func (p cdfPanel) censored() bool {
	for _, l := range p.lines {
		if len(l.censored) > 0 {
			return true
		}
	}
	return false
}

// kaplanMeier is the Kaplan–Meier estimate of the distribution of
// readings (sorted) right-censored at waits (sorted): at each distinct
// reading x, the fraction at or below x, F(x) = 1 − Π (1 − d/n) over the
// readings up to x, n those still unresolved (a wait of x or more counts
// at x). Without waits it is the empirical CDF; with the longest waits
// censored it stops below 1: what lies beyond them is unknown.
func kaplanMeier(readings, waits []float64) [][2]float64 {
	var out [][2]float64
	atRisk := len(readings) + len(waits)
	survive := 1.0
	r, w := 0, 0
	for r < len(readings) {
		x := readings[r]
		for w < len(waits) && waits[w] < x { // resolved as "more than its wait" before x
			w++
			atRisk--
		}
		d := 0
		for r < len(readings) && readings[r] == x {
			r++
			d++
		}
		survive *= 1 - float64(d)/float64(atRisk)
		atRisk -= d
		out = append(out, [2]float64{x, 1 - survive})
	}
	return out
}

// kaplanMeierCurve is l's Kaplan–Meier estimate as a step curve, where
// it runs on to (its longest censored wait), and a tick on it at each
// censored wait.
func kaplanMeierCurve(l cdfLine) (steps [][2]float64, end float64, ticks [][2]float64) {
	steps = kaplanMeier(l.values, l.censored)
	at := func(x float64) float64 { // the estimate at x
		y := 0.0
		for _, s := range steps {
			if s[0] <= x {
				y = s[1]
			}
		}
		return y
	}
	for _, w := range l.censored {
		ticks = append(ticks, [2]float64{w, at(w)})
	}
	return steps, l.censored[len(l.censored)-1], ticks
}

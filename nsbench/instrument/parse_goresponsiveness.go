package instrument

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/rpm"
)

// GoResponsivenessTool is the program name of goresponsiveness, an
// independent RPM client (GPL-2.0-or-later: only ever run as an external
// program for selfcheck's cross-check, never linked).
const GoResponsivenessTool = "networkQuality"

// GoResponsivenessArgs is its command line against the rpm server at
// hostport, made comparable with twnsbench's client: both directions at
// once (-rpm.parallel, as ours loads them), at most conns load-generating
// connections per direction (-rpm.mnp), a time limit of limit per stage
// (-rpm.timeout, whole seconds), and -rpm.tmp 95 — its trimming keeps
// that percentage of the fastest probes (utilities.TrimBy), so its
// default 5 would average the fastest 5 % instead of the draft's 95 % —
// with -debug, the only way it prints the probe times behind its figure.
func GoResponsivenessArgs(hostport string, conns int, limit time.Duration) []string {
	return []string{
		"-url", "https://" + hostport + rpm.ConfigPath, "-rpm.parallel",
		"-rpm.mnp", strconv.Itoa(conns), "-rpm.tmp", "95",
		"-rpm.timeout", strconv.Itoa(int(math.Ceil(limit.Seconds()))), "-debug",
	}
}

// GoResponsivenessReport is what goresponsiveness found: its own RPM
// figures, the trimmed means behind them (ms; the foreign one is per
// round trip, a foreign probe's TCP+TLS+HTTP time divided by 3) and the
// goodput of each direction.
type GoResponsivenessReport struct {
	RPM, RPMP90              float64 // as it prints them: 60000 / ((self + foreign) / 2)
	SelfMs, ForeignMs        float64 // the final calculation's trimmed means
	DownloadMbps, UploadMbps float64
	ThroughputStable         bool // no direction said "did not run to stability (throughput)"
}

// DraftRPM is the draft's combination of the same trimmed means: the mean
// of the foreign and the loaded responsiveness, 60000/foreign and
// 60000/self, as twnsbench's client computes it.
func (r GoResponsivenessReport) DraftRPM() float64 {
	return (60000/r.ForeignMs + 60000/r.SelfMs) / 2
}

// ParseGoResponsiveness reads goresponsiveness's -debug output: the
// "Final RPM Calculation stats" block, the final figures and each
// direction's throughput; its own figure must follow from the trimmed
// means it printed (to its rounding).
func ParseGoResponsiveness(out []byte) (GoResponsivenessReport, error) {
	var r GoResponsivenessReport
	final, stableNotes, directions := false, 0, 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, val, _ := strings.Cut(line, ":")
		val = strings.TrimSpace(val)
		switch {
		case line == "Final RPM Calculation stats:":
			final = true
		case final && key == "Trimmed Mean Self RTT":
			r.SelfMs = 1000 * grFloat(val)
		case final && key == "Trimmed Mean Foreign RTT":
			r.ForeignMs = 1000 * grFloat(val)
		case key == "Final RPM" && strings.Contains(val, "(P"):
			r.RPMP90 = grFloat(strings.Fields(val)[0])
		case key == "Final RPM" && strings.Contains(val, "Trimmed Mean"):
			r.RPM = grFloat(strings.Fields(val)[0])
		case key == "Throughput":
			directions++
			mbps := grFloat(strings.Fields(val)[0])
			if directions == 1 {
				r.DownloadMbps = mbps
			} else {
				r.UploadMbps = mbps
			}
		case strings.HasPrefix(line, "Note: Test did not run to stability"):
			stableNotes++
		}
	}
	r.ThroughputStable = stableNotes == 0
	switch {
	case !final || !(r.SelfMs > 0 && r.ForeignMs > 0 && r.RPM > 0):
		return r, fmt.Errorf("%s: no final trimmed means and RPM in its output (run with -debug): %s", GoResponsivenessTool, parseDescribe(out))
	case directions != 2:
		return r, fmt.Errorf("%s: %d directions' throughput in its output, want 2", GoResponsivenessTool, directions)
	case math.Abs(60000/((r.SelfMs+r.ForeignMs)/2)-r.RPM) > 1:
		return r, fmt.Errorf("%s: its RPM %g does not follow from its trimmed means (self %g ms, foreign %g ms)", GoResponsivenessTool, r.RPM, r.SelfMs, r.ForeignMs)
	}
	return r, nil
}

// grFloat is a number as goresponsiveness prints it, NaN when it is not one.
func grFloat(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

package instrument

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/rpm"
)

// parseRPM reads the rpm client's JSON Report and checks that its figures
// follow from its components: RPM from the trimmed means, the p90 variant
// from the 90th percentiles, with probes of both kinds behind them.
func parseRPM(out []byte) (rpm.Report, error) {
	var r rpm.Report
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%s: unreadable report (%v): %s", rpm.ClientArg, err, parseDescribe(out))
	}
	for _, c := range []rpm.Components{r.TrimmedMean, r.P90} {
		if !(c.TCPf > 0 && c.TLSf > 0 && c.HTTPf > 0 && c.HTTPl > 0) {
			return r, fmt.Errorf("%s: probe times not all positive: %+v", rpm.ClientArg, c)
		}
	}
	switch {
	case r.Probes.Foreign < 1 || r.Probes.Self < 1:
		return r, fmt.Errorf("%s: %d foreign and %d self probes behind the figures", rpm.ClientArg, r.Probes.Foreign, r.Probes.Self)
	case !closeTo(r.RPM, r.TrimmedMean.RPM()) || !closeTo(r.RPMP90, r.P90.RPM()):
		return r, fmt.Errorf("%s: RPM %g and p90 %g do not follow from the components (%g, %g)",
			rpm.ClientArg, r.RPM, r.RPMP90, r.TrimmedMean.RPM(), r.P90.RPM())
	case r.Stop.Converged != (r.Stop.Ended == rpm.EndedStable):
		return r, fmt.Errorf("%s: converged %v but ended %q", rpm.ClientArg, r.Stop.Converged, r.Stop.Ended)
	}
	return r, nil
}

// closeTo is a == b to the JSON's precision.
func closeTo(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// rpmMeasurement is a sample of r: the trimmed-mean RPM, the p90 variant,
// the components and goodput as declared, and the probe counts and how
// the test ended (converged 1: the draft's stopping rule; 0: the time
// limit) besides. A test that did not converge is marked so
// (results.NotConverged): its figures are the last intervals' at the time
// limit, not the draft's, and stay out of cells and verdicts.
func rpmMeasurement(r rpm.Report, wall float64) Measurement {
	b := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	tm := r.TrimmedMean
	m := Measurement{
		Value: r.RPM, Unit: "RPM", WallSec: wall,
		Extra: map[string]float64{
			"rpm_p90": r.RPMP90, "foreign_rpm": r.ForeignRPM, "loaded_rpm": r.LoadedRPM,
			"tcp_f_ms": tm.TCPf, "tls_f_ms": tm.TLSf, "http_f_ms": tm.HTTPf, "http_l_ms": tm.HTTPl,
			"download_mbps": r.Load.DownloadBps / 1e6, "upload_mbps": r.Load.UploadBps / 1e6,
			"load_connections": float64(r.Load.Connections),
			"foreign_probes":   float64(r.Probes.Foreign), "self_probes": float64(r.Probes.Self),
			"converged": b(r.Stop.Converged), "goodput_stable": b(r.Stop.GoodputStable),
		},
	}
	if !r.Stop.Converged {
		m.Extra[results.NotConverged] = 1
	}
	return m
}

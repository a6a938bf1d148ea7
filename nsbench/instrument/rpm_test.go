package instrument

import (
	"context"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// rpmOut is a report whose figures follow from its components: trimmed
// means 10, 10, 10 ms foreign and 20 ms self → (6000 + 3000) / 2 = 4500
// RPM; 90th percentiles twice those → 2250 RPM.
const rpmOut = `{"rpm":4500,"rpm_p90":2250,"foreign_rpm":6000,"loaded_rpm":3000,` +
	`"trimmed_mean":{"tcp_f_ms":10,"tls_f_ms":10,"http_f_ms":10,"http_l_ms":20},` +
	`"p90":{"tcp_f_ms":20,"tls_f_ms":20,"http_f_ms":20,"http_l_ms":40},` +
	`"load":{"download_bps":800000000,"upload_bps":200000000,"connections":5,"intervals":8,"duration_sec":8.01},` +
	`"probes":{"foreign":40,"self":41,"foreign_all":90,"self_all":91,"failed":0},` +
	`"stop":{"goodput_stable":true,"converged":true,"ended":"stable","confidence":"High"}}` + "\n"

func TestRPMMeasure(t *testing.T) {
	env, argv := replayOutput([]byte(rpmOut), 0)
	m, err := RPM{}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(*argv, " "); got != "twnsbench rpm-client --addr 10.77.0.4:12871 --duration 10s" {
		t.Errorf("argv = %s", got)
	}
	want := map[string]float64{"rpm_p90": 2250, "foreign_rpm": 6000, "loaded_rpm": 3000, "tcp_f_ms": 10, "tls_f_ms": 10,
		"http_f_ms": 10, "http_l_ms": 20, "download_mbps": 800, "upload_mbps": 200, "load_connections": 5,
		"foreign_probes": 40, "self_probes": 41, "converged": 1, "goodput_stable": 1}
	if m.Value != 4500 || m.Unit != "RPM" || len(m.Extra) != len(want) {
		t.Errorf("measurement %+v", m)
	}
	for k, v := range want {
		if m.Extra[k] != v {
			t.Errorf("%s = %v, want %v", k, m.Extra[k], v)
		}
	}
	// Every declared metric is in the sample.
	for _, mt := range (RPM{}).Metrics() {
		if _, ok := m.Extra[mt.Key]; !ok && mt.Key != "value" {
			t.Errorf("declared %s is not measured", mt.Key)
		}
	}
}

// TestRPMNotConvergedExcluded: a test the time limit ended (responsiveness
// never stable) is measured, marked not converged, so that its figures
// stay out of cells and verdicts.
func TestRPMNotConvergedExcluded(t *testing.T) {
	out := strings.Replace(rpmOut, `"converged":true,"ended":"stable","confidence":"High"`,
		`"converged":false,"ended":"time limit","confidence":"Medium"`, 1)
	env, _ := replayOutput([]byte(out), 0)
	m, err := RPM{}.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	s := results.Sample{Instrument: "rpm", Value: m.Value, Extra: m.Extra}
	if s.Excluded() != "not converged" || m.Extra[results.NotConverged] != 1 || m.Value != 4500 || m.Extra["converged"] != 0 {
		t.Errorf("kept out %q, extra %v, value %g: want not converged, %s 1, 4500", s.Excluded(), m.Extra, m.Value, results.NotConverged)
	}
	if _, ok := s.Reading(results.Metric{Key: "value"}); ok {
		t.Error("a not-converged sample has a reading")
	}
}

func TestParseRPMErrors(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{rpmOut, "", "unreadable report"},
		{`"rpm":4500,`, `"rpm":4400,`, "do not follow from the components"},
		{`"rpm_p90":2250,`, `"rpm_p90":4500,`, "do not follow"},
		{`"foreign":40,`, `"foreign":0,`, "0 foreign and 41 self probes"},
		{`"http_l_ms":40`, `"http_l_ms":0`, "not all positive"},
		{`"converged":true`, `"converged":false`, `converged false but ended "stable"`},
		{`"failed":0`, `"failed":0,"lost":1`, "unknown field"},
	} {
		out := strings.Replace(rpmOut, tc.from, tc.to, 1)
		if tc.to == "" {
			out = "twnsbench rpm-client: configuration: dial tcp 10.77.0.4:12871: connection refused\n"
		}
		if _, err := parseRPM([]byte(out)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}

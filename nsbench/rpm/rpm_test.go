package rpm

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestTrimmedMeanAndQuantile(t *testing.T) {
	var to20 []float64
	for i := 20; i >= 1; i-- {
		to20 = append(to20, float64(i))
	}
	for _, tc := range []struct {
		xs      []float64
		tm, p90 float64
		why     string
	}{
		{to20, 10, 18, "1..20: the slowest one (5 %) dropped, the mean of 1..19; p90 at rank 18"},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 1000}, 104.5, 9, "⌈10·0.95⌉ = 10 kept: trimming 1 of 10 would drop 10 %, more than 5 %"},
		{append([]float64{1000}, to20...), 10.5, 19, "21 probes: ⌈19.95⌉ = 20 kept, the mean of 1..20 (⌊19.95⌋ = 19 would drop 2, 9.5 %)"},
		{[]float64{7}, 7, 7, "one value is kept"},
		{nil, 0, 0, "none"},
	} {
		if got := TrimmedMean(tc.xs); !near(got, tc.tm) {
			t.Errorf("%s: trimmed mean %g, want %g", tc.why, got, tc.tm)
		}
		if got := Quantile(tc.xs, 0.9); !near(got, tc.p90) {
			t.Errorf("%s: p90 %g, want %g", tc.why, got, tc.p90)
		}
	}
}

func TestResponsiveness(t *testing.T) {
	// Foreign: 60000 / ((10+10+10)/3) = 6000; loaded: 60000 / 20 = 3000.
	c := Components{TCPf: 10, TLSf: 10, HTTPf: 10, HTTPl: 20}
	if !near(c.Foreign(), 6000) || !near(c.Loaded(), 3000) || !near(c.RPM(), 4500) {
		t.Errorf("foreign %g loaded %g rpm %g, want 6000, 3000, 4500", c.Foreign(), c.Loaded(), c.RPM())
	}
	// A loaded path: 1 s self probes, 100 ms foreign ones → (600 + 60) / 2.
	c = Components{TCPf: 50, TLSf: 150, HTTPf: 100, HTTPl: 1000}
	if !near(c.RPM(), 330) {
		t.Errorf("rpm %g, want 330", c.RPM())
	}
	// Aggregate trims each set on its own (fewer than 20 probes: none
	// dropped); an empty set is no figure.
	p := Probes{TCPf: []float64{1, 2, 3}, TLSf: []float64{2}, HTTPf: []float64{3}, HTTPl: []float64{4, 100}}
	got, ok := p.Aggregate(false)
	if want := (Components{TCPf: 2, TLSf: 2, HTTPf: 3, HTTPl: 52}); !ok || got != want {
		t.Errorf("aggregate %+v %v, want %+v", got, ok, want)
	}
	if got, _ := p.Aggregate(true); got.HTTPl != 100 || got.TCPf != 3 {
		t.Errorf("p90 aggregate %+v", got)
	}
	if _, ok := (Probes{TCPf: []float64{1}, TLSf: []float64{1}, HTTPf: []float64{1}}).Aggregate(false); ok {
		t.Error("no self probe: aggregated anyway")
	}
}

func TestStoppingRule(t *testing.T) {
	if !near(MovingAverage([]float64{1, 2, 3, 4, 5, 6}), 4.5) || !near(MovingAverage([]float64{2}), 2) {
		t.Error("moving average over the last MAD intervals")
	}
	for _, tc := range []struct {
		s    []float64
		want bool
	}{
		{[]float64{100, 100, 100}, false},          // fewer than MAD
		{[]float64{100, 101, 99, 100}, true},       // sd 0.71 < 5 % of 100
		{[]float64{80, 90, 100, 110}, false},       // sd 11.2 > 5.5
		{[]float64{1, 80, 96, 100, 100, 97}, true}, // only the last MAD count: sd 1.64 < 4.85
	} {
		if got := Stable(tc.s); got != tc.want {
			t.Errorf("Stable(%v) = %v", tc.s, got)
		}
	}
	// Goodput ramps up and levels off: the moving averages are 10, 15,
	// 23.3, 37.5, 60, 80, 95, 100…; [80 95 100 100] still spreads 8.2,
	// [95 100 100 100] 2.2 < 5: saturation is declared at interval 9.
	goodput := []float64{10, 20, 40, 80, 100, 100, 100, 100, 100, 100, 100, 100}
	var ma []float64
	at := -1
	for i := range goodput {
		ma = append(ma, MovingAverage(goodput[:i+1]))
		if Stable(ma) {
			at = i
			break
		}
	}
	if at != 9 {
		t.Errorf("goodput declared stable at interval %d, want 9 (moving averages %v)", at, ma)
	}
	for bps, want := range map[float64]float64{0: 1, 1.2e6: 10, 1e9: MPS} {
		if got := ProbeRate(bps); !near(got, want) {
			t.Errorf("ProbeRate(%g B/s) = %g, want %g", bps, got, want)
		}
	}
}

// TestLoadGrowsUntilConverged: on a synthetic test whose goodput is
// steady from the start while its responsiveness still falls (the queue
// filling as connections are added), the client adds INC connections
// every interval after goodput is declared stable too, until the
// responsiveness is stable (then none), and never past MNP.
func TestLoadGrowsUntilConverged(t *testing.T) {
	rpms := []float64{4000, 3000, 2200, 1600, 1300, 1150, 1100, 1090, 1085, 1080, 1080, 1080}
	var s series
	conns, goodputAt, convergedAt := INP, -1, -1
	var adds []int
	for i := 0; i < 20 && !s.converged; i++ {
		n := len(s.rpm)
		add := s.interval(1e6, 1e6, func() (float64, bool) { return rpms[n], true }, conns, MNP)
		if s.goodputStable && goodputAt < 0 {
			goodputAt = i
		}
		if s.converged {
			convergedAt = i
		}
		adds = append(adds, add)
		conns += add
	}
	if goodputAt != MAD-1 || convergedAt <= goodputAt {
		t.Fatalf("goodput stable at interval %d (want %d), converged at %d (want later)", goodputAt, MAD-1, convergedAt)
	}
	for i, add := range adds {
		want := INC
		if i == convergedAt {
			want = 0
		}
		if add != want {
			t.Errorf("interval %d (goodput stable at %d, converged at %d): added %d connections, want %d (all: %v)",
				i, goodputAt, convergedAt, add, want, adds)
		}
	}
	if want := INP + convergedAt*INC; conns != want {
		t.Errorf("%d connections at the end, want %d", conns, want)
	}
	// At MNP no more are added, converged or not.
	var capped series
	if add := capped.interval(1e6, 1e6, func() (float64, bool) { return 0, false }, MNP, MNP); add != 0 {
		t.Errorf("at MNP: added %d", add)
	}
}

// TestRunAgainstServe: the client and the server on loopback for a short
// time limit, at most 2 load-generating connections per direction: both
// kinds of probes complete, both directions carry load within the cap,
// and the figures follow from the components.
func TestRunAgainstServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l) }()
	if err := ClientMain(ctx, []string{"--addr", l.Addr().String(), "--check"}, new(bytes.Buffer)); err != nil {
		t.Fatalf("--check: %v", err)
	}
	r, err := Run(ctx, l.Addr().String(), 3*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !(r.RPM > 0) || math.IsInf(r.RPM, 0) || !near(r.RPM, r.TrimmedMean.RPM()) || !(r.RPMP90 > 0) {
		t.Errorf("rpm %g (components %+v) p90 %g", r.RPM, r.TrimmedMean, r.RPMP90)
	}
	if r.Probes.Foreign < 1 || r.Probes.Self < 1 || r.Probes.ForeignAll < r.Probes.Foreign || r.Probes.Failed != 0 {
		t.Errorf("probes %+v", r.Probes)
	}
	if !(r.Load.DownloadBps > 0) || !(r.Load.UploadBps > 0) || r.Load.Connections < 1 || r.Load.Connections > 2 || r.Load.Intervals < 1 || r.Load.DurationSec > 4 {
		t.Errorf("load %+v", r.Load)
	}
	if r.Stop.Ended != EndedTimeLimit && r.Stop.Ended != EndedStable {
		t.Errorf("stop %+v", r.Stop)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	var out bytes.Buffer
	if err := ClientMain(context.Background(), []string{"--addr", ""}, &out); err == nil || !strings.Contains(err.Error(), "--addr") {
		t.Errorf("no address: %v", err)
	}
	for _, mnp := range []string{"0", "17"} {
		err := ClientMain(context.Background(), []string{"--addr", "127.0.0.1:1", "--mnp", mnp}, &out)
		if err == nil || !strings.Contains(err.Error(), "--mnp "+mnp) {
			t.Errorf("--mnp %s: %v", mnp, err)
		}
	}
}

// TestConfigNames: the configuration names the three URLs on the host
// asked for, under the draft's names and Apple's.
func TestConfigNames(t *testing.T) {
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "https://10.77.0.4:12871"+ConfigPath, nil))
	var raw struct {
		Version int               `json:"version"`
		URLs    map[string]string `json:"urls"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil || raw.Version != 1 {
		t.Fatalf("config %s: %v", w.Body, err)
	}
	want := map[string]string{
		"large_download_url": "https://10.77.0.4:12871/large", "small_download_url": "https://10.77.0.4:12871/small",
		"upload_url": "https://10.77.0.4:12871/upload", "large_https_download_url": "https://10.77.0.4:12871/large",
		"small_https_download_url": "https://10.77.0.4:12871/small", "https_upload_url": "https://10.77.0.4:12871/upload",
	}
	if !maps.Equal(raw.URLs, want) {
		t.Errorf("urls %v\nwant %v", raw.URLs, want)
	}
}

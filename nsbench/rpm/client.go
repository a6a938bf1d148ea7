package rpm

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// ID is the draft's interval duration: the client re-evaluates stability,
// adds load-generating connections and sets the probe rate once per ID.
// The client follows draft-ietf-ippm-responsiveness-08 (October 2025),
// the last version published: its ID is 1 s. (The authors' working copy
// towards -09 proposes 5 s "pending further investigation"; at 5 s the
// draft's stopping rule needs at least 2·MAD·ID = 40 s.)
const ID = time.Second

// Report is what the client prints. Times are in ms, goodput in bit/s.
type Report struct {
	RPM         float64    `json:"rpm"`          // the responsiveness (trimmed means)
	RPMP90      float64    `json:"rpm_p90"`      // the same of the 90th percentiles
	ForeignRPM  float64    `json:"foreign_rpm"`  // 60000 / ((TM(tcp_f)+TM(tls_f)+TM(http_f))/3)
	LoadedRPM   float64    `json:"loaded_rpm"`   // 60000 / TM(http_l)
	TrimmedMean Components `json:"trimmed_mean"` // TM of each probe time set
	P90         Components `json:"p90"`
	Load        Load       `json:"load"`
	Probes      Counts     `json:"probes"`
	Stop        Stop       `json:"stop"`
}

// Load is the working conditions the probes ran under.
type Load struct {
	DownloadBps float64 `json:"download_bps"` // moving average of the last MAD intervals' goodput
	UploadBps   float64 `json:"upload_bps"`
	Connections int     `json:"connections"` // load-generating connections per direction at the end
	Intervals   int     `json:"intervals"`
	DurationSec float64 `json:"duration_sec"`
}

// Counts are the probes of the final window (the figures' own) and of the
// whole test, and the probes that failed.
type Counts struct {
	Foreign    int `json:"foreign"`
	Self       int `json:"self"`
	ForeignAll int `json:"foreign_all"`
	SelfAll    int `json:"self_all"`
	Failed     int `json:"failed"`
}

// Stop says how the test ended: by the draft's stopping rule (Converged:
// goodput, then responsiveness stable) or at the time limit, and the
// draft's confidence in the responsiveness: High (stable), Medium (at
// least MAD intervals of the responsiveness stage, not stable), Low
// (fewer).
type Stop struct {
	GoodputStable bool   `json:"goodput_stable"`
	Converged     bool   `json:"converged"`
	Ended         string `json:"ended"` // EndedStable or EndedTimeLimit
	Confidence    string `json:"confidence"`
}

const (
	EndedStable    = "stable"
	EndedTimeLimit = "time limit"
)

// ClientMain is the client's command line: --addr HOST:PORT --duration D
// (the time limit), or --check (one GET of the configuration and of the
// small object: the fixture answers). It prints the Report as JSON.
func ClientMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet(ClientArg, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "", "the server's host:port")
	d := fs.Duration("duration", 20*time.Second, "the test's time limit")
	check := fs.Bool("check", false, "only check that the server answers")
	mnp := fs.Int("mnp", MNP, "most load-generating connections per direction (the draft's MNP)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" || *d <= 0 {
		return errors.New("--addr HOST:PORT and --duration > 0 are required")
	}
	if *mnp < INP || *mnp > MNP {
		return fmt.Errorf("--mnp %d: want %d to %d", *mnp, INP, MNP)
	}
	c := newClient(*addr)
	if *check {
		if err := c.configure(ctx); err != nil {
			return err
		}
		_, err := c.foreign(ctx)
		return err
	}
	r, err := Run(ctx, *addr, *d, *mnp)
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(r)
}

// Run is the Responsiveness Test against addr within limit: INP
// load-generating connections in each direction, INC more each interval
// until the test ends (mnp at most, the draft's MNP), probe pairs at
// ProbeRate from the start, the responsiveness of the last MAD intervals'
// probes each interval once goodput is stable, until it is stable too or
// the next interval would pass limit. A load-generating connection's
// failure aborts the test, as the draft says.
func Run(ctx context.Context, addr string, limit time.Duration, mnp int) (Report, error) {
	start := time.Now()
	c := newClient(addr)
	if err := c.configure(ctx); err != nil {
		return Report{}, err
	}
	lctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		c.close()
	}()
	for range INP {
		c.addLoad(lctx, &wg)
	}
	var rate atomic.Uint64
	rate.Store(math.Float64bits(MPS / 10))
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.probeLoop(lctx, &wg, &rate)
	}()
	var s series
	tick := time.NewTicker(ID)
	defer tick.Stop()
	var now time.Time
	for {
		select {
		case <-ctx.Done():
			return Report{}, ctx.Err()
		case err := <-c.failed:
			return Report{}, fmt.Errorf("a load-generating connection failed: %w", err)
		case now = <-tick.C:
		}
		down, up := c.loadBytes()
		add := s.interval(down, up, func() (float64, bool) {
			comp, ok := c.window(now).Aggregate(false)
			return comp.RPM(), ok
		}, c.connections(), mnp)
		rate.Store(math.Float64bits(ProbeRate(s.ma[len(s.ma)-1] / 8)))
		for range add {
			c.addLoad(lctx, &wg)
		}
		if s.converged || time.Until(start.Add(limit)) < ID {
			break
		}
	}
	return c.report(now, s, time.Since(start))
}

// series are the test's per-interval values.
type series struct {
	down, up      []float64 // goodput (bit/s) per interval
	ma            []float64 // moving average of the total at each interval
	rpm           []float64 // responsiveness at each interval once goodput is stable
	goodputStable bool
	converged     bool
}

// interval is the draft's step at the end of an interval in which the
// load-generating connections carried downBytes and upBytes, with conns
// of them per direction (mnp at most): until goodput is saturated, its
// moving average's stability; from then on the responsiveness of the
// last MAD intervals' probes (responsiveness; ok false while a kind of
// probe has none) and its stability. It returns how many connections
// per direction to add: INC each interval until the test ends, as the
// draft's "at each interval" does, not only until goodput is saturated —
// the connections added meanwhile are what fills the bottleneck's queue
// the responsiveness must settle with.
func (s *series) interval(downBytes, upBytes int64, responsiveness func() (float64, bool), conns, mnp int) (add int) {
	s.down = append(s.down, float64(downBytes)*8/ID.Seconds())
	s.up = append(s.up, float64(upBytes)*8/ID.Seconds())
	total := make([]float64, len(s.down))
	for i := range total {
		total[i] = s.down[i] + s.up[i]
	}
	s.ma = append(s.ma, MovingAverage(total))
	if !s.goodputStable {
		s.goodputStable = Stable(s.ma)
	}
	if s.goodputStable {
		if rpm, ok := responsiveness(); ok {
			s.rpm = append(s.rpm, rpm)
			s.converged = Stable(s.rpm)
		}
	}
	if s.converged {
		return 0
	}
	return max(0, min(INC, mnp-conns))
}

// report is the Report from the last MAD intervals' probes at now.
func (c *client) report(now time.Time, s series, took time.Duration) (Report, error) {
	w := c.window(now)
	tm, ok := w.Aggregate(false)
	p90, _ := w.Aggregate(true)
	r := Report{
		TrimmedMean: tm, P90: p90,
		Load: Load{DownloadBps: MovingAverage(s.down), UploadBps: MovingAverage(s.up),
			Connections: c.connections(), Intervals: len(s.down), DurationSec: took.Seconds()},
		Stop: Stop{GoodputStable: s.goodputStable, Converged: s.converged, Ended: EndedTimeLimit, Confidence: "Low"},
	}
	r.Probes = c.counts(w)
	switch {
	case s.converged:
		r.Stop.Ended, r.Stop.Confidence = EndedStable, "High"
	case len(s.rpm) >= MAD:
		r.Stop.Confidence = "Medium"
	}
	if !ok {
		return r, fmt.Errorf("no probes of every kind completed in the last %d intervals (%d foreign, %d self, %d failed)",
			MAD, r.Probes.Foreign, r.Probes.Self, r.Probes.Failed)
	}
	r.RPM, r.RPMP90, r.ForeignRPM, r.LoadedRPM = tm.RPM(), p90.RPM(), tm.Foreign(), tm.Loaded()
	return r, nil
}

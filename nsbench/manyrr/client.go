package manyrr

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"sync"
	"time"
)

// Report is what the client prints: per connection the transactions it
// completed within the test, and the latency quantiles of every
// transaction of every connection (µs).
//
// A transaction still in flight when the test ends is awaited up to Drain
// more: answered then, its latency is a reading like any other (it is not
// counted in Transactions, whose rate is over the test). One still
// unanswered after the Drain is censored, not dropped: its wait so far is
// a lower bound of its latency (InFlightUs) and joins the readings, so a
// stalled connection raises the tail instead of vanishing from it. A
// quantile that a censored wait reaches (a wait at or below it: raising
// the wait could move it) is a lower bound, and AtLeast names it
// ("p99_us"; "mean_us" for the mean).
type Report struct {
	Conns        int       `json:"conns"`
	DurationSec  float64   `json:"duration_sec"`
	Transactions []int     `json:"transactions"`
	MeanUs       float64   `json:"mean_us"`
	P50Us        float64   `json:"p50_us"`
	P90Us        float64   `json:"p90_us"`
	P99Us        float64   `json:"p99_us"`
	P999Us       float64   `json:"p999_us"`
	InFlightUs   []float64 `json:"in_flight_us,omitempty"`
	AtLeast      []string  `json:"at_least,omitempty"`
}

// Drain is how long a transaction in flight at the test's end is awaited
// before it is censored: far above a transaction's round trip on any path
// measured here (tens of ms over the WAN condition, hundreds under load),
// so only a stalled one waits it out.
const Drain = time.Second

// ClientMain is the client's command line: --addr HOST:PORT --conns N
// --duration D. It prints the Report as JSON.
func ClientMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet(ClientArg, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "", "the server's host:port")
	conns := fs.Int("conns", 50, "connections at once")
	d := fs.Duration("duration", 10*time.Second, "how long each connection runs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" || *conns < 1 || *d <= 0 {
		return errors.New("--addr HOST:PORT, --conns ≥ 1 and --duration > 0 are required")
	}
	r, err := Run(ctx, *addr, *conns, *d)
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(r)
}

// Run opens conns connections to addr, then runs them all closed-loop for
// d. Any connection's failure, other than a transaction cut by the end,
// fails the run.
func Run(ctx context.Context, addr string, conns int, d time.Duration) (Report, error) {
	cs, err := dialAll(ctx, addr, conns)
	defer func() {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
	}()
	if err != nil {
		return Report{}, err
	}
	lat := make([][]float64, conns)
	done := make([]int, conns)
	waits := make([]float64, conns)
	errs := make([]error, conns)
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat[i], done[i], waits[i], errs[i] = loop(ctx, c, end, end.Add(Drain))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Report{}, err
	}
	return summarise(lat, done, waits, d), nil
}

// dialAll opens conns connections to addr at once (a path with a long
// round trip pays it once, not conns times); the first failure is
// returned beside whatever did open, for the caller to close.
func dialAll(ctx context.Context, addr string, conns int) ([]net.Conn, error) {
	cs := make([]net.Conn, conns)
	errs := make([]error, conns)
	dialer := net.Dialer{Timeout: DialTimeout}
	var wg sync.WaitGroup
	for i := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cs[i], errs[i] = dialer.DialContext(ctx, "tcp", addr); errs[i] != nil {
				errs[i] = fmt.Errorf("connection %d of %d: %w", i+1, conns, errs[i])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return cs, err
		}
	}
	return cs, nil
}

// loop runs one connection's transactions until end, then awaits the one
// in flight until drain. It returns each answered transaction's latency
// (µs), how many were answered by end, and the wait so far (µs) of one
// still unanswered at drain, or 0.
func loop(ctx context.Context, c net.Conn, end, drain time.Time) (lat []float64, done int, waiting float64, err error) {
	if err := c.SetDeadline(drain); err != nil {
		return nil, 0, 0, err
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	req, resp := make([]byte, Size), make([]byte, Size)
	for {
		t := time.Now()
		if !t.Before(end) {
			return lat, done, 0, nil
		}
		_, err := c.Write(req)
		if err == nil {
			_, err = io.ReadFull(c, resp)
		}
		now := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, 0, ctx.Err()
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return lat, done, micros(now.Sub(t)), nil // still in flight at drain (≥ Drain): censored
			}
			return nil, 0, 0, fmt.Errorf("after %d transactions: %w", len(lat), err)
		}
		lat = append(lat, micros(now.Sub(t)))
		if !now.After(end) {
			done++
		}
	}
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// summarise is the Report of each connection's latencies (µs), counts of
// transactions answered in the test, and censored wait (µs, 0: none),
// over the test's duration d.
func summarise(lat [][]float64, done []int, waits []float64, d time.Duration) Report {
	r := Report{Conns: len(lat), DurationSec: d.Seconds(), Transactions: done}
	var all []float64
	for i, l := range lat {
		all = append(all, l...)
		if waits[i] > 0 {
			r.InFlightUs = append(r.InFlightUs, waits[i])
		}
	}
	all = append(all, r.InFlightUs...)
	if len(all) == 0 {
		return r
	}
	slices.Sort(all)
	var sum float64
	for _, x := range all {
		sum += x
	}
	r.MeanUs = sum / float64(len(all))
	if len(r.InFlightUs) > 0 {
		r.AtLeast = append(r.AtLeast, "mean_us")
	}
	for _, q := range []struct {
		key string
		q   float64
		to  *float64
	}{{"p50_us", 0.5, &r.P50Us}, {"p90_us", 0.9, &r.P90Us}, {"p99_us", 0.99, &r.P99Us}, {"p999_us", 0.999, &r.P999Us}} {
		*q.to = rank(all, q.q)
		if slices.ContainsFunc(r.InFlightUs, func(w float64) bool { return w <= *q.to }) {
			r.AtLeast = append(r.AtLeast, q.key)
		}
	}
	return r
}

// rank is the q-quantile of sorted s by the nearest rank: the smallest
// value with at least q of them at or below it.
func rank(s []float64, q float64) float64 {
	i := int(math.Ceil(float64(len(s))*q)) - 1
	return s[max(0, min(i, len(s)-1))]
}

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

// Report is what the client prints: per connection its completed
// transactions, and the latency quantiles of every transaction of every
// connection (µs). A transaction still in flight at the end is not
// counted (as netperf does).
type Report struct {
	Conns        int     `json:"conns"`
	DurationSec  float64 `json:"duration_sec"`
	Transactions []int   `json:"transactions"`
	MeanUs       float64 `json:"mean_us"`
	P50Us        float64 `json:"p50_us"`
	P90Us        float64 `json:"p90_us"`
	P99Us        float64 `json:"p99_us"`
	P999Us       float64 `json:"p999_us"`
}

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
	errs := make([]error, conns)
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat[i], errs[i] = loop(ctx, c, end)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return Report{}, err
	}
	return summarise(lat, elapsed), nil
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

// loop runs one connection's transactions until end, returning each one's
// latency (µs).
func loop(ctx context.Context, c net.Conn, end time.Time) ([]float64, error) {
	if err := c.SetDeadline(end); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	req, resp := make([]byte, Size), make([]byte, Size)
	var lat []float64
	for {
		t := time.Now()
		_, err := c.Write(req)
		if err == nil {
			_, err = io.ReadFull(c, resp)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return lat, nil // cut by the end: not counted
			}
			return nil, fmt.Errorf("after %d transactions: %w", len(lat), err)
		}
		lat = append(lat, float64(time.Since(t).Nanoseconds())/1e3)
	}
}

// summarise is the Report of each connection's latencies (µs) over elapsed.
func summarise(lat [][]float64, elapsed time.Duration) Report {
	r := Report{Conns: len(lat), DurationSec: elapsed.Seconds()}
	var all []float64
	for _, l := range lat {
		r.Transactions = append(r.Transactions, len(l))
		all = append(all, l...)
	}
	if len(all) == 0 {
		return r
	}
	slices.Sort(all)
	var sum float64
	for _, x := range all {
		sum += x
	}
	r.MeanUs = sum / float64(len(all))
	r.P50Us, r.P90Us, r.P99Us, r.P999Us = rank(all, 0.5), rank(all, 0.9), rank(all, 0.99), rank(all, 0.999)
	return r
}

// rank is the q-quantile of sorted s by the nearest rank: the smallest
// value with at least q of them at or below it.
func rank(s []float64, q float64) float64 {
	i := int(math.Ceil(float64(len(s))*q)) - 1
	return s[max(0, min(i, len(s)-1))]
}

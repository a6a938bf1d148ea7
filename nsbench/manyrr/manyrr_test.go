package manyrr

import (
	"context"
	"io"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSummarise(t *testing.T) {
	// Three connections: 1..100 µs, 101..200 µs and none.
	var a, b []float64
	for i := 1; i <= 100; i++ {
		a, b = append(a, float64(i)), append(b, float64(100+i))
	}
	r := summarise([][]float64{b, a, nil}, []int{100, 100, 0}, []float64{0, 0, 0}, 2*time.Second)
	want := Report{Conns: 3, DurationSec: 2, Transactions: []int{100, 100, 0}, MeanUs: 100.5, P50Us: 100, P90Us: 180, P99Us: 198, P999Us: 200}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
	if r := summarise([][]float64{nil}, []int{0}, []float64{0}, time.Second); r.P50Us != 0 || r.Transactions[0] != 0 {
		t.Errorf("no transactions: %+v", r)
	}
	// The third connection's one transaction still waiting after 5 s: it
	// joins the readings as a lower bound; p99 and p99.9 reach it (of
	// 201, the nearest ranks 199 and 201), p50 and p90 lie below it.
	r = summarise([][]float64{b, a, nil}, []int{100, 100, 0}, []float64{0, 0, 5e6}, 2*time.Second)
	want = Report{Conns: 3, DurationSec: 2, Transactions: []int{100, 100, 0}, MeanUs: (20100 + 5e6) / 201.0, P50Us: 101, P90Us: 181, P99Us: 199, P999Us: 5e6,
		InFlightUs: []float64{5e6}, AtLeast: []string{"mean_us", "p999_us"}}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("censored: got  %+v\nwant %+v", r, want)
	}
}

// runSlowly runs conns connections for d against a server on loopback
// that answers each request after delay, but, with stallFirst, not on the
// first connection it accepts, which it holds open unanswered (a stalled
// connection) until the test ends.
func runSlowly(t *testing.T, delay time.Duration, stallFirst bool, conns int, d time.Duration) Report {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		held []net.Conn
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for first := true; ; first = false {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if first && stallFirst {
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
				continue
			}
			go func() {
				defer c.Close()
				buf := make([]byte, Size)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					time.Sleep(delay) // the path's latency, not synchronisation
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := Run(ctx, l.Addr().String(), conns, d)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRunCensorsAStalledConnection: a connection the server never answers
// is not dropped from the latencies: its transaction, still in flight
// after the Drain, joins them with its wait so far (≥ the test and the
// Drain), a lower bound, and the tail it reaches says so. Three
// connections answered every 20 ms make about 30 transactions, so the
// stall is the nearest-rank p99.
func TestRunCensorsAStalledConnection(t *testing.T) {
	const d = 200 * time.Millisecond
	r := runSlowly(t, 20*time.Millisecond, true, 4, d)
	if len(r.InFlightUs) != 1 || r.InFlightUs[0] < float64((d+Drain)/time.Microsecond)*0.9 || !slices.Contains(r.Transactions, 0) {
		t.Fatalf("one stalled connection, its wait ≥ %v: %+v", d+Drain, r)
	}
	if r.P99Us != r.InFlightUs[0] || !slices.Contains(r.AtLeast, "p99_us") || !slices.Contains(r.AtLeast, "p999_us") {
		t.Errorf("p99 %v µs, bounds %v: want the stall's wait %v µs, a lower bound", r.P99Us, r.AtLeast, r.InFlightUs[0])
	}
	if slices.Contains(r.AtLeast, "p50_us") || r.P50Us > 1e5 {
		t.Errorf("p50 %v µs, bounds %v: the stall lies above it", r.P50Us, r.AtLeast)
	}
}

// TestRunDrainsTheLastTransactions: a transaction in flight at the test's
// end that is answered within the Drain is a reading, exact, and not
// counted in the test's transactions.
func TestRunDrainsTheLastTransactions(t *testing.T) {
	r := runSlowly(t, 100*time.Millisecond, false, 2, 250*time.Millisecond)
	if len(r.InFlightUs) != 0 || len(r.AtLeast) != 0 || r.DurationSec != 0.25 {
		t.Errorf("nothing censored over 0.25 s: %+v", r)
	}
	for i, n := range r.Transactions {
		if n < 1 || n > 2 {
			t.Errorf("connection %d: %d transactions answered in the test, want 1 or 2 at 100 ms each (the one in flight at 0.25 s answered after)", i, n)
		}
	}
	if r.P999Us < 1e5 || r.P999Us > 5e5 {
		t.Errorf("p99.9 %v µs: want the answered ~100 ms", r.P999Us)
	}
}

// TestRunAgainstServe: the client and the server on loopback, every
// connection answered for the whole run.
func TestRunAgainstServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l) }()
	r, err := Run(ctx, l.Addr().String(), 5, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Conns != 5 || len(r.Transactions) != 5 || r.DurationSec < 0.3 || r.DurationSec > 5 {
		t.Fatalf("report %+v", r)
	}
	for i, n := range r.Transactions {
		if n < 10 {
			t.Errorf("connection %d: %d transactions in 0.3 s on loopback", i, n)
		}
	}
	if !(0 < r.P50Us && r.P50Us <= r.P90Us && r.P90Us <= r.P99Us && r.P99Us <= r.P999Us) {
		t.Errorf("quantiles %+v", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestRunFailsOnAClosedConnection: a server that closes every connection
// fails the run with the cause, not a short count.
func TestRunFailsOnAClosedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = Run(ctx, l.Addr().String(), 2, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "after 0 transactions") {
		t.Errorf("got %v", err)
	}
}

// TestRunRefused: a server that is not there fails the run before any
// transaction, naming a connection and the cause.
func TestRunRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = Run(ctx, addr, 3, time.Second)
	if err == nil || !strings.Contains(err.Error(), " of 3: ") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("got %v", err)
	}
}

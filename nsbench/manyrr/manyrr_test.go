package manyrr

import (
	"context"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSummarise(t *testing.T) {
	// Three connections: 1..100 µs, 101..200 µs and none.
	var a, b []float64
	for i := 1; i <= 100; i++ {
		a, b = append(a, float64(i)), append(b, float64(100+i))
	}
	r := summarise([][]float64{b, a, nil}, 2*time.Second)
	want := Report{Conns: 3, DurationSec: 2, Transactions: []int{100, 100, 0}, MeanUs: 100.5, P50Us: 100, P90Us: 180, P99Us: 198, P999Us: 200}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
	if r := summarise([][]float64{nil}, time.Second); r.P50Us != 0 || r.Transactions[0] != 0 {
		t.Errorf("no transactions: %+v", r)
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

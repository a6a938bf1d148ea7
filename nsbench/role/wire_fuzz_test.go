package role

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// gatedReader gives its bytes once open is closed: the host's answers
// arrive after the orchestrator's requests are out.
type gatedReader struct {
	open <-chan struct{}
	r    io.Reader
}

func (g gatedReader) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

// countingWriter signals each request written (the encoder writes one
// request per Write) on a channel with room for every request.
type countingWriter struct{ wrote chan<- struct{} }

func (w countingWriter) Write(p []byte) (int, error) {
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

// FuzzWireAnswers: whatever a host sends back (answers to a call, a
// daemon's start and a program's run, exit events, torn or foreign
// lines), the orchestrator's end of the wire never panics, fails or
// answers every request in flight, ends the daemon it started, and ends
// the connection when the host's stream ends. A line is read whole only
// within MaxLine (TestWireBoundsEveryLine).
func FuzzWireAnswers(f *testing.F) {
	for _, s := range []string{
		"",
		`{"id":1,"result":{"User":1,"System":2}}` + "\n" + `{"id":2,"pid":42}` + "\n" + `{"id":3,"run":{"Stdout":"x"}}` + "\n",
		`{"id":2,"pid":42}` + "\n" + `{"id":0,"handle":2,"exited":true,"err":"killed"}` + "\n",
		`{"id":0,"handle":2,"exited":true}` + "\n" + `{"id":2,"pid":-1}` + "\n" + `{"id":2,"pid":7}` + "\n",
		`{"id":1,"err":"no such op"}` + "\n" + `{"id":3,"err":"exit 1","run":null}` + "\n" + `{"id":2,"err":"refused"}` + "\n",
		`{"id":1,"result":"\u001b]0;x\u0007"}` + "\n" + "not json\n",
		`{"id":18446744073709551615,"handle":18446744073709551615,"exited":true}` + "\n{\n",
		`{"id":1,"result":{"User":1e999}}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answers []byte) {
		open, wrote := make(chan struct{}), make(chan struct{}, 16)
		c := NewWire("fuzzed host", gatedReader{open, &limitedReader{b: answers}}, countingWriter{wrote})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		var started *proc.Process
		requests := []func(){
			func() { _, _ = HostNoise(ctx, c, "twnsb-fuzz00") },
			func() { started, _ = c.Host("").start(ctx, proc.Program{Name: "daemon"}) },
			func() { _, _ = c.Host("twnsb-fuzz00-client").run(ctx, proc.Program{Name: "program"}) },
		}
		for _, r := range requests { // one at a time: IDs 1, 2, 3 in order
			wg.Add(1)
			go func() { defer wg.Done(); r() }()
			waitFor(t, wrote, "request written")
		}
		close(open)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		waitFor(t, done, "every request answered or failed")
		waitFor(t, c.Done(), "the connection ended with the host's stream")
		if c.Err() == nil {
			t.Fatal("connection ended without an error")
		}
		if started != nil {
			waitFor(t, started.Done(), "the started daemon ended with the connection")
		}
	})
}

// limitedReader is b, then EOF; a reader of its own so that the wire
// cannot see it as a bytes.Reader.
type limitedReader struct{ b []byte }

func (r *limitedReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("not within 10 s: %s", what)
	}
}

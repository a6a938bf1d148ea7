package wan

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/impair"
)

// setUpWatchTick is how often a set-up under a narrow hop reads the hop's
// counts.
const setUpWatchTick = time.Second

// WatchSetUp runs f, a row's set-up under the condition named cond. Under
// a narrow hop it reads the hop's counts every setUpWatchTick and cancels
// f's context when impair.JudgeSetUp finds the set-up stalled (the hop
// still dropping its packets as too big after impair.SetUpStallAfter):
// the error is then the *impair.SetUpStallError, the evidence. A
// set-up that does not meet the hop keeps f's own bounds. Without a narrow
// hop it is f(ctx).
func (w *Run) WatchSetUp(ctx context.Context, cond string, f func(context.Context) error) error {
	if _, ok := w.NarrowCounts(ctx, cond); !ok {
		return f(ctx)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		tick := time.NewTicker(setUpWatchTick)
		defer tick.Stop()
		var rs []impair.NarrowReading
		for {
			if n, ok := w.NarrowCounts(wctx, cond); ok {
				rs = append(rs, impair.NarrowReading{At: time.Since(start), Counts: n})
				if stall := impair.JudgeSetUp(rs); stall != nil {
					cancel(stall)
					return
				}
			}
			select {
			case <-done:
				return
			case <-wctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	err := f(wctx)
	close(done)
	wg.Wait() // the hop is read by one goroutine at a time
	var stall *impair.SetUpStallError
	if err != nil && errors.As(context.Cause(wctx), &stall) {
		w.resetStalled(ctx)
		// f failed because it was given up: its own error says no more
		// than that (a tool killed, the cause repeated).
		return stall
	}
	return err
}

// resetStalled aborts (RST, `ss -K`) every role's TCP connections in
// retransmission backoff after a set-up the hop stalled: the set-up's
// killed ssh leaves its socket behind (FIN-WAIT-1, backoff 5 at 12 s,
// retransmitting its too-big key exchange for minutes), and each of those
// retransmits, dropped by the hop, would count as the next row's traffic
// (wireguard-go at MTU 1220 read "recovered without icmp" on one such
// drop). A connection that is being acknowledged has no backoff.
func (w *Run) resetStalled(ctx context.Context) {
	for _, r := range w.roles {
		res, err := r.Run(ctx, "ss", "-tniH")
		if err != nil {
			w.logf("%s: list TCP connections: %v", r.Name(), err)
			continue
		}
		for _, c := range backedOff(string(res.Stdout)) {
			if _, err := r.Run(ctx, "ss", "-K", "-t", "state", "all", "( sport = :"+c.local+" and dport = :"+c.peer+" )"); err != nil {
				w.logf("%s: reset the stalled TCP connection %s → %s: %v", r.Name(), c.local, c.peer, err)
			}
		}
	}
}

// tcpPorts are a TCP connection's local and peer ports.
type tcpPorts struct{ local, peer string }

// backedOff reads `ss -tniH` output (a socket's line, then its info line,
// indented) and returns the connections whose info shows a retransmission
// backoff.
func backedOff(ss string) []tcpPorts {
	var out []tcpPorts
	var cur *tcpPorts
	for _, line := range strings.Split(ss, "\n") {
		if line == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			cur = nil
			if f := strings.Fields(line); len(f) >= 5 {
				cur = &tcpPorts{local: ssPort(f[3]), peer: ssPort(f[4])}
			}
			continue
		}
		if cur != nil && backoffRE.MatchString(line) {
			out = append(out, *cur)
			cur = nil
		}
	}
	return out
}

var backoffRE = regexp.MustCompile(`(^|\s)backoff:[1-9]`)

// ssPort is the port of ss's ADDR:PORT ("10.77.0.2:35378",
// "[::ffff:10.77.0.4]:5201").
func ssPort(addrPort string) string {
	return addrPort[strings.LastIndexByte(addrPort, ':')+1:]
}

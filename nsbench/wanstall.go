package nsbench

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/impair"
)

// setUpWatchTick is how often a set-up under a narrow hop reads the hop's
// counts.
const setUpWatchTick = time.Second

// watchSetUp runs f, a row's set-up under the condition named cond. Under
// a narrow hop it reads the hop's counts every setUpWatchTick and cancels
// f's context when impair.JudgeSetUp finds the set-up stalled (the hop
// still dropping its packets as too big after impair.SetUpStallAfter):
// the error is then the *impair.SetUpStallError, the evidence. A
// set-up that does not meet the hop keeps f's own bounds. Without a narrow
// hop it is f(ctx).
func (w *wanRun) watchSetUp(ctx context.Context, cond string, f func(context.Context) error) error {
	if _, ok := w.narrowCounts(ctx, cond); !ok {
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
			if n, ok := w.narrowCounts(wctx, cond); ok {
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
		// f failed because it was given up: its own error says no more
		// than that (a tool killed, the cause repeated).
		return stall
	}
	return err
}

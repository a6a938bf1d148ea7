package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
)

// console prints the run's log lines to w. On a terminal it also keeps a
// live status line at the bottom (cell, run k/N, elapsed, ETA), redrawn
// every second; elsewhere (a file, a pipe, CI) it prints plain lines only.
type console struct {
	mu       sync.Mutex
	w        io.Writer
	live     bool
	status   *nsbench.Status
	statusAt time.Time
	stop     chan struct{}
	stopped  sync.WaitGroup
}

func newConsole(w io.Writer) *console {
	c := &console{w: w, live: isTerminal(w), stop: make(chan struct{})}
	if c.live {
		c.stopped.Add(1)
		go c.tick()
	}
	return c
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Logf prints one timestamped line above the status line. Its arguments
// may carry a host's or a results file's words (errors, reasons): the
// line's control characters are quoted (textsafe.Quote), so it stays one
// line and cannot drive the terminal.
func (c *console) Logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearLocked()
	fmt.Fprintf(c.w, "%s %s\n", time.Now().Format("15:04:05"), textsafe.Quote(fmt.Sprintf(format, args...)))
	c.drawLocked()
}

// Status records the sample about to run.
func (c *console) Status(s nsbench.Status) {
	if !c.live {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status, c.statusAt = &s, time.Now()
	c.clearLocked()
	c.drawLocked()
}

// Close stops the redraws and removes the status line.
func (c *console) Close() {
	if !c.live {
		return
	}
	close(c.stop)
	c.stopped.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearLocked()
	c.status = nil
}

func (c *console) tick() {
	defer c.stopped.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.mu.Lock()
			c.clearLocked()
			c.drawLocked()
			c.mu.Unlock()
		}
	}
}

func (c *console) clearLocked() {
	if c.live && c.status != nil {
		fmt.Fprint(c.w, "\r\033[K")
	}
}

func (c *console) drawLocked() {
	if !c.live || c.status == nil {
		return
	}
	fmt.Fprint(c.w, statusLine(*c.status, time.Since(c.statusAt)))
}

// statusLine renders s, since seconds after it was reported. An ETA that
// rests on cells or conditions not measured yet says it is a first guess.
func statusLine(s nsbench.Status, since time.Duration) string {
	eta := "ETA ?"
	if s.ETA > 0 {
		eta = "ETA ~" + max(s.ETA-since, 0).Round(time.Second).String()
		if s.FirstGuess {
			eta += " (first guess)"
		}
	}
	return fmt.Sprintf("▶ %s / %s  %s  run %s  [%d/%d samples]  elapsed %s  %s",
		s.Transport, s.Condition, s.Instrument, s.Run, s.Done, s.Total,
		(s.Elapsed + since).Round(time.Second), eta)
}

package callgrind

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestCounterCountsWhatRanBetween runs tr under callgrind and counts
// what it does between Start and Stop: two equal transfers count the
// same within 3 %, and a window in which it copies nothing counts far
// fewer instructions than one in which it copies 4 MiB.
func TestCounterCountsWhatRanBetween(t *testing.T) {
	for _, p := range []string{Program, Control} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("no %s (valgrind's package): %v", p, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "callgrind.out")
	argv := Argv(out, []string{"tr", "x", "y"}) // its work per byte is its own, not the kernel's
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()

	c := &Counter{PID: cmd.Process.Pid, Out: out, PathPrefixes: []string{""},
		Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
			return exec.CommandContext(ctx, name, args...).CombinedOutput()
		}}
	const size = 4 << 20
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	// copyThrough writes size bytes into tr and returns once it has
	// written them all back: everything it did for them is done.
	copyThrough := func() {
		done := make(chan error, 1)
		go func() { _, err := io.CopyN(io.Discard, stdout, size); done <- err }()
		for n := 0; n < size; n += len(chunk) {
			if _, err := in.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// The counter reaches tr once valgrind has started it.
	measure := func(work func()) Counts {
		t.Helper()
		var err error
		for deadline := time.Now().Add(30 * time.Second); ; {
			if err = c.Start(ctx); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		work()
		n, err := c.Stop(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	first, second, idle := measure(copyThrough), measure(copyThrough), measure(func() {})
	t.Logf("4 MiB: %d and %d instructions; nothing copied: %d", first.Total, second.Total, idle.Total)
	if first.Total == 0 || first.Path != first.Total {
		t.Fatalf("first transfer counted %+v: want a total above 0, all of it in the path (every function)", first)
	}
	// tr's reads and writes come in pieces as the pipe's timing gives
	// them, more or fewer per transfer on a busy host: seen 1.02 % apart
	// under load. A transfer that counted another's work (or none) would
	// be 100 % apart.
	if d := float64(second.Total)/float64(first.Total) - 1; d > 0.03 || d < -0.03 {
		t.Errorf("two equal transfers counted %d and %d (%.2f %% apart), want within 3 %%", first.Total, second.Total, 100*d)
	}
	if idle.Total*10 > first.Total {
		t.Errorf("a window without copying counted %d, want under a tenth of a transfer's %d", idle.Total, first.Total)
	}
}

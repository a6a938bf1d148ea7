// Package callgrind counts the instructions a program executes, under
// valgrind's callgrind, between two points the caller chooses: valgrind
// runs the program on a synthetic CPU, so the count is the program's own
// work whatever else the machine runs, where its CPU time is not (a
// shared host's load changes caching, batching and the scheduler). The
// program runs tens of times slower, so only a light, fixed load can be
// measured through it.
package callgrind

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Program is valgrind, which runs callgrind; Control is its
// callgrind_control, which zeroes, switches and dumps a running count.
const (
	Program = "valgrind"
	Control = "callgrind_control"
)

// Method names how the counts were taken, for the report.
const Method = "valgrind's callgrind: instructions the tunnel's daemon executed on valgrind's synthetic CPU during the sample, per byte its tunnel device sent"

// Argv is argv run under callgrind, counting nothing until told
// (Counter.Start), its dumps written to out.N.
func Argv(out string, argv []string) []string {
	return append([]string{Program, "--tool=callgrind", "--instr-atstart=no",
		"--callgrind-out-file=" + out}, argv...)
}

// GoEnv is the environment a Go program needs under callgrind, and what
// keeps its count steady: without asynchronous preemption (callgrind
// asserts on the runtime's preemption signals, threads.c
// vgCallgrind_post_signal) and on one processor (an idle processor's
// scheduler spins, stealing work, as often as timing allows).
var GoEnv = []string{"GODEBUG=asyncpreemptoff=1", "GOMAXPROCS=1"}

// Counts are one sample's instructions: every one the program executed,
// and those of the functions the caller named its packet path (the
// functions' own instructions, not their callees').
type Counts struct {
	Total, Path uint64
}

// Counter controls a program started with Argv.
type Counter struct {
	// Run runs a program where the counted one runs (callgrind_control
	// reaches it through valgrind's files in its host's /tmp).
	// It returns the program's output, stdout and stderr.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
	PID int
	Out string // Argv's out
	// PathPrefixes name the packet path's functions by prefix
	// ("golang.zx2c4.com/wireguard/device.").
	PathPrefixes []string
	dumps        int
}

// Start zeroes the count and starts counting (Argv's program counts
// nothing until then, and nothing after Stop).
func (c *Counter) Start(ctx context.Context) error {
	for _, arg := range []string{"--zero", "--instr=on"} {
		if err := c.control(ctx, arg); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops counting, dumps the count and reads it.
func (c *Counter) Stop(ctx context.Context) (Counts, error) {
	for _, arg := range []string{"--instr=off", "--dump"} {
		if err := c.control(ctx, arg); err != nil {
			return Counts{}, err
		}
	}
	c.dumps++
	name := c.Out + "." + strconv.Itoa(c.dumps)
	f, err := os.Open(name)
	if err != nil {
		return Counts{}, fmt.Errorf("read callgrind's dump: %w", err)
	}
	defer f.Close()
	counts, err := Parse(f, c.PathPrefixes)
	if err != nil {
		return Counts{}, fmt.Errorf("%s: %w", filepath.Base(name), err)
	}
	// The dumps are large (one per sample): the counts are what is kept.
	os.Remove(name)
	return counts, nil
}

// control runs callgrind_control arg on the counted program. It exits 0
// even when it finds no such program, saying so in its output.
func (c *Counter) control(ctx context.Context, arg string) error {
	pid := strconv.Itoa(c.PID)
	out, err := c.Run(ctx, Control, arg, pid)
	if err == nil && bytes.Contains(out, []byte("Error")) {
		err = errors.New(strings.TrimSpace(string(out)))
	}
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", Control, arg, pid, err)
	}
	return nil
}

// errNoTotals is a dump without its totals line: cut short.
var errNoTotals = errors.New("no totals line: the dump is incomplete")

// Parse reads a callgrind dump of one event (Ir, instructions): its
// totals, and the self cost of the functions whose names begin with one
// of prefixes. In callgrind's format a cost line follows its fn= line; a
// calls= line is followed by the inclusive cost of that call, which
// belongs to the callee and is skipped.
func Parse(r io.Reader, prefixes []string) (Counts, error) {
	var c Counts
	names := map[string]string{} // callgrind's "(id)" compression
	inPath, afterCalls, totals := false, false, false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "fn="):
			name := expand(names, line[len("fn="):])
			inPath = hasAnyPrefix(name, prefixes)
		case strings.HasPrefix(line, "cfn="), strings.HasPrefix(line, "cfi="), strings.HasPrefix(line, "cfl="):
			expand(names, line[strings.IndexByte(line, '=')+1:])
		case strings.HasPrefix(line, "calls="):
			afterCalls = true
		case strings.HasPrefix(line, "totals:"):
			n, err := strconv.ParseUint(strings.TrimSpace(line[len("totals:"):]), 10, 64)
			if err != nil {
				return Counts{}, fmt.Errorf("totals %q: %w", line, err)
			}
			c.Total, totals = n, true
		case len(line) > 0 && (line[0] >= '0' && line[0] <= '9' || line[0] == '+' || line[0] == '-' || line[0] == '*'):
			if afterCalls {
				afterCalls = false
				continue
			}
			if !inPath {
				continue
			}
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return Counts{}, fmt.Errorf("cost line %q: %w", line, err)
			}
			c.Path += n
		}
	}
	if err := sc.Err(); err != nil {
		return Counts{}, err
	}
	if !totals {
		return Counts{}, errNoTotals
	}
	return c, nil
}

// expand resolves callgrind's name compression: "(7) name" defines id 7,
// "(7)" refers to it.
func expand(names map[string]string, s string) string {
	if !strings.HasPrefix(s, "(") {
		return s
	}
	end := strings.IndexByte(s, ')')
	if end < 0 {
		return s
	}
	id, rest := s[:end+1], strings.TrimPrefix(s[end+1:], " ")
	if rest != "" {
		names[id] = rest
		return rest
	}
	return names[id]
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Package profile samples the CPU stacks of a run's roles while builds are
// measured (perf with a software clock, kernel and user frames, only the
// run's own cgroup), folds them ("process;outer;…;leaf count") and
// compares two builds: each function's share of the samples, B against A,
// with an interval across the rounds, and the merged call tree the report
// draws as a differential flame graph.
package profile

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Stacks are folded stacks: each call stack, its frames root first joined
// by ";" (the process's name at the root), and how many samples it had.
type Stacks map[string]int64

// Total is the number of samples.
func (s Stacks) Total() int64 {
	var n int64
	for _, c := range s {
		n += c
	}
	return n
}

// Add adds o's samples to s.
func (s Stacks) Add(o Stacks) {
	for k, c := range o {
		s[k] += c
	}
}

// WriteFolded writes s in the folded format flame graph tools read, one
// "stack count" a line, sorted by stack.
func (s Stacks) WriteFolded(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if _, err := fmt.Fprintf(bw, "%s %d\n", k, s[k]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadFolded reads the folded format WriteFolded writes.
func ReadFolded(r io.Reader) (Stacks, error) {
	out := Stacks{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		c, err := strconv.ParseInt(line[i+1:], 10, 64)
		if i <= 0 || err != nil || c < 0 {
			return nil, fmt.Errorf("folded stacks line %d: want \"STACK COUNT\", got %q", n, line)
		}
		out[line[:i]] += c
	}
	return out, sc.Err()
}

// ParseScript folds `perf script -F comm,pid,ip,sym,dso` output: a
// sample is a header line "COMM PID" then one frame a line, leaf first,
// "ADDR SYMBOL (DSO)", and a blank line. A frame perf could not name is
// named by its object ("[libc.so.6]", "[unknown]"); repeats of an unnamed
// frame are one frame. A ";" in a name becomes ":" (the folded format's
// separator).
func ParseScript(r io.Reader) (Stacks, error) {
	out := Stacks{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var comm string
	var frames []string // leaf first
	inSample := false
	flush := func() {
		if inSample {
			out[fold(comm, frames)]++
		}
		inSample, frames = false, frames[:0]
	}
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] != ' ' && line[0] != '\t':
			flush()
			c, err := header(line)
			if err != nil {
				return nil, fmt.Errorf("perf script line %d: %w", n, err)
			}
			comm, inSample = c, true
		case !inSample:
			return nil, fmt.Errorf("perf script line %d: a frame outside a sample: %q", n, line)
		default:
			f, err := frame(line)
			if err != nil {
				return nil, fmt.Errorf("perf script line %d: %w", n, err)
			}
			if len(frames) > 0 && f == frames[len(frames)-1] && strings.HasPrefix(f, "[") {
				continue
			}
			frames = append(frames, f)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	flush()
	return out, nil
}

// header reads "COMM PID" (a name may hold spaces; the PID is last).
func header(line string) (string, error) {
	f := strings.TrimRight(line, " \t:")
	i := strings.LastIndexAny(f, " \t")
	if i <= 0 {
		return "", fmt.Errorf("want a sample's \"COMM PID\", got %q", line)
	}
	if _, err := strconv.Atoi(f[i+1:]); err != nil {
		return "", fmt.Errorf("want a sample's \"COMM PID\", got %q", line)
	}
	return clean(strings.TrimSpace(f[:i])), nil
}

// frame reads "ADDR SYMBOL (DSO)" into the frame's name.
func frame(line string) (string, error) {
	f := strings.TrimSpace(line)
	addr, rest, ok := strings.Cut(f, " ")
	if _, err := strconv.ParseUint(addr, 16, 64); !ok || err != nil {
		return "", fmt.Errorf("want a frame \"ADDR SYMBOL (DSO)\", got %q", line)
	}
	sym, dso := strings.TrimSpace(rest), ""
	if strings.HasSuffix(sym, ")") {
		if i := strings.LastIndex(sym, " ("); i >= 0 {
			sym, dso = sym[:i], sym[i+2:len(sym)-1]
		} else if strings.HasPrefix(sym, "(") {
			sym, dso = "", sym[1:len(sym)-1]
		}
	}
	if sym == "" || sym == "[unknown]" {
		if dso == "" || dso == "[unknown]" {
			return "[unknown]", nil
		}
		return "[" + clean(dso[strings.LastIndexByte(dso, '/')+1:]) + "]", nil
	}
	return clean(sym), nil
}

func clean(s string) string { return strings.ReplaceAll(s, ";", ":") }

// fold joins a sample's frames root first under its process's name.
func fold(comm string, leafFirst []string) string {
	parts := make([]string, 0, len(leafFirst)+1)
	parts = append(parts, comm)
	for i := len(leafFirst) - 1; i >= 0; i-- {
		parts = append(parts, leafFirst[i])
	}
	return strings.Join(parts, ";")
}

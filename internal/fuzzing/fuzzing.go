// Package fuzzing holds what the fuzz targets of the readers share: the
// seed corpus from the repository's real documents, and a measure of what
// one input made the code allocate, so that a count or a size a file
// names cannot make a reader or a renderer allocate by it.
package fuzzing

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// AddFiles adds every file matching the glob patterns to f's corpus.
func AddFiles(f *testing.F, patterns ...string) {
	for _, b := range ReadFiles(f, patterns...) {
		f.Add(b)
	}
}

// ReadFiles reads every file matching the glob patterns; a pattern
// matching nothing fails tb, so that a seed cannot silently go.
func ReadFiles(tb testing.TB, patterns ...string) [][]byte {
	var out [][]byte
	for _, p := range patterns {
		m, err := filepath.Glob(p)
		if err != nil || len(m) == 0 {
			tb.Fatalf("seed %s: no file (%v)", p, err)
		}
		for _, name := range m {
			b, err := os.ReadFile(name)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// Allocated is how many bytes fn allocated (the process's, so while fn
// runs alone, as a fuzz worker runs one input at a time).
func Allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// MaxAlloc bounds what reading and rendering an input of n bytes may
// allocate: a multiple of its size and a fixed allowance, never by a
// count or a value the input names.
func MaxAlloc(n int) uint64 { return 256<<20 + 4096*uint64(n) }

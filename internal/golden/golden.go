// Package golden compares a renderer's output with the file a test keeps
// of it in its package's testdata, or rewrites that file when the test
// runs with -update: shared by the report's tests and the CI formats'.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Check compares got with testdata/name, or rewrites it when update is
// set. A difference writes got beside it as name.got, for diff; create
// says how to make a missing file.
func Check(t testing.TB, name string, got []byte, update bool, create string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `%s` to create it)", err, create)
	}
	if !bytes.Equal(got, want) {
		gotPath := path + ".got"
		_ = os.WriteFile(gotPath, got, 0o644)
		t.Errorf("%s differs from the golden file: diff %s %s (rerun with -update if intended)", name, path, gotPath)
	}
}

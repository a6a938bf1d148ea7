package results

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A sweep's document and a run's are told apart by their content: Read
// refuses a sweep's with ErrClients (for a caller to read it with
// ReadClients) and ReadClients refuses a run's.
func TestReadTellsClientsApart(t *testing.T) {
	dir := t.TempDir()
	sweep := filepath.Join(dir, ClientsFileName)
	if err := WriteClients(sweep, &Clients{SchemaVersion: SchemaVersion, Counts: []int{1, 2},
		Rows: []ClientsRow{{Transport: "ssh", N: 1, PerClientMbps: []float64{900}}}}); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, FileName)
	if err := WriteAtomic(run, &Document{SchemaVersion: SchemaVersion, Transports: []Transport{{Name: "ssh"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(sweep); !errors.Is(err, ErrClients) {
		t.Errorf("Read(sweep) = %v, want ErrClients", err)
	}
	c, err := ReadClients(sweep)
	if err != nil || len(c.Rows) != 1 || c.Rows[0].PerClientMbps[0] != 900 {
		t.Errorf("ReadClients(sweep) = %+v, %v", c, err)
	}
	if d, err := Read(run); err != nil || d.Transports[0].Name != "ssh" {
		t.Errorf("Read(run) = %+v, %v", d, err)
	}
	if _, err := ReadClients(run); err == nil {
		t.Error("ReadClients took a run's results")
	}
	if err := os.WriteFile(run, []byte(`{"counts": true, "transports": [{"name": "ssh"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(run); errors.Is(err, ErrClients) {
		t.Error("a document whose counts are no list of client counts read as a sweep")
	}
}

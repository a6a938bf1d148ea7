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
		Rows: []ClientsRow{{Transport: "ssh", N: 1, ClientsWindow: ClientsWindow{PerClientMbps: []float64{900}}}}}); err != nil {
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

// A row's sweeps are itself then its repeats, in order; a document
// without repeats (one sweep, or older) reads as one sweep per row.
func TestClientsRowSweeps(t *testing.T) {
	old, err := ParseClients([]byte(`{"counts": [2], "rows": [{"transport": "ssh", "n": 2, "per_client_mbps": [400, 500]}]}`), "old")
	if err != nil {
		t.Fatal(err)
	}
	if s := old.Rows[0].Sweeps(); old.Env.Runs != 0 || len(s) != 1 || s[0].PerClientMbps[1] != 500 {
		t.Errorf("older document: runs %d, sweeps %+v; want one sweep", old.Env.Runs, s)
	}
	cur, err := ParseClients([]byte(`{"counts": [2], "env": {"runs": 3}, "rows": [{"transport": "ssh", "n": 2, "per_client_mbps": [400, 500],
		"repeats": [{"transport": "ssh", "n": 2, "per_client_mbps": [410, 510]}, {"transport": "ssh", "n": 2, "per_client_mbps": [], "error": "x"}]}]}`), "cur")
	if err != nil {
		t.Fatal(err)
	}
	s := cur.Rows[0].Sweeps()
	if cur.Env.Runs != 3 || len(s) != 3 || s[0].PerClientMbps[0] != 400 || s[1].PerClientMbps[0] != 410 || s[2].Error != "x" || s[0].Repeats != nil {
		t.Errorf("repeated document: runs %d, sweeps %+v; want 3 in order, the first without the repeats", cur.Env.Runs, s)
	}
	if len(cur.Rows[0].Repeats) != 2 {
		t.Errorf("Sweeps changed the row: %+v", cur.Rows[0])
	}
}

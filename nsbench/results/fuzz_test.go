package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/internal/fuzzing"
)

// seedDocuments adds the repository's real documents and a few hand-made
// edge cases to f's corpus.
func seedDocuments(f *testing.F) {
	fuzzing.AddFiles(f, "../report/testdata/*results.json", "../report/testdata/*/*results.json")
	for _, s := range []string{
		``, `null`, `[]`, `{}`, `{"schema_version":1}`, `{"schema_version":99,"transports":[{"name":"x"}]}`,
		`{"transports":[{"name":"ssh"}],"samples":[{"transport":"ssh","run":-1}]`, // truncated
		`{"transports":[{"name":"ssh"}],"samples":[{"transport":"ssh","condition":"lan","instrument":"iperf3-1","run":2147483647,"value":1e308}]}`,
		`{"counts":[1000000000],"rows":[{"transport":"ssh","n":1000000000,"per_client_mbps":[]}]}`,
		`{"counts":null,"rows":[]}`,
		`{"conditions":[{"name":"wan","runs":1000000000}],"samples":[{"transport":"a\u001b]0;x\u0007","value":-1}]}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzParse: a results document's reader never panics, returns either an
// error or a document, and refuses what it cannot read with an error that
// names the file; a document and a many-client sweep are told apart.
func FuzzParse(f *testing.F) {
	seedDocuments(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var d *Document
		var c *Clients
		var derr, cerr error
		if n := fuzzing.Allocated(func() {
			d, derr = Parse(b, "in.json")
			c, cerr = ParseClients(b, "in.json")
			if derr == nil {
				_ = d.IncompleteReason()
				_ = HistoryLines(d)
				_, _ = d.MetricReadings()
			}
		}); n > fuzzing.MaxAlloc(len(b)) {
			t.Fatalf("reading %d bytes allocated %d bytes", len(b), n)
		}
		if (d == nil) == (derr == nil) {
			t.Fatalf("Parse: document %v, error %v: want exactly one", d != nil, derr)
		}
		if (c == nil) == (cerr == nil) {
			t.Fatalf("ParseClients: document %v, error %v: want exactly one", c != nil, cerr)
		}
		for _, err := range []error{derr, cerr} {
			if err != nil && !strings.Contains(err.Error(), "in.json") {
				t.Fatalf("error %q does not name the file", err)
			}
		}
		if c != nil && !errors.Is(derr, ErrClients) && json.Valid(b) {
			t.Fatalf("a many-client sweep read as a run's results (%v)", derr)
		}
	})
}

// FuzzScanHistory: history lines are read or counted unreadable, never
// panicking, and what is read names its fingerprint and time.
func FuzzScanHistory(f *testing.F) {
	b, err := os.ReadFile("../report/testdata/reference-bench-results.json")
	if err != nil {
		f.Fatal(err)
	}
	d, err := Parse(b, "reference")
	if err != nil {
		f.Fatal(err)
	}
	var seed bytes.Buffer
	for _, l := range HistoryLines(d) {
		j, err := json.Marshal(l)
		if err != nil {
			f.Fatal(err)
		}
		seed.Write(append(j, '\n'))
	}
	f.Add(seed.Bytes())
	f.Add(append(seed.Bytes()[:seed.Len()/2:seed.Len()/2], "\n{\"fingerprint\":\"x\"}\n\n"...)) // a torn line
	f.Add([]byte(`{"fingerprint":"0123456789abcdef","time":"2026-01-01T00:00:00Z","median":1e999}` + "\n"))
	f.Add([]byte("\x00\xff\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h History
		if n := fuzzing.Allocated(func() { err = ScanHistory(bytes.NewReader(b), &h) }); n > fuzzing.MaxAlloc(len(b)) {
			t.Fatalf("reading %d bytes allocated %d bytes", len(b), n)
		}
		if err != nil && len(b) <= maxHistoryLine {
			t.Fatalf("%d bytes: %v", len(b), err)
		}
		for _, l := range h.Lines {
			if l.Fingerprint == "" || l.Time == "" {
				t.Fatalf("line without fingerprint or time read: %+v", l)
			}
		}
		if lines := bytes.Count(b, []byte("\n")) + 1; len(h.Lines)+h.Unreadable > lines {
			t.Fatalf("%d lines and %d unreadable from %d lines", len(h.Lines), h.Unreadable, lines)
		}
	})
}

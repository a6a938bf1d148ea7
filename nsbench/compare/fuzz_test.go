package compare

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/twnsbench/twnsbench/internal/fuzzing"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// FuzzCompare: any two documents the reader accepts compare without
// panicking and within bounded memory: their environments, tools and
// cells, a run's or a many-client sweep's.
func FuzzCompare(f *testing.F) {
	docs := fuzzing.ReadFiles(f, "../report/testdata/*results.json", "../report/testdata/*/*results.json")
	for _, d := range []*results.Document{doc("6.18", 1, 3.63, 3.64, 3.65), doc("6.1", 0.5, 1, 2, 3, 4, 5, 6), rrulDoc([]float64{1, 2, 3}, 1)} {
		b, err := json.Marshal(d)
		if err != nil {
			f.Fatal(err)
		}
		docs = append(docs, b)
	}
	for _, a := range docs {
		for _, b := range docs {
			f.Add(a, b)
		}
	}
	f.Add([]byte(`{"samples":[{"transport":"ssh","condition":"lan","instrument":"iperf3-1","run":1,"value":0}]}`),
		[]byte(`{"samples":[{"transport":"ssh","condition":"lan","instrument":"iperf3-1","run":1,"value":-1e308},{"transport":"ssh","condition":"lan","instrument":"iperf3-1","run":1,"value":1e308}]}`))
	f.Add([]byte(`{"counts":[1],"rows":[{"transport":"ssh","n":1,"per_client_mbps":[]}]}`),
		[]byte(`{"counts":[1],"rows":[{"transport":"ssh","n":1,"per_client_mbps":[0,0]},{"transport":"ssh","n":1}]}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if n, max := fuzzing.Allocated(func() { compareBytes(t, a, b) }), fuzzing.MaxAlloc(len(a)+len(b)); n > max {
			t.Fatalf("comparing %d and %d bytes allocated %d bytes", len(a), len(b), n)
		}
	})
}

// compareBytes is the compare command on two files' bytes, its output
// discarded.
func compareBytes(t *testing.T, a, b []byte) {
	old, oerr := results.Parse(a, "old.json")
	cur, cerr := results.Parse(b, "new.json")
	if oerr == nil && cerr == nil {
		_ = EnvDiffs(old, cur)
		_ = ToolDiffs(old, cur)
		if err := Write(io.Discard, Rows(old, cur)); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	oc, oerr := results.ParseClients(a, "old.json")
	cc, cerr := results.ParseClients(b, "new.json")
	if oerr == nil && cerr == nil {
		_ = ClientsEnvDiffs(oc, cc)
		if err := WriteClients(io.Discard, ClientsRows(oc, cc)); err != nil {
			t.Fatalf("write clients: %v", err)
		}
	}
}

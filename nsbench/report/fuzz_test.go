package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/twnsbench/twnsbench/internal/fuzzing"
	"github.com/twnsbench/twnsbench/nsbench/report/ci"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// seedRendered adds real documents (the reference harness's, the sweeps
// in testdata, the documents the report's tests render) and hand-made
// edge cases to f's corpus.
func seedRendered(f *testing.F) {
	fuzzing.AddFiles(f, "testdata/*results.json", "testdata/*/*results.json")
	ratio, lo, hi := 0.93, 0.90, 0.96
	ab := &results.Document{
		Transports: []results.Transport{{Name: "wg@a", Build: &results.Build{Label: "a", Programs: []results.BuildProgram{{Option: "wireguard-go", Version: "v1"}}}},
			{Name: "wg@b", Build: &results.Build{Label: "b"}}},
		Instruments: []results.Instrument{{Name: "iperf3-1", Metrics: []results.Metric{{Key: "value", Unit: "Gbit/s", Better: results.BetterHigher}}}},
		Verdicts: &results.Verdicts{Order: "ABBA", MinEffect: 0.05, Cells: []results.Verdict{{VerdictCell: results.VerdictCell{Transport: "wg", A: "wg@a", B: "wg@b",
			Condition: "lan", Instrument: "iperf3-1", Metric: "value", Better: results.BetterHigher}, Estimate: results.Estimate{Ratio: &ratio, Lo: &lo, Hi: &hi}, PairCounts: results.PairCounts{Pairs: 2}, Verdict: "slower"}}},
	}
	for r := 1; r <= 12; r++ {
		ab.Samples = append(ab.Samples, results.Sample{Transport: "wg@a", Condition: "lan", Instrument: "iperf3-1", Run: r, Value: 10},
			results.Sample{Transport: "wg@b", Condition: "lan", Instrument: "iperf3-1", Run: r, Value: 9 + float64(r%2)/10})
	}
	for _, d := range []*results.Document{twnsbenchDoc(), seriesDoc(), noisyDoc(), rrulDoc(), rrulFlowsDoc(), sweepDoc(), tunnelDoc(), wanDoc(), ab} {
		b, err := json.Marshal(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"transports":[{"name":"ssh"}]}`,
		`{"transports":[{"name":"<script>"}],"samples":[{"transport":"<script>","condition":"lan","instrument":"iperf3-1","run":1,"value":NaN}]}`,
		`{"transports":[{"name":"ssh"}],"samples":[{"transport":"ssh","condition":"lan","instrument":"iperf3-1","run":1,"value":1e308,"series":[{"name":"x","points":[[0,1e308],[-1e308,0]]}]}]}`,
		`{"conditions":[{"name":"lan","runs":2147483647}],"transports":[{"name":"ssh"}]}`,
		`{"counts":[0,-1,2147483647],"rows":[{"transport":"ssh","n":2147483647,"per_client_mbps":[1e308,-1e308,0]}]}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzRender: whatever the reader accepts, the renderer renders without
// panicking and within bounded memory: the Markdown, every chart, the
// HTML page, the verdict's CI files, and for a many-client sweep its
// files.
func FuzzRender(f *testing.F) {
	seedRendered(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		d, derr := results.Parse(b, "in.json")
		c, cerr := results.ParseClients(b, "in.json")
		if derr != nil && cerr != nil {
			return // refused: the command exits 2
		}
		var files []File
		if n := fuzzing.Allocated(func() {
			if d != nil {
				files = append(files, File{Name: "md", Body: Markdown(d)})
				files = append(files, Files(d)...)
				verdicts, err := ci.VerdictFiles(d)
				if err != nil {
					t.Fatalf("verdict files: %v", err)
				}
				files = append(files, verdicts...)
				_ = VerdictSummary(d)
				if d.Verdicts != nil {
					_ = RegressionLine(d.Verdicts.Cells)
				}
			}
			if c != nil {
				files = append(files, ClientsFiles(c)...)
			}
		}); n > fuzzing.MaxAlloc(len(b)) {
			t.Fatalf("rendering %d bytes allocated %d bytes", len(b), n)
		}
		if d != nil && len(files) == 0 || c != nil && len(files) == 0 {
			t.Fatal("an accepted document rendered no file")
		}
	})
}

// FuzzHistory: history lines read from any bytes render as a trend
// report, for the newest run's environment and for a named one.
func FuzzHistory(f *testing.F) {
	b, err := os.ReadFile("testdata/reference-bench-results.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, d := range []*results.Document{mustParse(f, b), twnsbenchDoc(), rrulDoc(), wanDoc()} {
		var seed bytes.Buffer
		for i := range 3 {
			for _, l := range results.HistoryLines(d) {
				l.Time = "2026-01-0" + string(rune('1'+i)) + "T00:00:00Z"
				j, err := json.Marshal(l)
				if err != nil {
					f.Fatal(err)
				}
				seed.Write(append(j, '\n'))
			}
		}
		f.Add(seed.Bytes(), "")
	}
	f.Add([]byte(`{"fingerprint":"0123456789abcdef","time":"x","median":-1e308}`+"\n"), "0123456789abcdef")
	f.Add([]byte(`{"fingerprint":"a","time":"2026","cell":{},"median":0}`+"\n{\n"), "a")
	f.Fuzz(func(t *testing.T, b []byte, fp string) {
		var h results.History
		if err := results.ScanHistory(bufio.NewReader(bytes.NewReader(b)), &h); err != nil {
			return
		}
		var out []byte
		if n := fuzzing.Allocated(func() { out = History(h, fp) }); n > fuzzing.MaxAlloc(len(b)) {
			t.Fatalf("rendering %d bytes allocated %d bytes", len(b), n)
		}
		if len(out) == 0 {
			t.Fatal("no report")
		}
	})
}

func mustParse(f *testing.F, b []byte) *results.Document {
	d, err := results.Parse(b, "seed")
	if err != nil {
		f.Fatal(err)
	}
	return d
}

// FuzzRenderEdits: the report's own documents with one sample, one
// series and one condition edited as a hand-edited or forged file can
// (any run number, value, wall time or name; a series whose times and
// values differ in count; any profile; any count of runs), written and
// read back, render
// without panicking and within bounded memory. Byte mutations of JSON
// seldom stay a document; these edits always do.
func FuzzRenderEdits(f *testing.F) {
	f.Add(uint8(0), uint16(0), 1, 10.0, 10.0, "ssh", uint8(1), 0.5, 40.0, 0.2)
	f.Add(uint8(1), uint16(3), -1, -1.0, 0.0, "", uint8(0), -1e308, 0.0, 100.0)
	f.Add(uint8(2), uint16(1), 1<<30, 1e308, 1e-308, "<b>|x|</b>\n[a](javascript:x)", uint8(7), 0.0, -1.0, 1e9)
	f.Fuzz(func(t *testing.T, doc uint8, at uint16, run int, value, wall float64, name string, values uint8, x, rtt, loss float64) {
		docs := []func() *results.Document{twnsbenchDoc, seriesDoc, noisyDoc, rrulDoc, rrulFlowsDoc, sweepDoc, tunnelDoc, wanDoc}
		d := docs[int(doc)%len(docs)]()
		if len(d.Samples) > 0 {
			s := &d.Samples[int(at)%len(d.Samples)]
			s.Run, s.Value, s.WallSec = run, value, wall
			if values%2 == 1 {
				s.Transport = name
			} else {
				s.Unit = name
			}
			for i := range s.Series {
				ser := &s.Series[i]
				ser.V = append(ser.V[:min(int(values)/2, len(ser.V))], x)
				if len(ser.T) > 0 {
					ser.T[int(at)%len(ser.T)] = x
				}
			}
		}
		if values%3 == 0 { // counts a file names: the runs asked for, --runs auto's bound
			d.Env.Runs = run
			d.Env.RunsAuto = &results.RunsAuto{MaxRuns: run, Precision: x}
		}
		if len(d.Conditions) > 0 {
			c := &d.Conditions[int(at)%len(d.Conditions)]
			c.Profile = &results.Profile{Spec: name, RTTMs: rtt, LossPct: loss, JitterMs: x}
		}
		b, err := json.Marshal(d)
		if err != nil {
			return // NaN or ±Inf: no file holds one
		}
		d, err = results.Parse(b, "edited.json")
		if err != nil {
			return
		}
		if n := fuzzing.Allocated(func() {
			_ = Markdown(d)
			_ = Files(d)
		}); n > fuzzing.MaxAlloc(len(b)) {
			t.Fatalf("rendering %d bytes allocated %d bytes", len(b), n)
		}
	})
}

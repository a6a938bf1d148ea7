package results

import (
	"encoding/json"
	"testing"
)

// TestRunConfigJSON: the config's groups are embedded, so its keys stay at
// the top level in the order files have always had; drift_probe appears
// only when the run was asked not to probe.
func TestRunConfigJSON(t *testing.T) {
	seed := uint64(7)
	c := RunConfig{Transports: []string{"ssh"}, WAN: []string{"off"}, Instruments: []string{"iperf3-1"},
		CellRuns: CellRuns{Runs: "auto", Precision: 0.05, PrecisionMs: 1, MaxRuns: 20},
		Measure:  Measure{SizeBytes: 1 << 20, DurationSec: 2, WarmupSec: 1},
		Network:  Network{Congestion: "cubic", NIC: "own"}, Schedule: Schedule{Order: "interleaved"},
		Impairment: "auto", Seed: &seed, Options: map[string]string{"wireguard": "auto"}}
	const want = `{"transports":["ssh"],"wan":["off"],"instruments":["iperf3-1"],"runs":"auto","precision":0.05,"precision_ms":1,"max_runs":20,` +
		`"size_bytes":1048576,"duration_sec":2,"warmup_sec":1,"congestion":"cubic","nic":"own","order":"interleaved",` +
		`"impairment":"auto","seed":7,"options":{"wireguard":"auto"}}`
	got, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("config JSON\n got %s\nwant %s", got, want)
	}

	c.DriftProbe = new(bool)
	got, _ = json.Marshal(c)
	var back RunConfig
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.DriftProbe == nil || *back.DriftProbe || back.Runs != "auto" || back.SizeBytes != 1<<20 || back.Order != "interleaved" {
		t.Errorf("read back %s as %+v", got, back)
	}
}

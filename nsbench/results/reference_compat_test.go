package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The reference harness's documented field set with the types its loader
// decodes into (tw's e2e bench report: benchEnv, benchSample, benchRSS,
// benchConditionInfo, benchDiag). Fields twnsbench adds are unknown there
// and ignored; a field of the wrong type fails its loader.
type refEnv struct {
	Generated  string `json:"generated"`
	CPUModel   string `json:"cpu_model"`
	Cores      int    `json:"cores"`
	Kernel     string `json:"kernel"`
	Docker     string `json:"docker"`
	TW         string `json:"tw"`
	OpenSSH    string `json:"openssh"`
	Iperf3     string `json:"iperf3"`
	Netperf    string `json:"netperf"`
	WireGuard  string `json:"wireguard"`
	Image      string `json:"image"`
	WAN        string `json:"wan"`
	Offloads   string `json:"offloads"`
	ScpForm    string `json:"scp_form"`
	ScpOptions string `json:"scp_options"`
	Runs       int    `json:"runs"`
	SizeGB     int    `json:"size_gb"`
}

type refSample struct {
	Transport    string             `json:"transport"`
	Condition    string             `json:"condition"`
	Instrument   string             `json:"instrument"`
	Run          int                `json:"run"`
	WallSec      float64            `json:"wall_sec"`
	Value        float64            `json:"value"`
	MeanUs       float64            `json:"mean_us,omitempty"`
	P50Us        float64            `json:"p50_us,omitempty"`
	P99Us        float64            `json:"p99_us,omitempty"`
	PayloadBytes uint64             `json:"payload_bytes,omitempty"`
	WireBytes    uint64             `json:"wire_bytes,omitempty"`
	HostCPUSec   float64            `json:"host_cpu_sec"`
	RoleCPUSec   map[string]float64 `json:"container_cpu_sec"`
}

type refResults struct {
	Env        refEnv `json:"env"`
	Conditions []struct {
		Name            string `json:"name"`
		Label           string `json:"label"`
		ScpPayloadBytes uint64 `json:"scp_payload_bytes"`
	} `json:"conditions"`
	Samples []refSample `json:"samples"`
	RSS     []struct {
		Transport string            `json:"transport"`
		Label     string            `json:"label,omitempty"`
		PeakKB    map[string]uint64 `json:"peak_kb"`
	} `json:"rss"`
	Diagnostics []struct {
		Transport string `json:"transport"`
		Condition string `json:"condition"`
		Name      string `json:"name"`
		Output    string `json:"output"`
	} `json:"diagnostics"`
}

func p[T any](v T) *T { return &v }

// TestReferenceLoaderDecodes: a document as twnsbench writes it, with a
// payload that is not a whole number of GiB, decodes into the reference's
// types, and what that loader reads is what was measured.
func TestReferenceLoaderDecodes(t *testing.T) {
	payload := int64(64 << 20)
	d := &Document{
		SchemaVersion: SchemaVersion,
		Complete:      true,
		Env: Env{Generated: "2026-12-01T00:00:00Z", CPUModel: "cpu", Cores: 2, Kernel: "6.18",
			Docker: "none: network namespaces on the host", Image: "none: the host's own programs (Debian GNU/Linux 12 (bookworm))",
			WAN: "30ms:0.1%", Runs: 1, SizeGB: GiBOf(payload), SizeBytes: payload, ScpOptions: "-c aes128-gcm@openssh.com -i KEY"},
		Conditions: []Condition{{Name: "lan", Label: "LAN (0 ms RTT, no loss)", ScpPayloadBytes: payload}},
		Samples: []Sample{
			{Transport: "tw", Condition: "lan", Instrument: "scp", Run: 1, WallSec: 2.5, Value: 26.8,
				PayloadBytes: p(payload), WireBytes: p(payload + payload/16), HostCPUSec: 4.5,
				RoleCPUSec: map[string]float64{"client": 1, "server": 1, "relay": 2}},
			{Transport: "tw", Condition: "lan", Instrument: "tcp_rr", Run: 1, WallSec: 2, Value: 630,
				MeanUs: p(1500.5), P50Us: p(1492.0), P99Us: p(2462.0), RoleCPUSec: map[string]float64{"client": 0.1},
				Extra: map[string]float64{"server_idle_wait_sec": 0.2}},
		},
		RSS:         []RSS{{Transport: "tw", PeakKB: map[string]int64{"client / tw client connect": 50688}}},
		Diagnostics: []Diagnostic{{Transport: "tw", Condition: "wan", Name: "n", Output: "o"}},
	}
	path := filepath.Join(t.TempDir(), FileName)
	if err := WriteAtomic(path, d); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ref refResults
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&ref); err != nil {
		t.Fatalf("the reference's loader rejects twnsbench's JSON: %v", err)
	}
	if ref.Env.SizeGB != 0 || ref.Env.Docker == "" || ref.Env.Image == "" || ref.Env.ScpOptions != "-c aes128-gcm@openssh.com -i KEY" {
		t.Errorf("env as the reference reads it: %+v", ref.Env)
	}
	s := ref.Samples[0]
	if s.PayloadBytes != uint64(payload) || s.WireBytes != uint64(payload+payload/16) || s.RoleCPUSec["relay"] != 2 {
		t.Errorf("scp sample as the reference reads it: %+v", s)
	}
	if rr := ref.Samples[1]; rr.P50Us != 1492 || rr.P99Us != 2462 || rr.MeanUs != 1500.5 {
		t.Errorf("tcp_rr sample as the reference reads it: %+v", rr)
	}
	if ref.RSS[0].PeakKB["client / tw client connect"] != 50688 || ref.Conditions[0].ScpPayloadBytes != uint64(payload) {
		t.Errorf("rss/conditions as the reference reads them: %+v %+v", ref.RSS, ref.Conditions)
	}
}

// TestSizeGBReadsOldFractions: documents written before size_gb became an
// integer still load, rounded; new ones write an integer.
func TestSizeGBReadsOldFractions(t *testing.T) {
	var e Env
	if err := json.Unmarshal([]byte(`{"size_gb": 0.0625}`), &e); err != nil || e.SizeGB != 0 {
		t.Errorf("0.0625: %v, %v", e.SizeGB, err)
	}
	if err := json.Unmarshal([]byte(`{"size_gb": 5}`), &e); err != nil || e.SizeGB != 5 {
		t.Errorf("5: %v, %v", e.SizeGB, err)
	}
	b, _ := json.Marshal(Env{SizeGB: GiBOf(1536 << 20)})
	if !bytes.Contains(b, []byte(`"size_gb":2`)) {
		t.Errorf("1.5 GiB written as %s, want the integer 2", b)
	}
	if (Env{SizeGB: 5}).PayloadBytes() != 5<<30 || (Env{SizeGB: 0, SizeBytes: 64 << 20}).PayloadBytes() != 64<<20 {
		t.Error("PayloadBytes: want size_bytes first, else whole GiB")
	}
}

func TestReadRefusesNonResults(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"empty.json": `{}`, "newer.json": `{"schema_version": 99, "samples": [{}]}`} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(body), 0o644)
		if _, err := Read(path); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
}

package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func historyDoc(generated, kernel, iperf3 string, goodput float64) *Document {
	d := &Document{
		Env: Env{Generated: generated, CPUModel: "AMD EPYC 7B13", Cores: 2, Kernel: kernel,
			CPUs: CPUs{CPUsOnline: &CPUSet{List: "0-1", Count: 2}}, DurationSec: 10, WarmupSec: 2, SizeBytes: 5 << 30,
			Congestion: "cubic", Order: "interleaved", Harness: "twnsbench devel 0123456789ab (go1.26.0)",
			Provenance: &Provenance{Version: "devel", Commit: "0123456789abcdef", Go: "go1.26.0"}},
		Conditions: []Condition{{Name: LAN, Label: "LAN (0 ms RTT, no loss)"}},
		Cells: []Cell{{CellKey: CellKey{Transport: "tw", Condition: LAN, Instrument: "iperf3-1", Metric: "value"}, Unit: "Gbit/s",
			Better: BetterHigher, Summary: Summary{N: 6, Median: goodput, MedianCI: MedianCI{CILow: goodput - 0.1, CIHigh: goodput + 0.1, CILevel: 0.969}}}},
	}
	d.Env.Facts.Add(Fact{Key: "iperf3", Label: "iperf3", Value: iperf3})
	d.Transports = []Transport{{Name: "tw", Label: "SSH over Tunnel Whisperer", Facts: map[string]string{"tw": "tw 2.1.0"}}}
	d.Env.Facts.Add(Fact{Key: "tw", Label: "tw", Value: "tw 2.1.0"})
	return d
}

func TestFingerprintIsStableAndNamesItsParts(t *testing.T) {
	a := historyDoc("2026-12-01T10:00:00Z", "6.8.0-49-generic", "iperf 3.16", 2.5)
	b := historyDoc("2026-12-02T10:00:00Z", "6.8.0-49-generic", "iperf 3.16", 3.1)
	b.Env.Facts = nil // the tw under test changes from run to run: not a part
	b.Env.Facts.Add(Fact{Key: "iperf3", Label: "iperf3", Value: "iperf 3.16"})
	b.Env.Facts.Add(Fact{Key: "tw", Label: "tw", Value: "tw 2.2.0"})
	fa, fb := Fingerprint(FingerprintOf(a.Env)), Fingerprint(FingerprintOf(b.Env))
	if fa != fb {
		t.Errorf("two runs of one machine and tools, another tw: fingerprints %s ≠ %s", fa, fb)
	}
	// The canonical text, pinned (printf 'kernel=6.8.0-49-generic\ncpu_model=AMD
	// EPYC 7B13\ncores_online=2\ntool.iperf3=iperf 3.16\n' | sha256sum): a
	// change of form would split every user's history.
	if fa != "d51d181f4a0c5a4e" {
		t.Errorf("fingerprint %s: the canonical form changed", fa)
	}
	c := historyDoc("2026-12-03T10:00:00Z", "6.11.0-9-generic", "iperf 3.17", 2.5)
	c.Env.CPUsOnline = &CPUSet{List: "0-3", Count: 4}
	fc := FingerprintOf(c.Env)
	if Fingerprint(fc) == fa {
		t.Error("another kernel, CPUs and iperf3: same fingerprint")
	}
	got := strings.Join(FingerprintOf(a.Env).Differences(fc), "; ")
	want := "kernel 6.8.0-49-generic ≠ 6.11.0-9-generic; CPUs online 2 ≠ 4; iperf3 iperf 3.16 ≠ iperf 3.17"
	if got != want {
		t.Errorf("differences:\n got %s\nwant %s", got, want)
	}
}

func TestHistoryLinesCarryTheCell(t *testing.T) {
	d := historyDoc("2026-12-01T10:00:00Z", "6.8.0-49-generic", "iperf 3.16", 2.5)
	d.Cells[0].LowerBounds = []string{BoundCIHigh}
	ls := HistoryLines(d)
	if len(ls) != 1 {
		t.Fatalf("%d lines, want 1", len(ls))
	}
	b, _ := json.Marshal(ls[0])
	want := `{"time":"2026-12-01T10:00:00Z","fingerprint":"d51d181f4a0c5a4e","transport":"tw","condition":"lan","condition_label":"LAN (0 ms RTT, no loss)","instrument":"iperf3-1","metric":"value","unit":"Gbit/s","better":"higher","n":6,"median":2.5,"interval":{"low":2.4,"high":2.6,"level":0.969,"lower_bounds":["ci_high"]},"settings":"duration 10 s, warm-up 2 s, payload 5120 MiB, congestion cubic, order interleaved","harness":"twnsbench devel 0123456789ab (go1.26.0)","provenance":{"version":"devel","commit":"0123456789abcdef","go":"go1.26.0"},"facts":{"tw":"tw 2.1.0"},"env":{"kernel":"6.8.0-49-generic","cpu_model":"AMD EPYC 7B13","cores_online":2,"tools":{"iperf3":"iperf 3.16"}}}`
	if string(b) != want {
		t.Errorf("line:\n got %s\nwant %s", b, want)
	}
	if s := ls[0].Series(); s != "tw · LAN (0 ms RTT, no loss) · iperf3-1 · value" {
		t.Errorf("series %q", s)
	}
	// A run whose interfaces kept their own offloads is a trend of its own.
	d.Config = &RunConfig{Network: Network{Congestion: "cubic", NIC: "own"}}
	if s := HistoryLines(d)[0].Settings; !strings.HasSuffix(s, "order interleaved, the interfaces' own offloads") {
		t.Errorf("--nic own settings %q", s)
	}
	// So is a run whose roles were pinned.
	d.Env.Pin = &Pin{Layout: "split", Roles: map[string]string{"server": "1", "client": "0"}}
	if s := HistoryLines(d)[0].Settings; !strings.HasSuffix(s, "own offloads, roles pinned (split: client 0, server 1)") {
		t.Errorf("--pin split settings %q", s)
	}
}

func TestAppendHistoryAppendsAndReadsBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hist") // created by the append
	for i, g := range []float64{2.5, 2.6} {
		d := historyDoc("2026-12-0"+string(rune('1'+i))+"T10:00:00Z", "6.8.0-49-generic", "iperf 3.16", g)
		if _, err := AppendHistory(dir, HistoryLines(d)); err != nil {
			t.Fatal(err)
		}
	}
	other := historyDoc("2026-12-05T10:00:00Z", "6.11.0-9-generic", "iperf 3.16", 9)
	path, err := AppendHistory(dir, HistoryLines(other))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != Fingerprint(FingerprintOf(other.Env))+".jsonl" {
		t.Errorf("file %s, want the fingerprint's", path)
	}
	// A torn line is counted and left out, not fatal.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"time":"2026-12-06T1` + "\n")
	f.Close()
	h, err := ReadHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Lines) != 3 || h.Unreadable != 1 {
		t.Fatalf("%d lines, %d unreadable; want 3 and 1", len(h.Lines), h.Unreadable)
	}
	var medians []float64
	for _, l := range h.Lines {
		medians = append(medians, l.Median)
	}
	if medians[0]+medians[1]+medians[2] != 2.5+2.6+9 {
		t.Errorf("medians %v", medians)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o755 {
		t.Errorf("directory mode %04o, want 0755", st.Mode().Perm())
	}
}

func TestHistoryRefusesAnUnsafeDirectory(t *testing.T) {
	lines := HistoryLines(historyDoc("2026-12-01T10:00:00Z", "6.8.0-49-generic", "iperf 3.16", 2.5))
	root := t.TempDir()
	real := filepath.Join(root, "real")
	os.Mkdir(real, 0o755)
	link := filepath.Join(root, "link")
	os.Symlink(real, link)
	open := filepath.Join(root, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o777)
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o644)
	planted := filepath.Join(root, "planted")
	os.Mkdir(planted, 0o755)
	victim := filepath.Join(root, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o644)
	os.Symlink(victim, filepath.Join(planted, lines[0].Fingerprint+HistoryExt))
	linked := filepath.Join(root, "linked")
	os.Mkdir(linked, 0o755)
	os.Link(victim, filepath.Join(linked, lines[0].Fingerprint+HistoryExt))
	for name, c := range map[string]struct{ dir, want string }{
		"symlink":        {link, "a symbolic link"},
		"world-writable": {open, "writable by its group or others"},
		"a file":         {file, "not a directory"},
		"under a file":   {filepath.Join(file, "sub"), "not a directory"},
		"planted link":   {planted, "open history"},
		"hard link":      {linked, "one link"},
	} {
		if _, err := AppendHistory(c.dir, lines); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("the file a planted symlink points to was written: %q", b)
	}
	if es, _ := os.ReadDir(real); len(es) != 0 {
		t.Errorf("the symlink's target got %d files", len(es))
	}
	if _, err := os.Stat(filepath.Join(file, "sub")); err == nil {
		t.Error("created something under a file")
	}
	if _, err := ReadHistory(link); err == nil {
		t.Error("read a history through a symlink")
	}
	if _, err := ReadHistory(filepath.Join(root, "missing")); err == nil {
		t.Error("read a missing history without an error")
	}
}

// TestFingerprintAcrossHostsTakesTheMeasuringTools: across hosts each
// host's measuring tools are part of the fingerprint, a transport's own
// programs are not (a run with the OpenVPN rows reports openvpn's version,
// one without does not; the Pure SSH row's history must stay one).
func TestFingerprintAcrossHostsTakesTheMeasuringTools(t *testing.T) {
	across := func(tools map[string]string) Env {
		d := historyDoc("2026-12-01T10:00:00Z", "6.8.0-49-generic", "iperf 3.16", 2.5)
		d.Env.Hosts = []Host{{Roles: []string{"client"}, Login: "root@10.0.0.10:22", Kernel: "6.8.0-49-generic", CPUModel: "AMD EPYC 7B13", Cores: 2, Tools: tools},
			{Roles: []string{"server"}, Login: "root@10.0.0.11:22", Kernel: "6.8.0-49-generic", CPUModel: "AMD EPYC 7B13", Cores: 2,
				Tools: map[string]string{"iperf3": "iperf 3.16", "sshd": "OpenSSH_9.2"}}}
		return d.Env
	}
	plain := Fingerprint(FingerprintOf(across(map[string]string{"iperf3": "iperf 3.16", "ssh": "OpenSSH_9.2p1"})))
	withVPN := Fingerprint(FingerprintOf(across(map[string]string{"iperf3": "iperf 3.16", "ssh": "OpenSSH_9.2p1", "openvpn": "OpenVPN 2.6.3"})))
	newer := Fingerprint(FingerprintOf(across(map[string]string{"iperf3": "iperf 3.17", "ssh": "OpenSSH_9.2p1"})))
	if plain != withVPN {
		t.Errorf("a run with the OpenVPN rows: fingerprint %s, one without %s; want one history", withVPN, plain)
	}
	if plain == newer {
		t.Errorf("the client's iperf3 3.16 → 3.17: same fingerprint %s", plain)
	}
}

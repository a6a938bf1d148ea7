package profile

import (
	"bytes"
	"maps"
	"os"
	"strings"
	"testing"
)

// TestParseScript folds captured-format perf script output: process at
// the root, frames root first, unnamed frames by their object and
// repeats of one merged, a ";" inside a name replaced.
func TestParseScript(t *testing.T) {
	f, err := os.Open("testdata/script.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseScript(f)
	if err != nil {
		t.Fatal(err)
	}
	want := Stacks{
		"wireguard-go;runtime.goexit.abi0;golang.zx2c4.com/wireguard/device.(*Peer).RoutineSequentialSender;golang.org/x/crypto/chacha20poly1305.(*chacha20poly1305).sealGeneric": 2,
		"wireguard-go;runtime.goexit.abi0;golang.zx2c4.com/wireguard/device.(*Peer).RoutineSequentialSender;udp_sendmsg;_raw_spin_unlock_irqrestore":                              1,
		"iperf3;[unknown];[iperf3];__memcpy_evex": 1,
		"my prog;odd:name":                        1,
	}
	if !maps.Equal(got, want) {
		t.Errorf("folded:\n%v\nwant:\n%v", got, want)
	}
	if got.Total() != 5 {
		t.Errorf("total %d, want 5", got.Total())
	}
}

// TestParseScriptRefusesGarbage: a frame before any sample, or a line
// that is neither, is an error naming its line.
func TestParseScriptRefusesGarbage(t *testing.T) {
	for _, in := range []string{
		"\tdeadbeef f (x)\n",
		"comm notapid\n\tdeadbeef f (x)\n",
		"comm 1\n\tnothex f (x)\n",
	} {
		if _, err := ParseScript(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("%q: error %v, want one naming the line", in, err)
		}
	}
}

// TestFoldedRoundTrip: WriteFolded writes sorted lines ReadFolded reads
// back to the same stacks (names with spaces included).
func TestFoldedRoundTrip(t *testing.T) {
	s := Stacks{"b;x y;z": 3, "a;f": 10}
	var buf bytes.Buffer
	if err := s.WriteFolded(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "a;f 10\nb;x y;z 3\n" {
		t.Errorf("folded file %q", buf.String())
	}
	back, err := ReadFolded(&buf)
	if err != nil || !maps.Equal(back, s) {
		t.Errorf("read back %v, %v; want %v", back, err, s)
	}
	if _, err := ReadFolded(strings.NewReader("nocount\n")); err == nil {
		t.Error("a line without a count was read")
	}
}

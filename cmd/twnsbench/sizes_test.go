package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --sizes the run cannot take is refused in one line before anything is
// created; rerun passes on the sizes the file's sweeps declare.
func TestSizesFlag(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"--instruments sizes --sizes mss_sweep=40,1460", "twnsbench: --sizes: mss_sweep: 40 bytes: iperf3's -M takes 88 to 9216\n"},
		{"--instruments tcp_rr --sizes rr_sizes=64", "twnsbench: --sizes: rr_sizes: not among the instruments measured (add it to --instruments)\n"},
		{"--instruments tcp_rr,sizes --sizes tcp_rr=64", "twnsbench: --sizes: tcp_rr: measures at no list of sizes (those that do: rr_sizes, udp_sizes, mss_sweep)\n"},
		{"--instruments sizes --sizes udp_sizes=64,1K,64", "twnsbench: --sizes: udp_sizes: size 64 given twice\n"},
		{"--instruments sizes --sizes udp_sizes", "twnsbench: --sizes: \"udp_sizes\": want NAME=SIZE,SIZE,… (e.g. udp_sizes=64,1200,1400)\n"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := runInProcess(append(append([]string{"run"}, strings.Fields(tc.args)...), "--out", out)...)
		if code != exitRefused || stderr != tc.want {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", tc.args, code, stderr, exitRefused, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: the output directory was created", tc.args)
		}
	}
}

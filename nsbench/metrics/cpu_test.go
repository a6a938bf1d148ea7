package metrics

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseProcStat(t *testing.T) {
	captured, err := os.ReadFile("testdata/proc-stat.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   string
		want CPUTimes
		busy uint64
	}{
		{
			name: "captured on this machine (kernel 6.18, 2 vCPU)",
			in:   string(captured),
			want: CPUTimes{User: 10271, System: 8326, Idle: 55487, IOWait: 291, SoftIRQ: 526},
			busy: 10271 + 8326 + 526,
		},
		{
			// Hand-made: every field set; guest (9) and guest_nice (10)
			// are already inside user and nice and must not count twice.
			name: "all ten fields",
			in:   "cpu  100 2 30 400 5 6 7 8 9 10\ncpu0 100 2 30 400 5 6 7 8 9 10\n",
			want: CPUTimes{User: 100, Nice: 2, System: 30, Idle: 400, IOWait: 5, IRQ: 6, SoftIRQ: 7, Steal: 8},
			busy: 100 + 2 + 30 + 6 + 7, // steal (8) is no work of this host
		},
		{
			name: "eight fields (2.6.11 to 2.6.23)",
			in:   "cpu 1 2 3 4 5 6 7 8\n",
			want: CPUTimes{User: 1, Nice: 2, System: 3, Idle: 4, IOWait: 5, IRQ: 6, SoftIRQ: 7, Steal: 8},
			busy: 1 + 2 + 3 + 6 + 7,
		},
		{
			name: "aggregate line after per-cpu lines",
			in:   "cpu0 9 9 9 9 9 9 9 9\ncpu 1 0 1 0 0 0 0 0 0 0\n",
			want: CPUTimes{User: 1, System: 1},
			busy: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("parseProcStat = %+v, want %+v", got, tt.want)
			}
			if b := got.BusyTicks(); b != tt.busy {
				t.Errorf("BusyTicks = %d, want %d", b, tt.busy)
			}
		})
	}
}

func TestParseProcStatErrors(t *testing.T) {
	tests := []struct{ name, in, wantErr string }{
		{"empty", "", "no aggregate cpu line"},
		{"per-cpu only", "cpu0 1 2 3 4 5 6 7 8\n", "no aggregate cpu line"},
		{"too few fields", "cpu 1 2 3 4\n", "cpu line has 4 fields, want at least 8"},
		{"not a number", "cpu 1 2 x 4 5 6 7 8\n", "parse cpu field 3"},
		{"negative", "cpu 1 2 3 4 5 6 -7 8\n", "parse cpu field 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseProcStat(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestTicksToSec(t *testing.T) {
	for ticks, want := range map[uint64]float64{0: 0, 1: 0.01, 100: 1, 19123: 191.23} {
		if got := TicksToSec(ticks); got != want {
			t.Errorf("TicksToSec(%d) = %v, want %v", ticks, got, want)
		}
	}
}

// TestUserHZ checks the constant against what the kernel told this process
// at exec: AT_CLKTCK in the auxiliary vector is sysconf(_SC_CLK_TCK).
func TestUserHZ(t *testing.T) {
	auxv, err := unix.Auxv()
	if err != nil {
		t.Skipf("no auxiliary vector: %v", err)
	}
	const atClkTck = 17 // AT_CLKTCK, include/uapi/linux/auxvec.h
	for _, kv := range auxv {
		if kv[0] == atClkTck {
			if kv[1] != UserHZ {
				t.Fatalf("AT_CLKTCK = %d, UserHZ = %d", kv[1], UserHZ)
			}
			return
		}
	}
	t.Fatal("auxiliary vector has no AT_CLKTCK")
}

func TestReadHostCPU(t *testing.T) {
	a, err := ReadHostCPU()
	if err != nil {
		t.Fatal(err)
	}
	if a.BusyTicks() == 0 || a.Idle == 0 {
		t.Errorf("host CPU times look empty: %+v", a)
	}
	b, err := ReadHostCPU()
	if err != nil {
		t.Fatal(err)
	}
	if b.BusyTicks() < a.BusyTicks() {
		t.Errorf("busy ticks went backwards: %d then %d", a.BusyTicks(), b.BusyTicks())
	}
}

func TestCPUList(t *testing.T) {
	for _, c := range []struct {
		list string
		n    int
	}{{"0", 1}, {"0-1", 2}, {"0-3,6,8-9", 7}, {"", 0}} {
		if n, err := countCPUList(c.list); err != nil || n != c.n {
			t.Errorf("countCPUList(%q) = %d, %v; want %d", c.list, n, err, c.n)
		}
	}
	if _, err := countCPUList("3-1"); err == nil {
		t.Error("a backwards range is accepted")
	}
	if got := FormatCPUList([]int{0, 1, 2, 3, 6, 8, 9}); got != "0-3,6,8-9" {
		t.Errorf("FormatCPUList = %q", got)
	}
	on, err := OnlineCPUs()
	if err != nil || on.Count < 1 {
		t.Fatalf("online cpus %+v: %v", on, err)
	}
	aff, err := Affinity()
	if err != nil || aff.Count < 1 || aff.Count > on.Count {
		t.Errorf("affinity %+v (online %+v): %v", aff, on, err)
	}
}

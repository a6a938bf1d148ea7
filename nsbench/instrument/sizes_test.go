package instrument

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// sweepReplay is a Job whose Run answers each size's command line with
// output(size), recording every command line; the size is the argument
// after flag.
func sweepReplay(t *testing.T, flag string, output func(size string) ([]byte, error)) (*Job, *[]string) {
	t.Helper()
	var argvs []string
	job := &Job{
		Target:   transport.DirectTarget("10.77.0.4"),
		Duration: 2 * time.Second,
		Run: func(_ context.Context, name string, args ...string) (proc.Result, error) {
			argvs = append(argvs, name+" "+strings.Join(args, " "))
			i := slices.Index(args, flag)
			if i < 0 || i+1 >= len(args) {
				t.Fatalf("no %s in %q", flag, args)
			}
			out, err := output(args[i+1])
			return proc.Result{Stdout: out, Wall: 2 * time.Second}, err
		},
	}
	return job, &argvs
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGeomean(t *testing.T) {
	for _, tc := range []struct {
		xs    []float64
		want  float64
		wantN int
	}{
		{[]float64{1, 100}, 10, 2},
		{[]float64{0, 4, 16}, 8, 2}, // a size that received nothing is left out
		{[]float64{5}, 5, 1},
		{[]float64{0, 0}, 0, 0},
		{nil, 0, 0},
	} {
		got, n := geomean(tc.xs)
		if math.Abs(got-tc.want) > 1e-9 || n != tc.wantN {
			t.Errorf("geomean(%v) = %g, %d; want %g, %d", tc.xs, got, n, tc.want, tc.wantN)
		}
	}
}

func TestRRSizesMeasure(t *testing.T) {
	small, big := readTestdata(t, "netperf-rr-p0.txt"), readTestdata(t, "netperf-rr-16k.txt")
	job, argvs := sweepReplay(t, "-r", func(size string) ([]byte, error) {
		if size == "16384,16384" {
			return big, nil
		}
		return small, nil
	})
	in := RRSizes{Sizes: []int{64, 16384}}
	m, err := in.Measure(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"netperf -H 10.77.0.4 -p 12865 -t TCP_RR -l 2 -P 0 -- -r 64,64 -P 12867,12866 -o THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY",
		"netperf -H 10.77.0.4 -p 12865 -t TCP_RR -l 2 -P 0 -- -r 16384,16384 -P 12867,12866 -o THROUGHPUT,MEAN_LATENCY,P50_LATENCY,P99_LATENCY",
	}
	if !slices.Equal(*argvs, want) {
		t.Errorf("command lines\n%q\nwant\n%q", *argvs, want)
	}
	// 41468.75 trans/s at 64 B (p99 80 µs), 21253.41 at 16 KiB (p99 100 µs).
	if m.Extra["tps_64"] != 41468.75 || m.Extra["tps_16384"] != 21253.41 || m.Extra["p99_us_64"] != 80 || m.Extra["p99_us_16384"] != 100 {
		t.Errorf("points %v", m.Extra)
	}
	if want := math.Sqrt(41468.75 * 21253.41); math.Abs(m.Value-want) > 1e-6 || m.Unit != "trans/s" || m.WallSec != 4 {
		t.Errorf("value %g %s wall %g, want the geometric mean %g over 4 s", m.Value, m.Unit, m.WallSec, want)
	}
	// A size that fails fails the sample, naming the size and the tool's
	// own message.
	refused := readTestdata(t, "netperf-rr-refused.txt")
	job, _ = sweepReplay(t, "-r", func(size string) ([]byte, error) {
		if size == "16384,16384" {
			return refused, errors.New("exit status 255")
		}
		return small, nil
	})
	if _, err := in.Measure(context.Background(), job); err == nil || !strings.HasPrefix(err.Error(), "at 16 KiB: netperf") {
		t.Errorf("a refused size: %v", err)
	}
}

func TestUDPSizesMeasure(t *testing.T) {
	capture := readTestdata(t, "iperf3-udp-1472-reverse.json")
	job, argvs := sweepReplay(t, "-l", func(size string) ([]byte, error) {
		// The capture at 1472 B, its block size rewritten for the others.
		return bytes.Replace(capture, []byte("\"blksize\":\t1472"), []byte("\"blksize\":\t"+size), 1), nil
	})
	job.SocketBuffer = 212992
	m, err := UDPSizes{Sizes: []int{512, 1472}}.Measure(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if got := (*argvs)[1]; got != "iperf3 -c 10.77.0.4 -p 5201 -u -l 1472 -b 0 -w 212992 -R -t 2 -J" {
		t.Errorf("argv = %s", got)
	}
	// 189280 sent, 189255 - 37248 = 152007 received at 1790007581.89
	// bit/s over 1.000015 s.
	const mbps = 1790.0075818862715
	if math.Abs(m.Extra["mbps_1472"]-mbps) > 1e-9 || math.Abs(m.Value-mbps) > 1e-9 || m.Unit != "Mbit/s" || m.Extra["sizes_received"] != 2 {
		t.Errorf("measurement %g %s %v", m.Value, m.Unit, m.Extra)
	}
	if want := 100 * float64(189280-152007) / 189280; math.Abs(m.Extra["loss_pct_1472"]-want) > 1e-9 {
		t.Errorf("loss %g %%, want %g", m.Extra["loss_pct_1472"], want)
	}
	// iperf3 sending another size than asked is an error, not a point.
	job, _ = sweepReplay(t, "-l", func(string) ([]byte, error) { return capture, nil })
	if _, err := (UDPSizes{Sizes: []int{64}}).Measure(context.Background(), job); err == nil || !strings.Contains(err.Error(), "1472-byte datagrams, asked for 64") {
		t.Errorf("wrong block size: %v", err)
	}
}

func TestMSSSweepMeasure(t *testing.T) {
	capture := readTestdata(t, "iperf3-tcp-mss536-reverse.json")
	job, argvs := sweepReplay(t, "-M", func(string) ([]byte, error) { return capture, nil })
	m, err := MSSSweep{Sizes: []int{536}}.Measure(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if got := (*argvs)[0]; got != "iperf3 -c 10.77.0.4 -p 5201 -M 536 -R -t 2 -P 1 -J" {
		t.Errorf("argv = %s", got)
	}
	// end.sum_received: 1824391168 bytes at 14593713753.77 bit/s.
	if g := 14.593713753765884; math.Abs(m.Extra["gbps_536"]-g) > 1e-12 || math.Abs(m.Value-g) > 1e-12 || m.MovedBytes != 1824391168 {
		t.Errorf("measurement %g moved %d %v", m.Value, m.MovedBytes, m.Extra)
	}
}

func TestSweepsDeclareTheirPoints(t *testing.T) {
	in := RRSizes{Sizes: []int{64, 4096}}
	var points []results.Metric
	for _, m := range in.Metrics() {
		if m.At > 0 {
			points = append(points, m)
		}
	}
	if len(points) != 4 || points[0] != (results.Metric{Key: "tps_64", Label: "transactions at 64 B", Unit: "trans/s",
		Better: results.BetterHigher, Curve: curveRRTPS, At: 64}) || points[3].Key != "p99_us_4096" || points[3].Label != "p99 latency at 4 KiB" {
		t.Errorf("points %+v", points)
	}
	// A sweep's budget is the run's duration per size: 5 × 2 s + the allowance.
	if got := (RRSizes{Sizes: RRSweepSizes}).Budget(&Job{Duration: 2 * time.Second}).Deadline(); got != 20*time.Second {
		t.Errorf("rr_sizes deadline %v", got)
	}
	ins, ready, err := Select([]string{"sizes"})
	var names []string
	for _, in := range ins {
		names = append(names, in.Name())
	}
	if err != nil || ready || strings.Join(names, ",") != "rr_sizes,udp_sizes,mss_sweep" {
		t.Errorf("sizes: %v ready %v err %v", names, ready, err)
	}
	all, _, _ := Select(nil)
	for _, in := range all {
		if _, ok := Sets["sizes"]; ok && slices.Contains(names, in.Name()) {
			t.Errorf("the default run measures %s", in.Name())
		}
	}
}

func TestApplySizes(t *testing.T) {
	ins, _, err := Select([]string{"tcp_rr", "sizes"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ApplySizes(ins, []string{"udp_sizes=1400, 64,1K", " mss_sweep=536"})
	if err != nil {
		t.Fatal(err)
	}
	if u := got[2].(UDPSizes); !slices.Equal(u.Sizes, []int{64, 1024, 1400}) {
		t.Errorf("udp_sizes %v, want 64, 1024, 1400 (sorted, 1K = 1024)", u.Sizes)
	}
	if s := got[3].(MSSSweep); !slices.Equal(s.Sizes, []int{536}) {
		t.Errorf("mss_sweep %v", s.Sizes)
	}
	if r := got[1].(RRSizes); !slices.Equal(r.Sizes, RRSweepSizes) {
		t.Errorf("rr_sizes, not named, changed to %v", r.Sizes)
	}
	if r := ins[2].(UDPSizes); !slices.Equal(r.Sizes, UDPSweepSizes) {
		t.Errorf("the selection given was changed: %v", r.Sizes)
	}
	for spec, want := range map[string]string{
		"udp_sizes=8":           "udp_sizes: 8 bytes: iperf3's UDP -l takes 16 to 65507",
		"rr_sizes=2048K":        "rr_sizes: 2097152 bytes: netperf's -r takes 1 to 1048576",
		"mss_sweep=88,x":        `mss_sweep: size "x": want a whole number`,
		"mss_sweep=0":           `mss_sweep: size "0": want a whole number`,
		"tcp_rr=64":             "tcp_rr: measures at no list of sizes",
		"many_rr=64":            "many_rr: not among the instruments measured",
		"=64":                   `"=64": want NAME=SIZE`,
		"udp_sizes=64,128,64":   "udp_sizes: size 64 given twice",
		"udp_sizes=64 ":         "", // valid
		"rr_sizes=1,1048576   ": "",
	} {
		_, err := ApplySizes(ins, []string{spec})
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", spec, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", spec, err, want)
		}
	}
	if _, err := ApplySizes(ins, []string{"rr_sizes=64", "rr_sizes=128"}); err == nil || !strings.Contains(err.Error(), "rr_sizes given twice") {
		t.Errorf("a name twice: %v", err)
	}
}

// Rerun measures again at the sizes the file's sweeps declare, and says
// nothing of a sweep at its default sizes.
func TestSizesSpecs(t *testing.T) {
	custom, _ := UDPSizes{}.Resized([]int{64, 1400})
	decl := Declarations([]Instrument{RRSizes{Sizes: RRSweepSizes}, custom, TCPRR{}}, true)
	if got := SizesSpecs(decl); !slices.Equal(got, []string{"udp_sizes=64,1400"}) {
		t.Errorf("specs %q", got)
	}
}

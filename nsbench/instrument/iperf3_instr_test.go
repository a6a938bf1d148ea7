package instrument

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/callgrind"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// fakeCounter plays a counted daemon: what each Stop returns, and what
// was called in which order.
type fakeCounter struct {
	n     transport.Instructions
	calls []string
}

func (f *fakeCounter) Start(context.Context) error { f.calls = append(f.calls, "start"); return nil }
func (f *fakeCounter) Stop(context.Context) (transport.Instructions, error) {
	f.calls = append(f.calls, "stop")
	return f.n, nil
}

// IPerf3Instr counts around one fixed transfer at its rate, and its value
// is the packet path's instructions per byte the daemon sent, the whole
// daemon's beside it.
func TestIPerf3InstrMeasure(t *testing.T) {
	env, argv := replay(t, "iperf3-tcp-p1-reverse-200mbit.json", 0)
	fc := &fakeCounter{n: transport.Instructions{Counts: callgrind.Counts{Total: 12_000_000, Path: 9_000_000}, SentBytes: 1_000_000, Method: "counted"}}
	env.Target.Instructions = fc
	m, err := DefaultInstr.Measure(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"iperf3", "-c", "10.77.0.4", "-p", "5201", "-R", "-n", "10485760", "-b", "20000000", "--fq-rate", "20000000", "-J"}
	if !reflect.DeepEqual(*argv, want) {
		t.Errorf("argv = %q\nwant   %q", *argv, want)
	}
	if !reflect.DeepEqual(fc.calls, []string{"start", "stop"}) {
		t.Errorf("counter calls %q, want start then stop", fc.calls)
	}
	if m.Value != 9 || m.Unit != "instr/B" || m.Extra[results.DaemonInstrPerByte] != 12 || m.Extra[results.InstrSentBytes] != 1e6 || m.Method != "counted" {
		t.Errorf("measurement %+v", m)
	}
	if m.MovedBytes != 50200576 {
		t.Errorf("moved %d bytes, want iperf3's 50200576 (the orchestrator holds the tunnel's count against it)", m.MovedBytes)
	}
}

// A path without a counted daemon cannot be measured, and says why.
func TestIPerf3InstrNotApplicable(t *testing.T) {
	path := &transport.Path{Target: transport.DirectTarget("10.77.0.4")}
	if err := Applicable(DefaultInstr, path); err == nil || !strings.Contains(err.Error(), "valgrind") {
		t.Errorf("Applicable without a counter: %v, want not applicable naming valgrind", err)
	}
	path.Target.Instructions = &fakeCounter{}
	if err := Applicable(DefaultInstr, path); err != nil {
		t.Errorf("Applicable with a counter: %v", err)
	}
	env, _ := replay(t, "iperf3-tcp-p1-reverse-200mbit.json", 0)
	if _, err := DefaultInstr.Measure(context.Background(), env); !errors.Is(err, errNotCounted) {
		t.Errorf("Measure without a counter: %v, want errNotCounted", err)
	}
}

// The counted instrument shares a run (its cells measure on paths of
// their own, nsbench's schedule), and is the only one that needs a
// counted daemon.
func TestSelectInstrWithOthers(t *testing.T) {
	ins, ready, err := Select([]string{"instr"})
	if err != nil || ready || len(ins) != 1 || ins[0].Name() != InstrName || !ins[0].Needs().Instructions {
		t.Fatalf("Select(instr) = %v, %v, %v", ins, ready, err)
	}
	for _, in := range Default() {
		if in.Needs().Instructions {
			t.Errorf("%s needs a counted daemon", in.Name())
		}
	}
	ins, ready, err = Select([]string{"iperf3-1", "tcp_rr", "instr", "ready"})
	if err != nil || !ready || len(ins) != 3 {
		t.Fatalf("Select(iperf3-1,tcp_rr,instr,ready) = %v, %v, %v", ins, ready, err)
	}
}

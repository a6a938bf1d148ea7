package nsbench

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

type nameOnly string

func (n nameOnly) Name() string                                                    { return string(n) }
func (n nameOnly) Label() string                                                   { return string(n) }
func (n nameOnly) About() string                                                   { return "" }
func (n nameOnly) Check() error                                                    { return nil }
func (n nameOnly) Up(context.Context, *transport.Testbed) (*transport.Path, error) { return nil, nil }

func rowsOf(names ...string) []*row {
	var rs []*row
	for _, n := range names {
		rs = append(rs, &row{t: nameOnly(n)})
	}
	return rs
}

// Rows that hold the same addresses or ports go to later rounds; a
// transport-mode IPsec row is always alone.
func TestRounds(t *testing.T) {
	rs := rounds(rowsOf("ssh", "wireguard", "wireguard-go", "strongswan", "strongswan:aes128-sha256", "strongswan-kernel", "ipsec", "ipsec-tunnel", "tw", "sshuttle", "libreswan", "libreswan:aes128-sha1"))
	got := fmt.Sprint(namesOf(rs))
	// Every IKE daemon holds UDP 500 and 4500: one per round.
	want := "[[ssh wireguard strongswan ipsec-tunnel tw sshuttle] [wireguard-go strongswan:aes128-sha256] [strongswan-kernel] [ipsec] [libreswan] [libreswan:aes128-sha1]]"
	if got != want {
		t.Errorf("rounds = %s\nwant     %s", got, want)
	}
}

func TestScheduleOrders(t *testing.T) {
	conds := []results.Condition{{Name: "lan"}, {Name: "wan"}}
	describe := func(bs []block) []string {
		var out []string
		for _, b := range bs {
			var names []string
			for _, rw := range b.rows {
				names = append(names, rw.t.Name())
			}
			out = append(out, b.cond.Name+":"+fmt.Sprint(names))
		}
		return out
	}
	rows := rowsOf("ssh", "wireguard", "wireguard-go")
	if got, want := describe(first(schedule(OrderReference, rows, conds, instrument.Default(), true))),
		[]string{"lan:[ssh]", "wan:[ssh]", "lan:[wireguard]", "wan:[wireguard]", "lan:[wireguard-go]", "wan:[wireguard-go]"}; !slices.Equal(got, want) {
		t.Errorf("reference: %v, want %v", got, want)
	}
	rows = rowsOf("ssh", "wireguard", "wireguard-go")
	if got, want := describe(first(schedule(OrderInterleaved, rows, conds, instrument.Default(), true))),
		[]string{"lan:[ssh wireguard]", "lan:[wireguard-go]", "wan:[ssh wireguard]", "wan:[wireguard-go]"}; !slices.Equal(got, want) {
		t.Errorf("interleaved: %v, want %v", got, want)
	}
	for _, rw := range rows {
		if rw.blocks != 2 {
			t.Errorf("%s: %d blocks, want one per condition", rw.t.Name(), rw.blocks)
		}
	}
}

func first(bs []block, _ [][]*row) []block { return bs }

func namesOf(rs [][]*row) [][]string {
	var out [][]string
	for _, r := range rs {
		out = append(out, rowNames(r))
	}
	return out
}

// TestRunOrderRotates: within a block, run k starts at the k-th row, so
// every row leads (and follows every other) equally often.
func TestRunOrderRotates(t *testing.T) {
	rows := rowsOf("ssh", "wireguard", "tw")
	want := []string{"[ssh wireguard tw]", "[wireguard tw ssh]", "[tw ssh wireguard]", "[ssh wireguard tw]"}
	for run := 1; run <= 4; run++ {
		if got := fmt.Sprint(rowNames(runOrder(rows, run))); got != want[run-1] {
			t.Errorf("run %d: %s, want %s", run, got, want[run-1])
		}
	}
	if got := rowNames(rows); fmt.Sprint(got) != "[ssh wireguard tw]" {
		t.Errorf("the block's rows were reordered: %v", got)
	}
	if got := runOrder(rowsOf("ssh"), 5); len(got) != 1 {
		t.Errorf("one row: %v", rowNames(got))
	}
}

// TestScheduleCountedBlocks: a run of iperf3-1, tcp_rr and iperf3-instr
// measures the counted cells in blocks of their own, after every plain
// block, whose paths come up with the daemon counted; the plain blocks'
// paths never are, and only they count towards a row's memory. The
// progress plans each block's own instruments.
func TestScheduleCountedBlocks(t *testing.T) {
	conds := []results.Condition{{Name: "lan"}, {Name: "wan"}}
	ins, ready, err := instrument.Select([]string{"iperf3-1", "tcp_rr", "instr", "ready"})
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range []string{OrderInterleaved, OrderReference} {
		rows := rowsOf("ssh", "wireguard-go@a", "wireguard-go@b")
		for _, rw := range rows {
			rw.view = &transport.Testbed{Prefix: "x"}
		}
		bs, _ := schedule(order, rows, conds, ins, ready)
		var got []string
		seenCounted := false
		for _, b := range bs {
			var names []string
			for _, in := range b.instruments {
				names = append(names, in.Name())
			}
			got = append(got, fmt.Sprintf("%s:%v:%v:%v", b.cond.Name, rowNames(b.rows), b.counted, names))
			seenCounted = seenCounted || b.counted
			if !b.counted && seenCounted && order == OrderInterleaved {
				t.Errorf("%s: plain block %s after a counted one", order, got[len(got)-1])
			}
			for _, rw := range b.rows {
				if v := rw.viewFor(b.counted); v.CountInstructions != b.counted || v.Prefix != "x" {
					t.Errorf("%s: %s's view for block %s counts %v", order, rw.t.Name(), got[len(got)-1], v.CountInstructions)
				}
			}
		}
		if rows[0].view.CountInstructions {
			t.Errorf("%s: the row's own view was changed", order)
		}
		plain, counted := "[iperf3-1 tcp_rr]", "[iperf3-instr]"
		want := []string{
			"lan:[ssh]:false:" + plain, "lan:[wireguard-go@a wireguard-go@b]:false:" + plain,
			"wan:[ssh]:false:" + plain, "wan:[wireguard-go@a wireguard-go@b]:false:" + plain,
			"lan:[ssh]:true:" + counted, "lan:[wireguard-go@a wireguard-go@b]:true:" + counted,
			"wan:[ssh]:true:" + counted, "wan:[wireguard-go@a wireguard-go@b]:true:" + counted,
		}
		if order == OrderReference {
			want = nil
			for _, r := range []string{"[ssh]", "[wireguard-go@a]", "[wireguard-go@b]"} {
				want = append(want, "lan:"+r+":false:"+plain, "wan:"+r+":false:"+plain, "lan:"+r+":true:"+counted, "wan:"+r+":true:"+counted)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: blocks\n%v\nwant\n%v", order, got, want)
		}
		for _, rw := range rows {
			if rw.blocks != 2 {
				t.Errorf("%s: %s: %d blocks count for its memory, want the 2 plain ones", order, rw.t.Name(), rw.blocks)
			}
		}
		// 3 rows × 2 conditions × (2 plain instruments + 1 counted) × 3 runs;
		// the paired rows' blocks plan the rounds before the first look
		// instead: 20 (--runs 20) for the plain instruments, 12 counted.
		o := Defaults()
		o.Runs, o.Builds.MaxRounds = 20, 40
		p := newProgress(progressPlan{runs: 3, blocks: progressBlocks(bs, o)}, nil)
		wantTotal := 2 * (2 + 1) * 3
		if order == OrderInterleaved {
			wantTotal += 2 * 2 * (2*20 + 1*12)
		} else {
			wantTotal += 2 * 2 * (2 + 1) * 3
		}
		if n := p.total(); n != wantTotal {
			t.Errorf("%s: progress plans %d samples, want %d", order, n, wantTotal)
		}
	}
	// Without a counted instrument, one kind of block as before; with
	// only counted ones (and no ready), only counted blocks.
	if ks := kindsOf(instrument.Default(), false); len(ks) != 1 || ks[0].counted {
		t.Errorf("kinds of the default set: %+v", ks)
	}
	if ks := kindsOf(instrument.Instr(), false); len(ks) != 1 || !ks[0].counted {
		t.Errorf("kinds of instr alone: %+v", ks)
	}
	if ks := kindsOf(instrument.Instr(), true); len(ks) != 2 || ks[0].counted || len(ks[0].instruments) != 0 {
		t.Errorf("kinds of instr and ready: %+v (want a plain block for the ready samples)", ks)
	}
}

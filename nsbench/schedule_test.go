package nsbench

import (
	"context"
	"fmt"
	"slices"
	"testing"

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
	if got, want := describe(first(schedule(OrderReference, rows, conds))),
		[]string{"lan:[ssh]", "wan:[ssh]", "lan:[wireguard]", "wan:[wireguard]", "lan:[wireguard-go]", "wan:[wireguard-go]"}; !slices.Equal(got, want) {
		t.Errorf("reference: %v, want %v", got, want)
	}
	rows = rowsOf("ssh", "wireguard", "wireguard-go")
	if got, want := describe(first(schedule(OrderInterleaved, rows, conds))),
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

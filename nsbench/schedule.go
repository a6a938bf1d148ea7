package nsbench

import (
	"slices"

	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/profile"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// row is one transport over the whole run.
type row struct {
	t transport.Transport
	// view is the testbed as the transport sees it, with the row's own cgroups, so its
	// processes are accounted apart from the fixtures and other rows.
	view   *transport.Testbed
	meters map[string]func() (uint64, error) // role → its cgroup's usage_usec
	peaks  rssPeaks
	blocks int             // blocks left: its peaks are recorded after the last
	path   *transport.Path // up during a block
	// pathFaults counts the samples of the current block that failed
	// with the path to blame (see afterFault); at maxPathFaults the row's
	// remaining samples of the block are skipped.
	pathFaults int
	// copyRate is the rate (bytes/s) of the block's warm-up copy, a first
	// expectation for its copies' deadlines; 0 when none was made.
	copyRate float64
	// prof records the row's stacks during its samples while its turn in
	// a round of builds lasts (run --profile); nil otherwise.
	prof profile.Recording
}

// newRow is t's row over its view of the testbed and its own cgroups,
// metered.
func newRow(t transport.Transport, view *transport.Testbed) *row {
	rw := &row{t: t, view: view, meters: map[string]func() (uint64, error){}, peaks: rssPeaks{}}
	for name, r := range view.Roles {
		rw.meters[name] = role.Meter(r, role.OwnCPUUsec)
	}
	return rw
}

// viewFor is the row's view of the testbed for a path of a counted block
// or not: only a counted block's paths run the tunnel's daemon under
// valgrind.
func (rw *row) viewFor(counted bool) *transport.Testbed {
	v := *rw.view
	v.CountInstructions = counted
	return &v
}

// block is cells measured together: one condition, the rows whose paths
// are up at the same time, their runs interleaved, and the instruments
// they measure.
type block struct {
	cond        results.Condition
	rows        []*row
	instruments []instrument.Instrument
	// counted marks a block of the instruments that count the tunnel's
	// daemon's instructions (instrument.Needs.Instructions): its paths
	// come up with that daemon under valgrind (transport.Testbed.
	// CountInstructions), tens of times slower, so no other instrument
	// measures on them, and no other block's path runs under valgrind.
	// Its paths take no ready sample and no part in the row's memory
	// (valgrind's, not the tunnel's).
	counted bool
	// paired marks the two builds of a transport (rows NAME@LABEL, A
	// first): their paths cannot be up together (the same devices,
	// addresses and ports), so each round brings each up in turn, in
	// runOrder's order — A B, then B A (ABBA) — and closes it after its
	// samples (paired.go).
	paired bool
}

// rounds splits rows, in order, into groups whose paths can be up at the
// same time: each row joins the first round it coexists with.
func rounds(rows []*row) [][]*row {
	var out [][]*row
next:
	for _, rw := range rows {
		for i, round := range out {
			ok := true
			for _, other := range round {
				ok = ok && transport.Coexist(rw.t.Name(), other.t.Name())
			}
			if ok {
				out[i] = append(out[i], rw)
				continue next
			}
		}
		out = append(out, []*row{rw})
	}
	return out
}

// blockKind is what a kind of block measures: the instruments that need
// the tunnel's daemon counted (counted), or the others.
type blockKind struct {
	counted     bool
	instruments []instrument.Instrument
}

// kindsOf splits ins into the kinds of block the run needs: the plain
// instruments (and, with ready, the time-to-ready samples their paths
// take), then the counted ones; the plain kind alone when none counts.
func kindsOf(ins []instrument.Instrument, ready bool) []blockKind {
	plain, counted := blockKind{}, blockKind{counted: true}
	for _, in := range ins {
		if in.Needs().Instructions {
			counted.instruments = append(counted.instruments, in)
		} else {
			plain.instruments = append(plain.instruments, in)
		}
	}
	var out []blockKind
	if len(plain.instruments) > 0 || ready || len(counted.instruments) == 0 {
		out = append(out, plain)
	}
	if len(counted.instruments) > 0 {
		out = append(out, counted)
	}
	return out
}

// schedule lays out the run. Reference order: each row under every
// condition in turn, one block each. Interleaved: each condition in turn,
// one block per round of rows that can be up together. Every kind of
// block (kindsOf ins) gets its own blocks, the counted ones after the
// plain ones (of every row; in the reference order, of their row): a
// row's memory is recorded after its last plain block, before valgrind
// ever ran in its cgroups. It returns the rounds too (one
// per row in the reference order), for the results.
func schedule(order string, rows []*row, conds []results.Condition, ins []instrument.Instrument, ready bool) ([]block, [][]*row) {
	var bs []block
	var rs [][]*row
	kinds := kindsOf(ins, ready)
	if order == OrderReference {
		for _, rw := range rows {
			rs = append(rs, []*row{rw})
			for _, k := range kinds {
				for _, c := range conds {
					bs = append(bs, block{cond: c, rows: []*row{rw}, instruments: k.instruments, counted: k.counted})
				}
			}
		}
	} else {
		plain, pairs := splitBuilds(rows)
		rs = rounds(plain)
		for _, k := range kinds {
			for _, c := range conds {
				for _, round := range rs {
					bs = append(bs, block{cond: c, rows: round, instruments: k.instruments, counted: k.counted})
				}
				for _, p := range pairs {
					bs = append(bs, block{cond: c, rows: p, paired: true, instruments: k.instruments, counted: k.counted})
				}
			}
		}
		rs = append(rs, pairs...)
	}
	for _, b := range bs {
		for _, rw := range b.rows {
			if !b.counted { // no part in the row's memory
				rw.blocks++
			}
		}
	}
	return bs, rs
}

// splitBuilds takes the two builds of each transport out of rows, as
// pairs (A, the first named, then B); the other rows stay in order.
func splitBuilds(rows []*row) (plain []*row, pairs [][]*row) {
	var names []string
	for _, rw := range rows {
		names = append(names, rw.t.Name())
	}
	inPair := map[string][]*row{}
	for _, p := range buildPairs(names) {
		inPair[p.a], inPair[p.b] = nil, nil
	}
	for _, rw := range rows {
		if _, ok := inPair[rw.t.Name()]; !ok {
			plain = append(plain, rw)
		}
	}
	for _, p := range buildPairs(names) {
		var pair []*row
		for _, rw := range rows {
			if n := rw.t.Name(); n == p.a || n == p.b {
				pair = append(pair, rw)
			}
		}
		pairs = append(pairs, pair)
	}
	return plain, pairs
}

// runOrder is the order a block's rows are measured in for run k: the
// rows rotated by k−1, so each row is first once every len(rows) runs and
// no row always follows the same other row's load (its page cache, its
// sockets' memory, the CPU's clock after it) or always leads after a
// block's warm-ups.
func runOrder(rows []*row, run int) []*row {
	if len(rows) == 0 {
		return nil
	}
	k := (run - 1) % len(rows)
	return append(slices.Clone(rows[k:]), rows[:k]...)
}

// rowNames are the rows' transport ids, in order.
func rowNames(rows []*row) []string {
	var names []string
	for _, rw := range rows {
		names = append(names, rw.t.Name())
	}
	return names
}

// rssPeaks keeps, per "role / process", the highest VmHWM over a
// transport's paths (one per condition), sampled at the end of each path's
// cell while its processes still run.
type rssPeaks map[string]int64

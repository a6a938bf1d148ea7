package profile

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/stats"
)

// Round is one round's stacks of the two builds.
type Round struct {
	Run  int
	A, B Stacks
}

// TopFunctions is how many functions a comparison lists.
const TopFunctions = 15

// MinFlameShare is the smallest share of B's samples a frame of the
// flame graph keeps (0.2 %): narrower ones could not be seen.
const MinFlameShare = 0.002

// Compare compares B's stacks against A's over the rounds in which both
// have samples: for each function its self and inclusive shares of all the
// samples pooled, and the change B − A with the Hodges–Lehmann estimate
// and signed-rank 95 % interval of the rounds' changes (as the verdict
// takes its pairs). Functions are ranked by the size of their estimated
// self change (then of the pooled one); the top are returned. The flame tree merges both builds' pooled
// stacks.
func Compare(rounds []Round, top int) (fns []results.FunctionChange, flame *results.FlameNode, used int, a, b Stacks) {
	a, b = Stacks{}, Stacks{}
	var per [][2]shares
	for _, r := range rounds {
		if r.A.Total() == 0 || r.B.Total() == 0 {
			continue
		}
		a.Add(r.A)
		b.Add(r.B)
		per = append(per, [2]shares{sharesOf(r.A), sharesOf(r.B)})
	}
	if len(per) == 0 {
		return nil, nil, 0, a, b
	}
	pa, pb := sharesOf(a), sharesOf(b)
	names := map[string]bool{}
	for n := range pa.incl {
		names[n] = true
	}
	for n := range pb.incl {
		names[n] = true
	}
	for n := range names {
		f := results.FunctionChange{Name: n,
			SelfA: pct(pa.self[n]), SelfB: pct(pb.self[n]), InclA: pct(pa.incl[n]), InclB: pct(pb.incl[n])}
		var ds, di []float64
		for _, r := range per {
			ds = append(ds, pct(r[1].self[n]-r[0].self[n]))
			di = append(di, pct(r[1].incl[n]-r[0].incl[n]))
		}
		f.Self, f.Incl = change(ds), change(di)
		fns = append(fns, f)
	}
	slices.SortFunc(fns, func(x, y results.FunctionChange) int {
		if c := cmp.Compare(absOf(y.Self.Delta), absOf(x.Self.Delta)); c != 0 {
			return c
		}
		if c := cmp.Compare(math.Abs(y.SelfB-y.SelfA), math.Abs(x.SelfB-x.SelfA)); c != 0 {
			return c
		}
		if c := cmp.Compare(math.Abs(y.InclB-y.InclA), math.Abs(x.InclB-x.InclA)); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	if len(fns) > top {
		fns = fns[:top]
	}
	return fns, Flame(a, b, MinFlameShare), len(per), a, b
}

func absOf(x *float64) float64 {
	if x == nil {
		return 0
	}
	return math.Abs(*x)
}

// shares are each function's self and inclusive share (fractions) of one
// build's samples.
type shares struct{ self, incl map[string]float64 }

func sharesOf(s Stacks) shares {
	out := shares{self: map[string]float64{}, incl: map[string]float64{}}
	total := float64(s.Total())
	if total == 0 {
		return out
	}
	for k, c := range s {
		frames := strings.Split(k, ";")
		out.self[frames[len(frames)-1]] += float64(c) / total
		seen := map[string]bool{} // a recursive function counts once a stack
		for _, f := range frames {
			if !seen[f] {
				seen[f] = true
				out.incl[f] += float64(c) / total
			}
		}
	}
	return out
}

func pct(x float64) float64 { return 100 * x }

// change is the estimate and interval of the rounds' changes d.
func change(d []float64) results.ShareChange {
	est, ci := stats.HodgesLehmannCI(d, 0.95)
	c := results.ShareChange{Delta: finite(est)}
	if ci.Reached {
		c.Lo, c.Hi = finite(ci.Low), finite(ci.High)
	}
	return c
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// Flame merges a's and b's stacks into one call tree (the root is the
// whole, its children the processes), each frame with the samples of each
// build that pass through it. A frame narrower than minShare of B's
// samples is left out (with its subtree), so a frame only A had is not in
// the tree: the function table lists it.
func Flame(a, b Stacks, minShare float64) *results.FlameNode {
	root := &results.FlameNode{Name: "all"}
	add := func(s Stacks, side func(*results.FlameNode) *int64) {
		for k, c := range s {
			n := root
			*side(n) += c
			for _, f := range strings.Split(k, ";") {
				n = child(n, f)
				*side(n) += c
			}
		}
	}
	add(a, func(n *results.FlameNode) *int64 { return &n.A })
	add(b, func(n *results.FlameNode) *int64 { return &n.B })
	prune(root, float64(root.B)*minShare)
	return root
}

func child(n *results.FlameNode, name string) *results.FlameNode {
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
	}
	c := &results.FlameNode{Name: name}
	n.Children = append(n.Children, c)
	return c
}

// prune drops children with fewer than min of B's samples and orders the
// rest by name, so the tree does not depend on map order.
func prune(n *results.FlameNode, min float64) {
	n.Children = slices.DeleteFunc(n.Children, func(c *results.FlameNode) bool { return float64(c.B) < min || c.B == 0 })
	slices.SortFunc(n.Children, func(x, y *results.FlameNode) int { return strings.Compare(x.Name, y.Name) })
	for _, c := range n.Children {
		prune(c, min)
	}
	if len(n.Children) == 0 {
		n.Children = nil
	}
}

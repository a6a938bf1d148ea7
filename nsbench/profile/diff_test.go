package profile

import (
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// TestCompare: shares, their pooled change and the interval across rounds
// on hand-counted input. g's self share goes from 20 % in every round of
// A to 30, 32, 28, 31, 29, 30 % in B: the rounds' changes 10, 12, 8, 11,
// 9, 10 points have the Hodges–Lehmann estimate 10 and, at 6 pairs, the
// signed-rank 95 % interval [min, max] of the Walsh averages: [8, 12]. A
// round without B's samples is no pair.
func TestCompare(t *testing.T) {
	var rounds []Round
	for i, bg := range []int64{30, 32, 28, 31, 29, 30} {
		rounds = append(rounds, Round{Run: i + 1, A: Stacks{"p;f": 80, "p;g": 20}, B: Stacks{"p;f": 100 - bg, "p;g": bg}})
	}
	rounds = append(rounds, Round{Run: 7, A: Stacks{"p;f": 50}, B: Stacks{}})
	fns, flame, used, a, b := Compare(rounds, 3)
	if used != 6 || a.Total() != 600 || b.Total() != 600 {
		t.Fatalf("used %d rounds, %d and %d samples; want 6, 600, 600", used, a.Total(), b.Total())
	}
	if len(fns) != 3 || fns[0].Name != "f" || fns[1].Name != "g" || fns[2].Name != "p" {
		t.Fatalf("functions %+v: want f, g (a 10-point change each, by name), then p", fns)
	}
	g := fns[1]
	want := results.FunctionChange{Name: "g", SelfA: 20, SelfB: 30, InclA: 20, InclB: 30}
	if g.SelfA != want.SelfA || g.SelfB != want.SelfB || g.InclA != want.InclA || g.InclB != want.InclB {
		t.Errorf("g shares %+v, want %+v", g, want)
	}
	checkChange(t, "g self", g.Self, 10, 8, 12)
	checkChange(t, "g incl", g.Incl, 10, 8, 12)
	checkChange(t, "f self", fns[0].Self, -10, -12, -8)
	checkChange(t, "p incl", fns[2].Incl, 0, 0, 0)
	if flame.A != 600 || flame.B != 600 || len(flame.Children) != 1 {
		t.Fatalf("flame root %+v", flame)
	}
	p := flame.Children[0]
	if p.Name != "p" || len(p.Children) != 2 || p.Children[0].Name != "f" || p.Children[0].A != 480 || p.Children[0].B != 420 ||
		p.Children[1].A != 120 || p.Children[1].B != 180 {
		t.Errorf("flame p %+v, children %+v %+v", p, p.Children[0], p.Children[1])
	}
}

// TestCompareFewRounds: below 6 pairs the estimate stands without an
// interval (absent, never 0).
func TestCompareFewRounds(t *testing.T) {
	rounds := []Round{{1, Stacks{"p;f": 1}, Stacks{"p;f": 1, "p;g": 1}}}
	fns, _, _, _, _ := Compare(rounds, 5)
	for _, f := range fns {
		if f.Self.Delta == nil || f.Self.Lo != nil || f.Self.Hi != nil {
			t.Errorf("%s: %+v, want an estimate without interval", f.Name, f.Self)
		}
	}
}

// TestFlamePrunes: a frame below the smallest share of B is left out with
// its subtree, and so is a frame only A had; recursion counts once.
func TestFlamePrunes(t *testing.T) {
	a := Stacks{"p;f": 50, "p;gone": 50}
	b := Stacks{"p;f": 95, "p;tiny;deep": 5}
	root := Flame(a, b, 0.1)
	p := root.Children[0]
	if len(p.Children) != 1 || p.Children[0].Name != "f" || p.Children[0].A != 50 || p.Children[0].B != 95 {
		t.Errorf("p's children %+v: want f alone", p.Children)
	}
	s := sharesOf(Stacks{"p;r;r;r": 2, "p;q": 2})
	if s.incl["r"] != 0.5 || s.self["r"] != 0.5 || s.incl["p"] != 1 {
		t.Errorf("shares %+v: a recursive frame counts once a stack", s)
	}
}

func checkChange(t *testing.T, what string, c results.ShareChange, d, lo, hi float64) {
	t.Helper()
	const eps = 1e-9
	near := func(p *float64, x float64) bool { return p != nil && *p > x-eps && *p < x+eps }
	if !near(c.Delta, d) || !near(c.Lo, lo) || !near(c.Hi, hi) {
		t.Errorf("%s: change %v [%v, %v], want %g [%g, %g]", what, deref(c.Delta), deref(c.Lo), deref(c.Hi), d, lo, hi)
	}
}

func deref(p *float64) any {
	if p == nil {
		return "absent"
	}
	return *p
}

package nsbench

import (
	"context"
	"fmt"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/profile"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// newSampler is the sampler of a run's roles (a test's fake may stand in
// for it): perf over the run's own cgroup, its files in the run's private
// directory.
var newSampler = func(tb *testbed) (profile.Sampler, error) {
	perf, err := profile.Find()
	if err != nil {
		return nil, err
	}
	return profile.Perf{Path: perf, Cgroup: strings.TrimPrefix(tb.tree.Name(), "/"), Dir: privateDir(tb.prefix)}, nil
}

// blockProfile collects, round by round, the CPU stacks of a block's two
// builds while their samples are measured (run --profile): each build's
// turn records paused, sampling only inside each sample's meters, and
// folds its stacks when the turn ends.
type blockProfile struct {
	sampler profile.Sampler
	pair    buildPair
	rounds  map[int]*profile.Round
	logf    Logf
}

// newBlockProfile is b's profile, nil when the run does not profile.
func newBlockProfile(c *cellLoop, b block) *blockProfile {
	if !c.plan.Builds.Profile {
		return nil
	}
	pairs := buildPairs(rowNames(b.rows))
	if len(pairs) == 0 {
		return nil
	}
	if b.counted {
		c.rec.fallback(fmt.Sprintf("profile of %s under %s: none for the counted instruments' rounds (their server's daemon runs under valgrind, whose stacks are not the build's)", pairs[0].transport, b.cond.Name))
		return nil
	}
	s, err := newSampler(c.tb)
	if err != nil {
		c.logf("%s / %s: no profile: %v", pairs[0].transport, b.cond.Name, err)
		c.rec.fallback(fmt.Sprintf("profile of %s under %s: none (%v)", pairs[0].transport, b.cond.Name, err))
		return nil
	}
	return &blockProfile{sampler: s, pair: pairs[0], rounds: map[int]*profile.Round{}, logf: c.logf}
}

// begin starts rw's recording for its turn (paused). A sampler that
// cannot start leaves the turn unprofiled, said in the log.
func (bp *blockProfile) begin(ctx context.Context, rw *row) {
	if bp == nil {
		return
	}
	r, err := bp.sampler.Start(ctx)
	if err != nil {
		bp.logf("%s: profile of this turn: %v", rw.t.Label(), err)
		return
	}
	rw.prof = r
}

// end stops rw's recording and keeps its stacks as round run's.
func (bp *blockProfile) end(ctx context.Context, rw *row, run int) {
	if bp == nil || rw.prof == nil {
		return
	}
	r := rw.prof
	rw.prof = nil
	stacks, err := r.Stop(ctx)
	if err != nil {
		bp.logf("%s: profile of round %d: %v", rw.t.Label(), run, err)
		return
	}
	rd := bp.rounds[run]
	if rd == nil {
		rd = &profile.Round{Run: run, A: profile.Stacks{}, B: profile.Stacks{}}
		bp.rounds[run] = rd
	}
	if rw.t.Name() == bp.pair.b {
		rd.B.Add(stacks)
	} else {
		rd.A.Add(stacks)
	}
}

// profileResume and profilePause switch rw's recording on and off around
// a sample's meters; a recording that fails is given up for the turn.
func profileResume(c *cellLoop, rw *row) {
	if rw.prof != nil {
		if err := rw.prof.Resume(); err != nil {
			c.logf("%s: profile: %v", rw.t.Label(), err)
			dropRecording(rw)
		}
	}
}

func profilePause(c *cellLoop, rw *row) {
	if rw.prof != nil {
		if err := rw.prof.Pause(); err != nil {
			c.logf("%s: profile: %v", rw.t.Label(), err)
			dropRecording(rw)
		}
	}
}

func dropRecording(rw *row) {
	_, _ = rw.prof.Stop(context.Background())
	rw.prof = nil
}

// finish compares B's stacks against A's under cond, writes each build's
// folded stacks into the output directory and records the comparison.
func (bp *blockProfile) finish(rec *recorder, cond string) error {
	if bp == nil {
		return nil
	}
	var rounds []profile.Round
	for run := 1; len(rounds) < len(bp.rounds); run++ {
		if r, ok := bp.rounds[run]; ok {
			rounds = append(rounds, *r)
		}
	}
	fns, flame, used, a, b := profile.Compare(rounds, profile.TopFunctions)
	if used == 0 {
		bp.logf("%s / %s: no round has stacks of both builds: no profile", bp.pair.transport, cond)
		return nil
	}
	d := results.ProfileDiff{Transport: bp.pair.transport, Condition: cond, Rounds: used,
		A:         results.ProfileSide{Row: bp.pair.a, Samples: a.Total(), Folded: foldedFile(bp.pair.transport, cond, "A")},
		B:         results.ProfileSide{Row: bp.pair.b, Samples: b.Total(), Folded: foldedFile(bp.pair.transport, cond, "B")},
		Functions: fns, Flame: flame}
	if err := rec.profiles.files(map[string]profile.Stacks{d.A.Folded: a, d.B.Folded: b}); err != nil {
		return err
	}
	rec.profiles.diff(d)
	return nil
}

// foldedFile names a build's folded stacks in the output directory:
// profile-TRANSPORT-CONDITION-A.folded.
func foldedFile(transport, cond, side string) string {
	safe := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
				return r
			}
			return '_'
		}, s)
	}
	return "profile-" + safe(transport) + "-" + safe(cond) + "-" + side + ".folded"
}

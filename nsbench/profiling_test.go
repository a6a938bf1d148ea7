package nsbench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/profile"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// fakeSampler hands out recordings that count what each sampled while
// resumed: one stack "p;NAME" per Resume/Pause window, NAME the row the
// test names before each start.
type fakeSampler struct {
	frame   string
	started int
	open    map[*fakeRecording]bool
}

type fakeRecording struct {
	s       *fakeSampler
	frame   string
	on      bool
	windows int64
}

func (f *fakeSampler) Start(context.Context) (profile.Recording, error) {
	f.started++
	r := &fakeRecording{s: f, frame: f.frame}
	f.open[r] = true
	return r, nil
}

func (r *fakeRecording) Resume() error { r.on = true; return nil }
func (r *fakeRecording) Pause() error {
	if r.on {
		r.windows++
	}
	r.on = false
	return nil
}
func (r *fakeRecording) Stop(context.Context) (profile.Stacks, error) {
	delete(r.s.open, r)
	return profile.Stacks{"p;" + r.frame: r.windows}, nil
}

// TestBlockProfile: each build's turn records apart, only inside its
// samples' windows; its stacks go to its own side (A is the row named
// first) of its round; the comparison, its files and the verdicts'
// profile follow, and no recording is left open.
func TestBlockProfile(t *testing.T) {
	rows := rowsOf("wireguard-go@a", "wireguard-go@b")
	fake := &fakeSampler{open: map[*fakeRecording]bool{}}
	bp := &blockProfile{sampler: fake, pair: buildPairs(rowNames(rows))[0], rounds: map[int]*profile.Round{}, logf: t.Logf}
	c := &cellLoop{logf: t.Logf}
	ctx := context.Background()
	for run := 1; run <= 6; run++ {
		for _, rw := range runOrder(rows, run) {
			fake.frame = "in-b"
			samples := 3 // B's turn: 3 samples in f, A's: 1
			if rw == rows[0] {
				fake.frame, samples = "in-a", 1
			}
			bp.begin(ctx, rw)
			for range samples {
				profileResume(c, rw)
				profilePause(c, rw)
			}
			bp.end(ctx, rw, run)
			if rw.prof != nil {
				t.Fatalf("round %d: %s keeps its recording after its turn", run, rw.t.Name())
			}
		}
	}
	if fake.started != 12 || len(fake.open) != 0 {
		t.Fatalf("%d recordings started, %d left open; want 12, none", fake.started, len(fake.open))
	}
	dir := t.TempDir()
	rec := newRecorder(&results.Document{}, dir)
	if err := bp.finish(rec, "lan"); err != nil {
		t.Fatal(err)
	}
	rec.verdicts(&results.Verdicts{})
	p := rec.doc.Verdicts.CPUProfile
	if p == nil || len(p.Comparisons) != 1 {
		t.Fatalf("verdicts' profile %+v: want one comparison", p)
	}
	d := p.Comparisons[0]
	if d.Rounds != 6 || d.A.Row != "wireguard-go@a" || d.A.Samples != 6 || d.B.Samples != 18 ||
		d.A.Folded != "profile-wireguard-go-lan-A.folded" || d.B.Folded != "profile-wireguard-go-lan-B.folded" {
		t.Fatalf("comparison %+v", d)
	}
	for _, side := range []struct{ file, want string }{{d.A.Folded, "p;in-a 6\n"}, {d.B.Folded, "p;in-b 18\n"}} {
		b, err := os.ReadFile(filepath.Join(dir, side.file))
		if err != nil || string(b) != side.want {
			t.Errorf("%s: %q, %v; want %q", side.file, b, err, side.want)
		}
	}
	for _, f := range d.Functions {
		if f.Name == "in-b" && (f.SelfA != 0 || f.SelfB != 100) {
			t.Errorf("in-b: %+v, want 0 %% of A and 100 %% of B", f)
		}
	}
}

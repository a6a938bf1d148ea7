package nsbench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/hosts"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/remote"
	"github.com/twnsbench/twnsbench/nsbench/remote/remotetest"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
)

// Two builds of Pure SSH (each its own copy of this host's ssh and sshd,
// at paths of its own) with the client and the server on two emulated
// machines: each build's ssh goes to the client's machine only and its
// sshd to the server's only, into the copy's directory there; the results
// record each copy's path and the SHA-256 its machine read, equal to the
// file's here; the machines ran their copies (the fetched logs name
// them); every cell of the two rounds gets a verdict; and nothing is left
// on either machine. Each machine has its own /tmp, where the builds'
// programs are: only a copy can have been checked or run there.
func TestBuildsAcrossHosts(t *testing.T) {
	nstest.RequireRoot(t)
	if testing.Short() {
		t.Skip("integration test (skipped by -short)")
	}
	lab := remotetest.New(t, 2)
	here := t.TempDir()
	sums := map[string]string{} // path here → SHA-256
	var defs []transport.BuildDef
	for _, label := range []string{"a", "b"} {
		for _, prog := range []string{"ssh", "sshd"} {
			src, err := proc.LookPath(prog)
			if err != nil {
				t.Skipf("needs %s: %v", prog, err)
			}
			dst := filepath.Join(here, label, prog)
			sums[dst] = copyExecutable(t, src, dst)
			d, err := transport.ParseBuild(label + ":" + prog + "=" + dst)
			if err != nil {
				t.Fatal(err)
			}
			defs = append(defs, d)
		}
	}
	o := Quick()
	o.Transports = []string{"ssh@a", "ssh@b"}
	o.Runs, o.Duration, o.Warmup, o.WAN = 2, time.Second, 0, []string{"off"}
	o.DriftProbe = false
	o.Builds.MaxRounds = 2
	o.Congestion = "host"
	o.OutDir = t.TempDir()
	o.Hosts = labHosts(t, lab)
	plan, err := NewPlan(o, transport.Names())
	if err != nil {
		t.Fatal(err)
	}
	ts, err := transport.BuildWith(o.Transports, nil, defs)
	if err != nil {
		t.Fatal(err)
	}
	ins, _, err := instrument.Select([]string{"tcp_rr"})
	if err != nil {
		t.Fatal(err)
	}
	// As the CLI does: the hosts reached, the builds' programs copied,
	// then the rows named one by one checked on each host with its copies
	// (the programs here are on neither machine), before the run.
	t0 := time.Now()
	ctx := context.Background()
	recipe := transport.Recipe{Builds: defs}
	sites, err := OpenSites(ctx, plan.Hosts)
	if err != nil {
		t.Fatal(err)
	}
	defer sites.Close()
	if err := sites.CopyBuilds(ctx, ts); err != nil {
		t.Fatal(err)
	}
	if err := sites.CheckNamed(ctx, ts, recipe); err != nil {
		t.Fatalf("rows checked on the hosts: %v", err)
	}
	res, err := Run(ctx, plan, Deps{Transports: ts, Instruments: ins, Ready: true, Logf: t.Logf, Recipe: recipe, Sites: sites})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("two builds across two machines, 2 rounds: %.1f s", time.Since(t0).Seconds())
	for _, f := range res.Doc.Failures {
		t.Errorf("failure: %+v", f)
	}
	for _, s := range res.Doc.Skipped {
		t.Errorf("skipped: %+v", s)
	}

	dest := map[string]string{topology.Client: o.Hosts.Inventory.Hosts[0].Dest(), topology.Server: o.Hosts.Inventory.Hosts[1].Dest()}
	runsOn := map[string]string{"ssh": topology.Client, "sshd": topology.Server}
	logs := filepath.Join(o.OutDir, "logs", res.Prefix)
	for _, label := range []string{"a", "b"} {
		tr, ok := res.Doc.TransportOf("ssh@" + label)
		if !ok || tr.Build == nil || len(tr.Build.Programs) != 2 {
			t.Fatalf("ssh@%s: build %+v, want its two programs", label, tr.Build)
		}
		for _, p := range tr.Build.Programs {
			r := runsOn[p.Option]
			want := results.ProgramCopy{Role: r, Host: dest[r],
				Path: filepath.Join(remote.CopyRoot, res.Prefix+"-"+r, transport.CopiedName(label, p.Option)), SHA256: sums[p.Path]}
			if p.SHA256 != sums[p.Path] || len(p.Hosts) != 1 || p.Hosts[0] != want {
				t.Errorf("ssh@%s %s: SHA-256 %s here, copies %+v; want %s and one copy, on the %s's machine only: %+v",
					label, p.Option, p.SHA256, p.Hosts, sums[p.Path], r, want)
			}
			if !strings.HasPrefix(p.Version, "OpenSSH") {
				t.Errorf("ssh@%s %s: version %q, want what the copy's -V printed there", label, p.Option, p.Version)
			}
			// The machine ran its copy for its version (-V): the log of
			// that run, fetched from there, starts with its command line.
			// (The daemon's and the logins' own runs are the rounds': the
			// program here is not on that machine's /tmp.)
			log := filepath.Join(logs, r+"-"+transport.CopiedName(label, p.Option)+".log")
			if b, err := os.ReadFile(log); err != nil || !strings.Contains(string(b), `"`+want.Path+`"`) {
				t.Errorf("ssh@%s %s: log %s (%v) does not name the copy %s:\n%.400s", label, p.Option, log, err, want.Path, b)
			}
		}
	}

	v := res.Doc.Verdicts
	if v == nil || len(v.Cells) == 0 {
		t.Fatalf("verdicts %+v: want a verdict per cell", v)
	}
	instruments := map[string]bool{}
	words := []string{string(verdict.Slower), string(verdict.Faster), string(verdict.NoChange), string(verdict.Undecided)}
	for _, c := range v.Cells {
		instruments[c.Instrument] = true
		if c.A != "ssh@a" || c.B != "ssh@b" || c.Pairs != 2 || !slices.Contains(words, c.Verdict) {
			t.Errorf("cell %s/%s/%s: %s vs %s, %d pairs, verdict %q; want ssh@b vs ssh@a over 2 pairs, one of %v",
				c.Condition, c.Instrument, c.Metric, c.B, c.A, c.Pairs, c.Verdict, words)
		}
	}
	if !instruments["tcp_rr"] || !instruments[instrument.Ready] {
		t.Errorf("verdicts on %v, want tcp_rr and ready", instruments)
	}
	checkNothingLeft(t, lab, res.Prefix)
}

// copyExecutable copies src to a new dst, mode 0755, and returns its
// SHA-256.
func copyExecutable(t *testing.T, src, dst string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp %s %s: %v: %s", src, dst, err, out)
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestRecipeOnHost: a row is checked on a role's host with the builds'
// programs that host runs at their copies there and without those it does
// not run (their options' values stand); a role on this machine checks
// the programs where they are.
func TestRecipeOnHost(t *testing.T) {
	rc := transport.Recipe{Values: map[string]string{"wireguard-mtu": "1380"}, Builds: []transport.BuildDef{
		{Label: "a", Option: "ssh", Path: "/here/a/ssh"}, {Label: "a", Option: "sshd", Path: "/here/a/sshd"},
		{Label: "b", Option: "ssh", Path: "/here/b/ssh"}, {Label: "b", Option: "sshd", Path: "/here/a/sshd"}, // one file, two builds
	}}
	s := &Sites{sites: []Site{
		{host: hosts.Host{Role: topology.Client, Local: true}},
		{host: hosts.Host{Role: topology.Server}, cp: &remote.Copy{}, copies: map[string]results.ProgramCopy{"/here/a/sshd": {Path: "/var/tmp/s/build-a-sshd"}}},
	}}
	got := s.recipeFor(topology.Server, rc)
	want := []transport.BuildDef{{Label: "a", Option: "sshd", Path: "/var/tmp/s/build-a-sshd"}, {Label: "b", Option: "sshd", Path: "/var/tmp/s/build-a-sshd"}}
	if !slices.Equal(got.Builds, want) || got.Values["wireguard-mtu"] != "1380" {
		t.Errorf("server's recipe %+v, want builds %+v and the values", got, want)
	}
	if got := s.recipeFor(topology.Client, rc); !slices.Equal(got.Builds, rc.Builds) {
		t.Errorf("this machine's recipe %+v, want the builds as given", got.Builds)
	}
	if c := s.Copies(); len(c) != 1 || c[topology.Server]["/here/a/sshd"] != "/var/tmp/s/build-a-sshd" {
		t.Errorf("copies %v, want the server's one", c)
	}
}

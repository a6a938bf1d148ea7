package nsbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// faultCase freezes (SIGSTOP) or kills (SIGKILL) a real daemon of a run
// the moment a chosen sample begins, from the run's own progress hook (no
// sleep: the hook runs before the sample does).
type faultCase struct {
	name       string
	transports []string
	values     map[string]string // transport options (tw's binaries)
	wan        bool              // the fault strikes in the WAN cell
	// victim names the process to strike: its cgroup under the run's
	// (e.g. "client/t-wireguard-go") and, when the cgroup holds several,
	// its /proc comm.
	cgroup, comm string
	row          string // the row whose sample it strikes
	instrument   string
	sig          syscall.Signal
	repair       string // what the failure's repairs must name
}

// faultRuns and faultDuration keep each case short: the fault strikes
// run faultRun, and the run after it proves the repair; 1 s samples.
const (
	faultRuns     = 2
	faultRun      = 1
	faultDuration = time.Second
)

func TestFaultCostsOneSample(t *testing.T) {
	nstest.RequireRoot(t)
	var cases []faultCase
	for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGKILL} {
		cases = append(cases,
			faultCase{name: "wireguard-go", transports: []string{"ssh", "wireguard-go"}, cgroup: "client/t-wireguard-go",
				row: "wireguard-go", instrument: "iperf3-1", sig: sig, repair: "the path"},
			faultCase{name: "iperf3-server", transports: []string{"ssh", "wireguard-go"}, cgroup: "server", comm: "iperf3",
				row: "wireguard-go", instrument: "iperf3-1", sig: sig, repair: "server / iperf3 (restarted)"},
			faultCase{name: "netserver", transports: []string{"ssh", "wireguard-go"}, cgroup: "server", comm: "netserver",
				row: "wireguard-go", instrument: "tcp_rr", sig: sig, repair: "server / netserver (restarted)"},
			faultCase{name: "forwarder", transports: []string{"ssh", "wireguard-go"}, wan: true, cgroup: wan.ImpairCgroup,
				row: "wireguard-go", instrument: "iperf3-1", sig: sig, repair: "the WAN impairment"},
		)
	}
	tw, caddy, xray := os.Getenv("TWNSBENCH_TW"), os.Getenv("TWNSBENCH_CADDY"), os.Getenv("TWNSBENCH_XRAY")
	twCase := faultCase{name: "tw-client", transports: []string{"ssh", "tw"}, values: map[string]string{"tw": tw, "caddy": caddy, "xray": xray},
		cgroup: "client/t-tw", comm: "tw", row: "tw", instrument: "iperf3-1", sig: syscall.SIGSTOP, repair: "the path"}
	for _, tc := range append(cases, twCase) {
		t.Run(tc.name+"/"+map[syscall.Signal]string{syscall.SIGSTOP: "sigstop", syscall.SIGKILL: "sigkill"}[tc.sig], func(t *testing.T) {
			if tc.row == "tw" && (tw == "" || caddy == "" || xray == "") {
				t.Skip("SKIPPED a stalled tw path: set TWNSBENCH_TW, TWNSBENCH_CADDY and TWNSBENCH_XRAY to the binaries' paths")
			}
			// Two cases at a time (-parallel is the cores): each is its
			// own run, with its own namespaces, cgroups and directory, and
			// asserts on failures and repairs, not on figures; a case
			// spends most of its time waiting (a frozen sample's 10 s
			// deadline, set-ups).
			t.Parallel()
			runFaultCase(t, tc)
		})
	}
}

func runFaultCase(t *testing.T, tc faultCase) {
	o := Quick()
	o.Transports = tc.transports
	o.Runs, o.Duration, o.Warmup = faultRuns, faultDuration, 0
	o.DriftProbe = false
	o.WAN = []string{"off"}
	cond := "lan"
	if tc.wan {
		// Delay without loss: with random loss a 1 s TCP_RR can end with
		// no transaction answered (one retransmission timeout longer than
		// the test), a real reading but a second failure this test did
		// not inject.
		o.WAN, o.Impairment, cond = []string{"30ms:0%"}, ImpairmentUserspace, "wan"
	}
	o.OutDir = t.TempDir()
	plan, err := NewPlan(o, transport.Names())
	if err != nil {
		t.Fatal(err)
	}
	ts, err := transport.Build(tc.transports, tc.values)
	if err != nil {
		t.Fatal(err)
	}
	ins, _, err := instrument.Select([]string{"iperf3-1", "tcp_rr"})
	if err != nil {
		t.Fatal(err)
	}
	var struck []int
	var strikeErr error
	strike := func(s Status) {
		if struck != nil || s.Transport != tc.row || s.Condition != cond || s.Instrument != tc.instrument || s.Run.Run != faultRun {
			return
		}
		struck = []int{}
		pids, err := victims(o.OutDir, tc.cgroup, tc.comm)
		if err != nil || len(pids) == 0 {
			strikeErr = fmt.Errorf("no %s %q to strike: %v", tc.cgroup, tc.comm, err)
			return
		}
		for _, pid := range pids {
			if err := syscall.Kill(pid, tc.sig); err == nil {
				struck = append(struck, pid)
			}
		}
		t.Logf("%v to %v (%s %s) as %s / %s / %s run %d began", tc.sig, struck, tc.cgroup, tc.comm, tc.row, cond, tc.instrument, faultRun)
	}
	start := time.Now()
	res, err := Run(context.Background(), plan, Deps{Transports: ts, Instruments: ins, Logf: t.Logf, Status: strike})
	wall := time.Since(start)
	// Resume what was frozen: it must be gone already, not come back.
	for _, pid := range struck {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if strikeErr != nil || len(struck) == 0 {
		t.Fatalf("the fault was not injected: %v", strikeErr)
	}
	d := res.Doc

	// Exactly the struck sample failed, with a reason and its repair.
	if len(d.Failures) != 1 || res.Failures != 1 {
		logFailureLogs(t, d.Failures)
		t.Fatalf("failures %d: %+v", res.Failures, d.Failures)
	}
	f := d.Failures[0]
	t.Logf("failure: %s\n  checks: %v\n  repairs: %v\n  lost: %.1f s; run wall %.1f s", f.Error, f.Checks, f.Repairs, deref(f.LostSec), wall.Seconds())
	if f.Transport != tc.row || f.Condition != cond || f.Instrument != tc.instrument || f.Run != faultRun {
		t.Errorf("failed sample %s/%s/%s run %d, want %s/%s/%s run %d", f.Transport, f.Condition, f.Instrument, f.Run, tc.row, cond, tc.instrument, faultRun)
	}
	if tc.sig == syscall.SIGSTOP && !strings.Contains(f.Error, "no result 10 s after its 1 s test") {
		t.Errorf("a frozen daemon's sample should end at its deadline: %q", f.Error)
	}
	if !containsPrefix(f.Repairs, tc.repair) {
		t.Errorf("repairs %q lack %q", f.Repairs, tc.repair)
	}
	// The bound: one sample's deadline plus one rebuild, at most twice the
	// planned time plus 30 s.
	bound := 2*faultDuration + 30*time.Second
	if f.LostSec == nil || *f.LostSec > bound.Seconds() {
		t.Errorf("the fault cost %v s, want ≤ %v", deref(f.LostSec), bound)
	}

	// Every other sample was measured: the other row's count is the
	// planned one, the struck row lost only the failed sample.
	conds := 1
	if tc.wan {
		conds = 2
	}
	count := map[string]int{}
	for _, s := range d.Samples {
		if s.Instrument != instrument.Ready {
			count[s.Transport]++
		}
	}
	planned := faultRuns * len(ins) * conds
	for _, name := range tc.transports {
		want := planned
		if name == tc.row {
			want--
		}
		if count[name] != want {
			t.Errorf("%s: %d samples, want %d", name, count[name], want)
		}
	}
	if !containsPrefix(d.Env.Fallbacks, "") || len(d.Env.Fallbacks) == 0 {
		t.Errorf("no fallback names the repair: %v", d.Env.Fallbacks)
	}
	md, err := os.ReadFile(filepath.Join(o.OutDir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| Built again |") || !strings.Contains(string(md), tc.repair) {
		t.Errorf("the report does not show the fault and its repair %q", tc.repair)
	}

	// Nothing left: namespaces, cgroups, the private directory, the struck
	// processes (resumed above: they were killed, not left frozen).
	if left := nstest.Residue(res.Prefix); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	root, _ := proc.Cgroup2Root()
	for _, p := range []string{cgroupDir(root, res.Prefix), privateDir(res.Prefix)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists", p)
		}
	}
	for _, pid := range struck {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(b), ") Z ") {
			t.Errorf("struck pid %d still runs: %s", pid, b)
		}
	}
}

// victims lists the processes of the run's cgroup sub (the run's prefix
// is its log directory's name under out) whose comm is comm ("" for all).
func victims(out, sub, comm string) ([]int, error) {
	logs, err := os.ReadDir(filepath.Join(out, "logs"))
	if err != nil || len(logs) != 1 {
		return nil, fmt.Errorf("run prefix from %s/logs: %v (%d entries)", out, err, len(logs))
	}
	root, err := proc.Cgroup2Root()
	if err != nil {
		return nil, err
	}
	var pids []int
	err = filepath.WalkDir(filepath.Join(cgroupDir(root, logs[0].Name()), sub), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if pid > 0 && (comm == "" || strings.TrimSpace(string(c)) == comm) {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids, err
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// A transport whose path breaks under every sample is given up after
// maxPathFaults under one condition: its remaining samples there are
// skipped with the reason, and the other row keeps its planned count.
// The instrument is ping: it ends at its own deadline whether the daemon
// died before it began or during it (an iperf3 whose daemon dies after
// it connected waits out its 10 s bound).
func TestBrokenTransportIsGivenUp(t *testing.T) {
	nstest.RequireRoot(t)
	o := Quick()
	o.Transports = []string{"ssh", "wireguard-go"}
	o.Runs, o.Duration, o.Warmup, o.WAN = maxPathFaults+1, faultDuration, 0, []string{"off"}
	o.DriftProbe = false
	o.OutDir = t.TempDir()
	plan, err := NewPlan(o, transport.Names())
	if err != nil {
		t.Fatal(err)
	}
	ts, err := transport.Build(o.Transports, nil)
	if err != nil {
		t.Fatal(err)
	}
	ins, _, err := instrument.Select([]string{"ping"})
	if err != nil {
		t.Fatal(err)
	}
	kills := 0
	kill := func(s Status) { // the daemon dies as each of the row's samples begins
		if s.Transport != "wireguard-go" {
			return
		}
		pids, _ := victims(o.OutDir, "client/t-wireguard-go", "")
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				kills++
			}
		}
	}
	res, err := Run(context.Background(), plan, Deps{Transports: ts, Instruments: ins, Logf: t.Logf, Status: kill})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	d := res.Doc
	count := map[string]int{}
	for _, s := range d.Samples {
		if s.Instrument != instrument.Ready {
			count[s.Transport]++
		}
	}
	if count["ssh"] != o.Runs || count["wireguard-go"] != 0 || len(d.Failures) != maxPathFaults || kills != maxPathFaults {
		t.Errorf("samples %v, %d failures, %d kills: want ssh %d, wireguard-go 0, %d failures and kills", count, len(d.Failures), kills, o.Runs, maxPathFaults)
	}
	var reason string
	for _, sk := range d.Skipped {
		if sk.Transport == "wireguard-go" && sk.Condition == "lan" {
			reason = sk.Reason
		}
	}
	if !strings.Contains(reason, "failed 3 times under this condition") {
		t.Errorf("skip reason %q", reason)
	}
	if left := nstest.Residue(res.Prefix); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// logFailureLogs prints the tool log each failure names, so a failure the
// test did not inject shows the tool's own words (the logs go with the
// test's temporary directory).
func logFailureLogs(t *testing.T, fs []results.Failure) {
	t.Helper()
	for _, f := range fs {
		_, rest, ok := strings.Cut(f.Error, "(log: ")
		path, _, _ := strings.Cut(rest, ")")
		if !ok || !filepath.IsAbs(path) {
			continue
		}
		b, err := os.ReadFile(path)
		if len(b) > 4096 {
			b = b[len(b)-4096:]
		}
		t.Logf("%s / %s / %s run %d: log %s (%v):\n%s", f.Transport, f.Condition, f.Instrument, f.Run, path, err, b)
	}
}

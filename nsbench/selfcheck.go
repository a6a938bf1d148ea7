package nsbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/proc"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/stats"
	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// SelfCheckOptions configure the harness parity check.
type SelfCheckOptions struct {
	Pairs     int           // at least 6: a 95 % interval of the median needs 6
	Duration  time.Duration // of each measurement
	Tolerance float64       // 0.05 passes a ratio interval within 0.95–1.05
	// Cap, when positive, caps the path at this many bits/s for the whole
	// check (a tbf qdisc on the client's and the server's eth0, inside
	// the run's namespaces): a path whose rate is the cap's, not what a
	// busy host's CPU leaves, so the bulk tool's pairs agree closely.
	Cap uint64
	// CapDirect, when positive, caps the path at this many bits/s while
	// the direct side measures, and only then: a known-bad case that
	// proves the check can fail.
	CapDirect uint64
	// Instruments are measured both ways; nil is iperf3 (1 stream) and
	// TCP_RR.
	Instruments []instrument.Instrument
	OutDir      string
	Logf        Logf
	// RPM is the cross-check of the RPM client against goresponsiveness,
	// after the parity checks; no part of the verdict.
	RPM RPMCrossOptions
}

// selfCheckInstruments are measured both ways: a bulk and a latency-bound
// tool, the two ways a harness could get in the way.
var selfCheckInstruments = []instrument.Instrument{instrument.IPerf3{Streams: 1}, instrument.TCPRR{}}

// SelfCheck builds the topology and measures each instrument on the plain
// path in pairs, once through the harness's own code (the launcher, the
// role's cgroup and mount namespace) and once as a person would run it
// from a shell (`ip netns exec NS tool …`, no cgroup, no launcher): the
// same arguments and the same parser, only the way the tool is started
// differs. Pairs alternate which goes first (AB, BA, …) so a host that
// drifts in one direction weighs on both alike. It writes
// OUT/selfcheck.json and tears everything down.
func SelfCheck(ctx context.Context, o SelfCheckOptions, versions map[string]string) (res *results.SelfCheck, err error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	cfg := testbedConfig{OutDir: o.OutDir, Network: Network{Congestion: Defaults().Congestion, NIC: NICReference}, Duration: o.Duration}
	if o.RPM.Tool != "" {
		cfg.Own = []transport.Service{transport.ServiceRPM}
	}
	tb, err := newTestbed(cfg, logf)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Options: Options{Measure: Measure{Runs: 1, Duration: o.Duration}, OutDir: o.OutDir, Network: Network{Congestion: Defaults().Congestion, NIC: NICReference}, Schedule: Schedule{Order: OrderInterleaved}}}
	rec := newRecorder(newDocument(plan, versions), "") // the check writes its own document
	defer func() {
		if derr := tb.down(); derr != nil && err == nil {
			err = derr
		}
	}()
	if err := tb.up(ctx, rec); err != nil {
		return nil, err
	}
	instruments := o.Instruments
	if instruments == nil {
		instruments = selfCheckInstruments
	}
	harness := tb.job(tb.direct())
	direct := *harness
	ns := tb.spec.NetnsName(topology.Client)
	direct.Run = bareRun(ns)
	res = &results.SelfCheck{
		Generated: time.Now().UTC().Format(time.RFC3339), SelfCheckMachine: results.SelfCheckMachine{Kernel: kernelRelease(), CPUModel: cpuModel(), Cores: runtime.NumCPU()},
		Pairs: o.Pairs, DurationSec: o.Duration.Seconds(), Tolerance: o.Tolerance,
		Direct: "sh -c 'ip netns exec " + ns + " TOOL ARGS…' from the harness, outside every cgroup and the launcher",
		CapBps: o.Cap, DirectCapBps: o.CapDirect,
	}
	if o.Cap > 0 {
		if err := setCap(ctx, tb, o.Cap); err != nil {
			return nil, err
		}
	}
	for _, in := range instruments {
		c := results.SelfCheckRatio{Instrument: in.Name(), Unit: in.Metrics()[0].Unit}
		for pair := 0; pair < o.Pairs; pair++ {
			ways := []*instrument.Job{harness, &direct}
			if pair%2 == 1 {
				ways = []*instrument.Job{&direct, harness}
			}
			var got [2]float64
			for _, job := range ways {
				if _, err := tb.waitQuiet(ctx, in); err != nil {
					return nil, err
				}
				m, err := measureSides(ctx, tb, in, job, job == &direct, o)
				if err != nil {
					return nil, fmt.Errorf("%s pair %d (%s): %w", in.Name(), pair+1, map[bool]string{true: "harness", false: "direct"}[job == harness], err)
				}
				if job == harness {
					got[0] = m.Value
				} else {
					got[1] = m.Value
				}
			}
			c.Harness, c.Direct = append(c.Harness, got[0]), append(c.Direct, got[1])
			logf("selfcheck %s pair %d/%d: harness %.4g, direct %.4g %s", in.Name(), pair+1, o.Pairs, got[0], got[1], c.Unit)
		}
		judgeParity(&c, o.Tolerance)
		res.Checks = append(res.Checks, c)
	}
	res.Verdict = overallVerdict(res.Checks)
	if o.RPM.Tool != "" || o.RPM.Skipped != "" {
		if res.RPM, err = rpmCrossCheck(ctx, tb, o.RPM, logf); err != nil {
			return nil, err
		}
	}
	if err := results.WriteSelfCheck(filepath.Join(o.OutDir, results.SelfCheckFile), res); err != nil {
		return res, err
	}
	return res, nil
}

// setCap caps the path at bps — a token bucket filter replacing the root
// qdisc of the client's and the server's eth0 (burst: 5 ms at that rate,
// at least 256 KiB so GSO frames pass whole; queue: 20 ms more) — or, with
// bps 0, deletes it, which puts back each link's default qdisc. tbf is
// there where netem is not (this kernel has sch_tbf built in).
func setCap(ctx context.Context, tb *testbed, bps uint64) error {
	for _, r := range []string{topology.Client, topology.Server} {
		if _, err := tbfOp.On(ctx, tb.role(r), bps); err != nil {
			return err
		}
	}
	return nil
}

// tbfOp sets (or with 0 deletes) the tbf cap on the role's link, in the
// role's namespace.
var tbfOp = role.NewOp("selfcheck.tbf", func(_ context.Context, bps uint64) (role.Nothing, error) {
	link, err := netlink.LinkByName(topology.RoleLink)
	if err != nil {
		return role.Nothing{}, fmt.Errorf("cap %s: %w", topology.RoleLink, err)
	}
	q := tbfCap(link.Attrs().Index, bps)
	if bps == 0 {
		if err := netlink.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) {
			return role.Nothing{}, fmt.Errorf("uncap %s: %w", topology.RoleLink, err)
		}
		return role.Nothing{}, nil
	}
	if err := netlink.QdiscReplace(q); err != nil {
		return role.Nothing{}, fmt.Errorf("cap %s at %s (tbf): %w", topology.RoleLink, impair.FormatRate(bps), err)
	}
	return role.Nothing{}, nil
})

// tbfCap is the root qdisc that caps link index at bps: burst 5 ms at
// that rate, at least 256 KiB so GSO frames pass whole; queue 20 ms more.
func tbfCap(index int, bps uint64) *netlink.Tbf {
	rate := bps / 8
	burst := uint32(max(rate/200, 256<<10))
	return &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		Rate:       rate, Buffer: netlink.Xmittime(rate, burst), Limit: burst + uint32(rate/50),
	}
}

// measureSides measures one side of a pair: the direct side under
// CapDirect when set, the path's own cap (Cap, or none) put back after.
func measureSides(ctx context.Context, tb *testbed, in instrument.Instrument, job *instrument.Job, direct bool, o SelfCheckOptions) (instrument.Measurement, error) {
	if !direct || o.CapDirect == 0 {
		return instrument.MeasureBounded(ctx, in, job)
	}
	if err := setCap(ctx, tb, o.CapDirect); err != nil {
		return instrument.Measurement{}, err
	}
	m, err := instrument.MeasureBounded(ctx, in, job)
	// The path's own cap is put back even when the measurement was cut.
	return m, errors.Join(err, setCap(context.WithoutCancel(ctx), tb, o.Cap))
}

// judgeParity computes the pairs' ratios and the verdict: pass when the
// median ratio's 95 % interval lies within 1 ± tolerance, fail when it
// lies wholly outside, inconclusive otherwise (the interval is wider than
// the question: the host is too noisy to tell). Never a pass by default.
func judgeParity(c *results.SelfCheckRatio, tolerance float64) {
	c.Ratios = nil
	for i := range c.Harness {
		if c.Direct[i] > 0 {
			c.Ratios = append(c.Ratios, c.Harness[i]/c.Direct[i])
		}
	}
	ci := stats.MedianCI(c.Ratios, 0.95)
	c.Ratio, c.CILow, c.CIHigh, c.CILevel = stats.Median(c.Ratios), ci.Low, ci.High, ci.Level
	c.DirectCV, _ = stats.CV(c.Direct)
	lo, hi := 1-tolerance, 1+tolerance
	switch {
	case !ci.Reached:
		c.Verdict = results.VerdictInconclusive
	case ci.Low >= lo && ci.High <= hi:
		c.Verdict = results.VerdictPass
	case ci.High < lo || ci.Low > hi:
		c.Verdict = results.VerdictFail
	default:
		c.Verdict = results.VerdictInconclusive
	}
}

func overallVerdict(cs []results.SelfCheckRatio) string {
	v := results.VerdictPass
	for _, c := range cs {
		switch c.Verdict {
		case results.VerdictFail:
			return results.VerdictFail
		case results.VerdictInconclusive:
			v = results.VerdictInconclusive
		}
	}
	if len(cs) == 0 {
		return results.VerdictInconclusive
	}
	return v
}

// bareRun runs a program in network namespace ns as a person would from
// a shell: `ip netns exec NS PROGRAM ARGS…` through sh, no cgroup, no
// launcher.
func bareRun(ns string) func(ctx context.Context, name string, argv ...string) (proc.Result, error) {
	return func(ctx context.Context, name string, argv ...string) (proc.Result, error) {
		return shellRun(ctx, "ip netns exec "+ns+" "+shellQuote(append([]string{name}, argv...)))
	}
}

// shellRun runs a command line through sh, as a person at a shell would,
// and captures its output. sh leads its own process group, and a cancelled
// ctx ends that group: the tool under `ip netns exec`, not only sh.
func shellRun(ctx context.Context, line string) (proc.Result, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return proc.KillGroup(cmd.Process.Pid) }
	cmd.WaitDelay = proc.WaitDelay
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	return proc.Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Wall: time.Since(start)}, err
}

// shellQuote quotes each word for sh.
func shellQuote(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/safedir"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

var errInterrupted = errors.New("interrupted: results measured so far are kept")

// tools are the programs a run starts.
var tools = []string{"iperf3", "netperf", "netserver", "ssh", "scp", "sshd", "ssh-keygen", "ping"}

func runCommand() *cli.Command {
	d := nsbench.Defaults()
	return &cli.Command{
		Name:  "run",
		Usage: "build the namespaces, measure every transport, write the reports, tear down",
		Description: "Measures each transport with the instruments --instruments names (default: " + instrumentList(instrument.All()) + ", " + instrument.Ready + "),\n" +
			"on the LAN and under each --wan condition, after an untimed warm-up, --runs times in the --order given.\n" +
			"Results are written after every sample to OUT/bench-results.json; the report goes to OUT/bench-report.md\n" +
			"and OUT/bench-report.html with its charts (OUT/bench-*.svg), and tool logs to OUT/logs/<run id>/.\n" +
			"The roles run on this host unless --host puts them on other machines, each reached over SSH and\n" +
			"served by a copy of twnsbench there. Ctrl-C stops, tears down and keeps what was measured.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "instruments", Usage: "comma-separated instruments (" + strings.Join(instrument.Names(), ", ") + "), or a set (" + instrumentSets() + "), or flap-D (the client's link down for D, whole seconds, e.g. flap-5s: how long the tunnel takes to carry traffic again); default: " + instrumentList(instrument.All()) + ", " + instrument.Ready},
			&cli.StringFlag{Name: "cost-rate", Usage: "the rate `RATE` (e.g. 200mbit) " + instrument.CostName + " offers: below what every row measured can carry, so its cost per GB is at one load (default " + strconv.Itoa(instrument.DefaultCostRateBps/1e6) + "mbit)"},
			&cli.GenericFlag{Name: "sizes", Value: &entries{}, Usage: "NAME=SIZE,SIZE,…, several times: the sizes (bytes, K for KiB) a size sweep of --instruments measures at (defaults: " + instrument.SweepDefaults() + ")"},
			&cli.StringFlag{Name: "transports", Usage: "comma-separated transports (" + strings.Join(transport.Names(), ", ") + ") as NAME or NAME:VARIANT, NAME@LABEL for a build (--build), or sets (" + strings.Join(transport.SetNames(), ", ") + ": every variant of their members); default: every transport of " + strings.Join(transport.DefaultNames(), ", ") + " available on this host"},
			&cli.StringSliceFlag{Name: "wan", Usage: "WAN condition SPEC, several times for several conditions (env BENCH_WAN: SPECs separated by spaces; default " + strings.Join(d.WAN, " ") + "): RTTms:LOSS%[:jitter=Dms][:rate=R] — delay RTT/2 ±D and the loss on the client's and the server's egress, capped at R (kbit, mbit, gbit); measured after each transport's LAN cells — or off. With --host: off unless given, each role's egress impaired on its own host (needs --nic reference)"},
			&cli.StringFlag{Name: "runs", Value: strconv.Itoa(d.Runs), EnvVars: []string{"BENCH_RUNS"}, Usage: "timed runs per cell, or auto: a pilot of " + strconv.Itoa(nsbench.AutoMinRuns) + " runs per cell fixes the cell's number of runs from its spread, for a 95 % interval of the median within --precision of it (at most --max-runs); every run then counts"},
			&cli.StringFlag{Name: "precision", Value: "5%", Usage: "with --runs auto: the half-width of the median's 95 % interval to plan for, relative to the median"},
			&cli.Float64Flag{Name: "precision-ms", Value: d.PrecisionMs, Usage: "with --runs auto: the half-width (ms) a difference's interval may have whatever its median (rrul's latency increase, loaded minus idle, can lie near 0, where no relative precision is reached); it is held to the wider of this and --precision"},
			&cli.IntFlag{Name: "max-runs", Value: d.MaxRuns, Usage: "with --runs auto: the most runs per cell"},
			&cli.StringFlag{Name: "order", Value: d.Order, Usage: "interleaved: every transport up together under each condition, run 1 of each, then run 2, … (host drift hits all alike); reference: one transport after the other, as tw's Docker benchmark"},
			&cli.StringFlag{Name: "size", Value: "5GiB", Usage: "scp payload on the LAN, e.g. 5GiB, 256MiB (env BENCH_SIZE_GB: GiB)"},
			&cli.DurationFlag{Name: "duration", Value: d.Duration, Usage: "length of each iperf3 and TCP_RR sample (whole seconds)"},
			&cli.DurationFlag{Name: "warmup", Value: d.Warmup, Usage: "length of each untimed warm-up (whole seconds; 0 for none)"},
			&cli.StringFlag{Name: "out", Value: d.OutDir, Usage: "output directory"},
			historyFlag(),
			&cli.BoolFlag{Name: "quick", Usage: "smoke run: 1 run, 2s instruments, 1s warm-up, 64MiB payload (explicit flags win)"},
			&cli.BoolFlag{Name: "drift-probe", Value: d.DriftProbe, Usage: "measure the host itself (plain iperf3, 1 stream, no tunnel) before the first transport and after the last, for the report's \"Host before and after\"; --drift-probe=false skips both (about 2.5 s), and the report says so"},
			&cli.BoolFlag{Name: "keep", Usage: "after measuring, keep the topology up and print how to enter each namespace; Ctrl-C tears it down"},
			impairmentFlag(), seedFlag(), strictFlag(), clientsFlag(),
		}, append(append(append(networkFlags(d.Congestion), buildFlags()...), hostFlags(runHostUsage)...), transportFlags()...)...),
		Action: runAction,
	}
}

func runAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return refuse(fmt.Errorf("run: unexpected argument %q", c.Args().First()))
	}
	// Everything is validated before anything is created: a refusal
	// (exit 2) leaves no namespace, link, file or directory behind.
	job, err := planRun(c)
	if err != nil {
		return refuse(err)
	}
	if err := job.preflight(c.App.ErrWriter); err != nil {
		return refuse(err)
	}
	sites, err := job.openSites(c)
	if err != nil {
		return refuse(err)
	}
	if sites != nil {
		defer sites.Close() // the run ends them; this is for a refusal
	}
	// Last, because it creates the directory: the output must be writable.
	if err := makeOutDir(job.plan.OutDir); err != nil {
		return refuse(err)
	}
	res, err := job.measure(c, sites)
	return job.outcome(c, res, err)
}

// preflightOptions are the checks of this host before a run: the tools
// it starts, the kernel features its transports use, and room for the
// payload when it is made here.
func preflightOptions(plan *nsbench.Plan, ts []transport.Transport, ins []instrument.Instrument) preflight.Options {
	if plan.Sweep() {
		return preflight.Options{Tools: clientsTools}
	}
	var tmpfs int64
	if instrument.NeedsPayload(ins) && !plan.Hosts.On() {
		tmpfs = plan.SizeBytes + plan.WarmBytes()
	}
	return preflight.Options{NeedTmpfsBytes: tmpfs, SizeBytes: plan.SizeBytes, Tools: tools, Kernel: transport.KernelUses(ts)}
}

// runOutcome is the error that sets a complete run's exit code, in this
// precedence: build B confirmed slower where --fail-on looks (1, naming
// the failed samples too); samples that could not be measured (4);
// nothing measured at all (1); a verdict undecided where --fail-on looks,
// or none (3); a WAN cell off its condition under --strict (1). verdict is
// buildsOutcome's error, verification verificationOutcome's.
func runOutcome(res *nsbench.Result, verdict, verification error) error {
	failed := fmt.Sprintf("%d samples could not be measured (see failures in %s)", res.Failures, results.FileName)
	var reg regressionError
	switch {
	case errors.As(verdict, &reg) && res.Failures > 0:
		return regressionError{reg.msg + "; also " + failed}
	case reg.msg != "":
		return verdict
	case res.Failures > 0:
		return samplesFailedError{failed}
	case len(res.Doc.Samples) == 0:
		return fmt.Errorf("the run measured nothing: every transport was skipped (reasons in %s)", filepath.Join(res.OutDir, nsbench.ReportFile))
	case verdict != nil:
		return verdict
	}
	return verification
}

// makeOutDir creates the output directory, refusing one another user could
// change (safedir), and proves it writable with a file it removes again.
func makeOutDir(dir string) error {
	d, err := safedir.Open("--out", dir)
	if err != nil {
		return err
	}
	defer d.Close()
	const probe = ".twnsbench-write-check"
	if err := d.WriteFile(probe, nil, 0o600); err != nil {
		return fmt.Errorf("--out %s: not writable: %w", dir, err)
	}
	return d.Remove(probe)
}

func summarize(c *cli.Context, res *nsbench.Result) {
	t := res.Doc.Timings
	fmt.Fprintf(c.App.Writer, "results: %s/%s\nreport:  %s/%s\n", res.OutDir, results.FileName, res.OutDir, nsbench.ReportFile)
	if t != nil {
		fmt.Fprintf(c.App.Writer, "samples: %d, failures: %d; topology up %.3f s, teardown %.3f s, harness CPU %.2f s during measurements\n",
			len(res.Doc.Samples), res.Failures, t.TopologyUpSec, t.TeardownSec, t.HarnessCPUSec)
	}
	if n := report.NoiseSummary(res.Doc); n != "" {
		fmt.Fprintln(c.App.Writer, n)
	}
}

// optionsFrom reads flags and environment knobs; explicit flags win over
// --quick.
//
// With --clients they start from the sweep's (clientsOptions), and the
// reference run's knobs (BENCH_WAN, BENCH_SIZE_GB, --order's default) stay
// out: what a sweep has no use for is refused when given, by the plan.
func optionsFrom(c *cli.Context) (nsbench.Options, error) {
	sweep := c.IsSet("clients")
	o := nsbench.Defaults()
	switch {
	case sweep:
		var err error
		if o, err = clientsOptions(c); err != nil {
			return o, err
		}
	case c.Bool("quick"):
		o = nsbench.Quick()
	}
	inv, cfg, on, err := parseHosts(c)
	if err != nil {
		return o, err
	}
	if on {
		o.Hosts = nsbench.Hosts{Inventory: inv, SSH: cfg}
		if !sweep && !c.IsSet("wan") && len(c.StringSlice("wan")) == 0 {
			o.WAN = []string{"off"} // across hosts a WAN is asked for, never assumed
		}
	}
	if c.IsSet("transports") {
		if o.Transports = splitList(c.String("transports")); len(o.Transports) == 0 {
			return o, errors.New("--transports: empty list")
		}
	}
	if c.IsSet("instruments") && len(splitList(c.String("instruments"))) == 0 {
		return o, errors.New("--instruments: empty list")
	}
	switch {
	case c.IsSet("wan"):
		o.WAN = c.StringSlice("wan")
	case !sweep && strings.TrimSpace(os.Getenv("BENCH_WAN")) != "":
		o.WAN = strings.Fields(os.Getenv("BENCH_WAN"))
	}
	if err := wanOptions(c, &o); err != nil {
		return o, err
	}
	if c.IsSet("runs") {
		if err := runsOption(c.String("runs"), &o); err != nil && sweep {
			return o, nsbench.SweepRunsError(strings.TrimSpace(c.String("runs")))
		} else if err != nil {
			return o, err
		}
	}
	if c.IsSet("precision") || c.IsSet("precision-ms") || c.IsSet("max-runs") {
		if !o.RunsAuto && !sweep {
			return o, errors.New("--precision, --precision-ms and --max-runs need --runs auto")
		}
		if c.IsSet("precision-ms") {
			o.PrecisionMs = c.Float64("precision-ms")
		}
		if c.IsSet("precision") {
			p, err := parsePercent(c.String("precision"))
			if err != nil {
				return o, fmt.Errorf("--precision: %w", err)
			}
			o.Precision = p
		}
		if c.IsSet("max-runs") {
			o.MaxRuns = c.Int("max-runs")
		}
	}
	if err := buildsOptions(c, &o); err != nil {
		return o, err
	}
	if !sweep || c.IsSet("order") {
		o.Order = c.String("order")
	}
	if c.IsSet("duration") {
		o.Duration = c.Duration("duration")
	}
	if c.IsSet("warmup") {
		o.Warmup = c.Duration("warmup")
	}
	o.OutDir = c.String("out")
	o.Keep = c.Bool("keep")
	if c.IsSet("drift-probe") {
		o.DriftProbe = c.Bool("drift-probe")
	}
	o.Network = networkOptions(c)
	switch {
	case c.IsSet("size"):
		n, err := nsbench.ParseSize(c.String("size"))
		if err != nil {
			return o, fmt.Errorf("--size: %w", err)
		}
		o.SizeBytes = n
	case !sweep && os.Getenv("BENCH_SIZE_GB") != "":
		n, err := nsbench.ParseSizeGB(os.Getenv("BENCH_SIZE_GB"))
		if err != nil {
			return o, err
		}
		o.SizeBytes = n
	}
	return o, nil
}

// runsOption reads --runs: a count, or auto.
func runsOption(v string, o *nsbench.Options) error {
	if strings.TrimSpace(v) == "auto" {
		o.RunsAuto, o.Runs = true, nsbench.AutoMinRuns
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("--runs %q: want a number of runs or auto", v)
	}
	o.Runs = n
	return nil
}

// parsePercent reads "5%" or "5" as 0.05.
func parsePercent(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want a percentage such as 5%%", v)
	}
	return f / 100, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var items []string
	for _, it := range strings.Split(s, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	return items
}

package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/rpm"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

func selfcheckCommand() *cli.Command {
	return &cli.Command{
		Name:  "selfcheck",
		Usage: "check that the harness measures what a bare command measures (root)",
		Description: "Builds the topology and measures iperf3 (1 stream) and TCP_RR on the plain path in\n" +
			"interleaved pairs: once through twnsbench's own instrument code, once as a bare command\n" +
			"(`ip netns exec NS iperf3 …` from sh: no cgroup, no launcher). Prints the ratio\n" +
			"harness/direct with its 95 % confidence interval and writes OUT/selfcheck.json.\n" +
			"Exit 0: every interval within 1 ± --tolerance; 1: an interval wholly outside it;\n" +
			"3: inconclusive (the host is too noisy to tell; never a pass by default).\n" +
			"--cap RATE caps the path for the whole check (a tbf qdisc on the client's and the\n" +
			"server's eth0, inside the run's namespaces): on a busy host the bulk tool then measures\n" +
			"the cap, not what the CPU leaves, and its pairs agree. --cap-direct RATE caps it only\n" +
			"while the bare command measures: a known-bad case, to see the check fail when the two\n" +
			"sides do not measure the same path.\n" +
			"Then, when goresponsiveness (an independent RPM client, GPL: run as a program, never\n" +
			"linked) is at $TWNSBENCH_GORESPONSIVENESS or " + nsbench.GoResponsivenessPath + ", it and\n" +
			"twnsbench's rpm client measure the same rpm server in --rpm-pairs pairs, both capped at\n" +
			"--rpm-connections per direction, and the check prints both figures, their ratio and\n" +
			"where they part (not part of the verdict); without it, the cross-check says it was skipped.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "pairs", Value: 8, Usage: "pairs per instrument (at least 6: a 95 % interval of the median needs 6)"},
			&cli.DurationFlag{Name: "duration", Value: 3 * time.Second, Usage: "length of each measurement (whole seconds)"},
			&cli.StringFlag{Name: "tolerance", Value: "5%", Usage: "how far from 1 the ratio's interval may reach"},
			&cli.StringFlag{Name: "out", Value: "results/selfcheck", Usage: "output directory"},
			&cli.StringFlag{Name: "cap", Usage: "cap the path at `RATE` (e.g. 300mbit) for the whole check: a steady path on a busy host"},
			&cli.IntFlag{Name: "rpm-pairs", Value: 3, Usage: "pairs of the RPM cross-check against goresponsiveness (0: none)"},
			&cli.IntFlag{Name: "rpm-connections", Value: 4, Usage: "load-generating connections per direction of both RPM clients in the cross-check"},
			&cli.DurationFlag{Name: "rpm-limit", Value: 10 * time.Second, Usage: "each RPM client's time limit in the cross-check (whole seconds)"},
			&cli.StringFlag{Name: "cap-direct", Usage: "cap the path at `RATE` (e.g. 2gbit) while the bare command measures: a known-bad case, the verdict should be fail"},
		},
		Action: selfcheckAction,
	}
}

func selfcheckAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return refuse(fmt.Errorf("selfcheck: unexpected argument %q", c.Args().First()))
	}
	o := nsbench.SelfCheckOptions{Pairs: c.Int("pairs"), Duration: c.Duration("duration"), OutDir: c.String("out")}
	var errs []error
	if o.Pairs < 6 || o.Pairs > 1000 {
		errs = append(errs, fmt.Errorf("--pairs %d: want 6 to 1000 (a 95 %% interval of the median needs 6)", o.Pairs))
	}
	if o.Duration < time.Second || o.Duration%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--duration %s: want whole seconds, at least 1s", o.Duration))
	}
	tol, err := parsePercent(c.String("tolerance"))
	if err != nil || tol <= 0 || tol >= 1 {
		errs = append(errs, fmt.Errorf("--tolerance %q: want a percentage above 0 and below 100", c.String("tolerance")))
	}
	o.Tolerance = tol
	o.RPM = nsbench.RPMCrossOptions{Runs: c.Int("rpm-pairs"), Connections: c.Int("rpm-connections"), Limit: c.Duration("rpm-limit")}
	if o.RPM.Runs < 0 || o.RPM.Runs > 100 {
		errs = append(errs, fmt.Errorf("--rpm-pairs %d: want 0 to 100", o.RPM.Runs))
	}
	if o.RPM.Connections < rpm.INP || o.RPM.Connections > rpm.MNP {
		errs = append(errs, fmt.Errorf("--rpm-connections %d: want %d to %d", o.RPM.Connections, rpm.INP, rpm.MNP))
	}
	if o.RPM.Limit < 2*time.Second || o.RPM.Limit%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--rpm-limit %s: want whole seconds, at least 2s", o.RPM.Limit))
	}
	if o.RPM.Runs > 0 {
		if o.RPM.Tool, o.RPM.Skipped, err = nsbench.FindGoResponsiveness(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range []struct {
		name string
		to   *uint64
	}{{"cap", &o.Cap}, {"cap-direct", &o.CapDirect}} {
		v := c.String(f.name)
		if v == "" {
			continue
		}
		bps, err := impair.ParseRate(v)
		if err == nil && (bps < impair.MinRateBps || bps > impair.MaxRateBps) {
			err = fmt.Errorf("want %s to %s", impair.FormatRate(impair.MinRateBps), impair.FormatRate(impair.MaxRateBps))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s %q: %w", f.name, v, err))
		}
		*f.to = bps
	}
	if len(errs) > 0 {
		return refuse(errors.Join(errs...))
	}
	if err := topology.CheckCongestion(nsbench.Defaults().Congestion); err != nil {
		return refuse(err)
	}
	pre := preflight.Run(preflight.Options{Tools: []string{"iperf3", "netperf", "netserver", "ssh", "sshd", "ssh-keygen", "ip"}})
	if err := pre.Err(); err != nil {
		fmt.Fprint(c.App.ErrWriter, pre.String())
		return refuse(err)
	}
	if err := makeOutDir(o.OutDir); err != nil {
		return refuse(err)
	}
	con := newConsole(c.App.ErrWriter)
	o.Logf = con.Logf
	res, err := nsbench.SelfCheck(c.Context, o, pre.Versions)
	con.Close()
	if c.Context.Err() != nil {
		return errInterrupted
	}
	if err != nil {
		return fmt.Errorf("selfcheck: %w", err)
	}
	fmt.Fprint(c.App.Writer, report.SelfCheckText(res))
	fmt.Fprintf(c.App.Writer, "written: %s/%s\n", o.OutDir, results.SelfCheckFile)
	switch res.Verdict {
	case results.VerdictPass:
		return nil
	case results.VerdictFail:
		return errors.New("selfcheck failed: the harness does not measure what the bare command measures")
	}
	return inconclusiveError{"selfcheck inconclusive: the host is too noisy to tell (see the intervals above)"}
}

package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/report/ci"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/safedir"
	"github.com/twnsbench/twnsbench/nsbench/verdict"
)

// buildFlags are run's flags for two builds of a transport.
func buildFlags() []cli.Flag {
	d := nsbench.BuildsDefaults
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "build", Usage: "LABEL:OPTION=PATH, several times: the rows NAME@LABEL of --transports run the transport with its program option OPTION (e.g. tw, wireguard-go, openvpn) set to PATH (with --host, a program here, copied to the hosts of the roles that run it); exactly two builds of a transport, A (named first) and B, measured in alternating rounds (A B, then B A) and compared cell by cell: exit 1 when B is confirmed slower where --fail-on looks, 3 when undecided there (4, as any run, when samples failed and none is slower)"},
		&cli.StringFlag{Name: "min-effect", Usage: "with builds: the smallest change of B against A that counts as slower or faster, in every cell (default: each metric's own where it declares one, as iperf3-instr's packet path does, " + strconv.FormatFloat(verdict.DefaultMinEffect*100, 'f', -1, 64) + "% for the others)"},
		&cli.IntFlag{Name: "max-rounds", Value: d.MaxRounds, Usage: "with builds: the most rounds the verdict may measure when it needs more to decide"},
		&cli.BoolFlag{Name: "profile", Usage: "with builds: sample the roles' CPU stacks (perf, a software clock) during each build's samples and show B against A: the functions whose share changed most, with an interval across rounds, and a differential flame graph in the HTML report; folded stacks in OUT/profile-*.folded"},
		&cli.StringFlag{Name: "fail-on", Value: "*/value", Usage: "with builds: the cells whose verdict sets the exit code: a comma-separated list of INSTRUMENT (its value), INSTRUMENT/METRIC or CONDITION/INSTRUMENT/METRIC, * for any part, or all (every metric with a better direction)"},
	}
}

// buildsOptions reads the builds' flags into o; they need builds.
func buildsOptions(c *cli.Context, o *nsbench.Options) error {
	set := c.IsSet("min-effect") || c.IsSet("max-rounds") || c.IsSet("fail-on") || c.IsSet("profile")
	if o.Sweep() && set {
		return errors.New("--clients: --min-effect, --max-rounds, --fail-on and --profile do not apply to the many-client sweep (its builds get a verdict per client count at 5 %, which sets no exit code)")
	}
	if o.Sweep() {
		return nil
	}
	if !o.HasBuilds() {
		if set {
			return errors.New("--min-effect, --max-rounds, --fail-on and --profile need builds: --transports NAME@A,NAME@B with --build A:OPTION=PATH --build B:OPTION=PATH")
		}
		return nil
	}
	o.Builds.Profile = c.Bool("profile")
	if c.IsSet("min-effect") {
		p, err := parsePercent(c.String("min-effect"))
		if err != nil {
			return fmt.Errorf("--min-effect: %w", err)
		}
		if p <= 0 {
			return fmt.Errorf("--min-effect %g %%: want above 0 and below 100 %%", p*100)
		}
		o.Builds.MinEffect = p
	}
	o.Builds.MaxRounds = c.Int("max-rounds")
	f, err := nsbench.ParseFailOn(c.String("fail-on"))
	if err != nil {
		return err
	}
	o.Builds.FailOn = f
	return nil
}

// regressionError is build B confirmed slower where --fail-on looks
// (exit 1): it wins over failed samples (exit 4).
type regressionError struct{ msg string }

func (e regressionError) Error() string { return e.msg }

// buildsOutcome prints a run of builds' verdict (and, in GitHub Actions,
// annotates the job) and returns verdictError's error.
func buildsOutcome(c *cli.Context, res *nsbench.Result) error {
	if _, ok := nsbench.VerdictOutcome(res.Doc); !ok {
		return nil
	}
	fmt.Fprint(c.App.Writer, report.VerdictSummary(res.Doc))
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		if err := githubActions(c, res); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "twnsbench: GitHub Actions: %v\n", err)
		}
	}
	return verdictError(res.Doc)
}

// verdictError is the exit code's error of a run of builds: exit 1 when
// a cell --fail-on selects is confirmed slower, 3 when one of them is
// undecided (or none has a verdict), nil otherwise (and without builds).
func verdictError(doc *results.Document) error {
	o, ok := nsbench.VerdictOutcome(doc)
	switch {
	case !ok:
		return nil
	case len(o.Regressed) > 0:
		return regressionError{report.RegressionLine(o.Regressed)}
	case o.Counted == 0:
		return inconclusiveError{"no cell --fail-on selects has a verdict: nothing was compared"}
	case len(o.Undecided) > 0:
		return inconclusiveError{report.UndecidedLine(o.Undecided)}
	}
	return nil
}

// githubActions annotates the job (an error per slower cell, a warning per
// undecided one) and appends the verdict's summary to the file GitHub
// names in $GITHUB_STEP_SUMMARY (it exists: the runner made it; under sudo
// the variables must be kept, e.g. sudo --preserve-env=GITHUB_ACTIONS,GITHUB_STEP_SUMMARY).
func githubActions(c *cli.Context, res *nsbench.Result) error {
	var rs []results.Verdict
	if res.Doc.Verdicts != nil {
		rs = res.Doc.Verdicts.Cells
	}
	if err := ci.WriteGitHubAnnotations(c.App.Writer, rs); err != nil {
		return err
	}
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	f, err := safedir.AppendTo("$GITHUB_STEP_SUMMARY", path)
	if err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	err = ci.WriteStepSummary(f, rs, ci.ABRunOf(res.Doc))
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("step summary: %w", cerr)
	}
	return err
}

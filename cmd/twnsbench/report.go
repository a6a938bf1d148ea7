package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/safedir"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "re-render the Markdown report, the charts and the HTML page from a results JSON alone (no root needed)",
		UsageText: "twnsbench report --in RESULTS.json [--out DIR]",
		Description: "Reads RESULTS.json (a twnsbench run's, or the reference harness's) and writes into --out\n" +
			nsbench.ReportFile + ", " + report.HTMLFile + " (one self-contained page: every table and chart inline)\n" +
			"and the charts " + report.ChartFile + ", " + report.MetricsChartFile + ", " + report.TimeSeriesFile + " and\n" +
			report.LatencyCDFFile + ", each with its -dark variant. A chart the document has nothing for (time series\n" +
			"without series) is not written, and an old file of its name is removed. For a run's own JSON the files\n" +
			"are byte for byte what the run wrote. Existing files of those names are replaced.\n" +
			"A many-client sweep's " + results.ClientsFileName + " (run --clients) renders as its run did: " + report.ClientsReportFile + ",\n" +
			report.ClientsChartFile + ", " + report.ClientsChartDarkFile + " and " + report.ClientsHTMLFile + ".",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "in", Usage: "the `RESULTS.json` document to render (required), e.g. results/" + results.FileName},
			&cli.StringFlag{Name: "out", Usage: "write into `DIR` (default: the directory of --in)"},
		},
		Action: reportAction,
	}
}

func reportAction(c *cli.Context) (err error) {
	defer refuseOnPanic(&err, "report")
	if c.NArg() > 0 {
		return refuse(fmt.Errorf("report: unexpected argument %q (the results file goes in --in)", c.Args().First()))
	}
	in := c.String("in")
	if in == "" {
		return refuse(errors.New("report: --in RESULTS.json is required"))
	}
	write, err := reportWriter(in)
	if err != nil {
		return refuse(fmt.Errorf("report: %w", err))
	}
	out := c.String("out")
	if out == "" {
		out = filepath.Dir(in)
	}
	what := "--out"
	if c.String("out") == "" {
		what = "--in's directory (the default --out)"
	}
	d, err := safedir.Open(what, out) // made now, refused as bad input; the writes open it again
	if err != nil {
		return refuse(fmt.Errorf("report: %w", err))
	}
	d.Close()
	paths, err := write(out)
	for _, p := range paths {
		fmt.Fprintf(c.App.Writer, "wrote %s\n", p)
	}
	return err
}

// reportWriter reads in, a run's results or a many-client sweep's, and
// returns what renders it into a directory.
func reportWriter(in string) (func(dir string) ([]string, error), error) {
	d, err := results.Read(in)
	if errors.Is(err, results.ErrClients) {
		cd, err := results.ReadClients(in)
		if err != nil {
			return nil, err
		}
		return func(dir string) ([]string, error) { return nsbench.WriteClientsReports(dir, cd) }, nil
	}
	if err != nil {
		return nil, err
	}
	return func(dir string) ([]string, error) { return nsbench.WriteReports(dir, d) }, nil
}

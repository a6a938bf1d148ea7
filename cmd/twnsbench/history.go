package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/report"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/safedir"
)

// historyFlag is run's --history DIR.
func historyFlag() cli.Flag {
	return &cli.StringFlag{Name: "history", Usage: "append every cell of a complete run (one JSON line each) to `DIR`/<fingerprint>.jsonl, " +
		"the fingerprint naming the environment (kernel, CPU model, CPUs online, the measuring tools' versions), and write OUT/" +
		report.HistoryFile + ": each metric's trend over the last runs of this environment, change points flagged. " +
		"DIR must not be a symlink, nor writable by group or others, and must be this user's"}
}

// checkHistoryFlag refuses run's --history DIR before anything exists.
func checkHistoryFlag(c *cli.Context) error {
	if !c.IsSet("history") {
		return nil
	}
	if err := results.CheckHistoryDir(c.String("history"), true); err != nil {
		return fmt.Errorf("--history: %w", err)
	}
	return nil
}

// recordHistory appends a complete run's cells to --history and writes
// the trend report of its environment beside the run's report.
func recordHistory(c *cli.Context, res *nsbench.Result) error {
	dir := c.String("history")
	if dir == "" || res == nil || res.Doc == nil {
		return nil
	}
	lines := results.HistoryLines(res.Doc)
	if len(lines) == 0 {
		return nil
	}
	path, err := results.AppendHistory(dir, lines)
	if err != nil {
		return fmt.Errorf("--history: %w", err)
	}
	h, err := results.ReadHistory(dir)
	if err != nil {
		return fmt.Errorf("--history: %w", err)
	}
	out := filepath.Join(res.OutDir, report.HistoryFile)
	if err := safedir.WriteFileIn("--out", res.OutDir, report.HistoryFile, report.History(h, lines[0].Fingerprint), 0o644); err != nil {
		return fmt.Errorf("write history report: %w", err)
	}
	cells := "cells"
	if len(lines) == 1 {
		cells = "cell"
	}
	fmt.Fprintf(c.App.Writer, "history: %d %s (of 1 run) appended to %s; trend: %s\n", len(lines), cells, path, out)
	return nil
}

var fingerprintForm = regexp.MustCompile(`^[0-9a-f]{16}$`)

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:      "history",
		Usage:     "render the trend report of a --history directory alone (no run, no root needed)",
		UsageText: "twnsbench history --dir DIR [--out DIR] [--fingerprint FP]",
		Description: "Reads DIR/*.jsonl (written by `run --history DIR`) and renders each metric's median over the last\n" +
			fmt.Sprint(report.HistoryRuns) + " runs of one environment (the newest run's, or --fingerprint's) as a sparkline, the\n" +
			"newest run tested for a change point (lookback z-score). Runs of other environments are counted and\n" +
			"never compared. Without --out the report goes to stdout; with it, to OUT/" + report.HistoryFile + ".",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "the history `DIR` (required)"},
			&cli.StringFlag{Name: "out", Usage: "write OUT/" + report.HistoryFile + " into `DIR` (created if needed) instead of stdout"},
			&cli.StringFlag{Name: "fingerprint", Usage: "the environment to show (16 hex digits, a file's name in DIR); default: the newest run's"},
		},
		Action: historyAction,
	}
}

func historyAction(c *cli.Context) (err error) {
	defer refuseOnPanic(&err, "history")
	if c.NArg() > 0 {
		return refuse(fmt.Errorf("history: unexpected argument %q (the directory goes in --dir)", c.Args().First()))
	}
	dir := c.String("dir")
	if dir == "" {
		return refuse(errors.New("history: --dir DIR is required"))
	}
	fp := c.String("fingerprint")
	if fp != "" && !fingerprintForm.MatchString(fp) {
		return refuse(fmt.Errorf("history: --fingerprint %q: want 16 hex digits (a file's name in --dir)", fp))
	}
	out := c.String("out")
	if out != "" {
		if err := safedir.Check("--out", out); err != nil {
			return refuse(fmt.Errorf("history: %w", err))
		}
	}
	h, err := results.ReadHistory(dir)
	if err != nil {
		return refuse(fmt.Errorf("history: %w", err))
	}
	if len(h.Lines) == 0 {
		return refuse(fmt.Errorf("history: %s holds no history lines (*%s, written by run --history)", dir, results.HistoryExt))
	}
	body := report.History(h, fp)
	if out == "" {
		_, err := c.App.Writer.Write(body)
		return err
	}
	d, err := safedir.Open("--out", out)
	if err != nil {
		return refuse(fmt.Errorf("history: %w", err))
	}
	defer d.Close()
	p := filepath.Join(out, report.HistoryFile)
	if err := d.WriteFile(report.HistoryFile, body, 0o644); err != nil {
		return fmt.Errorf("write history report: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "wrote %s\n", p)
	return nil
}

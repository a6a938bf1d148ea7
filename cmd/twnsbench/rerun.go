package main

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/compare"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/textsafe"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

func rerunCommand() *cli.Command {
	return &cli.Command{
		Name:      "rerun",
		Usage:     "run a results file's configuration again on this host and compare (root)",
		ArgsUsage: "RESULTS.json",
		Description: "Runs the configuration recorded in RESULTS.json again — transports with their variants,\n" +
			"conditions, instruments, runs, sizes, durations, congestion control, order and loss seed —\n" +
			"then prints how this host's environment differs from the original's, and the comparison:\n" +
			"which cells moved significantly. Refuses (exit 2) a file whose transports this host cannot\n" +
			"run, listing them, unless --skip-missing. Exit codes as for run.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "results/rerun", Usage: "output directory of the rerun"},
			&cli.BoolFlag{Name: "skip-missing", Usage: "leave out the transports this host cannot run"},
		},
		Action: rerunAction,
	}
}

func rerunAction(c *cli.Context) error {
	file, out, skipMissing, err := rerunArgs(c)
	if err != nil {
		return refuse(err)
	}
	orig, err := results.Read(file)
	if errors.Is(err, results.ErrClients) {
		return refuse(fmt.Errorf("rerun: %s is a many-client sweep (run --clients), which records no run configuration to replay: run the sweep again with run --clients and compare the two %s files", file, results.ClientsFileName))
	}
	if err != nil {
		return refuse(fmt.Errorf("rerun: %w", err))
	}
	cfg := orig.Config
	if cfg == nil {
		return refuse(fmt.Errorf("rerun: %s records no configuration (written before twnsbench recorded one); run it again with the same flags instead", file))
	}
	kept, dropped := measurementOptions(cfg.Options)
	for _, d := range dropped {
		fmt.Fprintf(c.App.ErrWriter, "twnsbench: rerun: ignoring the file's option %s: not a measurement option (programs, hosts, keys and outputs are this host's to give)\n", d)
	}
	rerun := *cfg
	rerun.Options = kept
	cfg = &rerun
	rows := slices.Clone(cfg.Transports)
	if i := slices.IndexFunc(rows, func(r string) bool { return strings.Contains(r, "@") }); i >= 0 {
		return refuse(fmt.Errorf("rerun: %s is a build (%s): a results file never names the programs rerun starts; run it again with run --build", file, rows[i]))
	}
	if missing := unrunnable(rows, cfg.Options); len(missing) > 0 {
		if !skipMissing {
			return refuse(fmt.Errorf("rerun: this host cannot run %s; --skip-missing to rerun the rest", strings.Join(missing, "; ")))
		}
		rows = slices.DeleteFunc(rows, func(r string) bool {
			return slices.ContainsFunc(missing, func(m string) bool { return strings.HasPrefix(m, textsafe.Quote(r)+": ") })
		})
		fmt.Fprintf(c.App.ErrWriter, "twnsbench: rerun: leaving out %s\n", strings.Join(missing, "; "))
		if len(rows) == 0 {
			return refuse(errors.New("rerun: no transport of the file can run here"))
		}
	}
	args := runArgs(cfg, rows, out)
	for _, spec := range instrument.SizesSpecs(orig.Instruments) { // the sweeps' sizes, as the file declares them
		args = append(args, "--sizes", spec)
	}
	if bps, ok := costRate(orig); ok { // the rate iperf3-cost offered, as its samples recorded it
		args = append(args, "--cost-rate", strconv.FormatUint(bps, 10)+"bit")
	}
	err = newApp(c.App.Writer, c.App.ErrWriter).RunContext(c.Context, append([]string{"twnsbench", "run"}, args...))
	cur, rerr := results.Read(filepath.Join(out, results.FileName))
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	fmt.Fprintf(c.App.Writer, "\nrerun of %s → %s/%s\n", file, out, results.FileName)
	diffs := append(compare.EnvDiffs(orig, cur), compare.ToolDiffs(orig, cur)...)
	if len(diffs) == 0 {
		fmt.Fprintln(c.App.Writer, "environment: the same kernel, CPU, tools and settings")
	} else {
		fmt.Fprintf(c.App.Writer, "environment differs: %s\n", strings.Join(diffs, "; "))
	}
	fmt.Fprintln(c.App.Writer)
	if cmp := compare.Rows(orig, cur); len(cmp) > 0 {
		if werr := compare.Write(c.App.Writer, cmp); werr != nil {
			return errors.Join(err, werr)
		}
	}
	return err
}

// rerunArgs reads RESULTS.json and the flags, which may also follow the
// file (urfave/cli stops parsing flags at the first argument).
func rerunArgs(c *cli.Context) (file, out string, skipMissing bool, err error) {
	out, skipMissing = c.String("out"), c.Bool("skip-missing")
	args := c.Args().Slice()
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--skip-missing" || a == "-skip-missing":
			skipMissing = true
		case a == "--out" || a == "-out":
			if i+1 == len(args) {
				return "", "", false, errors.New("rerun: --out needs a directory")
			}
			i++
			out = args[i]
		case strings.HasPrefix(a, "--out="):
			out = strings.TrimPrefix(a, "--out=")
		case strings.HasPrefix(a, "-"):
			return "", "", false, fmt.Errorf("rerun: unknown flag %s", a)
		case file != "":
			return "", "", false, fmt.Errorf("rerun: want one RESULTS.json, got %s and %s", file, a)
		default:
			file = a
		}
	}
	if file == "" {
		return "", "", false, errors.New("rerun: want RESULTS.json")
	}
	return file, out, skipMissing, nil
}

// measurementOptions splits a results file's options into those that
// describe the measurement — the transports' registered options that are
// not paths (recordedOptions) — and the rest, "name=value" each: a file
// from elsewhere must never name a program root starts, a host, a key or
// where output goes.
func measurementOptions(options map[string]string) (kept map[string]string, dropped []string) {
	kept = map[string]string{}
	allowed := recordableOptions()
	for _, k := range slices.Sorted(maps.Keys(options)) {
		if allowed[k] {
			kept[k] = options[k]
		} else {
			dropped = append(dropped, fmt.Sprintf("%s=%q", textsafe.Quote(k), options[k]))
		}
	}
	return kept, dropped
}

// unrunnable lists the rows this host cannot run, "row: reason" each,
// quoted for printing (the rows are the file's).
func unrunnable(rows []string, options map[string]string) []string {
	var missing []string
	for _, row := range rows {
		ts, err := transport.Build([]string{row}, options)
		if err != nil {
			missing = append(missing, textsafe.Quote(row)+": "+textsafe.Error(err))
			continue
		}
		if err := ts[0].Check(); err != nil {
			missing = append(missing, textsafe.Quote(row)+": "+textsafe.Error(err))
		}
	}
	return missing
}

// runArgs are `run`'s flags for cfg with the rows given.
func runArgs(cfg *results.RunConfig, rows []string, out string) []string {
	args := []string{"--transports", strings.Join(rows, ","), "--instruments", strings.Join(cfg.Instruments, ","),
		"--runs", cfg.Runs, "--size", strconv.FormatInt(cfg.SizeBytes, 10),
		"--duration", secs(cfg.DurationSec), "--warmup", secs(cfg.WarmupSec),
		"--congestion", cfg.Congestion, "--nic", cmp.Or(cfg.NIC, nsbench.NICReference), "--order", cfg.Order, "--out", out}
	if cfg.Runs == "auto" {
		args = append(args, "--precision", strconv.FormatFloat(100*cfg.Precision, 'f', -1, 64)+"%", "--max-runs", strconv.Itoa(cfg.MaxRuns))
		if cfg.PrecisionMs > 0 { // absent before --precision-ms: the default then
			args = append(args, "--precision-ms", strconv.FormatFloat(cfg.PrecisionMs, 'f', -1, 64))
		}
	}
	if cfg.Pin != "" {
		args = append(args, "--pin", cfg.Pin)
	}
	for _, w := range cfg.WAN {
		args = append(args, "--wan", w)
	}
	if cfg.Impairment != "" {
		args = append(args, "--impairment", cfg.Impairment)
	}
	if cfg.Seed != nil {
		args = append(args, "--seed", strconv.FormatUint(*cfg.Seed, 10))
	}
	if cfg.DriftProbe != nil && !*cfg.DriftProbe {
		args = append(args, "--drift-probe=false")
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Options)) {
		args = append(args, "--"+k+"="+cfg.Options[k])
	}
	return args
}

func secs(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) + "s" }

// costRate is the rate doc's iperf3-cost samples offered, if it has any.
func costRate(doc *results.Document) (uint64, bool) {
	for _, s := range doc.Samples {
		if g, ok := s.Extra[results.OfferedGbps]; ok && s.Instrument == instrument.CostName && g > 0 {
			return uint64(math.Round(g * 1e9)), true
		}
	}
	return 0, false
}

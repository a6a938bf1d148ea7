package nsbench

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twnsbench/twnsbench/nsbench/fanout"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// The many-client sweep's options (run --clients): its defaults and the
// checks NewPlan makes of them.

// SweepDefaults are the many-client sweep's settings for counts: one
// sweep of 10 s streams, the reference's congestion control, on the LAN
// alone (a WAN condition only when --wan is given). What a sweep
// has no use for is left zero, so that NewPlan refuses it when given.
func SweepDefaults(counts []int) Options {
	d := Defaults()
	return Options{Measure: Measure{Runs: 1, Duration: d.Duration}, OutDir: d.OutDir,
		Network: Network{Congestion: d.Congestion}, Schedule: Schedule{Clients: counts},
		WANOptions: WANOptions{Impairment: ImpairmentAuto}}
}

// SweepTransports are the transports of a many-client sweep whose options
// name none.
var SweepTransports = []string{"ssh", "wireguard"}

// maxSweepRuns bounds a sweep's runs: every run builds a testbed per
// transport and count.
const maxSweepRuns = 100

// SweepRunsError refuses --runs v for a sweep: its runs are how many times
// the whole sweep runs (--runs auto's pilot sizes a cell's runs from their
// spread, and a sweep's figures are tested over whole sweeps).
func SweepRunsError(v string) error {
	return fmt.Errorf("--clients: --runs %q: want how many times to run the sweep, 1 to %d", v, maxSweepRuns)
}

// sweepPlan checks a many-client sweep's options (errs: what NewPlan found
// already). What has no meaning in a sweep is refused rather than
// ignored: SweepDefaults leaves it zero.
func (o Options) sweepPlan(errs []error) (*Plan, error) {
	if err := fanout.CheckCounts(o.Clients); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []struct {
		flag  string
		given bool
	}{
		{"precision", o.Precision != 0}, {"precision-ms", o.PrecisionMs != 0},
		{"max-runs", o.MaxRuns != 0}, {"order", o.Order != ""}, {"size", o.SizeBytes != 0},
		{"warmup", o.Warmup != 0}, {"keep", o.Keep}, {"nic", o.NIC != ""},
		{"drift-probe", o.DriftProbe}, {"pin", o.Pin != ""},
	} {
		if f.given {
			errs = append(errs, fmt.Errorf("--clients: --%s does not apply to the many-client sweep", f.flag))
		}
	}
	wans, err := wan.ParseAll(o.WAN)
	if err != nil {
		errs = append(errs, err)
	}
	if o.Hosts.On() && fanout.CheckCounts(o.Clients) == nil {
		var ferrs []error
		o.Hosts.Fan, ferrs = o.Hosts.fan(o.Clients, wans)
		errs = append(errs, ferrs...)
	}
	for _, w := range wans {
		if w.Narrow.MTU > 0 {
			// The hop's verdicts judge the instruments' transfers, which a
			// sweep does not run.
			errs = append(errs, fmt.Errorf("--clients: --wan %s: a narrow hop (mtu=) does not apply to the many-client sweep", w))
		}
	}
	switch o.Impairment {
	case ImpairmentAuto, ImpairmentNetem, ImpairmentUserspace:
	default:
		errs = append(errs, fmt.Errorf("--impairment %q: want auto, netem or userspace", o.Impairment))
	}
	if o.RunsAuto {
		errs = append(errs, SweepRunsError("auto"))
	} else if o.Runs < 1 || o.Runs > maxSweepRuns {
		errs = append(errs, SweepRunsError(strconv.Itoa(o.Runs)))
	}
	if err := fanout.CheckDuration(o.Duration); err != nil {
		errs = append(errs, err)
	}
	if o.Congestion != "cubic" {
		errs = append(errs, fmt.Errorf("--clients: the sweep runs with cubic only (--congestion %s)", o.Congestion))
	}
	if err := checkOutDir(o.OutDir); err != nil {
		errs = append(errs, err)
	}
	if b := o.Builds; b.MinEffect != 0 || b.MaxRounds != 0 || len(b.FailOn) > 0 || b.Profile {
		// A sweep's verdict per client count has its fixed band and sets no
		// exit code (runSweep).
		errs = append(errs, errors.New("--clients: --min-effect, --max-rounds, --fail-on and --profile do not apply to the many-client sweep (its builds get a verdict per client count at 5 %, which sets no exit code)"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(o.Transports) == 0 {
		o.Transports = SweepTransports
	}
	o.Clients = slices.Sorted(slices.Values(o.Clients))
	return &Plan{Options: o, WANs: wans}, nil
}

package nsbench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// sample measures once with meters read just before and just after, and
// saves the document. A tool error comes back as a fault with the tool's
// own message (see afterFault); only an interruption is returned as an
// error.
func (c *cellLoop) sample(ctx context.Context, rw *row, in instrument.Instrument, job *instrument.Job, b block, run int) (*sampleFault, error) {
	cond := b.cond
	t, path := rw.t, rw.path
	c.tb.sampler.Transport = rw.meters
	if err := instrument.Applicable(in, path); err != nil {
		c.progress.drop(t.Name(), cond.Name, in.Name(), 1)
		if run == 1 {
			c.rec.notApplicable(t, cond.Name, in.Name(), err.Error())
		}
		return nil, nil
	}
	c.progress.begin(t.Name(), cond.Name, in.Name(), run)
	start := time.Now()
	var narrow *impair.NarrowCounts // the narrow hop's counts over the sample, once read
	fault := func(err error, deadline bool) (*sampleFault, error) {
		return &sampleFault{row: rw, in: in, b: b, run: run, err: err, start: start, deadline: deadline, narrow: narrow}, nil
	}
	quiet, ierr := c.tb.waitQuiet(ctx, in)
	if ierr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return fault(ierr, false)
	}
	job.ExpectedRate = copyRate(c.rec.doc, rw, cond)
	// The tunnel's count is read outside the CPU meters' window (reading
	// SAs or sock_diag is the harness's work), around it: it still spans
	// everything the tool moved.
	tunnel := tunnelMeter(path)
	tunnelBefore, terr := tunnel()
	synBefore, serr := synRetrans(ctx, c.tb.view.Roles)
	narrowBefore, narrowed := c.wan.NarrowStart(ctx, cond.Name)
	profileResume(c, rw)
	before, err := c.tb.sampler.Snapshot()
	if err != nil {
		profilePause(c, rw)
		return nil, fmt.Errorf("meters: %w", err)
	}
	m, merr := instrument.MeasureBounded(ctx, in, job)
	after, err := c.tb.sampler.Snapshot()
	profilePause(c, rw)
	if err != nil {
		return nil, fmt.Errorf("meters: %w", err)
	}
	tunnelAfter, terr2 := tunnel()
	synAfter, serr2 := synRetrans(ctx, c.tb.view.Roles)
	// The hop's counts over the sample, failed or not: a failure is the
	// narrow hop's only if the hop dropped its packets meanwhile.
	if narrowAfter, ok := c.wan.NarrowCounts(ctx, cond.Name); narrowed && ok {
		d := narrowAfter.Sub(narrowBefore)
		narrow = &d
	}
	handshakes := synAfter - synBefore
	if merr == nil {
		merr = errors.Join(terr, terr2, serr, serr2)
	} else if serr == nil && serr2 == nil && handshakes > 0 {
		// A short sample on a lossy path can lose its whole time to one
		// handshake: say so beside the tool's words.
		merr = fmt.Errorf("%w; %d TCP handshake packet(s) were retransmitted during the sample (a lost SYN or SYN-ACK waits the initial retransmission timeout, 1 s: a test that opens its connection inside its timed window can lose all of it)", merr, handshakes)
	}
	if merr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var expired *instrument.DeadlineError
		return fault(merr, errors.As(merr, &expired))
	}
	var tunnelBytes *int64
	if path.Carried != nil {
		carried := tunnelAfter - tunnelBefore
		tunnelBytes = &carried
		if m.MovedBytes > 0 && carried < m.MovedBytes {
			return fault(fmt.Errorf("the traffic bypassed the tunnel: %s moved %d bytes, the tunnel carried %d", in.Tool(), m.MovedBytes, carried), false)
		}
	}
	d := after.Sub(before)
	s := results.Sample{
		Transport: t.Name(), Condition: cond.Name, Instrument: in.Name(), Run: run,
		WallSec: m.WallSec, Value: m.Value, Unit: m.Unit,
		MeanUs: m.MeanUs, P50Us: m.P50Us, P99Us: m.P99Us,
		PayloadBytes:    m.PayloadBytes,
		TunnelBytes:     tunnelBytes,
		HostCPUSec:      d.HostCPUSec,
		RoleCPUSec:      d.RoleCPUSec,
		TransportCPUSec: d.TransportCPUSec,
		Extra:           m.Extra,
		Series:          m.Series,
		Noise:           noiseOf(d),
		Method:          m.Method,
	}
	extras := map[string]float64{
		"server_idle_wait_sec": quiet.Idle.Seconds(),
		"queue_drain_wait_sec": quiet.Drain.Seconds(),
		"syn_retransmits":      float64(handshakes),
	}
	if narrow != nil {
		maps.Copy(extras, wan.NarrowExtras(*narrow))
	}
	for key, v := range extras {
		if v > 0 {
			if s.Extra == nil {
				s.Extra = map[string]float64{}
			}
			s.Extra[key] += v
		}
	}
	if len(s.Extra) == 0 {
		s.Extra = nil
	}
	if m.PayloadBytes != nil {
		wire := d.ClientRxBytes
		s.WireBytes = &wire
	}
	if m.MovedBytes > 0 {
		s.MovedBytes = &m.MovedBytes
	}
	c.rec.sample(s, d.HarnessCPUSec)
	c.progress.finish(c.logf, t.Name(), cond.Name, in.Name(), run, fmt.Sprintf("%.4g %s", m.Value, m.Unit))
	return nil, c.rec.save()
}

// copyRate is the slowest copy rate (bytes/s) the row's cell has shown
// under cond, or its warm-up copy's, or 0.
func copyRate(doc *results.Document, rw *row, cond results.Condition) float64 {
	rate := 0.0
	for _, s := range doc.Samples {
		if s.Transport == rw.t.Name() && s.Condition == cond.Name && s.PayloadBytes != nil && s.WallSec > 0 {
			if v := float64(*s.PayloadBytes) / s.WallSec; rate == 0 || v < rate {
				rate = v
			}
		}
	}
	if rate == 0 {
		return rw.copyRate
	}
	return rate
}

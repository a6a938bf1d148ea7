package nsbench

import (
	"context"

	"github.com/twnsbench/twnsbench/nsbench/topology"
	"github.com/twnsbench/twnsbench/nsbench/wan"
)

// The WAN conditions (nsbench/wan) stand on a testbed through wan.Bed and
// state what they chose through wan.Recorder: the run's testbed and each
// of the sweep's are handed over here.

// setUpWAN chooses how the run's WAN conditions are made on tb, proves it
// there and records the choice (wan.SetUp); nil without a WAN condition.
func setUpWAN(ctx context.Context, plan *Plan, tb *testbed, rec *recorder) (*wan.Run, error) {
	b := tb.wanBed([]string{topology.Client, topology.Server})
	b.Meters = tb.sampler.Roles // the userspace impairment's CPU, sampled
	return wan.SetUp(ctx, plan.wanPlan(), b, wanRecorder{rec})
}

// wanPlan is what the WAN takes of p.
func (p *Plan) wanPlan() wan.Plan {
	return wan.Plan{Profiles: p.WANs, Impairment: p.Impairment, Seed: p.Seed}
}

// wanBed is b as the WAN stands on it, netem impairing the egress of the
// roles named: its roles, its teardown and, on this host, its switch.
func (b *bed) wanBed(egress []string) wan.Bed {
	wb := wan.Bed{Roles: b.view.Roles, OnTeardown: b.onTeardown, Logf: b.logf, Egress: egress}
	if !b.cfg.Sites.On() {
		wb.Switch = &wan.Switch{Spec: b.spec, Tree: b.tree, Dir: b.view.Dir, LogDir: b.logDir()}
	}
	return wb
}

// wanRecorder is the recorder as the WAN's set-up states its choice.
type wanRecorder struct{ rec *recorder }

var _ wan.Recorder = wanRecorder{}

func (r wanRecorder) Seed(seed uint64) { r.rec.setup.seed(seed) }
func (r wanRecorder) Impairment(method, description string, seed *uint64) {
	r.rec.setup.impairment(method, description, seed)
}
func (r wanRecorder) Fallback(what string) { r.rec.fallback(what) }

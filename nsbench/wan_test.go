package nsbench

import (
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/wan"
)

func TestWANPlanAndDocument(t *testing.T) {
	o := Defaults()
	o.OutDir = t.TempDir()
	if len(o.WAN) != 1 || o.WAN[0] != "30ms:0.1%" || o.Impairment != ImpairmentAuto {
		t.Errorf("defaults: wan %q impairment %q, want the reference's 30ms:0.1%% and auto", o.WAN, o.Impairment)
	}
	p, err := NewPlan(o, []string{"ssh"})
	if err != nil {
		t.Fatal(err)
	}
	d := newDocument(p, nil)
	if len(d.Conditions) != 2 || d.Conditions[1].Name != "wan" || d.Conditions[1].Label != "WAN (30 ms RTT, 0.1 % loss)" {
		t.Fatalf("conditions %+v", d.Conditions)
	}
	if d.Conditions[0].ScpPayloadBytes != 5<<30 || d.Conditions[1].ScpPayloadBytes != 256<<20 {
		t.Errorf("scp payloads %d / %d, want 5 GiB on the LAN and the 256 MiB warm file on the WAN",
			d.Conditions[0].ScpPayloadBytes, d.Conditions[1].ScpPayloadBytes)
	}
	if d.Env.WAN != "30ms:0.1%" {
		t.Errorf("env wan %q", d.Env.WAN)
	}

	o.WAN = []string{"off"}
	p, _ = NewPlan(o, []string{"ssh"})
	if d := newDocument(p, nil); len(d.Conditions) != 1 || d.Env.WAN != "off" {
		t.Errorf("--wan off: conditions %+v, env wan %q", d.Conditions, d.Env.WAN)
	}

	o.Impairment = "tc"
	if _, err := NewPlan(o, []string{"ssh"}); err == nil || !strings.Contains(err.Error(), "--impairment") {
		t.Errorf("--impairment tc: %v", err)
	}
}

// TestWANProfiles: several --wan SPECs become numbered conditions, each
// with its profile; one keeps the reference's name and label.
func TestWANProfiles(t *testing.T) {
	o := Defaults()
	o.OutDir = t.TempDir()
	o.WAN = []string{"20ms:0.5%", "40ms:0.2%:jitter=5ms:rate=100mbit"}
	p, err := NewPlan(o, []string{"ssh"})
	if err != nil {
		t.Fatal(err)
	}
	d := newDocument(p, nil)
	if len(d.Conditions) != 3 {
		t.Fatalf("conditions %+v", d.Conditions)
	}
	c1, c2 := d.Conditions[1], d.Conditions[2]
	if c1.Name != "wan1" || c1.Label != "WAN 1 (20 ms RTT, 0.5 % loss)" || c2.Name != "wan2" ||
		c2.Label != "WAN 2 (40 ms RTT, 0.2 % loss, ±5 ms jitter, 100 Mbit/s)" {
		t.Errorf("names/labels: %q %q / %q %q", c1.Name, c1.Label, c2.Name, c2.Label)
	}
	if pr := c2.Profile; pr == nil || pr.Spec != "40ms:0.2%:jitter=5ms:rate=100mbit" || pr.RTTMs != 40 || pr.JitterMs != 5 || pr.RateBps != 1e8 {
		t.Errorf("profile %+v", c2.Profile)
	}
	if d.Env.WAN != "20ms:0.5% 40ms:0.2%:jitter=5ms:rate=100mbit" {
		t.Errorf("env.wan %q: want BENCH_WAN's form", d.Env.WAN)
	}
	w, err := wan.Parse("100ms:1%:jitter=10ms:rate=20mbit")
	if err != nil || w.Jitter != 10*time.Millisecond || w.RateBps != 20e6 {
		t.Errorf("the issue's example: %+v, %v", w, err)
	}
	for _, bad := range [][]string{
		{"off", "30ms:0.1%"},
		{"30ms:0.1%:jitter=20ms"}, // below zero delay
		{"30ms:0.1%:speed=1mbit"}, // unknown setting
		{"30ms:0.1%:rate=fast"},   // bad rate
		{"30ms:0.1%:jitter=1ms:jitter=2ms"},
		{"30ms:0.1%:jitter=5"}, // no unit
	} {
		o.WAN = bad
		if _, err := NewPlan(o, []string{"ssh"}); err == nil || !strings.Contains(err.Error(), "--wan") {
			t.Errorf("%q: %v, want a --wan error", bad, err)
		}
	}
}

// A narrow hop needs the forwarder: --impairment netem with mtu= is
// refused before anything is made; auto and userspace take it.
func TestNarrowHopNeedsUserspace(t *testing.T) {
	for _, tc := range []struct {
		impairment string
		ok         bool
	}{{ImpairmentNetem, false}, {ImpairmentAuto, true}, {ImpairmentUserspace, true}} {
		o := Quick()
		o.Transports = []string{"ssh"}
		o.WAN, o.Impairment = []string{"0ms:0%:mtu=1280:icmp=drop"}, tc.impairment
		_, err := NewPlan(o, []string{"ssh"})
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "needs the userspace impairment") {
			t.Errorf("--impairment %s: %v, want ok %v", tc.impairment, err, tc.ok)
		}
	}
}

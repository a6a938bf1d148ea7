// Package wan is the run's WAN conditions: each --wan SPEC parsed into a
// profile, the impairment chosen (netem, or the userspace forwarder) and
// proven on a testbed, a condition set on a block of rows and cleared
// after it, the narrow hop's verdict and its set-up stall, the WAN across
// hosts' edges, and the verification of what was measured against what
// was configured. It knows a testbed only through Bed and the results
// document only through Recorder and the records it returns.
package wan

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Spec is a parsed WAN profile.
type Spec struct {
	RTT     time.Duration
	LossPct float64
	Jitter  time.Duration // ± on each impaired direction; 0 for none
	RateBps uint64        // cap on each impaired direction; 0 for none
	Narrow  impair.NarrowHop
}

// Condition is w as the impairment takes it, with the run's loss seed.
func (w Spec) Condition(seed uint64) impair.Condition {
	return impair.Condition{RTT: w.RTT, LossPct: w.LossPct, Jitter: w.Jitter, RateBps: w.RateBps, Narrow: w.Narrow, Seed: seed}
}

func (w Spec) String() string { return w.Condition(0).String() }

var wanRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)ms:([0-9]+(?:\.[0-9]+)?)%((?::[a-z]+=[^:]+)*)$`)

// Parse parses one --wan SPEC (BENCH_WAN's grammar, extended): "off",
// or "RTTms:LOSS%" such as "30ms:0.1%", optionally followed by
// ":jitter=Dms" and ":rate=R" (tc's units: kbit, mbit, gbit), e.g.
// "100ms:1%:jitter=10ms:rate=20mbit", and a narrow hop: ":mtu=N" (the
// switch passes no IP packet over N bytes) with ":icmp=drop" for a PMTU
// black hole, e.g. "0ms:0%:mtu=1280:icmp=drop". It returns nil for off.
func Parse(s string) (*Spec, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return nil, nil
	}
	m := wanRE.FindStringSubmatch(strings.ToLower(s))
	if m == nil {
		return nil, fmt.Errorf("--wan %q: want off or RTTms:LOSS%%[:jitter=Dms][:rate=R][:mtu=N[:icmp=drop]] (e.g. 30ms:0.1%% or 100ms:1%%:jitter=10ms:rate=20mbit or 0ms:0%%:mtu=1280:icmp=drop)", s)
	}
	rtt, _ := strconv.ParseFloat(m[1], 64)
	loss, _ := strconv.ParseFloat(m[2], 64)
	if rtt > 10000 {
		return nil, fmt.Errorf("--wan %q: RTT above 10000 ms", s)
	}
	if loss >= 100 {
		return nil, fmt.Errorf("--wan %q: loss must be below 100 %%", s)
	}
	w := &Spec{RTT: time.Duration(rtt * float64(time.Millisecond)), LossPct: loss}
	seen := map[string]bool{}
	for _, kv := range strings.Split(strings.TrimPrefix(m[3], ":"), ":") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if seen[k] {
			return nil, fmt.Errorf("--wan %q: %s given twice", s, k)
		}
		seen[k] = true
		switch k {
		case "jitter":
			ms, ok := strings.CutSuffix(v, "ms")
			j, err := strconv.ParseFloat(ms, 64)
			if !ok || err != nil || j < 0 {
				return nil, fmt.Errorf("--wan %q: jitter %q: want milliseconds, e.g. jitter=5ms", s, v)
			}
			w.Jitter = time.Duration(j * float64(time.Millisecond))
		case "rate":
			r, err := impair.ParseRate(v)
			if err != nil {
				return nil, fmt.Errorf("--wan %q: %w", s, err)
			}
			w.RateBps = r
		case "mtu":
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("--wan %q: mtu %q: want bytes, e.g. mtu=%d", s, v, impair.DefaultNarrowMTU)
			}
			w.Narrow.MTU = n
		case "icmp":
			if v != "drop" && v != "send" {
				return nil, fmt.Errorf("--wan %q: icmp %q: want drop (a PMTU black hole) or send", s, v)
			}
			w.Narrow.DropICMP = v == "drop"
		default:
			return nil, fmt.Errorf("--wan %q: unknown setting %q (want jitter=, rate=, mtu= or icmp=)", s, k)
		}
	}
	if err := w.Condition(0).Validate(); err != nil {
		return nil, fmt.Errorf("--wan %q: %w", s, err)
	}
	return w, nil
}

// Profile is one impaired condition of a plan: its name in the results
// and its settings.
type Profile struct {
	Name string // "wan" for a single profile (the reference's); "wan1", "wan2", … for several
	Spec
}

// Label is the report's condition label: the reference's "WAN (30 ms RTT,
// 0.1 % loss)" for a single profile, numbered for several.
func (p Profile) Label() string {
	l := p.Condition(0).Label()
	if n, ok := strings.CutPrefix(p.Name, "wan"); ok && n != "" {
		return "WAN " + n + strings.TrimPrefix(l, "WAN")
	}
	return l
}

// ParseAll parses every --wan SPEC into named profiles; "off" stands
// alone.
func ParseAll(specs []string) ([]Profile, error) {
	var ws []Spec
	var errs []error
	off := false
	for _, s := range specs {
		w, err := Parse(s)
		switch {
		case err != nil:
			errs = append(errs, err)
		case w == nil:
			off = true
		default:
			ws = append(ws, *w)
		}
	}
	if off && len(ws) > 0 {
		errs = append(errs, errors.New("--wan: off cannot be combined with WAN profiles"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var ps []Profile
	for i, w := range ws {
		name := "wan"
		if len(ws) > 1 {
			name = "wan" + strconv.Itoa(i+1)
		}
		ps = append(ps, Profile{Name: name, Spec: w})
	}
	return ps, nil
}

// firstNarrow is the first profile with a narrow hop, "" when none has
// one.
func firstNarrow(ps []Profile) string {
	for _, w := range ps {
		if w.Narrow.MTU > 0 {
			return w.String()
		}
	}
	return ""
}

// The ways a plan asks the WAN conditions to be made (--impairment).
const (
	Auto      = "auto" // netem where the kernel has it, else the userspace forwarder (named as a fallback)
	Netem     = "netem"
	Userspace = "userspace"
)

// Plan is what a run's options say of its WAN conditions.
type Plan struct {
	Profiles   []Profile
	Impairment string  // Auto, Netem or Userspace
	Seed       *uint64 // the loss seed; nil: a random one
}

// ms is d in milliseconds, the unit of the records.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ProfileOf is condition c as the results record it.
func ProfileOf(c impair.Condition) *results.Profile {
	return &results.Profile{Spec: c.String(), RTTMs: ms(c.RTT), LossPct: c.LossPct, JitterMs: ms(c.Jitter), RateBps: c.RateBps}
}

// fmtMs is d in milliseconds, in words.
func fmtMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + " ms"
}

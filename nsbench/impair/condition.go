package impair

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DefaultLimit is the queue limit of every impaired direction, in packets:
// netem's default of 1000 would itself drop at WAN rates (the reference
// uses 100000).
const DefaultLimit = 100000

// MaxRTT bounds the configurable RTT.
const MaxRTT = 10 * time.Second

// Condition is a WAN condition: the round-trip delay between client and
// server and the loss on each direction. It is plain data.
type Condition struct {
	RTT     time.Duration // round trip; each impaired direction gets RTT/2
	LossPct float64       // per direction, in percent: the full figure on each egress
	// Jitter varies each direction's delay uniformly within ±Jitter
	// around RTT/2 (netem's `delay RTT/2 Jitter`); the round trip then
	// spreads with a standard deviation of Jitter·√(2/3).
	Jitter time.Duration
	// RateBps caps each direction at this many bits per second on the
	// wire (netem's rate); 0 is unlimited.
	RateBps uint64
	Limit   int // packets held per direction; 0 means DefaultLimit
	// Seed makes the userspace impairment's drop positions a function of
	// the seed alone: the n-th packet of a direction is dropped or not
	// whatever carries it. Every Set restarts the sequence.
	Seed uint64
	// Narrow makes the switch a narrow hop: frames whose IP packets
	// exceed its MTU do not pass (see NarrowHop). The zero value is none.
	Narrow NarrowHop
}

// Validate checks c without touching the kernel.
func (c Condition) Validate() error {
	var errs []error
	if c.RTT < 0 || c.RTT > MaxRTT {
		errs = append(errs, fmt.Errorf("RTT %s: want 0 to %s", c.RTT, MaxRTT))
	}
	if math.IsNaN(c.LossPct) || c.LossPct < 0 || c.LossPct >= 100 {
		errs = append(errs, fmt.Errorf("loss %v %%: want 0 to below 100", c.LossPct))
	}
	if c.Jitter < 0 || c.Jitter > c.OneWay() {
		errs = append(errs, fmt.Errorf("jitter %s: want 0 to the one-way delay %s (a delay cannot go below zero)", c.Jitter, c.OneWay()))
	}
	if c.RateBps != 0 && (c.RateBps < MinRateBps || c.RateBps > MaxRateBps) {
		errs = append(errs, fmt.Errorf("rate %s: want %s to %s", FormatRate(c.RateBps), FormatRate(MinRateBps), FormatRate(MaxRateBps)))
	}
	if err := c.Narrow.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Limit < 0 {
		errs = append(errs, fmt.Errorf("limit %d: want a positive number of packets", c.Limit))
	}
	return errors.Join(errs...)
}

// The rates a condition may cap a direction at.
const (
	MinRateBps = 8_000           // 8 kbit/s: one full frame in 1.5 s
	MaxRateBps = 100_000_000_000 // 100 Gbit/s
)

// ExpectedRTTIQR is the interquartile range of the round trip that the
// jitter makes: the sum of two independent uniform draws on ±Jitter is
// triangular on ±2·Jitter, whose quartiles lie ±(2−√2)·Jitter from the
// middle. (Its standard deviation, Jitter·√(2/3), would be thrown off by
// one retransmitted SYN among the probes; the quartiles are not.)
func (c Condition) ExpectedRTTIQR() time.Duration {
	return time.Duration(float64(c.Jitter) * (4 - 2*math.Sqrt2))
}

// Probes is how many RTT probes verify the condition and how far apart
// they start. Without jitter, ProbeCount back to back. With jitter, the
// probes' interquartile range is judged against ExpectedRTTIQR, and 20
// probes put it outside the accepted ×0.5..×1.6 in about 3 % of correct
// runs (simulated: 2.4 % low, 0.6 % high); 80 probes, about 1 in 60 000.
// The gap keeps each probe's packets clear of the previous probe's (see
// ProbeRTTEvery).
func (c Condition) Probes() (count int, gap time.Duration) {
	if c.Jitter == 0 {
		return ProbeCount, 0
	}
	return JitterProbeCount, 2*c.Jitter + time.Millisecond
}

// OneWay is the delay of each impaired direction.
func (c Condition) OneWay() time.Duration { return c.RTT / 2 }

// QueueLimit is the packets held per direction.
func (c Condition) QueueLimit() int {
	if c.Limit == 0 {
		return DefaultLimit
	}
	return c.Limit
}

// Label is the report's condition label, as the reference words it:
// "WAN (30 ms RTT, 0.1 % loss)", then the jitter and the rate when set:
// "WAN (40 ms RTT, 0.2 % loss, ±5 ms jitter, 100 Mbit/s)".
func (c Condition) Label() string {
	loss := "no loss"
	if c.LossPct > 0 {
		loss = formatFloat(c.LossPct) + " % loss"
	}
	parts := []string{formatFloat(ms(c.RTT)) + " ms RTT", loss}
	if c.Jitter > 0 {
		parts = append(parts, "±"+formatFloat(ms(c.Jitter))+" ms jitter")
	}
	if c.RateBps > 0 {
		parts = append(parts, FormatRate(c.RateBps))
	}
	if c.Narrow.MTU > 0 {
		parts = append(parts, c.Narrow.label())
	}
	return "WAN (" + strings.Join(parts, ", ") + ")"
}

// String is BENCH_WAN's form: "30ms:0.1%", "40ms:0.2%:jitter=5ms:rate=100mbit",
// "0ms:0%:mtu=1280:icmp=drop".
func (c Condition) String() string {
	s := formatFloat(ms(c.RTT)) + "ms:" + formatFloat(c.LossPct) + "%"
	if c.Jitter > 0 {
		s += ":jitter=" + formatFloat(ms(c.Jitter)) + "ms"
	}
	if c.RateBps > 0 {
		s += ":rate=" + rateSpec(c.RateBps)
	}
	return s + c.Narrow.spec()
}

// FormatRate renders bits/s for people: "100 Mbit/s", "1.5 Gbit/s".
func FormatRate(bps uint64) string {
	for _, u := range []struct {
		name string
		n    float64
	}{{"Gbit/s", 1e9}, {"Mbit/s", 1e6}, {"kbit/s", 1e3}} {
		if float64(bps) >= u.n {
			return formatFloat(float64(bps)/u.n) + " " + u.name
		}
	}
	return strconv.FormatUint(bps, 10) + " bit/s"
}

// rateSpec renders bits/s in tc's units, as --wan takes them: "100mbit".
func rateSpec(bps uint64) string {
	for _, u := range []struct {
		name string
		n    uint64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}} {
		if bps >= u.n && bps%u.n == 0 {
			return strconv.FormatUint(bps/u.n, 10) + u.name
		}
	}
	return strconv.FormatUint(bps, 10) + "bit"
}

// ParseRate parses tc's rate units: "100mbit", "1.5gbit", "500kbit",
// "64000bit" (bits per second; case does not matter).
func ParseRate(s string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}} {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil || f <= 0 || math.IsInf(f, 0) {
				break
			}
			return uint64(math.Round(f * u.mult)), nil
		}
	}
	return 0, fmt.Errorf("rate %q: want a number with kbit, mbit or gbit, e.g. 100mbit", s)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

package impair

import (
	"errors"
	"fmt"
	"math"
	"strconv"
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
	Limit   int           // packets held per direction; 0 means DefaultLimit
	// Seed makes the userspace impairment's drop positions a function of
	// the seed alone: the n-th packet of a direction is dropped or not
	// whatever carries it. Every Set restarts the sequence.
	Seed uint64
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
	if c.Limit < 0 {
		errs = append(errs, fmt.Errorf("limit %d: want a positive number of packets", c.Limit))
	}
	return errors.Join(errs...)
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
// "WAN (30 ms RTT, 0.1 % loss)".
func (c Condition) Label() string {
	loss := "no loss"
	if c.LossPct > 0 {
		loss = formatFloat(c.LossPct) + " % loss"
	}
	return fmt.Sprintf("WAN (%s ms RTT, %s)", formatFloat(ms(c.RTT)), loss)
}

// String is BENCH_WAN's form, "30ms:0.1%".
func (c Condition) String() string {
	return formatFloat(ms(c.RTT)) + "ms:" + formatFloat(c.LossPct) + "%"
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

package instrument

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// Sized is an instrument that measures at a list of sizes, which --sizes
// replaces (the sweeps).
type Sized interface {
	Instrument
	// SweepSizes are the sizes it measures at, ascending.
	SweepSizes() []int
	// Resized returns the instrument measuring at sizes (ascending, no
	// repeats), or why one of them is out of its tool's range.
	Resized(sizes []int) (Instrument, error)
}

// sizeRange is the sizes a sweep's tool takes, for Resized.
type sizeRange struct {
	min, max int
	what     string // "netperf's -r", ...
}

func (r sizeRange) check(sizes []int) error {
	for _, s := range sizes {
		if s < r.min || s > r.max {
			return fmt.Errorf("%d bytes: %s takes %d to %d", s, r.what, r.min, r.max)
		}
	}
	return nil
}

// The sweeps' ranges: netperf's request/response size (one test's send
// buffer at most 1 MiB here), iperf3's UDP datagram (its 16-byte header
// to IPv4's largest UDP payload), iperf3's -M (Linux's least MSS to
// iperf3's MAX_MSS).
var (
	rrRange  = sizeRange{1, 1 << 20, "netperf's -r"}
	udpRange = sizeRange{16, 65507, "iperf3's UDP -l"}
	mssRange = sizeRange{88, 9216, "iperf3's -M"}
)

func (r RRSizes) SweepSizes() []int  { return r.Sizes }
func (u UDPSizes) SweepSizes() []int { return u.Sizes }
func (s MSSSweep) SweepSizes() []int { return s.Sizes }

func (RRSizes) Resized(sizes []int) (Instrument, error) {
	return RRSizes{Sizes: sizes}, rrRange.check(sizes)
}

func (UDPSizes) Resized(sizes []int) (Instrument, error) {
	return UDPSizes{Sizes: sizes}, udpRange.check(sizes)
}

func (MSSSweep) Resized(sizes []int) (Instrument, error) {
	return MSSSweep{Sizes: sizes}, mssRange.check(sizes)
}

var (
	_ Sized = RRSizes{}
	_ Sized = UDPSizes{}
	_ Sized = MSSSweep{}
)

// ApplySizes replaces the sizes of the sweeps of ins that specs name:
// each spec is NAME=SIZE,SIZE,… (bytes, or with K for KiB: 16K), e.g.
// "udp_sizes=64,1200,1400". A spec naming an instrument that ins lacks,
// or one without sizes, is an error; so is a size out of the tool's
// range, a size given twice, or a name given twice.
func ApplySizes(ins []Instrument, specs []string) ([]Instrument, error) {
	out := slices.Clone(ins)
	seen := map[string]bool{}
	for _, spec := range specs {
		name, list, ok := strings.Cut(strings.TrimSpace(spec), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want NAME=SIZE,SIZE,… (e.g. udp_sizes=64,1200,1400)", spec)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s given twice", name)
		}
		seen[name] = true
		i := slices.IndexFunc(out, func(in Instrument) bool { return in.Name() == name })
		if i < 0 {
			return nil, fmt.Errorf("%s: not among the instruments measured (add it to --instruments)", name)
		}
		sized, ok := out[i].(Sized)
		if !ok {
			return nil, fmt.Errorf("%s: measures at no list of sizes (those that do: %s)", name, strings.Join(sizedNames(), ", "))
		}
		sizes, err := parseSizes(list)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if out[i], err = sized.Resized(sizes); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return out, nil
}

// sizedNames are the instruments that take --sizes.
func sizedNames() []string {
	var names []string
	for _, in := range known() {
		if _, ok := in.(Sized); ok {
			names = append(names, in.Name())
		}
	}
	return names
}

// SweepDefaults lists the sized instruments with their default sizes,
// "rr_sizes 64,256,…; udp_sizes …", for --sizes' usage.
func SweepDefaults() string {
	var parts []string
	for _, in := range known() {
		if s, ok := in.(Sized); ok {
			parts = append(parts, in.Name()+" "+joinSizes(s.SweepSizes()))
		}
	}
	return strings.Join(parts, "; ")
}

// joinSizes writes sizes as --sizes takes them: "64,256,1024".
func joinSizes(sizes []int) string {
	fs := make([]string, len(sizes))
	for i, s := range sizes {
		fs[i] = strconv.Itoa(s)
	}
	return strings.Join(fs, ",")
}

// parseSizes reads "64,1K,1400": bytes, K for KiB; ascending order is
// made, a repeat refused.
func parseSizes(list string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		mult := 1
		if n, ok := strings.CutSuffix(f, "K"); ok {
			f, mult = n, 1024
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("size %q: want a whole number of bytes, or of KiB with K (16K)", f)
		}
		if slices.Contains(sizes, n*mult) {
			return nil, fmt.Errorf("size %d given twice", n*mult)
		}
		sizes = append(sizes, n*mult)
	}
	if len(sizes) == 0 {
		return nil, errors.New("no size")
	}
	slices.Sort(sizes)
	return sizes, nil
}

// SizesSpecs are the --sizes specs that measure again at the sizes decl
// records, for each sized instrument among them whose sizes are not its
// default ones (rerun).
func SizesSpecs(decl []results.Instrument) []string {
	var specs []string
	for _, d := range decl {
		i := slices.IndexFunc(known(), func(in Instrument) bool { return in.Name() == d.Name })
		if i < 0 {
			continue
		}
		sized, ok := known()[i].(Sized)
		if !ok {
			continue
		}
		var at []int
		for _, m := range d.Metrics {
			if m.At > 0 && !slices.Contains(at, m.At) {
				at = append(at, m.At)
			}
		}
		slices.Sort(at)
		if len(at) == 0 || slices.Equal(at, sized.SweepSizes()) {
			continue
		}
		specs = append(specs, d.Name+"="+joinSizes(at))
	}
	return specs
}

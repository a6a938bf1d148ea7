package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/instrument"
)

// The instruments a run measures: --instruments with its sets, --sizes
// and --cost-rate.

// instrumentList names ins, comma-separated.
func instrumentList(ins []instrument.Instrument) string {
	names := make([]string, len(ins))
	for i, in := range ins {
		names[i] = in.Name()
	}
	return strings.Join(names, ", ")
}

// instrumentSets names each set --instruments takes with its members.
func instrumentSets() string {
	var sets []string
	for _, name := range slices.Sorted(maps.Keys(instrument.Sets)) {
		sets = append(sets, name+": "+instrumentList(instrument.Sets[name]()))
	}
	return strings.Join(sets, "; ")
}

// instrumentsFrom reads --instruments, --sizes and --cost-rate.
func instrumentsFrom(c *cli.Context) ([]instrument.Instrument, bool, error) {
	ins, ready, err := instrument.Select(splitList(c.String("instruments")))
	if err != nil {
		return nil, false, fmt.Errorf("--instruments: %w", err)
	}
	if sizes, ok := c.Generic("sizes").(*entries); ok {
		if ins, err = instrument.ApplySizes(ins, *sizes); err != nil {
			return nil, false, fmt.Errorf("--sizes: %w", err)
		}
	}
	if c.IsSet("cost-rate") {
		bps, err := impair.ParseRate(c.String("cost-rate"))
		if err == nil {
			ins, err = instrument.WithCostRate(ins, bps)
		}
		if err != nil {
			return nil, false, fmt.Errorf("--cost-rate: %w", err)
		}
	}
	return ins, ready, nil
}

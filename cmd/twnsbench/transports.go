package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twnsbench/twnsbench/nsbench/transport"
	"github.com/urfave/cli/v2"
)

// The transports as the command line names and sets them: the flags of
// every registered transport's options, the rows built from them, and
// which of them a results document records.

// transportFlags are the registered transports' own options, as run
// flags.
func transportFlags() []cli.Flag {
	var flags []cli.Flag
	for _, o := range transport.Options() {
		flags = append(flags, &cli.StringFlag{Name: o.Name, Value: o.Value, Usage: o.Usage, TakesFile: o.File})
	}
	return flags
}

// buildDefs reads every --build LABEL:OPTION=PATH.
func buildDefs(c *cli.Context) ([]transport.BuildDef, error) {
	var defs []transport.BuildDef
	for _, v := range c.StringSlice("build") {
		d, err := transport.ParseBuild(v)
		if err != nil {
			return nil, err
		}
		defs = append(defs, d)
	}
	return defs, nil
}

// transportValues are the transports' option values from the flags.
func transportValues(c *cli.Context) map[string]string {
	values := map[string]string{}
	for _, o := range transport.Options() {
		values[o.Name] = c.String(o.Name)
	}
	return values
}

// givenTransportOptions are the transports' options given on the command
// line, for another host's doctor: it checks the programs at the paths
// the run will start there (the same paths as here), and the options not
// given at their defaults there.
func givenTransportOptions(c *cli.Context) map[string]string {
	given := map[string]string{}
	for _, o := range transport.Options() {
		if c.IsSet(o.Name) {
			given[o.Name] = c.String(o.Name)
		}
	}
	return given
}

// recordedOptions are the transports' option values that a rerun on
// another host can reuse: every option but host paths.
func recordedOptions(c *cli.Context) map[string]string {
	out := map[string]string{}
	for name := range recordableOptions() {
		out[name] = c.String(name)
	}
	return out
}

// recordableOptions names the transports' options that describe a
// measurement: every registered one but host paths.
func recordableOptions() map[string]bool {
	names := map[string]bool{}
	for _, o := range transport.Options() {
		if !o.File {
			names[o.Name] = true
		}
	}
	return names
}

// individuallyNamed are the --transports words that name a transport, not
// a set.
func individuallyNamed(words []string) []string {
	var out []string
	for _, w := range words {
		if !slices.Contains(transport.SetNames(), w) {
			out = append(out, w)
		}
	}
	return out
}

// checkNamed checks that every transport the user named can run here,
// collecting every reason into one error.
func checkNamed(ts []transport.Transport) error {
	var reasons []string
	for _, t := range ts {
		if err := t.Check(); err != nil {
			reasons = append(reasons, fmt.Sprintf("%s cannot run here: %v", t.Name(), err))
		}
	}
	if len(reasons) > 0 {
		return fmt.Errorf("--transports: %s", strings.Join(reasons, "; "))
	}
	return nil
}

package preflight

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
)

// ErrUnavailable is wrapped by Report.Err when a required check failed.
var ErrUnavailable = errors.New("host not ready")

// Check is the outcome of one probe.
type Check struct {
	Name     string // "veth", "iperf3", ...
	Detail   string // what was found, or what is missing and why
	Fix      string // exact command that fixes a failure; empty when OK
	OK       bool
	Required bool // false: the harness has a fallback
}

// Report is the outcome of Run.
type Report struct {
	Checks   []Check
	Versions map[string]string // tool → version line, for the results' env block
}

// Failed returns the required checks that did not pass.
func (r Report) Failed() []Check {
	var failed []Check
	for _, c := range r.Checks {
		if c.Required && !c.OK {
			failed = append(failed, c)
		}
	}
	return failed
}

// Err is nil when every required check passed; otherwise it wraps
// ErrUnavailable and names each failure with its fix.
func (r Report) Err() error {
	failed := r.Failed()
	if len(failed) == 0 {
		return nil
	}
	parts := make([]string, len(failed))
	for i, c := range failed {
		parts[i] = fmt.Sprintf("%s (fix: %s)", c.Name, c.Fix)
	}
	return fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(parts, ", "))
}

// String is one aligned line per check: "ok", "MISSING" (required, failed)
// or "optional" (not required, failed), the name, the detail and, for a
// failure, "fix: <command>".
func (r Report) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range r.Checks {
		status := "ok"
		switch {
		case c.OK:
		case c.Required:
			status = "MISSING"
		default:
			status = "optional"
		}
		line := c.Detail
		if !c.OK && c.Required && c.Fix != "" {
			line += "; fix: " + c.Fix
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", status, c.Name, line)
	}
	w.Flush()
	return b.String()
}

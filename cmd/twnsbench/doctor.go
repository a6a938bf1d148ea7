package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check this host (or, with --host, each named host) for what a run needs (root, kernel features, tools, memory); changes nothing",
		Description: "With --host or --hosts, each host is reached over SSH (its key checked against known_hosts),\n" +
			"root is checked (the login, or sudo -n), its interface found, a copy of this binary is started\n" +
			"there as its agent, which runs the checks, and removed; every line names the host. Exit 2 when any host is refused.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "size", Value: "5GiB", Usage: "payload size to check tmpfs room for"},
			&cli.BoolFlag{Name: "json", Usage: "print the checks as one JSON document"},
		}, append(hostFlags(checkHostUsage), transportFlags()...)...),
		Action: func(c *cli.Context) error {
			size, err := nsbench.ParseSize(c.String("size"))
			if err != nil {
				return refuse(fmt.Errorf("--size: %w", err))
			}
			inv, cfg, remoteHosts, err := parseHosts(c)
			if err != nil {
				return refuse(err)
			}
			o := nsbench.Defaults()
			o.SizeBytes = size
			req := nsbench.DoctorRequest{
				Preflight:  preflight.Options{NeedTmpfsBytes: o.SizeBytes + o.WarmBytes(), SizeBytes: o.SizeBytes, Tools: tools},
				Transports: givenTransportOptions(c),
			}
			if remoteHosts {
				return doctorHosts(c.Context, c.App.Writer, inv, cfg, req)
			}
			d := nsbench.CheckHost(req)
			if c.Bool("json") {
				if err := json.NewEncoder(c.App.Writer).Encode(newDoctorResult(d)); err != nil {
					return err
				}
			} else {
				fmt.Fprint(c.App.Writer, d.Report.String())
				writeTransportLines(c.App.Writer, d.Transports)
			}
			if err := d.Report.Err(); err != nil {
				return refuse(err)
			}
			return nil
		},
	}
}

// doctorResult is `doctor --json`: a host's checks, kernel and
// transports, as doctor prints them.
type doctorResult struct {
	Kernel     string            `json:"kernel"` // uname release
	Checks     []doctorLine      `json:"checks"`
	Transports []doctorLine      `json:"transports"`
	Versions   map[string]string `json:"versions"`
	Failed     []string          `json:"failed"` // required checks that failed, each with its fix
}

type doctorLine struct {
	Status string `json:"status"` // ok, MISSING, optional; for transports ok or cannot
	Name   string `json:"name"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

func (l doctorLine) line() string {
	s := fmt.Sprintf("%-9s %-27s %s", l.Status, l.Name, l.Detail)
	if l.Fix != "" {
		s += "; fix: " + l.Fix
	}
	return s
}

// newDoctorResult is what doctor found (on this host or another) as
// doctor prints it. A transport that cannot run fails nothing: a run
// skips it, or refuses it when it is named.
func newDoctorResult(doc nsbench.Doctor) doctorResult {
	d := doctorResult{Versions: doc.Versions, Kernel: doc.Kernel}
	for _, c := range doc.Checks {
		l := doctorLine{Status: "ok", Name: c.Name, Detail: c.Detail}
		switch {
		case c.OK:
		case c.Required:
			l.Status, l.Fix = "MISSING", c.Fix
			d.Failed = append(d.Failed, fmt.Sprintf("%s (fix: %s)", c.Name, c.Fix))
		default:
			l.Status = "optional"
		}
		d.Checks = append(d.Checks, l)
	}
	d.Transports = transportLines(doc.Transports)
	return d
}

// writeTransports lists every registered transport with the options
// given (topts; the defaults otherwise): whether it can run here, and if
// not why.
func writeTransports(w io.Writer, topts map[string]string) {
	checks, _ := nsbench.CheckTransports(topts)
	writeTransportLines(w, checks)
}

func writeTransportLines(w io.Writer, checks []preflight.Check) {
	for _, l := range transportLines(checks) {
		fmt.Fprintln(w, l.line())
	}
}

// transportLines are the transports' checks as doctor prints them: ok,
// or cannot and why.
func transportLines(checks []preflight.Check) []doctorLine {
	var ls []doctorLine
	for _, t := range checks {
		l := doctorLine{Status: "ok", Name: t.Name, Detail: t.Detail}
		if !t.OK {
			l.Status = "cannot"
		}
		ls = append(ls, l)
	}
	return ls
}

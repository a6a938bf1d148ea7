package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/twnsbench/twnsbench/nsbench"
	"github.com/twnsbench/twnsbench/nsbench/preflight"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check this host (or, with --host, each named host) for what a run needs (root, kernel features, tools, memory); changes nothing",
		Description: "With --host or --hosts, each host is reached over SSH (its key checked against known_hosts),\n" +
			"root is checked (the login, or sudo -n), its interface found, a copy of this binary is run\n" +
			"there as `doctor --json` and removed; every line names the host. Exit 2 when any host is refused.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "size", Value: "5GiB", Usage: "payload size to check tmpfs room for"},
			&cli.BoolFlag{Name: "json", Usage: "print the checks as one JSON document (what doctor --host reads from each host)"},
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
			if remoteHosts {
				return doctorHosts(c.Context, c.App.Writer, inv, cfg, c.String("size"), transportArgs(c))
			}
			o := nsbench.Defaults()
			o.SizeBytes = size
			rep := preflight.Run(preflight.Options{NeedTmpfsBytes: o.SizeBytes + o.WarmBytes(), SizeBytes: o.SizeBytes, Tools: tools})
			if c.Bool("json") {
				if err := json.NewEncoder(c.App.Writer).Encode(newDoctorResult(rep, transportValues(c))); err != nil {
					return err
				}
				if err := rep.Err(); err != nil {
					return refuse(err)
				}
				return nil
			}
			fmt.Fprint(c.App.Writer, rep.String())
			writeTransports(c.App.Writer, transportValues(c))
			if err := rep.Err(); err != nil {
				return refuse(err)
			}
			return nil
		},
	}
}

// doctorResult is `doctor --json`: this host's checks, kernel and
// transports, as doctor --host reads them from each host.
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

func newDoctorResult(rep preflight.Report, topts map[string]string) doctorResult {
	d := doctorResult{Versions: rep.Versions, Kernel: preflight.KernelRelease()}
	for _, c := range rep.Checks {
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
	d.Transports = transportStatus(topts)
	return d
}

// writeTransports lists every registered transport with the options
// given (topts; the defaults otherwise): whether it can run here, and if
// not why and how to fix it. A transport that cannot run fails nothing: a
// run skips it, or refuses it when it is named.
func writeTransports(w io.Writer, topts map[string]string) {
	for _, t := range transportStatus(topts) {
		fmt.Fprintln(w, t.line())
	}
}

func transportStatus(topts map[string]string) []doctorLine {
	var ls []doctorLine
	for _, s := range transport.Registered() {
		status, detail := "ok", s.Summary
		ts, err := transport.Build([]string{s.Name}, topts)
		if err == nil {
			err = ts[0].Check()
		}
		if err != nil {
			status, detail = "cannot", err.Error()
		}
		ls = append(ls, doctorLine{Status: status, Name: "transport " + s.Name, Detail: detail})
	}
	return ls
}

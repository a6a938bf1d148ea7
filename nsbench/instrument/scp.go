package instrument

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/results"
	"github.com/twnsbench/twnsbench/nsbench/transport"
)

// ScpOptions are the reference's scp options (cipher pinned, no
// compression, no host-key prompts) plus BatchMode, so a broken key fails
// at once instead of waiting for a password nobody types.
var ScpOptions = []string{
	"-c", "aes128-gcm@openssh.com", "-o", "Compression=no",
	"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
	"-o", "LogLevel=ERROR", "-o", "BatchMode=yes",
}

// The scp forms, in the order they are tried.
const (
	FormSCP       = "scp"       // OpenSSH ≥ 9: SFTP protocol
	FormSCPLegacy = "scp -O"    // legacy SCP protocol
	FormSSHCat    = "ssh … cat" // no scp on the server side
)

// SSHClient is the client's identity and the detected scp form.
type SSHClient struct {
	User    string
	KeyPath string
	Form    string
}

// Scp copies the payload from the server to /dev/null: MB/s = payload
// bytes / wall / 1e6.
type Scp struct{}

var _ Instrument = Scp{}

func (Scp) Name() string { return "scp" }
func (Scp) Tool() string { return "scp" }

// CopiesPayload says scp needs the random payload on the server.
func (Scp) CopiesPayload() bool { return true }

func (Scp) Metrics() []results.Metric {
	return []results.Metric{{Key: "value", Label: "copy rate", Unit: "MB/s", Better: results.BetterHigher}}
}

func (Scp) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceSSH}, Carries: transport.CarriesTCP}
}

func (s Scp) Measure(ctx context.Context, job *Job) (Measurement, error) {
	argv := CopyCommand(job.SSH, job.Target, job.Payload)
	res, err := job.Run(ctx, argv[0], argv[1:]...)
	if err := classifyScpError(res.Stderr, err); err != nil {
		return Measurement{}, err
	}
	wall := res.Wall.Seconds()
	if wall <= 0 {
		return Measurement{}, fmt.Errorf("scp: no wall time measured")
	}
	return Measurement{
		Value:        float64(job.PayloadBytes) / wall / 1e6,
		Unit:         "MB/s",
		WallSec:      wall,
		PayloadBytes: ptr(job.PayloadBytes),
		MovedBytes:   job.PayloadBytes,
	}, nil
}

// Budget is the payload at half the slowest rate the path has shown (or
// at ScpFloorRate before it has shown one): a copy that slows down by
// half is still measured, a frozen one is not waited for longer.
func (Scp) Budget(job *Job) Budget {
	rate, basis := job.ExpectedRate/2, "half the slowest rate this path has shown"
	if rate <= 0 {
		rate, basis = ScpFloorRate, "the floor rate"
	}
	d := time.Duration(float64(job.PayloadBytes) / rate * float64(time.Second))
	return Budget{Planned: d, Basis: fmt.Sprintf("%s at %.2g MB/s, %s (%s)", formatBytes(job.PayloadBytes), rate/1e6, basis, fmtSeconds(d))}
}

// formatBytes writes n in MiB or GiB.
func formatBytes(n int64) string {
	if n >= 1<<30 {
		return strconv.FormatFloat(float64(n)/(1<<30), 'g', 4, 64) + " GiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'g', 4, 64) + " MiB"
}

// CopyCommand is the full command that copies file from the server to
// /dev/null in the given form.
func CopyCommand(c SSHClient, t transport.Target, file string) []string {
	port := strconv.Itoa(t.Port(transport.ServiceSSH))
	remote := c.User + "@" + t.Host
	switch c.Form {
	case FormSSHCat:
		argv := append([]string{"ssh"}, ScpOptions...)
		argv = append(argv, "-i", c.KeyPath, "-p", port, remote, "cat "+shellQuote(file)+" > /dev/null")
		// ssh writes to /dev/null on the server side; the client only drains.
		return argv
	case FormSCPLegacy:
		argv := append([]string{"scp", "-O"}, ScpOptions...)
		return append(argv, "-i", c.KeyPath, "-P", port, remote+":"+file, "/dev/null")
	default:
		argv := append([]string{"scp"}, ScpOptions...)
		return append(argv, "-i", c.KeyPath, "-P", port, remote+":"+file, "/dev/null")
	}
}

// OptionsString is the options as the report shows them.
//
// The key is written as the placeholder KEY: the results record options,
// not the host's paths (the reference writes the container's path).
func OptionsString() string {
	return strings.Join(ScpOptions, " ") + " -i KEY"
}

// DetectForm tries each scp form once with a small file and returns the
// first that works, with every failure when none does.
func DetectForm(ctx context.Context, job *Job, probe string) (string, error) {
	var errs []error
	for _, form := range []string{FormSCP, FormSCPLegacy, FormSSHCat} {
		c := job.SSH
		c.Form = form
		argv := CopyCommand(c, job.Target, probe)
		res, err := job.Run(ctx, argv[0], argv[1:]...)
		if err = classifyScpError(res.Stderr, err); err == nil {
			return form, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", form, err))
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("no scp form works: %w", errors.Join(errs...))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Exchange runs one SSH exchange (`ssh … true`) to the target: the first
// end-to-end exchange that makes a path ready.
func Exchange(ctx context.Context, job *Job) error {
	argv := append([]string{"ssh"}, ScpOptions...)
	argv = append(argv, "-o", "ConnectTimeout=10", "-i", job.SSH.KeyPath, "-p", strconv.Itoa(job.Target.Port(transport.ServiceSSH)),
		job.SSH.User+"@"+job.Target.Host, "true")
	res, err := job.Run(ctx, argv[0], argv[1:]...)
	if err != nil {
		return fmt.Errorf("ssh: %w: %s", err, parseFirstLine(res.Stderr))
	}
	return nil
}

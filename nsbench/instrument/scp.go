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
// compression) plus BatchMode, so a broken key fails at once instead of
// waiting for a password nobody types. The reference skipped host-key
// checks; twnsbench pins the run's own host key instead
// (transport.SSHClientOptions, after these), which costs nothing in the
// copy.
var ScpOptions = []string{
	"-c", "aes128-gcm@openssh.com", "-o", "Compression=no",
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
	User       string
	KeyPath    string
	KnownHosts string // the run's, pinning the server's host key
	Form       string
}

// options are ScpOptions and the client's pinning options, -i last.
func (c SSHClient) options() []string {
	return append(append([]string(nil), ScpOptions...), transport.SSHClientOptions(c.KeyPath, c.KnownHosts)...)
}

// Scp copies the payload from the server to /dev/null. Its MB/s is timed
// from the first payload byte, as near as ssh lets one see it: ssh runs
// with -v, and the copy's time starts when ssh, connected and
// authenticated, asks the server for the copy ("Sending subsystem: sftp",
// "Sending command: scp -v -f …" or "cat …"); MB/s = payload bytes /
// (exit − that line) / 1e6. The time before it, the SSH connection
// (TCP, key exchange, authentication, the session channel), is
// ssh_connect_sec; the sample's wall stays the whole run, the reference's
// "scp wall".
//
// Why ssh's own line and not a ControlMaster connection set up first: the
// line is one round trip nearer the first byte (the master would leave
// the session channel's opening in the copy's time), the copy runs the
// reference's processes over its own connection (no multiplexing through
// a master that does the client's crypto), and nothing is started beside
// the tool, so nothing can outlive the sample. What remains in the copy's
// time before the first byte is the server starting the subsystem or
// command and, for SFTP, its version and open exchange: a few round
// trips, which every form and transport pays alike.
type Scp struct{}

var _ Instrument = Scp{}

func (Scp) Name() string { return "scp" }
func (Scp) Tool() string { return "scp" }

// CopiesPayload says scp needs the random payload on the server.
func (Scp) CopiesPayload() bool { return true }

func (Scp) Metrics() []results.Metric {
	return []results.Metric{
		{Key: "value", Label: "copy rate", Unit: "MB/s", Better: results.BetterHigher},
		{Key: results.ScpConnectSec, Label: "SSH connection set-up", Unit: "s", Better: results.BetterLower},
	}
}

func (Scp) Needs() Needs {
	return Needs{Services: []transport.Service{transport.ServiceSSH}, Carries: transport.CarriesTCP}
}

func (s Scp) Measure(ctx context.Context, job *Job) (Measurement, error) {
	argv := copyCommand(job.SSH, job.Target, job.Payload, true)
	res, err := job.Run(ctx, argv[0], argv[1:]...)
	if err := classifyScpError(res.Stderr, err); err != nil {
		return Measurement{}, err
	}
	connect, ok := scpCopyRequested(res.StderrLines)
	if !ok {
		return Measurement{}, fmt.Errorf("scp: ssh -v printed no %q or %q line: the copy's start is unknown, so its rate is not measured", sshSubsystemLine, sshCommandLine)
	}
	transfer := res.Wall - connect
	if transfer <= 0 {
		return Measurement{}, fmt.Errorf("scp: no transfer time measured (wall %v, copy requested at %v)", res.Wall, connect)
	}
	return Measurement{
		Value:        float64(job.PayloadBytes) / transfer.Seconds() / 1e6,
		Unit:         "MB/s",
		WallSec:      res.Wall.Seconds(),
		PayloadBytes: ptr(job.PayloadBytes),
		MovedBytes:   job.PayloadBytes,
		Extra:        map[string]float64{results.ScpConnectSec: connect.Seconds(), results.ScpTransferSec: transfer.Seconds()},
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
	return copyCommand(c, t, file, false)
}

// copyCommand is CopyCommand, with ssh's debug output on (-v; scp passes
// it to its ssh) when verbose: its "Sending …" line marks the copy's start.
//
// The ssh … cat form's /dev/null is the client's: the payload crosses the
// path and the client drops it. ssh runs under a shell only for that
// redirection (exec: the same process, in the same process group);
// capturing the payload instead would hold it in the harness's memory.
func copyCommand(c SSHClient, t transport.Target, file string, verbose bool) []string {
	port := strconv.Itoa(t.Port(transport.ServiceSSH))
	remote := c.User + "@" + t.Host
	var v []string
	if verbose {
		v = []string{"-v"}
	}
	switch c.Form {
	case FormSSHCat:
		argv := append([]string{"sh", "-c", `exec "$0" "$@" >/dev/null`, sshProgram(t)}, v...)
		argv = append(append(argv, c.options()...), "-p", port, remote, "cat "+shellQuote(file))
		return argv
	case FormSCPLegacy:
		argv := append(append([]string{"scp"}, v...), "-O")
		argv = append(append(argv, scpProgram(t)...), c.options()...)
		return append(argv, "-P", port, remote+":"+file, "/dev/null")
	default:
		argv := append([]string{"scp"}, v...)
		argv = append(append(argv, scpProgram(t)...), c.options()...)
		return append(argv, "-P", port, remote+":"+file, "/dev/null")
	}
}

// sshProgram is the ssh client t's SSH exchanges run: its chosen one
// (a build's), else ssh on PATH.
func sshProgram(t transport.Target) string {
	if t.SSHProgram != "" {
		return t.SSHProgram
	}
	return "ssh"
}

// scpProgram is scp's -S for t's chosen ssh client, none for ssh on PATH.
func scpProgram(t transport.Target) []string {
	if t.SSHProgram == "" {
		return nil
	}
	return []string{"-S", t.SSHProgram}
}

// OptionsString is the options as the report shows them.
//
// The key and the known_hosts file are written as the placeholders KEY
// and KNOWN_HOSTS: the results record options, not the host's paths (the
// reference writes the container's path).
func OptionsString() string {
	return strings.Join(SSHClient{KeyPath: "KEY", KnownHosts: "KNOWN_HOSTS"}.options(), " ")
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
	_, err := login(ctx, job)
	return err
}

// login runs one fresh `ssh … true` to the target (its own TCP connection,
// key exchange, authentication and session) and returns its wall time.
func login(ctx context.Context, job *Job) (time.Duration, error) {
	argv := append([]string{sshProgram(job.Target)}, job.SSH.options()...)
	argv = append(argv, "-o", "ConnectTimeout=10", "-p", strconv.Itoa(job.Target.Port(transport.ServiceSSH)),
		job.SSH.User+"@"+job.Target.Host, "true")
	res, err := job.Run(ctx, argv[0], argv[1:]...)
	if err != nil {
		return 0, fmt.Errorf("ssh: %w: %s", err, sshReason(res.Stderr))
	}
	return res.Wall, nil
}

// sshReason is ssh's last line on stderr: its reason for failing, after a
// banner when the server's host key is not the pinned one.
func sshReason(stderr []byte) string {
	lines := parseNonBlank(stderr, 0)
	if len(lines) == 0 {
		return "no diagnostic on stderr"
	}
	return lines[len(lines)-1]
}

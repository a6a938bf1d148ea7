package recovery

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
)

// ClientArg is the prober's hidden subcommand: twnsbench runs itself in
// the client role with it.
const ClientArg = "recovery-probe"

// MaxDuration bounds a probe's --duration: the longest fault and its
// recovery bound with room to spare.
const MaxDuration = 15 * time.Minute

// ClientMain is the prober's command line: --addr HOST:PORT --duration D
// [--interval I] [--settle S] [--calm C] [--fault-from F --fault-by B]
// [--stream]. It prints the Timeline
// as JSON.
func ClientMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet(ClientArg, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "", "the echo's host:port")
	d := fs.Duration("duration", 30*time.Second, "how long to probe at most")
	interval := fs.Duration("interval", Interval, "time between two requests")
	settle := fs.Duration("settle", 0, "end once a request went unanswered and every one of this long since was answered (0: run the whole duration)")
	calm := fs.Duration("calm", 0, "end once this long has passed since the start with every request answered (0: never)")
	faultFrom := fs.Duration("fault-from", 0, "when the fault is due to start, from the probe's start: --settle counts only a gap from then on")
	faultBy := fs.Duration("fault-by", 0, "the latest the fault may end, from the probe's start: --settle ends the probe no sooner")
	stream := fs.Bool("stream", false, "run a TCP stream to the same echo beside the requests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		return fmt.Errorf("--addr %q: %w", *addr, err)
	}
	if *d <= 0 || *d > MaxDuration || *interval < time.Millisecond || *interval > time.Second || *settle < 0 || *settle > *d || *calm < 0 || *calm > *d ||
		*faultFrom < 0 || *faultBy < *faultFrom || *faultBy > *d {
		return fmt.Errorf("--duration %v (up to %v), --interval %v (1ms to 1s), --settle %v, --calm %v, --fault-from %v, --fault-by %v (from --fault-from up to the duration): out of range",
			*d, MaxDuration, *interval, *settle, *calm, *faultFrom, *faultBy)
	}
	dial := func(ctx context.Context) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "tcp", *addr)
	}
	run := Probe
	if *stream {
		run = ProbeWithStream
	}
	t, err := run(ctx, dial, *interval, *d, Ending{Settle: *settle, Calm: *calm, FaultFrom: *faultFrom, FaultBy: *faultBy})
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(t)
}

// MaybeRun makes a test binary the prober when started as one (as the
// orchestrator starts its copy on another host): it runs the prober and
// exits, and returns otherwise.
func MaybeRun() { proc.MaybeRunHidden(ClientArg, ClientMain) }

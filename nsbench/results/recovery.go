package results

// The figures of a recovery (a fault made while twnsbench's prober sends
// a request through the tunnel every 10 ms: a link flap, a restart), as
// a fault instrument's samples carry them in extra beside their value,
// the seconds until traffic crossed again. Any instrument whose samples
// carry RecoveryDials is a fault instrument to a reader (the report's
// Recovery table), whatever its name.
const (
	RecoveryLost    = "lost"             // requests from the fault until traffic crossed again never answered
	RecoveryDials   = "dials"            // connections the prober opened
	SessionSurvived = "session_survived" // 1: an SSH session through the tunnel outlived the fault; 0: it died
	// StreamResumed is 1 when a TCP stream through the tunnel, open
	// before the fault, carried bytes again on the same connection after
	// it (within the recovery's bound), 0 when it did not.
	StreamResumed = "stream_resumed"
	// StreamGapSec is the seconds that stream carried no byte across the
	// fault: from its last byte before the fault's end to its first one
	// after it, or, when none came, to the end of the watch
	// (AtLeastKey(StreamGapSec) marks that lower bound).
	StreamGapSec = "stream_gap_s"
)

// IsRecovery says whether s is a fault instrument's sample: it carries
// the prober's connections.
func IsRecovery(s Sample) bool {
	_, ok := s.Extra[RecoveryDials]
	return ok
}

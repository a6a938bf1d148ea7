package impair

import (
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
)

func TestMain(m *testing.M) {
	MaybeRunForwarder() // the userspace tests start this binary as the forwarder
	MaybeRunProbe()     // and as the probes
	nstest.Main(m)
}

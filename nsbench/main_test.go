package nsbench

import (
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/internal/nstest"
	"github.com/twnsbench/twnsbench/wg"
)

func TestMain(m *testing.M) {
	impair.MaybeRunForwarder() // a WAN run starts this binary as its forwarder
	impair.MaybeRunProbe()     // and as its probes
	wg.MaybeRunUserspace()     // a wireguard-go row starts this binary as `wg-userspace IFNAME`
	nstest.Main(m)
}

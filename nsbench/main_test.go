package nsbench

import (
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/impair"
	"github.com/twnsbench/twnsbench/nsbench/internal/nstest"
)

func TestMain(m *testing.M) {
	impair.MaybeRunForwarder() // a WAN run starts this binary as its forwarder
	nstest.Main(m)
}

package wg

import (
	"testing"

	"github.com/twnsbench/twnsbench/internal/nstest"
)

// TestMain fails the package when a test leaves anything of its prefix
// behind (nstest.Main), as every package that touches the kernel does.
func TestMain(m *testing.M) { nstest.Main(m) }

package nsbench

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/role"
)

// The socket buffer limits an older kernel shows only in the initial
// namespace are read on the role's machine through a host op (here, this
// one): the value is this machine's, and no other file can be named.
func TestHostSocketBufferOp(t *testing.T) {
	ctx := context.Background()
	want, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	if err != nil {
		t.Skipf("no /proc/sys/net/core/rmem_max here: %v", err)
	}
	got, err := role.SocketBufferMax(ctx, role.Here, "rmem_max")
	if err != nil || string(got) != string(want) {
		t.Errorf("rmem_max on this machine: %q, %v; want %q", got, err, want)
	}
	for _, key := range []string{"../../../etc/shadow", "somaxconn", ""} {
		if _, err := role.SocketBufferMax(ctx, role.Here, key); err == nil || !strings.Contains(err.Error(), "not a socket buffer limit") {
			t.Errorf("%q: %v", key, err)
		}
	}
}

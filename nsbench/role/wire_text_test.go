package role_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/role"
)

// An error a host sends is its text: it comes back with its control
// characters quoted, so printing it cannot drive a terminal or start a
// CI workflow command on a line of its own.
func TestWireQuotesAHostsError(t *testing.T) {
	toOrch, fromHost := io.Pipe()
	toHost, fromOrch := io.Pipe()
	t.Cleanup(func() { fromHost.Close(); fromOrch.Close() })
	answer, _ := json.Marshal(map[string]any{"id": 1, "err": "\x1b]0;pwned\x07 bad\n::error title=x::y"})
	go func() {
		buf := make([]byte, 4096)
		if _, err := toHost.Read(buf); err != nil { // the request
			return
		}
		_, _ = fromHost.Write(append(answer, '\n'))
	}()
	c := role.NewWire("hostile host", toOrch, fromOrch)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := role.HostNoise(ctx, c, "twnsb-abc123")
	if err == nil {
		t.Fatal("the host's error was lost")
	}
	if strings.ContainsAny(err.Error(), "\x1b\x07\n") || !strings.Contains(err.Error(), `\x1b]0;pwned\a bad\n::error title=x::y`) {
		t.Errorf("the host's error reads %q, want its control characters quoted", err)
	}
}

package role

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

type probeArgs struct {
	Name  string
	Count int
}

var echoOp = NewOp("role.test-echo", func(_ context.Context, a probeArgs) ([]string, error) {
	out := make([]string, a.Count)
	for i := range out {
		out[i] = a.Name
	}
	return out, nil
})

// An op's argument and result cross as JSON, as they would to another
// host: Serve with the encoded argument gives what the typed call gives.
func TestServeCarriesOutARegisteredOp(t *testing.T) {
	raw, err := Serve(context.Background(), echoOp.Name(), json.RawMessage(`{"Name":"x","Count":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `["x","x","x"]` {
		t.Errorf("Serve: %s", raw)
	}
	if _, err := Serve(context.Background(), "role.no-such-op", nil); err == nil || !strings.Contains(err.Error(), `no op "role.no-such-op"`) {
		t.Errorf("unknown op: %v", err)
	}
	if _, err := Serve(context.Background(), echoOp.Name(), json.RawMessage(`{"Count":"three"}`)); err == nil || !strings.Contains(err.Error(), "decode argument") {
		t.Errorf("bad argument: %v", err)
	}
}

// A value that cannot cross (a func) is refused at the call, on this host
// already.
var funcOp = NewOp("role.test-func", func(context.Context, Nothing) (func(), error) { return func() {}, nil })

func TestOpRefusesWhatCannotCross(t *testing.T) {
	bad := funcOp
	if _, err := Serve(context.Background(), bad.Name(), json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "encode result") {
		t.Errorf("func result: %v", err)
	}
}

func TestOpNamesAreUnique(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a second op named role.test-echo was registered")
		}
	}()
	NewOp("role.test-echo", func(context.Context, Nothing) (Nothing, error) { return Nothing{}, nil })
}

func TestOpsListed(t *testing.T) {
	names := Ops()
	for _, want := range []string{"role.read-file", "role.link-bytes", "role.test-echo"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("%s not in %v", want, names)
		}
	}
}

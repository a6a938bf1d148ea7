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

var hostEchoOp = NewHostOp("role.test-host-echo", func(_ context.Context, a probeArgs) ([]string, error) {
	return echoOp.fn(context.Background(), a)
})

var hostFuncOp = NewHostOp("role.test-host-func", func(context.Context, Nothing) (func(), error) { return func() {}, nil })

// Here carries a host op out in this process as a host's copy would: its
// result crosses as JSON (a func is refused here as over a wire), and only
// a host op runs there, never a role's.
func TestHereCarriesHostOps(t *testing.T) {
	ctx := context.Background()
	got, err := hostEchoOp.On(ctx, Here, probeArgs{Name: "m", Count: 2})
	if err != nil || strings.Join(got, ",") != "m,m" {
		t.Fatalf("host op on Here: %v, %v", got, err)
	}
	if _, err := hostFuncOp.On(ctx, Here, Nothing{}); err == nil || !strings.Contains(err.Error(), "encode result") {
		t.Errorf("func result on Here: %v", err)
	}
	if _, err := Here.callHost(ctx, echoOp.Name(), []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "runs only in a role's namespace") {
		t.Errorf("a role's op on Here: %v", err)
	}
	// A role on this machine runs its host ops here too.
	if got, err := hostEchoOp.On(ctx, MachineOf(&Role{host: nsHost{}}), probeArgs{Name: "r", Count: 1}); err != nil || len(got) != 1 {
		t.Errorf("host op on a local role's machine: %v, %v", got, err)
	}
}

package callgrind

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// dump is a callgrind dump in its own format: name compression, a call
// (whose inclusive cost belongs to the callee) and relative positions.
const dump = `# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 0

ob=(1) /bin/wireguard-go
fl=(1) device/send.go
fn=(1) golang.zx2c4.com/wireguard/device.(*Peer).RoutineSequentialSender
10 100
+2 50
cfl=(2) chacha20poly1305_amd64.s
cfn=(2) golang.org/x/crypto/chacha20poly1305.chacha20Poly1305Seal.abi0
calls=3 0
12 9000
fl=(2)
fn=(2)
5 9000
fn=(3) runtime.findRunnable
1 700
* 300
fn=(1)
14 25

totals: 10175
`

func TestParse(t *testing.T) {
	c, err := Parse(strings.NewReader(dump), []string{"golang.zx2c4.com/wireguard/device.", "golang.org/x/crypto/"})
	if err != nil {
		t.Fatal(err)
	}
	// The path: 100+50+25 of the sender (its call's 9000 is the callee's)
	// and the callee's own 9000; the runtime's 1000 is not.
	if want := (Counts{Total: 10175, Path: 9175}); c != want {
		t.Errorf("Parse = %+v, want %+v", c, want)
	}
	all, err := Parse(strings.NewReader(dump), []string{""})
	if err != nil {
		t.Fatal(err)
	}
	if all.Path != all.Total {
		t.Errorf("every function's own cost = %d, want the totals %d", all.Path, all.Total)
	}
}

func TestParseCutShort(t *testing.T) {
	cut := dump[:strings.Index(dump, "totals:")]
	if _, err := Parse(strings.NewReader(cut), nil); !errors.Is(err, errNoTotals) {
		t.Errorf("Parse of a dump without totals: %v, want errNoTotals", err)
	}
}

func TestArgv(t *testing.T) {
	got := Argv("/run/x/callgrind.out", []string{"/bin/wireguard-go", "wg0"})
	want := []string{"valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/run/x/callgrind.out", "/bin/wireguard-go", "wg0"}
	if !slices.Equal(got, want) {
		t.Errorf("Argv = %q, want %q", got, want)
	}
}

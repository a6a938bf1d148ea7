package report

import (
	"strings"
	"testing"

	"github.com/twnsbench/twnsbench/nsbench/results"
)

// A pinned run's Environment names each role's CPUs, the roles sharing
// CPUs together; an unpinned run's has no such row.
func TestEnvironmentNamesRolesCPUs(t *testing.T) {
	d := twnsbenchDoc()
	if md := string(Markdown(d)); strings.Contains(md, "Roles' CPUs") {
		t.Error("unpinned run: a Roles' CPUs row")
	}
	d.Env.Pin = &results.Pin{Layout: "split", Roles: map[string]string{"server": "1", "client": "0", "relay": "1"}}
	want := "| Roles' CPUs | pinned (--pin split): client on CPU 0; relay and server on CPU 1; every process a role started, its threads and children included |"
	if md := string(Markdown(d)); !strings.Contains(md, want) {
		t.Errorf("split: no line %q in the Environment", want)
	}
	d.Env.Pin = &results.Pin{Layout: "same", Roles: map[string]string{"server": "0", "client": "0", "relay": "0"}}
	if md := string(Markdown(d)); !strings.Contains(md, "pinned (--pin same): client, relay and server on CPU 0;") {
		t.Error("same: the roles not named together")
	}
}

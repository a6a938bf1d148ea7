package nsbench

import (
	"slices"
	"testing"
)

// A sweep's testbed's agents end the longest role names first: client2's
// end removes every name it begins, client20's among them.
func TestCloseGroups(t *testing.T) {
	names := []string{"server", "client", "client2", "client20", "client3", "relay"}
	got := closeGroups(names)
	want := [][]int{{3}, {2, 4}, {0, 1}, {5}} // client20; client2, client3; server, client; relay
	if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
		t.Errorf("closeGroups(%v) = %v, want %v", names, got, want)
	}
}

package preflight

import (
	"errors"
	"testing"
)

var sample = Report{Checks: []Check{
	{Name: "root", Detail: "euid 0", OK: true, Required: true},
	{Name: "kernel wireguard", Detail: "not in this kernel: userspace wireguard-go will be used (CONFIG_WIREGUARD is not set)"},
	{Name: "netperf", Detail: "netperf not found", Fix: "sudo scripts/install-deps.sh", Required: true},
	{Name: "tmpfs room", Detail: "MemAvailable 3.25 GiB, need 5.50 GiB", Fix: "./twnsbench run --size 2.7GiB", Required: true},
}}

func TestReportString(t *testing.T) {
	want := `ok        root              euid 0
optional  kernel wireguard  not in this kernel: userspace wireguard-go will be used (CONFIG_WIREGUARD is not set)
MISSING   netperf           netperf not found; fix: sudo scripts/install-deps.sh
MISSING   tmpfs room        MemAvailable 3.25 GiB, need 5.50 GiB; fix: ./twnsbench run --size 2.7GiB
`
	if got := sample.String(); got != want {
		t.Errorf("String =\n%s\nwant\n%s", got, want)
	}
}

func TestReportFailed(t *testing.T) {
	f := sample.Failed()
	if len(f) != 2 || f[0].Name != "netperf" || f[1].Name != "tmpfs room" {
		t.Errorf("Failed = %+v, want netperf and tmpfs room", f)
	}
	err := sample.Err()
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Err = %v, want ErrUnavailable", err)
	}
	want := "host not ready: netperf (fix: sudo scripts/install-deps.sh), tmpfs room (fix: ./twnsbench run --size 2.7GiB)"
	if err.Error() != want {
		t.Errorf("Err = %q\nwant  %q", err, want)
	}
	if err := (Report{Checks: sample.Checks[:2]}).Err(); err != nil {
		t.Errorf("Err with only an optional failure = %v", err)
	}
}

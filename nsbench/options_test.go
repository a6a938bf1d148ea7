package nsbench

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/hosts"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"5GiB": 5 << 30, "256MiB": 256 << 20, "1.5GiB": 3 << 29, "100MB": 100e6,
		"64 MiB": 64 << 20, "4096": 4096, "2KiB": 2048,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "0", "", "5XB", "GiB", "1e3MiB", "0.1B"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
	if got, err := ParseSizeGB("5"); err != nil || got != 5<<30 {
		t.Errorf("ParseSizeGB(5) = %d, %v", got, err)
	}
	if got, err := ParseSizeGB("0.25"); err != nil || got != 256<<20 {
		t.Errorf("ParseSizeGB(0.25) = %d, %v", got, err)
	}
	for _, in := range []string{"0", "-2", "x", ""} {
		if _, err := ParseSizeGB(in); err == nil {
			t.Errorf("ParseSizeGB(%q): want an error", in)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for b, want := range map[int64]string{5 << 30: "5 GiB", 256 << 20: "256 MiB", 3 << 29: "1.5 GiB", 512: "512 B"} {
		if got := FormatSize(b); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", b, got, want)
		}
	}
}

func TestNewPlan(t *testing.T) {
	known := []string{"ssh", "wireguard"}
	ok := Defaults()
	ok.OutDir = t.TempDir() + "/new/sub"
	p, err := NewPlan(ok, known)
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if p.Runs != 3 || p.SizeBytes != 5<<30 || p.Duration != 10*time.Second || p.Congestion != "cubic" {
		t.Errorf("defaults changed: %+v", p.Options)
	}
	if !p.DriftProbe || SweepDefaults([]int{1}).DriftProbe {
		t.Error("a run probes the host's drift by default, a sweep has no probe")
	}
	if q := Quick(); q.Runs != 1 || q.SizeBytes != 64<<20 || q.Duration != 2*time.Second || q.Warmup != time.Second || !q.DriftProbe {
		t.Errorf("quick = %+v", q)
	}
	if got := Quick().WarmBytes(); got != 64<<20 {
		t.Errorf("quick warm bytes = %d, want the whole 64 MiB payload", got)
	}
	if got := Defaults().WarmBytes(); got != 256<<20 {
		t.Errorf("default warm bytes = %d, want 256 MiB", got)
	}

	for name, tc := range map[string]struct {
		mutate func(*Options)
		want   string
	}{
		"unknown transport": {func(o *Options) { o.Transports = []string{"ipsec"} }, `unknown transport "ipsec"`},
		"twice":             {func(o *Options) { o.Transports = []string{"ssh", "ssh"} }, "given twice"},
		"bad wan":           {func(o *Options) { o.WAN = []string{"30xx"} }, "--wan"},
		"runs 0":            {func(o *Options) { o.Runs = 0 }, "--runs 0"},
		"tiny size":         {func(o *Options) { o.SizeBytes = 10 }, "--size"},
		"fractional dur":    {func(o *Options) { o.Duration = 1500 * time.Millisecond }, "--duration"},
		"negative warmup":   {func(o *Options) { o.Warmup = -time.Second }, "--warmup"},
		"bad congestion":    {func(o *Options) { o.Congestion = "cu bic" }, "--congestion"},
		"bad nic":           {func(o *Options) { o.NIC = "fast" }, `--nic "fast"`},
		"nic own with wan":  {func(o *Options) { o.NIC = NICOwn }, "--nic own: the WAN conditions"},
		"out is a file":     {func(o *Options) { o.OutDir = "/etc/hostname/x" }, "not a directory"},
		"precision-ms 0":    {func(o *Options) { o.Runs, o.RunsAuto, o.PrecisionMs = AutoMinRuns, true, 0 }, "--precision-ms 0"},
	} {
		o := ok
		tc.mutate(&o)
		if _, err := NewPlan(o, known); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want %q", name, err, tc.want)
		}
	}
}

// TestNICDefault: reference on one host, the interfaces' own across hosts,
// an explicit choice kept either way.
func TestNICDefault(t *testing.T) {
	known := []string{"ssh"}
	one := Defaults()
	one.OutDir = t.TempDir()
	across := one
	across.WAN = []string{"off"}
	across.Hosts.Inventory.Hosts = []hosts.Host{
		{Role: "client", Addr: "192.0.2.1", RoleAddr: netip.MustParsePrefix("192.0.2.11/24")},
		{Role: "server", Addr: "192.0.2.2", RoleAddr: netip.MustParsePrefix("192.0.2.12/24")},
	}
	for _, tc := range []struct {
		name string
		o    Options
		nic  string
		want string
	}{
		{"one host", one, "", NICReference},
		{"across hosts", across, "", NICOwn},
		{"across hosts, asked", across, NICReference, NICReference},
		{"one host, asked, no wan", func() Options { o := one; o.WAN = []string{"off"}; return o }(), NICOwn, NICOwn},
	} {
		tc.o.NIC = tc.nic
		p, err := NewPlan(tc.o, known)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p.NIC != tc.want {
			t.Errorf("%s: --nic resolved to %q, want %q", tc.name, p.NIC, tc.want)
		}
	}
}

// TestNewPlanSweep: a sweep's plan takes its counts (sorted) and the
// sweep's default transports, and refuses, one line each, what has no
// meaning in a sweep rather than ignoring it.
func TestNewPlanSweep(t *testing.T) {
	known := []string{"ssh", "wireguard", "ssh-tun"}
	o := SweepDefaults([]int{4, 1, 2})
	o.OutDir = t.TempDir()
	p, err := NewPlan(o, known)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Sweep() || !slices.Equal(p.Clients, []int{1, 2, 4}) || !slices.Equal(p.Transports, SweepTransports) || p.Runs != 1 {
		t.Errorf("plan: clients %v, transports %v, runs %d; want 1,2,4 over %v once", p.Clients, p.Transports, p.Runs, SweepTransports)
	}
	if !slices.Equal(o.Clients, []int{4, 1, 2}) {
		t.Errorf("NewPlan changed the options' counts to %v", o.Clients)
	}
	// A WAN condition: the sweep measures under the LAN and under it.
	o.WAN = []string{"20ms:0%"}
	if p, err := NewPlan(o, known); err != nil || len(p.WANs) != 1 || p.WANs[0].Name != "wan" || p.WANs[0].RTT != 20*time.Millisecond ||
		!slices.Equal(sweepConditions(p), []string{"", "wan"}) {
		t.Errorf("a sweep under --wan 20ms:0%%: %+v, %v", p, err)
	}
	o.WAN = nil
	// Across hosts the clients take the addresses from the client's on.
	o.Hosts = inventoryOf(t, "server=root@h2,addr=10.0.0.60/24", "client=root@h1,addr=10.0.0.50/24")
	if p, err := NewPlan(o, known); err != nil || len(p.Hosts.Fan) != 4 || p.Hosts.Fan[3].Role != "client4" || p.Hosts.Fan[3].RoleAddr.String() != "10.0.0.53/24" {
		t.Errorf("a sweep of 4 clients across hosts: %v (clients %+v)", err, p.Hosts.Fan)
	}
	o.Hosts = Hosts{}
	// Builds are swept side by side.
	o.Transports = []string{"wireguard@a", "wireguard@b"}
	if p, err := NewPlan(o, known); err != nil || !p.HasBuilds() {
		t.Errorf("a sweep of two builds: %v", err)
	}
	for _, tc := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.WAN = []string{"30ms:0%:mtu=1280"} }, "--clients: --wan 30ms:0%:mtu=1280: a narrow hop (mtu=) does not apply to the many-client sweep"},
		{func(o *Options) { o.WAN = []string{"30ms"} }, "--wan"},
		{func(o *Options) { o.WAN, o.Impairment = []string{"30ms:0%"}, "tc" }, `--impairment "tc": want auto, netem or userspace`},
		{func(o *Options) { o.Hosts = inventoryOf(t, "client=root@h1,addr=10.0.0.50/24") }, "--host: name the server's host too"},
		{func(o *Options) {
			o.Clients, o.Hosts = []int{1, 4}, inventoryOf(t, "client=root@h1,addr=10.0.0.50/24", "server=root@h2,addr=10.0.0.52/24")
		}, "--host client: 4 clients from addr 10.0.0.50: client3 would be 10.0.0.52, the server's addr"},
		{func(o *Options) {
			o.Clients, o.Hosts = []int{3}, inventoryOf(t, "client=root@h1,addr=10.0.0.253/24", "server=root@h2,addr=10.0.0.2/24")
		}, "--host client: 3 clients from addr 10.0.0.253: client3 would be 10.0.0.255, past the end of 10.0.0.0/24"},
		{func(o *Options) {
			o.WAN, o.Hosts = []string{"30ms:0%"}, inventoryOf(t, "client=root@h1,addr=10.0.0.50/24", "server=root@h2,addr=10.0.0.2/24")
		}, "--clients with --host: --wan 30ms:0%: the many-client sweep across hosts runs on the LAN only"},
		{func(o *Options) { o.Order = OrderReference }, "--clients: --order does not apply"},
		{func(o *Options) { o.SizeBytes = 1 << 20 }, "--clients: --size does not apply"},
		{func(o *Options) { o.Warmup = time.Second }, "--clients: --warmup does not apply"},
		{func(o *Options) { o.Keep = true }, "--clients: --keep does not apply"},
		{func(o *Options) { o.NIC = NICOwn }, "--clients: --nic does not apply"},
		{func(o *Options) { o.DriftProbe = true }, "--clients: --drift-probe does not apply"},
		{func(o *Options) { o.Precision = 0.05 }, "--clients: --precision does not apply"},
		{func(o *Options) { o.Builds.Profile = true }, "--clients: --min-effect, --max-rounds, --fail-on and --profile do not apply"},
		{func(o *Options) { o.RunsAuto = true }, `--clients: --runs "auto": want how many times to run the sweep, 1 to 100`},
		{func(o *Options) { o.Runs = 101 }, `--clients: --runs "101"`},
		{func(o *Options) { o.Duration = 1500 * time.Millisecond }, "--duration 1.5s: want whole seconds"},
		{func(o *Options) { o.Congestion = "bbr" }, "--clients: the sweep runs with cubic only (--congestion bbr)"},
		{func(o *Options) { o.Clients = []int{2, 2} }, "--clients: 2 is given twice"},
		{func(o *Options) { o.Clients = []int{65} }, "--clients: 65 is out of range"},
		{func(o *Options) { o.Transports = []string{"nope"} }, `--transports: unknown transport "nope"`},
	} {
		o := SweepDefaults([]int{1})
		o.OutDir = t.TempDir()
		tc.change(&o)
		_, err := NewPlan(o, known)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("NewPlan: %v, want the one line %q", err, tc.want)
		}
	}
}

// inventoryOf is the inventory of entries.
func inventoryOf(t *testing.T, entries ...string) Hosts {
	t.Helper()
	inv, err := hosts.Parse(hosts.Flags{Host: entries})
	if err != nil {
		t.Fatal(err)
	}
	return Hosts{Inventory: inv}
}

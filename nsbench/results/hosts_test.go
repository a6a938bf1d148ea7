package results

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestHostsRoundTrip: hosts survive the document's JSON; an absent fact
// (a veth's speed, a tool not installed) is absent in the JSON, never 0 or
// "", and a document without hosts (an older one, a run on one host) has
// no hosts key and loads with none.
func TestHostsRoundTrip(t *testing.T) {
	d := Document{SchemaVersion: SchemaVersion, Env: Env{Kernel: "6.1.0"}}
	d.Env.AddHost(Host{Roles: []string{"client"}, Login: "root@10.0.0.2:22", Kernel: "6.1.0-18-amd64", CPUModel: "Xeon",
		Cores: 8, NIC: NIC{Iface: "eth1", Driver: "ixgbe", SpeedMbps: 10000, MTU: 9000, Offloads: "tso/gso/gro on"},
		Tools: map[string]string{"iperf3": "iperf 3.12"}})
	d.Env.AddHost(Host{Roles: []string{"server"}, Login: "bench@10.0.0.3:2222", Kernel: "6.8.0", NIC: NIC{Iface: "eth0", Driver: "veth", MTU: 1500}})
	// A second role on the first machine's interface joins its entry.
	d.Env.AddHost(Host{Roles: []string{"relay"}, Login: "root@10.0.0.2:22", NIC: NIC{Iface: "eth1"}})
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Env struct {
			Hosts []map[string]any `json:"hosts"`
		} `json:"env"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Env.Hosts) != 2 {
		t.Fatalf("%d hosts in %s, want 2", len(raw.Env.Hosts), b)
	}
	for _, k := range []string{"speed_mbps", "cores", "cpu_model", "offloads", "tools"} {
		if v, ok := raw.Env.Hosts[1][k]; ok {
			t.Errorf("server host has %s %v: absent facts must be absent", k, v)
		}
	}
	var back Document
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Env.Hosts, d.Env.Hosts) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back.Env.Hosts, d.Env.Hosts)
	}
	if got := back.Env.Hosts[0].Roles; !reflect.DeepEqual(got, []string{"client", "relay"}) {
		t.Errorf("roles of the first machine %v", got)
	}

	old, err := json.Marshal(Document{Env: Env{Kernel: "6.1.0"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(old), `"hosts"`) {
		t.Errorf("a document without hosts writes a hosts key: %s", old)
	}
	var o Document
	if err := json.Unmarshal(old, &o); err != nil || o.Env.Hosts != nil {
		t.Errorf("old document: hosts %v, %v", o.Env.Hosts, err)
	}
}

package preflight

import (
	"maps"
	"strings"
	"testing"
)

// config-6.18.44-fc.gz is /proc/config.gz of this project's machines.
func TestReadKernelConfigCaptured(t *testing.T) {
	cfg, err := readKernelConfig("testdata/config-6.18.44-fc.gz")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg) != 1745 {
		t.Errorf("%d symbols, want 1745", len(cfg))
	}
	want := map[string]string{
		"CONFIG_VETH":          "y",
		"CONFIG_BRIDGE":        "y",
		"CONFIG_TUN":           "y",
		"CONFIG_NET_NS":        "y",
		"CONFIG_IKCONFIG_PROC": "y",
		"CONFIG_LOCALVERSION":  `"-fc-v782"`,
	}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("%s = %q, want %q", k, cfg[k], v)
		}
	}
	// "# CONFIG_X is not set" and symbols never mentioned are both absent.
	for _, k := range []string{"CONFIG_WIREGUARD", "CONFIG_NET_SCH_NETEM", "CONFIG_MODULES", "CONFIG_NO_SUCH_THING"} {
		if v, ok := cfg[k]; ok {
			t.Errorf("%s = %q, want it unset", k, v)
		}
	}
}

// config-debian-excerpt.txt is hand-made after Debian 12's 6.1 kernel
// config, where everything the harness needs is a module.
func TestParseKernelConfigModules(t *testing.T) {
	cfg, err := readKernelConfig("testdata/config-debian-excerpt.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"CONFIG_CC_VERSION_TEXT":  `"gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0"`,
		"CONFIG_MODULES":          "y",
		"CONFIG_NET_NS":           "y",
		"CONFIG_VETH":             "m",
		"CONFIG_BRIDGE":           "m",
		"CONFIG_TUN":              "m",
		"CONFIG_WIREGUARD":        "m",
		"CONFIG_NET_SCH_NETEM":    "m",
		"CONFIG_NET_SCH_FQ_CODEL": "y",
	}
	if !maps.Equal(cfg, want) {
		t.Errorf("config = %v\nwant %v", cfg, want)
	}
}

func TestParseKernelConfigMalformed(t *testing.T) {
	_, err := parseKernelConfig(strings.NewReader("CONFIG_VETH=y\nCONFIG_BROKEN\n"))
	if err == nil || !strings.Contains(err.Error(), `"CONFIG_BROKEN"`) {
		t.Errorf("err = %v, want it to name the bad line", err)
	}
}

func TestReadKernelConfigMissing(t *testing.T) {
	if _, err := readKernelConfig("testdata/no-such-config.gz"); err == nil {
		t.Error("no error for a missing file")
	}
}

package transport

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestESPVariants: each variant's SA carries keys of the sizes its
// transform takes, and describe (the label's words, read back from the
// kernel's SAs) names the cipher's strength without the salt.
func TestESPVariants(t *testing.T) {
	want := map[string]string{
		"aes-gcm-128":        "rfc4106(gcm(aes)) 128-bit",
		"aes-gcm-256":        "rfc4106(gcm(aes)) 256-bit",
		"aes-cbc-128-sha1":   "cbc(aes) 128-bit + hmac(sha1)-96",
		"aes-cbc-128-sha256": "cbc(aes) 128-bit + hmac(sha256)-128",
		"aes-ctr-128-sha256": "rfc3686(ctr(aes)) 128-bit + hmac(sha256)-128",
		"chacha20-poly1305":  "rfc7539esp(chacha20,poly1305) 256-bit",
	}
	if !slices.Equal(ipsecSpec.Variants, ipsecTunnelSpec.Variants) || len(ipsecSpec.Variants) != len(want) {
		t.Fatalf("variants %v / %v", ipsecSpec.Variants, ipsecTunnelSpec.Variants)
	}
	a, b := netip.MustParseAddr("10.77.0.2"), netip.MustParseAddr("10.77.0.4")
	for _, v := range ipsecSpec.Variants {
		algo := espAlgos[v]
		k, err := algo.newKeys()
		if err != nil {
			t.Fatal(err)
		}
		s := algo.state(a, b, 0x1234, netlink.XFRM_MODE_TUNNEL, k)
		if got := describe(*s); got != want[v] {
			t.Errorf("%s: %q, want %q", v, got, want[v])
		}
		if s.Aead == nil && (s.Crypt == nil || s.Auth == nil || len(s.Auth.Key)*8 != algo.authKeyBits) {
			t.Errorf("%s: %+v: want an AEAD or a cipher with its HMAC key", v, s)
		}
	}
}

// TestESPVerdict: the kernel's answers the probe maps, as this host's
// kernel (no ESP, no GCM) and Debian's stock kernel give them.
func TestESPVerdict(t *testing.T) {
	gcm := espAlgos["aes-gcm-128"]
	for _, tc := range []struct {
		list, algo, esp error
		want            string
	}{
		{nil, nil, nil, ""},
		// 6.18 without ESP: GCM is missing too and checked first; the
		// CBC probe then meets the missing type.
		{nil, unix.ENOSYS, unix.EPROTONOSUPPORT, "this kernel has no ESP (CONFIG_INET_ESP)"},
		{nil, unix.EPROTONOSUPPORT, nil, "this kernel has no ESP (CONFIG_INET_ESP)"},
		// ESP present (the probe's CBC SA was accepted), GCM not.
		{nil, unix.ENOSYS, nil, "this kernel lacks rfc4106(gcm(aes)) (CONFIG_CRYPTO_GCM, CONFIG_CRYPTO_SEQIV)"},
		{nil, unix.ENOENT, nil, "this kernel lacks rfc4106(gcm(aes)) (CONFIG_CRYPTO_GCM, CONFIG_CRYPTO_SEQIV)"},
		{unix.EPROTONOSUPPORT, nil, nil, "this kernel has no xfrm netlink interface (CONFIG_XFRM_USER): protocol not supported"},
		{nil, unix.EINVAL, nil, "the kernel refused an ESP SA with rfc4106(gcm(aes)): netlink: invalid argument"},
	} {
		got, _ := espVerdict(gcm, tc.list, wrap(tc.algo), wrap(tc.esp))
		if got != tc.want {
			t.Errorf("list %v, algo %v, esp %v: %q, want %q", tc.list, tc.algo, tc.esp, got, tc.want)
		}
	}
}

func wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("netlink: %w", err)
}

package transport

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/twnsbench/twnsbench/nsbench/results"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/ns"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// IPsec is seed 002's manual-SA rows (setkey/iproute2 in the seed): ESP
// in the kernel, keyed by hand through netlink with keys and SPIs drawn
// per run, no IKE daemon. Each side holds two SAs (client → server and
// server → client) and the policies that send the traffic between the two
// through them. Transport mode protects the roles' own addresses, so every
// instrument aimed at the server crosses ESP; tunnel mode carries two
// inner /32s (each on its namespace's lo) between the outer addresses.
type IPsec struct {
	tunnel  bool
	variant string
}

// Tunnel mode's inner addresses: the policies' selectors.
var (
	ipsecServer = innerAddr("ipsec, ipsec-tunnel", 1)
	ipsecClient = innerAddr("ipsec, ipsec-tunnel", 2)
)

const (
	ipsecReqid  = 0x2b4 // ties the policies' templates to the SAs
	ipsecReady  = 30 * time.Second
	ipsecReplay = 32 // strongSwan's default anti-replay window
)

// espAlgo is one variant's ESP transform as xfrm names it.
type espAlgo struct {
	aead, crypt, auth string
	keyBits           int  // the cipher's key, without salt or nonce
	salted            bool // the key ends in a 32-bit salt (GCM, ChaCha20) or nonce (RFC 3686)
	authKeyBits       int
	authTrunc         int    // the ICV's bits (an AEAD's is always 128 here)
	config            string // the kernel options it needs, for the reason
}

var ipsecVariants = []string{"aes-gcm-128", "aes-gcm-256", "aes-cbc-128-sha1", "aes-cbc-128-sha256", "aes-ctr-128-sha256", "chacha20-poly1305"}

var espAlgos = map[string]espAlgo{
	"aes-gcm-128":        {aead: "rfc4106(gcm(aes))", keyBits: 128, salted: true, authTrunc: 128, config: "CONFIG_CRYPTO_GCM, CONFIG_CRYPTO_SEQIV"},
	"aes-gcm-256":        {aead: "rfc4106(gcm(aes))", keyBits: 256, salted: true, authTrunc: 128, config: "CONFIG_CRYPTO_GCM, CONFIG_CRYPTO_SEQIV"},
	"aes-cbc-128-sha1":   {crypt: "cbc(aes)", keyBits: 128, auth: "hmac(sha1)", authKeyBits: 160, authTrunc: 96, config: "CONFIG_CRYPTO_CBC, CONFIG_CRYPTO_SHA1, CONFIG_CRYPTO_HMAC, CONFIG_CRYPTO_AUTHENC, CONFIG_CRYPTO_ECHAINIV"},
	"aes-cbc-128-sha256": {crypt: "cbc(aes)", keyBits: 128, auth: "hmac(sha256)", authKeyBits: 256, authTrunc: 128, config: "CONFIG_CRYPTO_CBC, CONFIG_CRYPTO_SHA256, CONFIG_CRYPTO_HMAC, CONFIG_CRYPTO_AUTHENC, CONFIG_CRYPTO_ECHAINIV"},
	"aes-ctr-128-sha256": {crypt: "rfc3686(ctr(aes))", keyBits: 128, salted: true, auth: "hmac(sha256)", authKeyBits: 256, authTrunc: 128, config: "CONFIG_CRYPTO_CTR, CONFIG_CRYPTO_SHA256, CONFIG_CRYPTO_HMAC, CONFIG_CRYPTO_AUTHENC, CONFIG_CRYPTO_SEQIV"},
	"chacha20-poly1305":  {aead: "rfc7539esp(chacha20,poly1305)", keyBits: 256, salted: true, authTrunc: 128, config: "CONFIG_CRYPTO_CHACHA20POLY1305, CONFIG_CRYPTO_SEQIV"},
}

var ipsecSpec = Spec{
	Name: "ipsec",
	// Transport-mode policies on the veth addresses take every packet
	// between client and server, other tunnels' included.
	Holds:    []string{HoldsEveryPacket, "ipsec SAs and policies"},
	Summary:  "SSH over kernel IPsec ESP, manual SAs in transport mode (keys per run through netlink; a kernel with ESP)",
	Variants: ipsecVariants,
	Sets:     []string{"seed-002"},
	New:      func(c Config) (Transport, error) { return &IPsec{variant: c.Variant}, nil },
}

var ipsecTunnelSpec = Spec{
	Name:     "ipsec-tunnel",
	Holds:    []string{"ipsec SAs and policies"},
	Summary:  "SSH over kernel IPsec ESP, manual SAs in tunnel mode between inner /32s (keys per run through netlink; a kernel with ESP)",
	Variants: ipsecVariants,
	Sets:     []string{"seed-002"},
	New:      func(c Config) (Transport, error) { return &IPsec{tunnel: true, variant: c.Variant}, nil },
}

func (t *IPsec) spec() Spec {
	if t.tunnel {
		return ipsecTunnelSpec
	}
	return ipsecSpec
}

func (t *IPsec) mode() netlink.Mode {
	if t.tunnel {
		return netlink.XFRM_MODE_TUNNEL
	}
	return netlink.XFRM_MODE_TRANSPORT
}

func (t *IPsec) Name() string { return t.spec().RowName(t.variant) }
func (t *IPsec) Label() string {
	return "SSH over IPsec (manual SAs, " + t.mode().String() + ", " + t.variant + ")"
}
func (t *IPsec) About() string {
	return "is ESP in the kernel (xfrm) with manually keyed SAs and no IKE daemon: the kernel encrypts every packet in softirq and syscall context, so its CPU shows only in host CPU, not in any cgroup."
}

// name is the transform as the reasons say it.
func (a espAlgo) name() string {
	if a.aead != "" {
		return a.aead
	}
	return a.crypt + " + " + a.auth
}

// keyLen is the cipher key's length in bytes, salt or nonce included.
func (a espAlgo) keyLen() int {
	n := a.keyBits / 8
	if a.salted {
		n += 4
	}
	return n
}

// saKeys are one SA's keys: both sides install the same.
type saKeys struct{ Enc, Auth []byte }

func (a espAlgo) newKeys() (saKeys, error) {
	k := saKeys{Enc: make([]byte, a.keyLen()), Auth: make([]byte, a.authKeyBits/8)}
	if _, err := rand.Read(k.Enc); err != nil {
		return k, err
	}
	_, err := rand.Read(k.Auth)
	return k, err
}

// state is the SA from src to dst.
func (a espAlgo) state(src, dst netip.Addr, spi int, mode netlink.Mode, k saKeys) *netlink.XfrmState {
	s := &netlink.XfrmState{
		Src: src.AsSlice(), Dst: dst.AsSlice(), Proto: netlink.XFRM_PROTO_ESP, Mode: mode,
		Spi: spi, Reqid: ipsecReqid, ReplayWindow: ipsecReplay,
	}
	if a.aead != "" {
		s.Aead = &netlink.XfrmStateAlgo{Name: a.aead, Key: k.Enc, ICVLen: a.authTrunc}
		return s
	}
	s.Crypt = &netlink.XfrmStateAlgo{Name: a.crypt, Key: k.Enc}
	s.Auth = &netlink.XfrmStateAlgo{Name: a.auth, Key: k.Auth, TruncateLen: a.authTrunc}
	return s
}

// describe says what an SA the kernel holds encrypts with, e.g.
// "rfc4106(gcm(aes)) 128-bit" or "cbc(aes) 128-bit + hmac(sha1)-96"; the
// salt or nonce at the end of the key is not key strength.
func describe(s netlink.XfrmState) string {
	bits := func(a *netlink.XfrmStateAlgo) int {
		n := len(a.Key) * 8
		switch {
		case a.Name == "rfc4106(gcm(aes))", a.Name == "rfc7539esp(chacha20,poly1305)", a.Name == "rfc3686(ctr(aes))":
			n -= 32
		}
		return n
	}
	switch {
	case s.Aead != nil:
		d := fmt.Sprintf("%s %d-bit", s.Aead.Name, bits(s.Aead))
		if s.Aead.ICVLen != 128 {
			d += fmt.Sprintf(", ICV %d", s.Aead.ICVLen)
		}
		return d
	case s.Crypt != nil && s.Auth != nil:
		return fmt.Sprintf("%s %d-bit + %s-%d", s.Crypt.Name, bits(s.Crypt), s.Auth.Name, s.Auth.TruncateLen)
	}
	return "no encryption"
}

// Check probes the kernel once per mode and variant: it adds the
// variant's SA in a throwaway namespace, deleted again on every path.
// Nothing less tells: the xfrm core accepts a policy without ESP and then
// silently black-holes.
func (t *IPsec) Check() error { return espAvailable(t.Name(), t.mode(), t.variant) }

// espAvailable probes once per transport, mode and variant (a key of
// espAlgos) whether the kernel can build that ESP SA.
func espAvailable(transport string, mode netlink.Mode, variant string) error {
	key := transport + "/" + mode.String() + "/" + variant
	espProbes.Lock()
	defer espProbes.Unlock()
	if err, ok := espProbes.m[key]; ok {
		return err
	}
	err := probeESP(transport, mode, espAlgos[variant])
	espProbes.m[key] = err
	return err
}

var espProbes = struct {
	sync.Mutex
	m map[string]error
}{m: map[string]error{}}

// The kernel's answers to an SA it cannot build: no ESP type
// (EPROTONOSUPPORT, "Requested type not found"); an algorithm missing from
// xfrm's table or the crypto API (ENOSYS, "Requested AEAD algorithm not
// found"); ESP's IV generator or template missing when it allocates the
// transform (ENOENT). The algorithm is checked before the type, so a
// kernel without ESP and without GCM only says GCM is missing:
// espProbeAlgos then tell ESP's absence apart.
var espProbeAlgos = []espAlgo{
	{crypt: "cbc(aes)", keyBits: 128, auth: "hmac(sha256)", authKeyBits: 256, authTrunc: 128},
	{crypt: "ecb(cipher_null)", auth: "hmac(sha1)", authKeyBits: 160, authTrunc: 96},
}

func probeESP(transport string, mode netlink.Mode, a espAlgo) (err error) {
	unavailable := func(reason, fix string) error {
		return &UnavailableError{Transport: transport, Reason: reason, Fix: fix}
	}
	prefix, err := topology.NewPrefix()
	if err != nil {
		return unavailable("cannot probe the kernel's ESP: "+err.Error(), "")
	}
	name := prefix + "-ipsec-probe"
	n, err := topology.NewNS(name)
	if err != nil {
		return unavailable("cannot probe the kernel's ESP: "+err.Error(), "run as root")
	}
	defer func() {
		if cerr := errors.Join(n.Close(), ns.Delete(name)); cerr != nil {
			err = unavailable("the ESP probe's namespace could not be removed: "+cerr.Error(), "sudo twnsbench clean")
		}
	}()
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	var listErr, algoErr, espErr error
	err = func() error {
		// Without xfrm's netlink interface (no NETLINK_XFRM socket) every
		// request below fails the same way a missing ESP does. The
		// handle's requests act inside the probe's namespace: nothing
		// here enters it.
		var h *netlink.Handle
		if h, listErr = n.Netlink(unix.NETLINK_XFRM); listErr != nil {
			return nil
		}
		defer h.Close()
		if _, listErr = h.XfrmStateList(netlink.FAMILY_ALL); listErr != nil {
			return nil
		}
		k, err := a.newKeys()
		if err != nil {
			return err
		}
		algoErr = h.XfrmStateAdd(a.state(src, dst, 0x100, mode, k))
		if !errors.Is(algoErr, unix.ENOSYS) && !errors.Is(algoErr, unix.ENOENT) {
			return nil
		}
		for i, p := range espProbeAlgos {
			k, err := p.newKeys()
			if err != nil {
				return err
			}
			if espErr = h.XfrmStateAdd(p.state(src, dst, 0x101+i, mode, k)); espErr == nil || errors.Is(espErr, unix.EPROTONOSUPPORT) {
				break
			}
		}
		return nil
	}()
	if err != nil {
		return unavailable("cannot probe the kernel's ESP: "+err.Error(), "")
	}
	if reason, fix := espVerdict(a, listErr, algoErr, espErr); reason != "" {
		return unavailable(reason, fix)
	}
	return nil
}

// espVerdict maps the probe's errors to why the variant cannot run here
// ("" when it can): listErr from listing SAs, algoErr from adding the
// variant's SA, espErr from the last of espProbeAlgos tried.
func espVerdict(a espAlgo, listErr, algoErr, espErr error) (reason, fix string) {
	switch {
	case listErr != nil:
		return "this kernel has no xfrm netlink interface (CONFIG_XFRM_USER): " + listErr.Error(), "use a kernel with XFRM_USER and ESP (make vmtest runs Debian's stock kernel)"
	case algoErr == nil:
		return "", ""
	case errors.Is(algoErr, unix.EPROTONOSUPPORT), errors.Is(espErr, unix.EPROTONOSUPPORT):
		return "this kernel has no ESP (CONFIG_INET_ESP)", "use a kernel with ESP (make vmtest runs Debian's stock kernel), or strongswan (ESP in userspace)"
	case errors.Is(algoErr, unix.ENOSYS), errors.Is(algoErr, unix.ENOENT):
		return fmt.Sprintf("this kernel lacks %s (%s)", a.name(), a.config), "use a kernel with those options (make vmtest runs Debian's stock kernel)"
	}
	return fmt.Sprintf("the kernel refused an ESP SA with %s: %v", a.name(), algoErr), ""
}

func (t *IPsec) Up(ctx context.Context, tb *Testbed) (path *Path, err error) {
	ctx, cancel := context.WithTimeout(ctx, ipsecReady)
	defer cancel()
	a, ok := espAlgos[t.variant]
	if !ok {
		return nil, fmt.Errorf("ipsec: unknown variant %q", t.variant)
	}
	u := &ipsecUp{tb: tb}
	defer func() {
		if err != nil {
			err = errors.Join(err, u.close())
		}
	}()
	outer := map[string]netip.Addr{topology.Client: tb.Roles[topology.Client].Addr(), topology.Server: tb.Roles[topology.Server].Addr()}
	// What the policies select: the roles' own addresses in transport
	// mode, the inner ones in tunnel mode.
	sel := outer
	if t.tunnel {
		sel = map[string]netip.Addr{topology.Client: ipsecClient, topology.Server: ipsecServer}
	}
	// One SA per direction, the same on both sides.
	sas := []xfrmSA{{From: topology.Client, To: topology.Server}, {From: topology.Server, To: topology.Client}}
	for i := range sas {
		sas[i].Src, sas[i].Dst = outer[sas[i].From], outer[sas[i].To]
		if sas[i].SPI, err = randomSPI(); err != nil {
			return nil, fmt.Errorf("ipsec: spi: %w", err)
		}
		if sas[i].Keys, err = a.newKeys(); err != nil {
			return nil, fmt.Errorf("ipsec: keys: %w", err)
		}
	}
	if sas[0].SPI == sas[1].SPI {
		sas[1].SPI ^= 1
	}
	for _, role := range []string{topology.Server, topology.Client} {
		peer := topology.Client
		if role == topology.Client {
			peer = topology.Server
		}
		if t.tunnel {
			if err := u.addInner(ctx, role, sel[role], sel[peer], outer[peer]); err != nil {
				return nil, fmt.Errorf("ipsec: %s: inner address: %w", role, err)
			}
		}
		add := xfrmAdd{Variant: t.variant, Mode: t.mode(), SAs: sas}
		dirs := []netlink.Dir{netlink.XFRM_DIR_OUT, netlink.XFRM_DIR_IN}
		if t.tunnel {
			dirs = append(dirs, netlink.XFRM_DIR_FWD)
		}
		for _, d := range dirs {
			from, to := role, peer
			if d != netlink.XFRM_DIR_OUT {
				from, to = peer, role
			}
			add.Policies = append(add.Policies, xfrmPolicy{Dir: d, Src: sel[from], Dst: sel[to], TmplSrc: outer[from], TmplDst: outer[to]})
		}
		u.xfrm = append(u.xfrm, role)
		if _, err := xfrmAddOp.On(ctx, tb.Roles[role], add); err != nil {
			return nil, fmt.Errorf("ipsec: %w", err)
		}
	}
	// What the kernel holds, read back: the label names it, and it must
	// be what the variant asked for.
	want := describe(*a.state(outer[topology.Client], outer[topology.Server], 1, t.mode(), sas[0].Keys))
	held, err := checkHeld(ctx, tb, []string{topology.Server, topology.Client}, len(sas), t.mode(), want)
	if err != nil {
		return nil, fmt.Errorf("ipsec %s: %w", t.variant, err)
	}
	cli := tb.Roles[topology.Client]
	carried := espBytes(cli)
	host := sel[topology.Server].String()
	if err := cli.WaitTCP(ctx, net.JoinHostPort(host, strconv.Itoa(SSHPort)), nil); err != nil {
		return nil, fmt.Errorf("ipsec: sshd through ESP: %w", err)
	}
	// The handshake just made must have crossed the SAs: else the
	// policies do not hold the path and the rows would measure the bare
	// network.
	if n, err := carried(); err != nil || n == 0 {
		return nil, fmt.Errorf("ipsec: the client's SAs carried %d bytes of the SSH handshake (%v): the traffic bypassed ESP", n, err)
	}
	label := fmt.Sprintf("SSH over IPsec (manual SAs, %s, %s, %d SAs per side)", t.mode(), held, len(sas))
	if tb.Logf != nil {
		tb.Logf("%s: SPIs %#x (client → server), %#x (server → client)", label, sas[0].SPI, sas[1].SPI)
	}
	return &Path{
		Target: DirectTarget(host),
		Facts: results.Facts{
			{Key: "ipsec", Value: fmt.Sprintf("kernel ESP (xfrm), manual SAs, %s mode, %s", t.mode(), held)},
		},
		Label:    label,
		InKernel: "kernel ESP (xfrm), manual SAs",
		Carried:  carried,
		Close:    u.close,
	}, nil
}

// randomSPI draws an SPI above the range RFC 4303 reserves (0–255).
func randomSPI() (int, error) {
	var b [4]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, err
		}
		if spi := binary.BigEndian.Uint32(b[:]) &^ (1 << 31); spi > 255 {
			return int(spi), nil // below 2^31: an int on every platform
		}
	}
}

package topology

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// A role on a host's interface is a machine of its own on that network,
// and its daemons (sshd, iperf3 -s and netserver as root without
// authentication, the tunnels' servers) listen on every address. The
// host's firewall does not apply inside a new namespace, so the role's
// namespace gets its own: what arrives on any of its links but loopback
// and the tunnels' devices (the role's link, and an edge's wan0 and wire0,
// whenever they are made) is accepted only on the role's link and only
// from the run's own peers' addresses. The namespace carries no IPv6
// (NewNS): a router advertisement would give the role an address nobody
// chose, and a link-local address would be one outside the fence.

// FenceTable is the nftables table, inet family, that fences a role's
// link; it lives and dies with the role's namespace.
const FenceTable = "twnsbench-fence"

// metaKeySecpath is NFT_META_SECPATH (not in x/sys): the packet was
// decrypted by IPsec. An ESP tunnel's inner packets re-enter on the role's
// link with the inner addresses as their source; the ESP itself came from
// a peer.
const metaKeySecpath expr.MetaKey = 25

// fence puts the role's namespace n behind a rule set that lets through,
// of what arrives on a link that is not loopback nor a tunnel's (an L3
// device: ARPHRD_NONE), only IPv4 from peers on the role's link (and what
// IPsec decrypted there). It matches links by type, not by name, so a
// link made later is fenced as it appears. The rule set filters both what
// the role receives and what it forwards (a relay).
func fence(n *ns.NS, peers []netip.Addr) error {
	c, err := nftables.New(nftables.WithNetNSFd(n.FD()))
	if err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: FenceTable})
	set := &nftables.Set{Table: t, Name: "peers", KeyType: nftables.TypeIPAddr}
	var elems []nftables.SetElement
	for _, p := range sortedAddrs(peers) {
		elems = append(elems, nftables.SetElement{Key: p.AsSlice()})
	}
	if err := c.AddSet(set, elems); err != nil {
		return fmt.Errorf("fence: peers set: %w", err)
	}
	accept := nftables.ChainPolicyAccept
	for _, hook := range []*nftables.ChainHook{nftables.ChainHookInput, nftables.ChainHookForward} {
		ch := c.AddChain(&nftables.Chain{Table: t, Name: hookName(hook), Type: nftables.ChainTypeFilter,
			Hooknum: hook, Priority: nftables.ChainPriorityFilter, Policy: &accept})
		fromPeer := slices.Concat(fenced(), onRoleLink(), []expr.Any{
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{nfprotoIPv4}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID},
			&expr.Verdict{Kind: expr.VerdictAccept}})
		decrypted := slices.Concat(fenced(), onRoleLink(), []expr.Any{
			&expr.Meta{Key: metaKeySecpath, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{1}},
			&expr.Verdict{Kind: expr.VerdictAccept}})
		rest := append(fenced(), &expr.Verdict{Kind: expr.VerdictDrop})
		for _, e := range [][]expr.Any{fromPeer, decrypted, rest} {
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: e})
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("fence: nftables: %w", err)
	}
	return nil
}

const nfprotoIPv4 = 2 // NFPROTO_IPV4

// fenced matches a packet that came in on a link other than loopback and
// the tunnels' devices (wg, tun: ARPHRD_NONE), by the link's type.
func fenced() []expr.Any {
	typ := func(t uint16) []byte { return binaryutil.NativeEndian.PutUint16(t) } // meta iiftype: host order
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFTYPE, Register: 1},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: typ(unix.ARPHRD_LOOPBACK)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: typ(unix.ARPHRD_NONE)},
	}
}

// onRoleLink matches a packet that came in on the role's link.
func onRoleLink() []expr.Any {
	name := make([]byte, 16) // IFNAMSIZ, NUL-padded as the kernel compares it
	copy(name, RoleLink)
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name},
	}
}

func hookName(h *nftables.ChainHook) string {
	if *h == *nftables.ChainHookForward {
		return "forward"
	}
	return "input"
}

func sortedAddrs(as []netip.Addr) []netip.Addr {
	out := append([]netip.Addr(nil), as...)
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// NewNS makes a namespace of the run with IPv6 off in it from its birth
// (conf/all and conf/default, before any link is made or moved in): no
// link it ever holds gets a link-local address or an address from a
// router advertisement. Every address of a run is IPv4. Loopback alone
// keeps ::1, which nothing outside the namespace reaches and programs
// expect (sshuttle binds its listener there and exits without it). The
// host's own sysctls are not touched: these are the new namespace's.
func NewNS(name string) (*ns.NS, error) {
	n, err := ns.Create(name)
	if err != nil {
		return nil, err
	}
	err = n.Do(func() error {
		if _, err := os.Stat("/proc/sys/net/ipv6"); os.IsNotExist(err) {
			return nil // a kernel without IPv6: nothing to turn off
		}
		for _, c := range []struct{ conf, v string }{{"all", "1"}, {"default", "1"}, {"lo", "0"}} {
			p := filepath.Join("/proc/sys/net/ipv6/conf", c.conf, "disable_ipv6")
			if err := os.WriteFile(p, []byte(c.v), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("netns %s: disable IPv6: %w", name, err), n.Close(), ns.Delete(name))
	}
	return n, nil
}

package topology

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/twnsbench/twnsbench/nsbench/ns"
)

// A role on a host's interface is a machine of its own on that network,
// and its daemons (sshd, iperf3 -s and netserver as root without
// authentication, the tunnels' servers) listen on every address. The
// host's firewall does not apply inside a new namespace, so the role's
// namespace gets its own: what arrives on the role's link is accepted
// only from the run's own peers' addresses, and the link carries no IPv6
// (a router advertisement would give the role an address nobody chose).

// FenceTable is the nftables table, inet family, that fences a role's
// link; it lives and dies with the role's namespace.
const FenceTable = "twnsbench-fence"

// metaKeySecpath is NFT_META_SECPATH (not in x/sys): the packet was
// decrypted by IPsec. An ESP tunnel's inner packets re-enter on the role's
// link with the inner addresses as their source; the ESP itself came from
// a peer.
const metaKeySecpath expr.MetaKey = 25

// fence puts the role's link behind a rule set in namespace n that lets
// through, on the link, only IPv4 from peers (and what IPsec decrypted);
// loopback and the tunnels' own devices are not touched. The rule set
// filters both what the role receives and what it forwards (a relay).
func fence(n *ns.NS, peers []netip.Addr) error {
	c, err := nftables.New(nftables.WithNetNSFd(n.FD()))
	if err != nil {
		return fmt.Errorf("fence %s: %w", RoleLink, err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: FenceTable})
	set := &nftables.Set{Table: t, Name: "peers", KeyType: nftables.TypeIPAddr}
	var elems []nftables.SetElement
	for _, p := range sortedAddrs(peers) {
		elems = append(elems, nftables.SetElement{Key: p.AsSlice()})
	}
	if err := c.AddSet(set, elems); err != nil {
		return fmt.Errorf("fence %s: peers set: %w", RoleLink, err)
	}
	accept := nftables.ChainPolicyAccept
	for _, hook := range []*nftables.ChainHook{nftables.ChainHookInput, nftables.ChainHookForward} {
		ch := c.AddChain(&nftables.Chain{Table: t, Name: hookName(hook), Type: nftables.ChainTypeFilter,
			Hooknum: hook, Priority: nftables.ChainPriorityFilter, Policy: &accept})
		fromPeer := append(onRoleLink(),
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{nfprotoIPv4}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID},
			&expr.Verdict{Kind: expr.VerdictAccept})
		decrypted := append(onRoleLink(),
			&expr.Meta{Key: metaKeySecpath, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{1}},
			&expr.Verdict{Kind: expr.VerdictAccept})
		rest := append(onRoleLink(), &expr.Verdict{Kind: expr.VerdictDrop})
		for _, e := range [][]expr.Any{fromPeer, decrypted, rest} {
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: e})
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("fence %s: nftables: %w", RoleLink, err)
	}
	return nil
}

const nfprotoIPv4 = 2 // NFPROTO_IPV4

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

// noIPv6 turns IPv6 off on the role's link before it comes up: no
// link-local address, no address from a router advertisement. Every
// address of a run across hosts is IPv4.
func noIPv6(n *ns.NS) error {
	return n.Do(func() error {
		p := filepath.Join("/proc/sys/net/ipv6/conf", RoleLink, "disable_ipv6")
		if _, err := os.Stat(filepath.Dir(p)); os.IsNotExist(err) {
			return nil // a kernel without IPv6: nothing to turn off
		}
		if err := os.WriteFile(p, []byte("1"), 0o644); err != nil {
			return fmt.Errorf("disable IPv6 on %s: %w", RoleLink, err)
		}
		return nil
	})
}

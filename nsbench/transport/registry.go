package transport

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Option is a setting of one transport, offered as a flag of `run`
// (--Name). Option names are unique across all transports, but for an
// option two transports share word for word (openvpn-static's and
// openvpn-tls's --openvpn): one flag sets both.
type Option struct {
	Name  string
	Usage string
	Value string // the default
	File  bool   // the value is a path
	// Roles, for a program (File), are the roles that run it: across
	// hosts a build's program is copied to those roles' hosts only.
	Roles []string
}

// same reports whether o and x are the same option word for word.
func (o Option) same(x Option) bool {
	return o.Name == x.Name && o.Usage == x.Usage && o.Value == x.Value && o.File == x.File && slices.Equal(o.Roles, x.Roles)
}

// Spec registers one transport: everything the CLI, the orchestrator and
// the reports need to know of it. Nothing outside the transport's own file
// names it.
type Spec struct {
	// Name is the --transports word and the results' transport id.
	Name string
	// Summary says in one line what the transport is and what it needs
	// (run --help, doctor).
	Summary string
	// InDefault puts the transport in the default set, "every transport
	// available here"; the others run when named.
	InDefault bool
	// Plain marks the path without a tunnel (the instruments straight to
	// the server): the baseline the report sets every tunnel against.
	Plain bool
	// Sets are the named groups (--transports seed-002) the transport
	// belongs to, every variant of it.
	Sets    []string
	Options []Option
	// Variants are the settings one transport can be measured with (cipher
	// suites, modes), named in --transports as NAME:VARIANT; the first is
	// the default. Each variant is a row of its own.
	Variants []string
	// Holds names what a path of the transport holds that no other path
	// may hold at the same time (inner addresses, ports, device names):
	// rows that share a word are never up together, and an interleaved
	// run measures them in separate rounds. Every variant holds its
	// transport's; empty means the transport's name alone. A path that
	// takes every packet between the namespaces (transport-mode IPsec
	// policies on the veth addresses) holds HoldsEveryPacket: it is up
	// with no other path.
	Holds []string
	// New builds the transport. An error is bad input: the run is refused
	// before anything is created.
	New func(c Config) (Transport, error)
	// CleanLeftovers, when set, removes what the transport's paths of the
	// run named run left outside the run's namespaces, cgroups and private
	// directory when the run died (wireguard-go's control sockets), once
	// its processes are dead, and says what it removed ("socket PATH").
	// `twnsbench clean` calls it for every registered transport (package
	// residue finds those leftovers itself).
	CleanLeftovers func(run string) ([]string, error)
}

// Config is what a transport is built from.
type Config struct {
	// Options are its options' values by name, every one present (defaults
	// filled in).
	Options map[string]string
	// Variant is the chosen variant ("" for a transport without any).
	Variant string
	// Build is the build's label of a row NAME@LABEL, "" for another: a
	// transport that keeps state in its roles' directories keeps each
	// build's apart.
	Build string
}

// RowName is the results' transport id of a variant: the transport's name
// for its default variant, NAME:VARIANT for the others.
func (s Spec) RowName(variant string) string {
	if variant == "" || len(s.Variants) > 0 && variant == s.Variants[0] {
		return s.Name
	}
	return s.Name + ":" + variant
}

var (
	registryMu sync.Mutex
	registry   []Spec
)

// The built-in transports, in the reports' order: the one place that
// lists them.
func init() {
	for _, s := range []Spec{sshSpec, wireguardSpec, wireguardKernelSpec, wireguardGoSpec, twSpec, sshTunSpec, openVPNStaticSpec, openVPNTLSSpec, strongSwanSpec, strongSwanKernelSpec, sshuttleSpec, ipsecSpec, ipsecTunnelSpec, libreswanSpec} {
		Register(s)
	}
}

// Register adds a transport after those registered before it. It panics on
// a spec that is incomplete or clashes with a registered one: that is a
// programming error, found by any test that imports the package.
func Register(s Spec) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if s.Name == "" || s.New == nil {
		panic(fmt.Sprintf("transport.Register: spec %q needs a Name and New", s.Name))
	}
	for _, r := range registry {
		if r.Name == s.Name {
			panic(fmt.Sprintf("transport.Register: %q registered twice", s.Name))
		}
		for _, o := range s.Options {
			if slices.ContainsFunc(r.Options, func(x Option) bool { return x.Name == o.Name && !x.same(o) }) {
				panic(fmt.Sprintf("transport.Register: %q: option --%s is %q's already", s.Name, o.Name, r.Name))
			}
		}
	}
	registry = append(registry, s)
}

// Registered returns every registered transport, in order.
func Registered() []Spec {
	registryMu.Lock()
	defer registryMu.Unlock()
	return slices.Clone(registry)
}

// SpecOf finds the spec of a row name (NAME, NAME:VARIANT, either with
// @LABEL).
func SpecOf(row string) (Spec, bool) {
	row, _, _ = SplitBuild(row)
	name, _, _ := strings.Cut(row, ":")
	return Lookup(name)
}

// ikePorts is what every IKE daemon holds in its namespace: UDP 500 and
// 4500, so strongSwan's and Libreswan's rows are never up together.
const ikePorts = "IKE udp/500 and 4500"

// HoldsEveryPacket, among a Spec's Holds, is a path that takes every
// packet between client and server, other tunnels' included: no other
// path is up with it.
const HoldsEveryPacket = "every packet between the namespaces"

// Coexist reports whether the paths of rows a and b (NAME or
// NAME:VARIANT) can be up at the same time. Unregistered rows (tests)
// coexist with any other.
func Coexist(a, b string) bool {
	sa, okA := SpecOf(a)
	sb, okB := SpecOf(b)
	if !okA || !okB {
		return true
	}
	if slices.Contains(sa.Holds, HoldsEveryPacket) || slices.Contains(sb.Holds, HoldsEveryPacket) {
		return false
	}
	for _, h := range sa.holds() {
		if slices.Contains(sb.holds(), h) {
			return false
		}
	}
	return true
}

func (s Spec) holds() []string {
	if len(s.Holds) == 0 {
		return []string{s.Name}
	}
	return s.Holds
}

// Options are every registered transport's options, each once, in order.
func Options() []Option {
	var out []Option
	for _, s := range Registered() {
		for _, o := range s.Options {
			if !slices.ContainsFunc(out, o.same) {
				out = append(out, o)
			}
		}
	}
	return out
}

// Lookup finds a registered transport by name.
func Lookup(name string) (Spec, bool) {
	for _, s := range Registered() {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Names lists the registered transports' names, in order.
func Names() []string {
	var names []string
	for _, s := range Registered() {
		names = append(names, s.Name)
	}
	return names
}

// DefaultNames lists the transports of the default set, in order.
func DefaultNames() []string {
	var names []string
	for _, s := range Registered() {
		if s.InDefault {
			names = append(names, s.Name)
		}
	}
	return names
}

// SetNames lists the named sets, in order of first appearance.
func SetNames() []string {
	var sets []string
	for _, s := range Registered() {
		for _, set := range s.Sets {
			if !slices.Contains(sets, set) {
				sets = append(sets, set)
			}
		}
	}
	return sets
}

// expandSets replaces each set's name by its members, every variant of
// each, in registration order; a row named twice is built once.
func expandSets(names []string) []string {
	var out []string
	add := func(n string) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, n := range names {
		if !slices.Contains(SetNames(), n) {
			add(n)
			continue
		}
		for _, s := range Registered() {
			if !slices.Contains(s.Sets, n) {
				continue
			}
			if len(s.Variants) == 0 {
				add(s.Name)
			}
			for _, v := range s.Variants {
				add(s.RowName(v))
			}
		}
	}
	return out
}

// Build makes the named transports and sets (the default set when names
// is empty) from the options' values; a missing value takes the option's
// default.
func Build(names []string, values map[string]string) ([]Transport, error) {
	return BuildWith(names, values, nil)
}

// BuildWith is Build with builds: a row NAME@LABEL is the transport made
// with the programs defs gives LABEL over the options' values, as a
// *Built (CheckBuilds has checked words and defs).
func BuildWith(names []string, values map[string]string, defs []BuildDef) ([]Transport, error) {
	if len(names) == 0 {
		names = DefaultNames()
	}
	var ts []Transport
	for _, n := range expandSets(names) {
		row, label, at := SplitBuild(n)
		name, variant, _ := strings.Cut(row, ":")
		s, ok := Lookup(name)
		if !ok {
			return nil, fmt.Errorf("unknown transport %q (known: %v; sets: %v)", name, Names(), SetNames())
		}
		switch {
		case variant != "" && !slices.Contains(s.Variants, variant):
			if len(s.Variants) == 0 {
				return nil, fmt.Errorf("transport %s has no variants (%q given)", name, variant)
			}
			return nil, fmt.Errorf("transport %s: unknown variant %q (known: %s)", name, variant, strings.Join(s.Variants, ", "))
		case variant == "" && len(s.Variants) > 0:
			variant = s.Variants[0]
		}
		opts := map[string]string{}
		for _, o := range s.Options {
			opts[o.Name] = o.Value
			if v, ok := values[o.Name]; ok {
				opts[o.Name] = v
			}
		}
		var mine []BuildDef
		for _, d := range defs {
			if at && d.Label == label {
				opts[d.Option] = d.Path
				mine = append(mine, d)
			}
		}
		t, err := s.New(Config{Options: opts, Variant: variant, Build: label})
		if err != nil {
			return nil, err
		}
		if at {
			if t, err = newBuilt(t, label, mine); err != nil {
				return nil, err
			}
		}
		ts = append(ts, t)
	}
	return ts, nil
}

package transport

import (
	"context"
	"crypto/x509"
	"path/filepath"

	"github.com/twnsbench/twnsbench/nsbench/pki"
	"github.com/twnsbench/twnsbench/nsbench/role"
)

// openVPNPKI is the paths of a per-run CA and the server's and client's
// certificates and keys, PEM-encoded, each on its role's host.
type openVPNPKI struct {
	Server, Client ovpnCreds
}

// ovpnCreds are one side's files: the CA it trusts, its certificate and
// its key.
type ovpnCreds struct{ CA, Cert, Key string }

// writeOpenVPNPKI makes a CA and two EC P-256 leaf certificates in sub of
// each role's directory, once per run: a run's later conditions reuse
// them. The server role gets the CA and its own certificate and key, the
// client role the same of its own. --remote-cert-tls wants keyUsage
// digitalSignature and keyAgreement on the leaves (else "VERIFY KU ERROR")
// and the matching extended key usage.
func writeOpenVPNPKI(ctx context.Context, sub string, srv, cli *role.Role) (openVPNPKI, error) {
	in := func(r *role.Role, name string) string { return filepath.Join(r.Dir(), sub, name) }
	p := openVPNPKI{
		Server: ovpnCreds{CA: in(srv, "ca.pem"), Cert: in(srv, "server.pem"), Key: in(srv, "server.key")},
		Client: ovpnCreds{CA: in(cli, "ca.pem"), Cert: in(cli, "client.pem"), Key: in(cli, "client.key")},
	}
	if _, err := role.ReadFile(ctx, cli, p.Client.Key); err == nil {
		return p, nil // written last: the set is complete
	}
	usage := x509.KeyUsageDigitalSignature | x509.KeyUsageKeyAgreement
	return p, generate(ctx, sub, func(scratch string) error {
		at := func(name string) string { return filepath.Join(scratch, name) }
		ca, err := pki.NewCA("twnsbench run CA")
		if err != nil {
			return err
		}
		if err := ca.WriteCert(at("ca.pem")); err != nil {
			return err
		}
		if err := ca.Issue(pki.Leaf{CommonName: "twnsbench server", KeyUsage: usage,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, at("server.pem"), at("server.key")); err != nil {
			return err
		}
		return ca.Issue(pki.Leaf{CommonName: "twnsbench client", KeyUsage: usage,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, at("client.pem"), at("client.key"))
	},
		placement{srv, []string{"ca.pem", "server.pem", "server.key"}},
		placement{cli, []string{"ca.pem", "client.pem", "client.key"}})
}

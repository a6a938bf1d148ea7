package transport

import (
	"crypto/x509"
	"path/filepath"

	"github.com/twnsbench/twnsbench/nsbench/pki"
	"github.com/twnsbench/twnsbench/nsbench/role"
)

// openVPNPKI is the paths of a per-run CA and the server's and client's
// certificates and keys, PEM-encoded.
type openVPNPKI struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// writeOpenVPNPKI makes a CA and two EC P-256 leaf certificates in dir,
// once per run: a run's later conditions reuse them. The server role gets
// the CA and its own certificate and key, the client role the same of its
// own. --remote-cert-tls wants keyUsage digitalSignature and keyAgreement
// on the leaves (else "VERIFY KU ERROR") and the matching extended key
// usage.
func writeOpenVPNPKI(dir string, srv, cli *role.Role) (openVPNPKI, error) {
	p := openVPNPKI{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client.key"),
	}
	if _, err := cli.ReadFile(p.ClientKey); err == nil {
		return p, nil // written last: the set is complete
	}
	usage := x509.KeyUsageDigitalSignature | x509.KeyUsageKeyAgreement
	return p, generate(dir, func(scratch string) error {
		at := func(path string) string { return filepath.Join(scratch, filepath.Base(path)) }
		ca, err := pki.NewCA("twnsbench run CA")
		if err != nil {
			return err
		}
		if err := ca.WriteCert(at(p.CA)); err != nil {
			return err
		}
		if err := ca.Issue(pki.Leaf{CommonName: "twnsbench server", KeyUsage: usage,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, at(p.ServerCert), at(p.ServerKey)); err != nil {
			return err
		}
		return ca.Issue(pki.Leaf{CommonName: "twnsbench client", KeyUsage: usage,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, at(p.ClientCert), at(p.ClientKey))
	},
		placement{srv, []string{"ca.pem", "server.pem", "server.key"}},
		placement{cli, []string{"ca.pem", "client.pem", "client.key"}})
}

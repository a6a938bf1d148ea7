package transport

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"

	"github.com/twnsbench/twnsbench/nsbench/pki"
)

// openVPNPKI is the paths of a per-run CA and the server's and client's
// certificates and keys, PEM-encoded.
type openVPNPKI struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// writeOpenVPNPKI makes a CA and two EC P-256 leaf certificates in dir,
// once per run: a run's later conditions reuse them. --remote-cert-tls
// wants keyUsage digitalSignature and keyAgreement on the leaves (else
// "VERIFY KU ERROR") and the matching extended key usage.
func writeOpenVPNPKI(dir string) (openVPNPKI, error) {
	p := openVPNPKI{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client.key"),
	}
	if _, err := os.Stat(p.ClientKey); err == nil {
		return p, nil // written last: the set is complete
	} else if !errors.Is(err, os.ErrNotExist) {
		return p, err
	}
	ca, err := pki.NewCA("twnsbench run CA")
	if err != nil {
		return p, err
	}
	if err := ca.WriteCert(p.CA); err != nil {
		return p, err
	}
	usage := x509.KeyUsageDigitalSignature | x509.KeyUsageKeyAgreement
	if err := ca.Issue(pki.Leaf{CommonName: "twnsbench server", KeyUsage: usage,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, p.ServerCert, p.ServerKey); err != nil {
		return p, err
	}
	return p, ca.Issue(pki.Leaf{CommonName: "twnsbench client", KeyUsage: usage,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, p.ClientCert, p.ClientKey)
}

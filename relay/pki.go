package relay

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	"github.com/twnsbench/twnsbench/nsbench/pki"
)

// PKI is the run's TLS trust: a CA made for this run only and the relay's
// leaf certificate signed by it. tw's processes trust the CA through
// SSL_CERT_FILE; nothing is added to the host's trust store. The CA's
// private key is never written to disk.
type PKI struct {
	CACert   string // PEM file of the CA; also the bundle for SSL_CERT_FILE
	LeafCert string // PEM file of the relay's certificate
	LeafKey  string // PEM file of its ECDSA P-256 key
}

// NewPKI writes a fresh CA and a leaf for host into dir.
func NewPKI(dir, host string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("relay pki: %w", err)
	}
	p := &PKI{
		CACert:   filepath.Join(dir, "ca.crt"),
		LeafCert: filepath.Join(dir, "relay.crt"),
		LeafKey:  filepath.Join(dir, "relay.key"),
	}
	ca, err := pki.NewCA("twnsbench run CA")
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	if err := ca.WriteCert(p.CACert); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	leaf := pki.Leaf{CommonName: host, DNSNames: []string{host},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if err := ca.Issue(leaf, p.LeafCert, p.LeafKey); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	return p, nil
}

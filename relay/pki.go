package relay

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

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

// NewHostKey makes an ed25519 host key for the relay's sshd, in OpenSSH's
// private key format (what ssh-keygen writes), in memory: the caller
// keeps it for the run and Start writes it on the relay's host.
func NewHostKey() ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("relay host key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "twnsbench relay")
	if err != nil {
		return nil, fmt.Errorf("relay host key: %w", err)
	}
	return pem.EncodeToMemory(block), nil
}

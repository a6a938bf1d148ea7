package relay

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
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

// certLifetime covers any run; the certificates die with the run directory.
const certLifetime = 7 * 24 * time.Hour

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
	now := time.Now().Add(-time.Hour) // tolerate a little clock skew between tools
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("relay pki: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "twnsbench run CA", Organization: []string{"twnsbench"}},
		NotBefore:             now,
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("relay pki: sign CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("relay pki: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("relay pki: leaf key: %w", err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now,
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("relay pki: sign leaf for %s: %w", host, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(leafKey)
	if err != nil {
		return nil, fmt.Errorf("relay pki: %w", err)
	}
	for _, f := range []struct {
		path, kind string
		der        []byte
		mode       os.FileMode
	}{
		{p.CACert, "CERTIFICATE", caDER, 0o644},
		{p.LeafCert, "CERTIFICATE", leafDER, 0o644},
		{p.LeafKey, "EC PRIVATE KEY", keyDER, 0o600},
	} {
		b := pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der})
		if err := os.WriteFile(f.path, b, f.mode); err != nil {
			return nil, fmt.Errorf("relay pki: %w", err)
		}
	}
	return p, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return n
}

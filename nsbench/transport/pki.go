package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
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
		return p, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return p, err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return p, err
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "twnsbench run CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return p, fmt.Errorf("CA: %w", err)
	}
	if err := writePEM(p.CA, "CERTIFICATE", caDER); err != nil {
		return p, err
	}
	for i, leaf := range []struct {
		name, cert, key string
		usage           x509.ExtKeyUsage
	}{
		{"server", p.ServerCert, p.ServerKey, x509.ExtKeyUsageServerAuth},
		{"client", p.ClientCert, p.ClientKey, x509.ExtKeyUsageClientAuth},
	} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return p, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: "twnsbench " + leaf.name},
			NotBefore: ca.NotBefore, NotAfter: ca.NotAfter,
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyAgreement,
			ExtKeyUsage: []x509.ExtKeyUsage{leaf.usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return p, fmt.Errorf("%s: %w", leaf.name, err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return p, fmt.Errorf("%s: %w", leaf.name, err)
		}
		if err := writePEM(leaf.cert, "CERTIFICATE", der); err != nil {
			return p, err
		}
		if err := writePEM(leaf.key, "PRIVATE KEY", keyDER); err != nil {
			return p, err
		}
	}
	return p, nil
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

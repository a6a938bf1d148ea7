package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// TestIssueVerifies: a leaf chains to its CA with the usages asked for,
// and its key file pairs with its certificate.
func TestIssueVerifies(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	caPath, cert, key := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "c.pem"), filepath.Join(dir, "c.key")
	if err := ca.WriteCert(caPath); err != nil {
		t.Fatal(err)
	}
	leaf := Leaf{CommonName: "client", KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyAgreement,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if err := ca.Issue(leaf, cert, key); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatalf("key and certificate do not pair: %v", err)
	}
	c, _ := x509.ParseCertificate(pair.Certificate[0])
	caPEM, _ := os.ReadFile(caPath)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA file holds no certificate")
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("leaf does not verify against its CA as a client: %v", err)
	}
	if c.KeyUsage != leaf.KeyUsage || c.Subject.CommonName != "client" {
		t.Errorf("key usage %v, CN %q", c.KeyUsage, c.Subject.CommonName)
	}
	if fi, _ := os.Stat(key); fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(key); func() string { p, _ := pem.Decode(b); return p.Type }() != "EC PRIVATE KEY" {
		t.Error("key is not SEC 1 PEM")
	}
}

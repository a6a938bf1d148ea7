// Package rpm is the Responsiveness Test of draft-ietf-ippm-responsiveness
// ("Responsiveness under Working Conditions"): a Responsiveness Test
// Server answering the draft's four URLs over HTTP/2 and TLS 1.3, and a
// client that puts the path into working conditions with load-generating
// connections (HTTP/2 downloads of an endless object and uploads to a
// sink), sends foreign probes (a new connection each: TCP handshake, TLS
// handshake and an HTTP GET of the 1-byte object, each timed) and self
// probes (the same GET multiplexed on a load-generating connection), stops
// by the draft's stability rule or at its time limit, and prints its
// Report as JSON: responsiveness in round trips per minute (RPM). Both are
// hidden subcommands of the twnsbench binary, run in the server and client
// roles. Only Go's standard library is used (net/http's HTTP/2, crypto/tls).
package rpm

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/twnsbench/twnsbench/nsbench/proc"
)

const (
	// ServerArg and ClientArg are the hidden subcommands.
	ServerArg = "rpm-server"
	ClientArg = "rpm-client"
	// The server's URLs: the draft's .well-known configuration and its
	// three test URLs.
	ConfigPath = "/.well-known/nq"
	SmallPath  = "/small"
	LargePath  = "/large"
	UploadPath = "/upload"
	// ServerName is the name in the server's self-signed certificate and
	// the SNI the client sends; the client does not verify the
	// certificate (it is made afresh at every start, in memory).
	ServerName = "rpm.twnsbench.test"
	// chunk is what the large object's handler writes at a time.
	chunk = 64 << 10
)

// MaybeRun runs the server or the client and exits when this process was
// started as one (os.Args[1] is ServerArg or ClientArg); otherwise it
// returns at once. Test binaries call it first thing in TestMain.
func MaybeRun() {
	proc.MaybeRunHidden(ServerArg, ServerMain)
	proc.MaybeRunHidden(ClientArg, ClientMain)
}

// ServerMain is the server's command line: --listen HOST:PORT. It answers
// until ctx ends.
var ServerMain = proc.ListenMain(ServerArg, " (HTTP/2 over TLS 1.3)", Serve)

// Serve answers HTTP/2 over TLS 1.3 on l until ctx ends, then closes l.
// Go's HTTP/2 server answers the client's HTTP/2 PINGs itself.
func Serve(ctx context.Context, l net.Listener) error {
	cert, err := selfSigned()
	if err != nil {
		l.Close()
		return fmt.Errorf("make the certificate: %w", err)
	}
	srv := &http.Server{
		Handler:           Handler(),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13},
		ReadHeaderTimeout: 10 * time.Second,
	}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	err = srv.ServeTLS(l, "", "")
	if errors.Is(err, http.ErrServerClosed) || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("serve: %w", err)
}

// Handler answers the draft's four URLs.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+ConfigPath, func(w http.ResponseWriter, r *http.Request) {
		base := "https://" + r.Host
		w.Header().Set("Content-Type", "application/json")
		u := URLs{Large: base + LargePath, Small: base + SmallPath, Upload: base + UploadPath}
		u.AppleLarge, u.AppleSmall, u.AppleUpload = u.Large, u.Small, u.Upload
		json.NewEncoder(w).Encode(Config{Version: 1, URLs: u})
	})
	mux.HandleFunc("GET "+SmallPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", "1")
		w.Write([]byte{'x'})
	})
	// The large object has no end: the client cancels it.
	mux.HandleFunc("GET "+LargePath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		buf := make([]byte, chunk)
		for r.Context().Err() == nil {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("POST "+UploadPath, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, strconv.FormatInt(n, 10))
	})
	return mux
}

// Config is the .well-known configuration object (version 1).
type Config struct {
	Version int    `json:"version"`
	URLs    URLs   `json:"urls"`
	Test    string `json:"test_endpoint,omitempty"`
}

// URLs are the configuration's three test URLs, under the draft's names
// and again under the names Apple's servers use, which Apple's
// networkQuality and goresponsiveness read (clients ignore names they do
// not know, as the draft requires).
type URLs struct {
	Large       string `json:"large_download_url"`
	Small       string `json:"small_download_url"`
	Upload      string `json:"upload_url"`
	AppleLarge  string `json:"large_https_download_url,omitempty"`
	AppleSmall  string `json:"small_https_download_url,omitempty"`
	AppleUpload string `json:"https_upload_url,omitempty"`
}

// selfSigned is an ECDSA P-256 certificate for ServerName, valid for a day.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: ServerName},
		DNSNames:     []string{ServerName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

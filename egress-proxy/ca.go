package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"os"
	"sync"
	"time"

	// The image is a static binary alone, with no system store: the Mozilla roots compiled in are what the proxy
	// trusts of the hosts it adds credentials for, unless the system has roots or upstreamRootsFile names some.
	_ "golang.org/x/crypto/x509roots/fallback"
)

// The install-local CA (D18): on a connection the proxy adds a credential to, it shows the tool a certificate for
// exactly the CONNECT host, signed by this CA, which the tool pods of profiles with credentials trust. Its private key
// is in the proxy alone (a file mounted from a Secret the proxy alone reads). Leaves are ECDSA P-256, valid for a day,
// minted only for hosts that have a credential (so at most one a host), and kept until an hour before they expire.

const (
	leafValidity = 24 * time.Hour
	leafRenewal  = time.Hour // a leaf is replaced once it has less left than this
	clockSkew    = 5 * time.Minute
)

type authority struct {
	cert   *x509.Certificate
	key    crypto.Signer
	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

func loadAuthority(files CAFiles) (*authority, error) {
	pair, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("the CA: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("the CA: %w", err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New("the CA's certificate is not a CA's (basicConstraints CA, keyUsage certSign)")
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("the CA's key cannot sign")
	}
	return &authority{cert: cert, key: key, leaves: map[string]*tls.Certificate{}}, nil
}

// leaf is the certificate for host, minted or kept.
func (a *authority) leaf(host string) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if l, ok := a.leaves[host]; ok && now.Add(leafRenewal).Before(l.Leaf.NotAfter) {
		return l, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(leafValidity)
	if notAfter.After(a.cert.NotAfter) {
		notAfter = a.cert.NotAfter
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, err
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	l := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: parsed}
	a.leaves[host] = l
	return l, nil
}

// serverConfig is the TLS the proxy speaks to a tool for host: the certificate is host's whatever name the tool's
// ClientHello gives (the tunnel guard has already refused one whose SNI is not host), and the only application
// protocol is HTTP/1.1: a client offering h2 alone fails the handshake, one offering h2 and http/1.1 gets http/1.1,
// so no HTTP/2 frame (several streams, each its own :authority) ever reaches the proxy's request loop.
func (a *authority) serverConfig(host string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return a.leaf(host)
		},
	}
}

// loadRoots is the pool the proxy verifies the hosts it adds credentials for with: nil (the system's, or the
// compiled-in Mozilla roots) unless a file is named.
func loadRoots(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: no PEM certificate", file)
	}
	return pool, nil
}

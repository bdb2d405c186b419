package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// The proxy adding credentials, on loopback with real sockets and real TLS: two CAs made for the test, the install
// CA (the proxy's: the tools trust it) and a "public" one (the upstream's certificates: the proxy trusts it through
// upstreamRootsFile, as it trusts the Mozilla roots in a cluster); a keyed upstream on 127.0.0.1 serving allowed.test
// and other.test (both resolve to it, as two names on one CDN address would), which answers 200 only with the right
// key and echoes what it got; tool pods as loopback source addresses with a project each.

const (
	secretA = "sk-team-a-0123456789abcdef" // team-a's key for allowed.test, Authorization: Bearer
	secretC = "kc-team-c-fedcba9876543210" // team-c's key for allowed.test, x-api-key
)

var injectProjects = fakeProjects{"127.0.0.2": "team-a", "127.0.0.3": "team-b", "127.0.0.4": "team-c"}

// seenRequest is what the upstream received: the name the proxy's TLS gave, the Host, the path, and every value of a
// header that names a credential (any case, '_' or '-').
type seenRequest struct {
	sni, host, path string
	credentials     []string
}

type injectFixture struct {
	proxy       *Proxy
	ports       map[string]int // profile → proxy port
	upPort      int
	installCA   *x509.Certificate
	publicCA    *x509.Certificate
	files       string // the credentials' files
	logs        *syncBuffer
	mu          sync.Mutex
	seen        []seenRequest
	upstreamLog *syncBuffer
}

func (f *injectFixture) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// writeCA makes a CA and writes its certificate and key as PEM files in dir.
func writeCA(t testing.TB, dir, name string) (CAFiles, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	files := CAFiles{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	if err := os.WriteFile(files.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return files, cert
}

// startInjecting: profile weather (allowed.test and other.test; team-a's and team-c's keys for allowed.test) and
// profile nokey (allowed.test, no credential).
func startInjecting(t testing.TB) *injectFixture {
	t.Helper()
	dir := t.TempDir()
	f := &injectFixture{ports: map[string]int{}, files: dir, logs: &syncBuffer{}, upstreamLog: &syncBuffer{}}
	installFiles, installCA := writeCA(t, dir, "install-ca")
	publicFiles, publicCA := writeCA(t, dir, "public-ca")
	f.installCA, f.publicCA = installCA, publicCA
	public, err := loadAuthority(publicFiles)
	if err != nil {
		t.Fatal(err)
	}
	for file, value := range map[string]string{"weather-team-a": secretA + "\n", "weather-team-c": secretC} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	upstream := httptest.NewUnstartedServer(http.HandlerFunc(f.serveUpstream))
	upstream.TLS = &tls.Config{GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		return public.leaf(hello.ServerName)
	}}
	upstream.Config.IdleTimeout = 300 * time.Millisecond // closes kept-alive connections the proxy holds
	upstream.Config.ErrorLog = log.New(f.upstreamLog, "", 0)
	upstream.StartTLS()
	t.Cleanup(upstream.Close)
	f.upPort = upstream.Listener.Addr().(*net.TCPAddr).Port

	listeners := listenPerProfile(t, f.ports, "weather", "nokey")
	config := &Config{
		Profiles: []Profile{
			{Name: "weather", Port: f.ports["weather"], Hosts: []string{"allowed.test", "other.test"},
				Ports: []int{f.upPort}, Credentials: []Credential{
					{Name: "weather-team-a", Project: "team-a", Hosts: []string{"allowed.test"},
						Header: "Authorization", Prefix: "Bearer ", File: filepath.Join(dir, "weather-team-a")},
					{Name: "weather-team-c", Project: "team-c", Hosts: []string{"allowed.test"},
						Header: "x-api-key", File: filepath.Join(dir, "weather-team-c")},
				}},
			{Name: "nokey", Port: f.ports["nokey"], Hosts: []string{"allowed.test"}, Ports: []int{f.upPort}},
		},
		AllowedCidrs:      []string{"127.0.0.1/32"},
		MetricsPort:       1,
		CA:                &installFiles,
		UpstreamRootsFile: publicFiles.CertFile,
	}
	if err := config.Validate(); err != nil {
		t.Fatal(err)
	}
	logger := logrus.New()
	logger.SetOutput(f.logs)
	logger.SetFormatter(&logrus.JSONFormatter{})
	resolver := testResolver{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"}
	f.proxy, err = NewProxy(config, logger, resolver, injectProjects)
	if err != nil {
		t.Fatal(err)
	}
	f.proxy.handler.Logger = log.New(f.logs, "", 0) // goproxy's own lines, in the same capture
	go func() { _ = f.proxy.Serve(listeners) }()
	t.Cleanup(func() { _ = f.proxy.Shutdown(context.Background()) })
	return f
}

// serveUpstream is the keyed upstream: /echo answers 200 only with exactly one Authorization: Bearer secretA or one
// x-api-key: secretC, and echoes the credentials it got in a header and in the body; /gzip the same, gzipped whatever
// was asked; /redirect sends the client to other.test; /malformed answers a status line that is the key; every
// request is recorded.
func (f *injectFixture) serveUpstream(w http.ResponseWriter, r *http.Request) {
	var got []string
	for name, values := range r.Header {
		if n := normalHeader(name); n == "authorization" || n == "x-api-key" {
			got = append(got, values...)
		}
	}
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{sni: r.TLS.ServerName, host: r.Host, path: r.URL.Path, credentials: got})
	f.mu.Unlock()
	echo := strings.Join(got, ", ")
	switch r.URL.Path {
	case "/redirect":
		http.Redirect(w, r, fmt.Sprintf("https://other.test:%d/steal", f.upPort), http.StatusFound)
		return
	case "/malformed": // an answer that is no HTTP, quoting the key
		conn, _, _ := w.(http.Hijacker).Hijack()
		_, _ = io.WriteString(conn, strings.ReplaceAll(echo, " ", "_")+"\r\n\r\n")
		_ = conn.Close()
		return
	case "/bench", "/steal":
		_, _ = io.WriteString(w, "ok")
		return
	}
	status := http.StatusUnauthorized
	if len(got) == 1 && (got[0] == "Bearer "+secretA || got[0] == secretC) {
		status = http.StatusOK
	}
	w.Header().Set("X-Echo", echo)
	body := fmt.Sprintf(`{"status": %d, "you sent": %q, "split": "%s"}`, status, echo, strings.Repeat("x", 40000)+echo)
	if r.URL.Path == "/gzip" {
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(status)
		z := gzip.NewWriter(w)
		_, _ = io.WriteString(z, body)
		_ = z.Close()
		return
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// toolConn is a tool pod's connection through the proxy: CONNECT, then TLS as conf says.
type toolConn struct {
	raw net.Conn
	tls *tls.Conn
	r   *bufio.Reader
}

// open connects from source (a tool pod) to profile's port, CONNECTs to name at the upstream's port and handshakes
// TLS for sni, trusting the CAs in roots (none: both); the handshake's error, if any.
func (f *injectFixture) open(t testing.TB, source, profile, name, sni string, nextProtos []string,
	roots ...*x509.Certificate) (*toolConn, error) {
	t.Helper()
	if len(roots) == 0 {
		roots = []*x509.Certificate{f.installCA, f.publicCA}
	}
	pool := x509.NewCertPool()
	for _, root := range roots {
		pool.AddCert(root)
	}
	return f.openWith(t, source, profile, name, &tls.Config{ServerName: sni, RootCAs: pool, NextProtos: nextProtos})
}

// openAllowed opens the connection most tests use: team-a's tool on the weather profile to allowed.test.
func (f *injectFixture) openAllowed(t testing.TB) *toolConn {
	t.Helper()
	c, err := f.open(t, "127.0.0.2", "weather", "allowed.test", "allowed.test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *injectFixture) openWith(t testing.TB, source, profile, name string, conf *tls.Config) (*toolConn, error) {
	t.Helper()
	c := dialProfile(t, f.ports, source, profile)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	authority := fmt.Sprintf("%s:%d", name, f.upPort)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s from %s on %s: %v %v", authority, source, profile, resp, err)
	}
	tc := tls.Client(c, conf)
	return &toolConn{raw: c, tls: tc, r: bufio.NewReader(tc)}, tc.Handshake()
}

// send writes raw request bytes; answer reads one response, its status and body.
func (c *toolConn) send(t testing.TB, raw string) {
	t.Helper()
	if _, err := io.WriteString(c.tls, raw); err != nil {
		t.Fatal(err)
	}
}

func (c *toolConn) answer() (*http.Response, string, error) {
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return nil, "", err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body), err
}

// get is a whole GET of path with Host host and extra header lines.
func (f *injectFixture) get(host, path string, headers ...string) string {
	return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n", path, host, f.upPort, joinLines(headers))
}

func joinLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	return b.String()
}

// lines are the log lines with this message.
func (f *injectFixture) lines(msg string) []map[string]interface{} {
	var out []map[string]interface{}
	for _, l := range f.logs.lines() {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// refusedWith: a CREDENTIAL-REFUSED line (decision deny) whose reason has this text.
func (f *injectFixture) refusedWith(text string) bool {
	for _, l := range f.lines(credentialRefused) {
		if reason, _ := l["reason"].(string); l["decision"] == "deny" && strings.Contains(reason, text) {
			return true
		}
	}
	return false
}

// String is what was written so far, read under the lock (the proxy may still be writing).
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// The proxy attacked on loopback with real sockets and real TLS: an upstream TLS and a plain HTTP server on 127.0.0.1
// (allowed by allowedCidrs, as the tests' only public address), names resolved by a test resolver, two profiles.

type testResolver map[string]string

func (r testResolver) LookupPort(_ context.Context, _, service string) (int, error) {
	var port int
	_, err := fmt.Sscanf(service, "%d", &port)
	return port, err
}

func (r testResolver) LookupIP(_ context.Context, _, host string) ([]net.IP, error) {
	if ip, ok := r[host]; ok {
		return []net.IP{net.ParseIP(ip)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// countingListener counts the bytes every accepted connection delivers to the upstream server; buffers, when set,
// fixes the kernel buffers of its connections.
type countingListener struct {
	net.Listener
	bytes   *atomic.Int64
	buffers int
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.buffers > 0 {
		_ = c.(*net.TCPConn).SetReadBuffer(l.buffers)
		_ = c.(*net.TCPConn).SetWriteBuffer(l.buffers)
	}
	return countingConn{Conn: c, bytes: l.bytes}, nil
}

type countingConn struct {
	net.Conn
	bytes *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.bytes.Add(int64(n))
	return n, err
}

// CloseWrite, SetReadBuffer and SetWriteBuffer reach the connection under the count.
func (c countingConn) CloseWrite() error {
	return c.Conn.(*net.TCPConn).CloseWrite()
}

func (c countingConn) SetReadBuffer(n int) error {
	return c.Conn.(*net.TCPConn).SetReadBuffer(n)
}

func (c countingConn) SetWriteBuffer(n int) error {
	return c.Conn.(*net.TCPConn).SetWriteBuffer(n)
}

type fixture struct {
	proxy              *Proxy
	ports              map[string]int // profile → proxy port
	tlsPort, plainPort int
	tlsBytes           *atomic.Int64 // bytes the upstream TLS server received
	proxyBytes         *atomic.Int64 // bytes the proxy read from its clients
	bigBytes           *atomic.Int64 // bytes of /big the upstream wrote
	plainHits          *atomic.Int64
	logs               *syncBuffer
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines() []map[string]interface{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]interface{}
	for _, line := range strings.Split(b.buf.String(), "\n") {
		var m map[string]interface{}
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func start(t *testing.T) *fixture {
	t.Helper()
	return startWith(t, Limits{}, noProjects{})
}

// startWith starts the fixture with these limits (left out: the defaults) and this view of the projects.
func startWith(t *testing.T, limits Limits, names projects) *fixture {
	t.Helper()
	f := &fixture{tlsBytes: &atomic.Int64{}, proxyBytes: &atomic.Int64{}, bigBytes: &atomic.Int64{},
		plainHits: &atomic.Int64{}, logs: &syncBuffer{}, ports: map[string]int{}}
	upstream := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" { // an answer larger than every buffer on the way
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for i := 0; i < 1024; i++ {
				n, err := w.Write(chunk)
				f.bigBytes.Add(int64(n))
				if err != nil {
					return
				}
			}
			return
		}
		_, _ = io.WriteString(w, "hello from "+r.TLS.ServerName)
	}))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream.Listener = countingListener{Listener: inner, bytes: f.tlsBytes, buffers: 16 << 10}
	upstream.StartTLS()
	t.Cleanup(upstream.Close)
	f.tlsPort = inner.Addr().(*net.TCPAddr).Port
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		f.plainHits.Add(1)
		_, _ = io.WriteString(w, "plain hello")
	}))
	t.Cleanup(plain.Close)
	f.plainPort = plain.Listener.Addr().(*net.TCPAddr).Port

	var listeners []net.Listener
	for _, l := range listenPerProfile(t, f.ports, "weather", "other") {
		listeners = append(listeners, countingListener{Listener: l, bytes: f.proxyBytes})
	}
	config := &Config{
		Profiles: []Profile{
			{Name: "weather", Port: f.ports["weather"], Hosts: []string{"allowed.test", "*.rebind.test"},
				Ports: []int{f.tlsPort, f.plainPort}},
			{Name: "other", Port: f.ports["other"], Hosts: []string{"other.test"}, Ports: []int{f.tlsPort}},
		},
		BlockedCidrs: []string{"169.254.0.0/16", "10.0.0.0/8", "240.0.0.0/4"},
		AllowedCidrs: []string{"127.0.0.1/32"},
		MetricsPort:  1,
		Limits:       limits,
	}
	if err := config.Validate(); err != nil {
		t.Fatal(err)
	}
	logger := logrus.New()
	logger.SetOutput(f.logs)
	logger.SetFormatter(&logrus.JSONFormatter{})
	resolver := testResolver{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1",
		"meta.rebind.test": "169.254.169.254", "ten.rebind.test": "10.1.2.3", "e.rebind.test": "240.0.0.10"}
	f.proxy, err = NewProxy(config, logger, resolver, names)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = f.proxy.Serve(listeners) }()
	t.Cleanup(func() { _ = f.proxy.Shutdown(context.Background()) })
	return f
}

// connect sends CONNECT host:port to the profile's port; extra is written in the same write (pipelining).
func (f *fixture) connect(t *testing.T, profile, authority string, extra []byte) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", f.ports[profile]), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	request := "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"
	if _, err := c.Write(append([]byte(request), extra...)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return c, r, "no response: " + err.Error()
	}
	return c, r, resp.Status
}

func (f *fixture) handshake(c net.Conn, sni string) (string, error) {
	tc := tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true}) // #nosec: a test upstream
	if err := tc.Handshake(); err != nil {
		return "", err
	}
	if _, err := io.WriteString(tc, "GET / HTTP/1.1\r\nHost: "+sni+"\r\nConnection: close\r\n\r\n"); err != nil {
		return "", err
	}
	body, err := io.ReadAll(tc)
	return string(body), err
}

func TestAnAllowedHostAnswersThroughATunnelWithItsOwnSni(t *testing.T) {
	f := start(t)
	c, _, status := f.connect(t, "weather", fmt.Sprintf("allowed.test:%d", f.tlsPort), nil)
	defer c.Close()
	if !strings.Contains(status, "200") {
		t.Fatalf("CONNECT refused: %s\n%s", status, f.logs.buf.String())
	}
	body, err := f.handshake(c, "allowed.test")
	if err != nil || !strings.Contains(body, "hello from allowed.test") {
		t.Fatalf("no answer through the tunnel: %q %v", body, err)
	}
}

func TestAnAllowedHostAnswersPlainHttp(t *testing.T) {
	f := start(t)
	proxyURL, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", f.ports["weather"]))
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://allowed.test:%d/", f.plainPort))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "plain hello" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	// the other profile does not list the plain port: refused, and the upstream never hears of it
	otherURL, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", f.ports["other"]))
	other := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(otherURL)}, Timeout: 5 * time.Second}
	hits := f.plainHits.Load()
	resp, err = other.Get(fmt.Sprintf("http://other.test:%d/", f.plainPort))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("a port not on the profile answered")
		}
	}
	if f.plainHits.Load() != hits {
		t.Fatal("the upstream was reached on a port not on the profile")
	}
}

func TestWhatIsNotOnTheProfileIsRefusedAtTheConnect(t *testing.T) {
	f := start(t)
	for _, tc := range []struct{ profile, authority, why string }{
		{"weather", fmt.Sprintf("other.test:%d", f.tlsPort), "a name not on the list"},
		{"other", fmt.Sprintf("allowed.test:%d", f.tlsPort), "another profile's name on this profile's port"},
		{"weather", fmt.Sprintf("allowed.test:%d", f.tlsPort+1), "a port not on the profile"},
		{"weather", fmt.Sprintf("127.0.0.1:%d", f.tlsPort), "an IPv4 literal"},
		{"weather", fmt.Sprintf("[::1]:%d", f.tlsPort), "an IPv6 literal"},
		{"weather", fmt.Sprintf("meta.rebind.test:%d", f.tlsPort), "an allowed name resolving to 169.254.169.254"},
		{"weather", fmt.Sprintf("ten.rebind.test:%d", f.tlsPort), "an allowed name resolving to 10.1.2.3"},
		{"weather", fmt.Sprintf("e.rebind.test:%d", f.tlsPort), "an allowed name resolving into 240.0.0.0/4"},
	} {
		c, _, status := f.connect(t, tc.profile, tc.authority, nil)
		c.Close()
		if strings.Contains(status, "200") {
			t.Errorf("%s (%s) was allowed", tc.why, tc.authority)
		}
	}
}

func TestATunnelWhoseSniIsNotItsHostIsClosedBeforeAnyByteReachesTheUpstream(t *testing.T) {
	f := start(t)
	authority := fmt.Sprintf("allowed.test:%d", f.tlsPort)
	c, _, status := f.connect(t, "weather", authority, nil)
	if !strings.Contains(status, "200") {
		t.Fatalf("CONNECT refused: %s", status)
	}
	if body, err := f.handshake(c, "other.test"); err == nil {
		t.Fatalf("fronting answered: %q", body)
	}
	c.Close()

	// the same ClientHello pipelined behind the CONNECT, before the proxy answered
	hello := clientHello(t, "other.test")
	c, r, status := f.connect(t, "weather", authority, hello)
	if strings.Contains(status, "200") {
		if _, err := r.ReadByte(); err == nil {
			t.Fatal("the upstream answered a pipelined ClientHello of another name")
		}
	}
	c.Close()

	// no TLS at all
	c, _, status = f.connect(t, "weather", authority, nil)
	if strings.Contains(status, "200") {
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
		if _, err := bufio.NewReader(c).ReadByte(); err == nil {
			t.Fatal("a tunnel without TLS answered")
		}
	}
	c.Close()
	time.Sleep(200 * time.Millisecond)
	if n := f.tlsBytes.Load(); n != 0 {
		t.Fatalf("the upstream received %d bytes of refused tunnels", n)
	}
	refused := 0
	for _, line := range f.logs.lines() {
		if line["msg"] == tunnelRefused && line["decision"] == "deny" && line["profile"] == "weather" {
			refused++
		}
	}
	if refused < 2 {
		t.Fatalf("%d refused tunnels logged:\n%s", refused, f.logs.buf.String())
	}
}

func TestEveryDecisionIsOneLineWithTheProfileHostPortAndDecision(t *testing.T) {
	f := start(t)
	c, _, _ := f.connect(t, "weather", fmt.Sprintf("allowed.test:%d", f.tlsPort), nil)
	_, _ = f.handshake(c, "allowed.test")
	c.Close()
	c, _, _ = f.connect(t, "weather", fmt.Sprintf("other.test:%d", f.tlsPort), nil)
	c.Close()
	var allow, deny int
	for _, line := range f.logs.lines() {
		if line["msg"] != "CANONICAL-PROXY-DECISION" {
			continue
		}
		for _, field := range []string{"profile", "project", "pod", "source", "host", "port", "decision", "reason"} {
			if _, ok := line[field]; !ok {
				t.Errorf("decision line without %s: %v", field, line)
			}
		}
		switch {
		case line["decision"] == "allow" && line["host"] == "allowed.test" && line["profile"] == "weather":
			allow++
		case line["decision"] == "deny" && line["host"] == "other.test":
			deny++
		}
	}
	if allow != 1 || deny != 1 {
		t.Fatalf("allow %d, deny %d:\n%s", allow, deny, f.logs.buf.String())
	}
}

func TestConfigurationsThatCannotWorkAreRefused(t *testing.T) {
	good := Profile{Name: "w", Port: 3128, Hosts: []string{"a.example"}, Ports: []int{443}}
	for _, c := range []Config{
		{MetricsPort: 9810},
		{MetricsPort: 9810, Profiles: []Profile{good, good}},
		{MetricsPort: 9810, Profiles: []Profile{{Name: "W", Port: 3128, Hosts: []string{"a"}, Ports: []int{1}}}},
		{MetricsPort: 9810, Profiles: []Profile{{Name: "w", Port: 3128, Hosts: []string{"a b"}, Ports: []int{1}}}},
		{MetricsPort: 9810, Profiles: []Profile{{Name: "w", Port: 3128, Hosts: []string{"a"}, Ports: nil}}},
		{MetricsPort: 9810, Profiles: []Profile{good}, BlockedCidrs: []string{"10.0.0.0/33"}},
	} {
		if c.Validate() == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}

// clientHello is the first flight of a TLS client for the name, made in memory.
func clientHello(t *testing.T, sni string) []byte {
	t.Helper()
	client, server := net.Pipe()
	go func() {
		_ = tls.Client(client, &tls.Config{ServerName: sni, InsecureSkipVerify: true}).Handshake() // #nosec: test
	}()
	_ = server.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 16<<10)
	n, _ := server.Read(buf)
	client.Close()
	server.Close()
	return buf[:n]
}

// listenPerProfile opens a loopback listener for each profile and records its port in ports.
func listenPerProfile(t testing.TB, ports map[string]int, profiles ...string) []net.Listener {
	t.Helper()
	var listeners []net.Listener
	for _, name := range profiles {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, l)
		ports[name] = l.Addr().(*net.TCPAddr).Port
	}
	return listeners
}

// dialProfile opens a connection to a profile's port from a loopback source address, closed with the test.
func dialProfile(t testing.TB, ports map[string]int, source, profile string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[profile]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

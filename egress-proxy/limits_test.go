package main

import (
	"bufio"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The proxy's limits attacked on loopback: sources are loopback addresses of their own (127.0.0.2, .3, ...), each a
// tool pod, with a project given by a fake lookup, as projects.go gives it from the pod's address.

type fakeProjects map[string]string

func (f fakeProjects) of(ip string) (string, string) {
	if project, ok := f[ip]; ok {
		return project, "tool-" + ip
	}
	return "unknown", ""
}

// dialFrom opens a connection to the profile's port from a loopback source address.
func (f *fixture) dialFrom(t *testing.T, source, profile string) net.Conn {
	t.Helper()
	return dialProfile(t, f.ports, source, profile)
}

// slow opens a connection that sends the start of a CONNECT and never finishes its headers.
func (f *fixture) slow(t *testing.T, source string) net.Conn {
	t.Helper()
	c := f.dialFrom(t, source, "weather")
	if _, err := fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\nX-Slow: aaaa", f.tlsPort); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer reads the proxy's answer on a connection: its status line and body, or what happened instead.
func answer(c net.Conn, within time.Duration) (int, string) {
	_ = c.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "no answer: " + err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitOpen waits until the proxy holds n connections.
func (f *fixture) waitOpen(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for f.proxy.limits.open() != n {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy holds %d connections, not %d", f.proxy.limits.open(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// served is a whole call through the proxy from a source: CONNECT, TLS with the host's SNI, a request, its answer.
func (f *fixture) served(t *testing.T, source string) string {
	t.Helper()
	c := f.dialFrom(t, source, "weather")
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	authority := fmt.Sprintf("allowed.test:%d", f.tlsPort)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		return fmt.Sprintf("CONNECT not answered 200: %v %v", resp, err)
	}
	body, err := f.handshake(c, "allowed.test")
	if err != nil {
		return "no answer through the tunnel: " + err.Error()
	}
	return body
}

// One tool pod floods the proxy with connections that never finish their headers (the cluster's weather tool opened
// 400 with an unfinished 1 MB header line each). Past its pod's limit each new one is answered 429 at once and closed;
// its project's other pods share the project's limit; past the proxy's own limit 503; another project's call is
// served throughout; every connection is released when it closes. Mutation: Serve without the limits' listener
// (p.server.Serve(l)): the connections over the limits are held without an answer, and this fails.
func TestManySlowConnectionsFromOnePodAreCappedAndAnotherProjectIsServed(t *testing.T) {
	f := startWith(t, Limits{ConnectionsPerPod: 8, ConnectionsPerProject: 12, Connections: 20}, fakeProjects{
		"127.0.0.2": "team-a", "127.0.0.3": "team-a", "127.0.0.4": "team-b", "127.0.0.5": "team-c",
		"127.0.0.6": "team-d"})
	var held []net.Conn
	for i := 0; i < 8; i++ {
		held = append(held, f.slow(t, "127.0.0.2"))
	}
	f.waitOpen(t, 8)
	for i := 0; i < 5; i++ {
		status, body := answer(f.slow(t, "127.0.0.2"), 2*time.Second)
		if status != http.StatusTooManyRequests || !strings.Contains(body, "connectionsPerPod") {
			t.Fatalf("connection %d over the pod's limit: %d %q", 9+i, status, body)
		}
	}
	for i := 0; i < 4; i++ {
		held = append(held, f.slow(t, "127.0.0.3"))
	}
	f.waitOpen(t, 12)
	status, body := answer(f.slow(t, "127.0.0.3"), 2*time.Second)
	if status != http.StatusTooManyRequests || !strings.Contains(body, "project team-a") ||
		!strings.Contains(body, "connectionsPerProject") {
		t.Fatalf("a connection over the project's limit: %d %q", status, body)
	}
	if body := f.served(t, "127.0.0.4"); !strings.Contains(body, "hello from allowed.test") {
		t.Fatalf("another project was not served beside the flood: %s", body)
	}
	f.waitOpen(t, 12)
	for i := 0; i < 8; i++ {
		held = append(held, f.slow(t, "127.0.0.5"))
	}
	f.waitOpen(t, 20)
	status, body = answer(f.slow(t, "127.0.0.6"), 2*time.Second)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "limits.connections)") {
		t.Fatalf("a connection over the proxy's limit: %d %q", status, body)
	}
	// the held ones were never answered: they wait for their headers, within the header deadline
	for _, c := range held[:1] {
		if status, body := answer(c, 200*time.Millisecond); status != 0 {
			t.Fatalf("a connection within the limits was answered: %d %q", status, body)
		}
	}
	for _, c := range held {
		c.Close()
	}
	f.waitOpen(t, 0)
	if body := f.served(t, "127.0.0.2"); !strings.Contains(body, "hello from allowed.test") {
		t.Fatalf("the flooding pod was not served again once its connections closed: %s", body)
	}
	var refused int
	for _, line := range f.logs.lines() {
		if line["msg"] == connectionRefused && line["decision"] == "deny" && line["profile"] == "weather" {
			refused++
			if line["source"] == nil || line["reason"] == nil || line["project"] == nil {
				t.Errorf("a refusal line without its source, project or reason: %v", line)
			}
		}
	}
	if refused != 7 {
		t.Fatalf("%d refusals logged, 7 made:\n%s", refused, f.logs.buf.String())
	}
}

// An unfinished header line of 1 MiB is read only up to the header cap (net/http's MaxHeaderBytes and its 4 KiB
// buffer), then answered 431 and closed. Mutation: no MaxHeaderBytes (net/http's 1 MiB): the proxy reads the whole
// line and waits for its end, and this fails.
func TestAnUnfinishedHugeHeaderLineIsCutAtTheCap(t *testing.T) {
	f := startWith(t, Limits{HeaderBytes: 16 << 10}, noProjects{})
	c := f.dialFrom(t, "127.0.0.2", "weather")
	go func() {
		_, _ = fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\nX-Huge: %s", f.tlsPort,
			strings.Repeat("a", 1<<20))
	}()
	status, _ := answer(c, 3*time.Second)
	if status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("answered %d, not 431; the proxy read %d bytes", status, f.proxyBytes.Load())
	}
	if read := f.proxyBytes.Load(); read > 16<<10+8<<10 {
		t.Fatalf("the proxy read %d bytes of one header line", read)
	}
	f.waitOpen(t, 0)
}

// A header that stops coming is cut at the header deadline. Mutation: smokescreen's ReadHeaderTimeout (300 s): the
// connection is still open when this gives up, and this fails.
func TestAnUnfinishedHeaderIsCutAtTheDeadline(t *testing.T) {
	f := startWith(t, Limits{HeaderSeconds: 0.5}, noProjects{})
	c := f.slow(t, "127.0.0.2")
	began := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if timeout, ok := err.(net.Error); ok && timeout.Timeout() {
		t.Fatal("the connection was still open 3 s after its header stopped")
	}
	if took := time.Since(began); took < 400*time.Millisecond {
		t.Fatalf("closed after %v, before the deadline", took)
	}
	f.waitOpen(t, 0)
}

// openTunnel opens a tunnel to the upstream with a finished TLS handshake and nothing else.
func (f *fixture) openTunnel(t *testing.T) *tls.Conn {
	t.Helper()
	c, _, status := f.connect(t, "weather", fmt.Sprintf("allowed.test:%d", f.tlsPort), nil)
	t.Cleanup(func() { c.Close() })
	if !strings.Contains(status, "200") {
		t.Fatalf("CONNECT refused: %s", status)
	}
	_ = c.SetDeadline(time.Time{})
	tc := tls.Client(c, &tls.Config{ServerName: "allowed.test", InsecureSkipVerify: true}) // #nosec: a test upstream
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	return tc
}

// closedWithin says how long the proxy took to close a tunnel nobody uses, or fails past limit.
func closedWithin(t *testing.T, tc *tls.Conn, limit time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	_ = tc.SetReadDeadline(time.Now().Add(limit))
	_, err := tc.Read(make([]byte, 1))
	if timeout, ok := err.(net.Error); ok && timeout.Timeout() {
		t.Fatalf("the tunnel was still open after %v", limit)
	}
	return time.Since(began)
}

// A tunnel with no byte either way is closed after the idle timeout, and released. Mutation: no idle timeout at all
// (smokescreen's IdleTimeout 0 and the guard's pushDeadline a no-op): the tunnel stays open, and this fails.
func TestAnIdleTunnelIsClosedAfterTheIdleTimeout(t *testing.T) {
	f := startWith(t, Limits{IdleSeconds: 0.5}, noProjects{})
	tc := f.openTunnel(t)
	if took := closedWithin(t, tc, 3*time.Second); took < 400*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", took)
	}
	f.waitOpen(t, 0)
}

// A client that asks for a large answer and stops reading it holds the tunnel's copy in a write to it: the write
// deadline cuts it. Mutation: the guard without its deadlines (smokescreen's on the upstream side only): the copy
// waits in that write for ever, and this fails.
func TestATunnelWhoseClientStopsReadingIsClosedAfterTheIdleTimeout(t *testing.T) {
	f := startWith(t, Limits{IdleSeconds: 0.5}, noProjects{})
	tc := f.openTunnel(t)
	if _, err := io.WriteString(tc, "GET /big HTTP/1.1\r\nHost: allowed.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	f.waitOpen(t, 0)
}

// A busy tunnel is closed at its lifetime. Mutation: no lifetime timer: the tunnel stays open, and this fails.
func TestATunnelIsClosedAtItsLifetime(t *testing.T) {
	f := startWith(t, Limits{TunnelSeconds: 1}, noProjects{})
	tc := f.openTunnel(t)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a request every 100 ms: never idle
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if _, err := io.WriteString(tc, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n"); err != nil {
					return
				}
			}
		}
	}()
	_ = tc.SetReadDeadline(time.Now().Add(4 * time.Second))
	began := time.Now()
	_, err := io.Copy(io.Discard, tc)
	if timeout, ok := err.(net.Error); ok && timeout.Timeout() {
		t.Fatal("the tunnel was still open 4 s after it opened, its lifetime 1 s")
	}
	if took := time.Since(began); took < 700*time.Millisecond {
		t.Fatalf("closed after %v, before its lifetime", took)
	}
	f.waitOpen(t, 0)
}

// echConfigList is an ECHConfigList (RFC 9849) of one X25519 key, whose public name is the outer ClientHello's SNI.
func echConfigList(t *testing.T, publicName string) []byte {
	t.Helper()
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	public := key.PublicKey().Bytes()
	contents := []byte{1, 0x00, 0x20} // config_id, DHKEM(X25519, HKDF-SHA256)
	contents = binary.BigEndian.AppendUint16(contents, uint16(len(public)))
	contents = append(contents, public...)
	contents = append(contents, 0, 4, 0, 1, 0, 1) // one cipher suite: HKDF-SHA256, AES-128-GCM
	contents = append(contents, 0, byte(len(publicName)))
	contents = append(contents, publicName...)
	contents = append(contents, 0, 0) // no extensions
	config := binary.BigEndian.AppendUint16([]byte{0xfe, 0x0d}, uint16(len(contents)))
	config = append(config, contents...)
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(config))), config...)
}

// Encrypted Client Hello: the outer SNI is the allowed CONNECT host, the real name (another, on the same address) is
// encrypted for the destination. Refused before any byte reaches the upstream. Mutation: no check of the ClientHello's
// extensions: the ClientHello reaches the upstream, and this fails.
func TestAClientHelloWithEncryptedClientHelloIsRefused(t *testing.T) {
	f := start(t)
	c, _, status := f.connect(t, "weather", fmt.Sprintf("allowed.test:%d", f.tlsPort), nil)
	defer c.Close()
	if !strings.Contains(status, "200") {
		t.Fatalf("CONNECT refused: %s", status)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "other.test", InsecureSkipVerify: true, // #nosec: a test upstream
		MinVersion: tls.VersionTLS13, EncryptedClientHelloConfigList: echConfigList(t, "allowed.test")})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a TLS handshake with Encrypted Client Hello went through")
	}
	time.Sleep(200 * time.Millisecond)
	if n := f.tlsBytes.Load(); n != 0 {
		t.Fatalf("the upstream received %d bytes of a ClientHello with ECH", n)
	}
	var refused bool
	for _, line := range f.logs.lines() {
		if line["msg"] == tunnelRefused && line["sni"] == "allowed.test" &&
			strings.Contains(fmt.Sprint(line["reason"]), "Encrypted Client Hello") {
			refused = true
		}
	}
	if !refused {
		t.Fatalf("no refusal naming ECH logged:\n%s", f.logs.buf.String())
	}
}

func TestLimitsThatCannotWorkAreRefusedAndLeftOutOnesTakeTheDefaults(t *testing.T) {
	good := Profile{Name: "w", Port: 3128, Hosts: []string{"a.example"}, Ports: []int{443}}
	for _, l := range []Limits{{ConnectionsPerPod: -1}, {IdleSeconds: -1}, {HeaderBytes: 100}} {
		c := Config{MetricsPort: 9810, Profiles: []Profile{good}, Limits: l}
		if c.Validate() == nil {
			t.Errorf("accepted %+v", l)
		}
	}
	if got := (Limits{ConnectionsPerPod: 3}).withDefaults(); got.ConnectionsPerPod != 3 ||
		got.Connections != DefaultLimits.Connections || got.HeaderBytes != DefaultLimits.HeaderBytes {
		t.Fatalf("%+v", got)
	}
}

// A ClientHello that trickles in a byte at a time is parsed once it is all there, not on every read (each parse
// copies all that arrived: quadratic work for one slow tool). Mutation: helloBytesNeeded returning len(data) (parse on
// every read): it is parsed on every byte, refused after helloParses, and this fails.
func TestAClientHelloThatTricklesInIsParsedOnce(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	owner := &tunnels{refused: func(*tunnelGuard, string, string) {}, helloWait: 5 * time.Second,
		idle: 5 * time.Second}
	g := owner.guard(server).(*tunnelGuard)
	defer g.Close()
	owner.expect(server.RemoteAddr().String(), "allowed.test")
	hello := clientHello(t, "allowed.test")
	go func() {
		for i := range hello {
			if _, err := client.Write(hello[i : i+1]); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	n, err := g.Read(buf)
	if err != nil || n != len(hello) {
		t.Fatalf("the ClientHello was not passed on: %d of %d bytes, %v", n, len(hello), err)
	}
	if g.parses != 1 {
		t.Fatalf("a ClientHello of %d bytes, a byte per read, was parsed %d times", len(hello), g.parses)
	}
}

// A client that asks for a large download and stops reading it: what the destination could send sits in the proxy's
// sockets (its read from the destination, its write to the client) until the idle timeout. Bounded, the destination
// can send about twice the buffers of each socket on the way (Linux allots twice what is set) and a copy buffer:
// under 1 MiB here. Mutation: boundBuffers a no-op (Linux grows the buffers while they fill: megabytes per tunnel),
// and this fails.
func TestATunnelWhoseClientStopsReadingHoldsLittleInTheProxysSockets(t *testing.T) {
	f := startWith(t, Limits{SocketBufferBytes: 64 << 10}, noProjects{})
	tc := f.openTunnel(t)
	_ = tc.NetConn().(*net.TCPConn).SetReadBuffer(16 << 10)
	if _, err := io.WriteString(tc, "GET /big HTTP/1.1\r\nHost: allowed.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	var sent int64
	for still := 0; still < 10; { // until the destination has sent nothing for 1 s
		time.Sleep(100 * time.Millisecond)
		if now := f.bigBytes.Load(); now != sent {
			sent, still = now, 0
		} else {
			still++
		}
	}
	if sent > 1<<20 {
		t.Fatalf("the destination sent %d bytes to a client that reads none", sent)
	}
	t.Logf("the destination sent %d bytes to a client that reads none", sent)
}

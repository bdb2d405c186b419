package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// Each attack's comment names the mutation that was run once (the check removed or changed by hand, the test run,
// the change reverted) and what the test then did.

// The positive control: a tool of team-a on profile weather reaches allowed.test through a certificate of the install
// CA, over HTTP/1.1; the upstream gets exactly one credential, the right one, although the tool sent two of its own
// (any case); the upstream echoes it, in a header and the body, and the tool reads the marker instead; a second
// request on the same connection gets it too, and so does team-c's x-api-key with the tool's x_api_key removed.
// Mutations run: (1) the tool's headers of the credential's name kept (and the credential added beside them): the
// upstream got three Authorization values and answered 401, and this failed; (2) the body not searched
// (resp.Body = r.body(...) removed): the tool read "Bearer sk-team-a-…" in the body, and this failed; (3) the headers
// not searched: the tool read it in X-Echo, and this failed.
func TestACredentialIsAddedForItsProjectProfileAndHostAndNeverEchoedBack(t *testing.T) {
	f := startInjecting(t)
	c, err := f.open(t, "127.0.0.2", "weather", "allowed.test", "allowed.test", []string{"http/1.1"})
	if err != nil {
		t.Fatal(err)
	}
	state := c.tls.ConnectionState()
	if state.PeerCertificates[0].Issuer.CommonName != "install-ca" || state.NegotiatedProtocol != "http/1.1" {
		t.Fatalf("certificate by %s, protocol %q", state.PeerCertificates[0].Issuer.CommonName, state.NegotiatedProtocol)
	}
	for i := 0; i < 2; i++ {
		c.send(t, f.get("allowed.test", "/echo", "Authorization: Bearer the-tools-own", "AUTHORIZATION: Bearer another"))
		resp, body, err := c.answer()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: %v %v %q\n%s", i, resp, err, body, f.logs.String())
		}
		for _, echoed := range []string{body, resp.Header.Get("X-Echo")} {
			if strings.Contains(echoed, secretA) || !strings.Contains(echoed, redactedMarker) {
				t.Fatalf("the echo came back as %q", echoed[max(0, len(echoed)-200):])
			}
		}
	}
	seen := f.requests()
	if len(seen) != 2 {
		t.Fatalf("the upstream saw %d requests", len(seen))
	}
	for _, s := range seen {
		if len(s.credentials) != 1 || s.credentials[0] != "Bearer "+secretA || s.sni != "allowed.test" {
			t.Fatalf("the upstream saw %+v", s)
		}
	}
	if len(f.lines(credentialInjected)) != 2 {
		t.Fatalf("not one CREDENTIAL-INJECTED line a request:\n%s", f.logs.String())
	}

	c, err = f.open(t, "127.0.0.4", "weather", "allowed.test", "allowed.test", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.send(t, f.get("allowed.test", "/gzip", "x-api-key: mine", "X_API_KEY: mine-too", "Accept-Encoding: gzip"))
	resp, body, err := c.answer()
	if err != nil || resp.StatusCode != 200 || strings.Contains(body, secretC) || !strings.Contains(body, redactedMarker) {
		t.Fatalf("team-c: %v %v %q", resp, err, body[max(0, len(body)-200):])
	}
}

// The Host of a request must be the CONNECT host, on every request: a tool whose CONNECT and SNI name allowed.test
// and whose request names other.test (a neighbour on the same address, which a CDN would route to) is refused 403
// before anything reaches the upstream; so is an absolute URL naming other.test.
// Mutation run: the case `!in.isHost(req.Host)` in check removed: the request went to the upstream with Host
// other.test and the key, which answered 200, and this failed.
func TestARequestForAnotherHostIsRefused(t *testing.T) {
	f := startInjecting(t)
	for _, request := range []string{
		f.get("other.test", "/echo"),
		fmt.Sprintf("GET https://other.test:%d/echo HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", f.upPort, f.upPort),
	} {
		c := f.openAllowed(t)
		c.send(t, request)
		resp, body, err := c.answer()
		if err != nil || resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "is not the CONNECT host") {
			t.Fatalf("%q: %v %v %q", request, resp, err, body)
		}
	}
	if seen := f.requests(); len(seen) != 0 {
		t.Fatalf("the upstream saw %v", seen)
	}
	if !f.refusedWith("Host other.test") {
		t.Fatalf("no refusal logged:\n%s", f.logs.String())
	}
}

// A ClientHello naming another host than the CONNECT (the tool skipping verification, as an attacker's would) is
// refused by the tunnel guard before the proxy's TLS starts: nothing reaches the upstream.
// Mutation run: the `!sameHost(sni, host)` refusal in tunnelGuard.decide removed: the handshake succeeded (with the
// certificate for allowed.test), the request reached the upstream, and this failed. The credential still went only
// to allowed.test: the proxy's own TLS and the Host check use the CONNECT host, never the tool's SNI.
func TestAClientHelloForAnotherHostIsRefused(t *testing.T) {
	f := startInjecting(t)
	c, err := f.open(t, "127.0.0.2", "weather", "allowed.test", "other.test", nil)
	if err == nil {
		c.tls.Close()
		t.Fatal("the TLS handshake for other.test succeeded behind a CONNECT to allowed.test")
	}
	// the same without verification: the attacker's tool
	c, err = f.openWith(t, "127.0.0.2", "weather", "allowed.test",
		&tls.Config{ServerName: "other.test", InsecureSkipVerify: true}) // #nosec: the attack
	if err == nil {
		c.send(t, f.get("allowed.test", "/echo"))
		_, _, _ = c.answer()
	}
	time.Sleep(100 * time.Millisecond)
	if seen := f.requests(); len(seen) != 0 {
		t.Fatalf("the upstream saw %v", seen)
	}
	refused := false
	for _, l := range f.logs.lines() {
		reason, _ := l["reason"].(string)
		refused = refused || (l["msg"] == tunnelRefused && strings.Contains(reason, "the TLS SNI other.test is not"))
	}
	if !refused {
		t.Fatalf("no TUNNEL-REFUSED line:\n%s", f.logs.String())
	}
}

// A redirect to another host is passed back to the tool as it came; a client that follows it (Go's, by default)
// opens a new CONNECT to other.test, which has no credential: a plain tunnel, and the upstream gets no key there.
// Mutation run: serve followed a 3xx itself (the same headers, the credential among them, sent to the Location
// through an http.Client dialling with smokescreen's dialer): other.test's /steal got the key, and this failed.
func TestARedirectIsNotFollowedAndTheCredentialGoesNowhereElse(t *testing.T) {
	f := startInjecting(t)
	pool := x509.NewCertPool()
	pool.AddCert(f.installCA)
	pool.AddCert(f.publicCA)
	proxyURL, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", f.ports["weather"]))
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 2 * time.Second}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL),
		DialContext: dialer.DialContext, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(fmt.Sprintf("https://allowed.test:%d/redirect", f.upPort))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	seen := f.requests()
	for _, s := range seen {
		if s.path == "/steal" && len(s.credentials) != 0 {
			t.Fatalf("the redirect's target got the key: %+v", s)
		}
	}
	if len(seen) != 2 || seen[0].path != "/redirect" || len(seen[0].credentials) != 1 || seen[1].path != "/steal" ||
		seen[1].sni != "other.test" {
		t.Fatalf("the upstream saw %+v", seen)
	}
	if resp.StatusCode != 200 || resp.Request.URL.Host != fmt.Sprintf("other.test:%d", f.upPort) {
		t.Fatalf("the client ended at %s with %d", resp.Request.URL, resp.StatusCode)
	}
}

// A CONNECT to another name on the same address (other.test and allowed.test both resolve to 127.0.0.1: two sites on
// one CDN address) gets no credential: the credential is chosen by the CONNECT's name, never by its address. The
// connection is a plain tunnel: the tool sees the upstream's own certificate.
// Mutation run: credentialOf, finding none for the name, took a credential whose host resolves to the same address:
// the upstream got the key in a request for other.test, and this failed.
func TestAConnectToAnotherNameOnTheSameAddressGetsNoCredential(t *testing.T) {
	f := startInjecting(t)
	c, err := f.open(t, "127.0.0.2", "weather", "other.test", "other.test", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.send(t, f.get("other.test", "/echo"))
	if _, _, err := c.answer(); err != nil {
		t.Fatal(err)
	}
	if seen := f.requests(); len(seen) != 1 || len(seen[0].credentials) != 0 {
		t.Fatalf("the upstream saw %+v", seen)
	}
	if issuer := c.tls.ConnectionState().PeerCertificates[0].Issuer.CommonName; issuer != "public-ca" {
		t.Fatalf("the tool saw a certificate of %s, not the upstream's own", issuer)
	}
}

// Another project's tool (team-b), a tool of no known project (127.0.0.1), and team-a's own tool on another
// profile's port (nokey, which lists allowed.test but has no credential) each get a plain tunnel to allowed.test:
// the upstream's certificate, and no key.
// Mutations run: (1) the project left out of the lookup (credentials keyed by profile and host): team-b's tool got
// team-a's key, and this failed; (2) the profile left out (keyed by project and host): team-a's tool on nokey got it,
// and this failed.
func TestNoCredentialForAnotherProjectNorAnotherProfile(t *testing.T) {
	f := startInjecting(t)
	for _, tc := range []struct{ source, profile, who string }{
		{"127.0.0.3", "weather", "another project"},
		{"127.0.0.1", "weather", "no known project"},
		{"127.0.0.2", "nokey", "the same project on another profile's port"},
	} {
		c, err := f.open(t, tc.source, tc.profile, "allowed.test", "allowed.test", nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.who, err)
		}
		c.send(t, f.get("allowed.test", "/echo"))
		if _, _, err := c.answer(); err != nil {
			t.Fatalf("%s: %v", tc.who, err)
		}
		seen := f.requests()
		if last := seen[len(seen)-1]; len(last.credentials) != 0 {
			t.Fatalf("%s: the upstream got a key: %+v", tc.who, last)
		}
		if issuer := c.tls.ConnectionState().PeerCertificates[0].Issuer.CommonName; issuer != "public-ca" {
			t.Fatalf("%s: the tool saw a certificate of %s, not the upstream's own", tc.who, issuer)
		}
	}
}

// Two requests in one write, the second for other.test, and a request whose framing is ambiguous (Content-Length and
// Transfer-Encoding: chunked, a second request for other.test hidden in what the Content-Length would count as its
// body): each request is read, checked and written anew by the proxy, so the upstream gets the first and never the
// second; the tool gets the first's answer, then 403.
// Mutation run: the Host check only on a connection's first request (`in.first &&` before it): the second request
// went to the upstream with Host other.test and the key, which answered it 200, and this failed.
func TestAPipelinedRequestForAnotherHostNeverReachesTheUpstream(t *testing.T) {
	f := startInjecting(t)
	hidden := f.get("other.test", "/echo")
	for _, raw := range []string{
		f.get("allowed.test", "/echo") + hidden,
		fmt.Sprintf("POST /echo HTTP/1.1\r\nHost: allowed.test:%d\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n%s",
			f.upPort, len("0\r\n\r\n")+len(hidden), hidden),
	} {
		c := f.openAllowed(t)
		c.send(t, raw)
		first, _, err := c.answer()
		if err != nil || first.StatusCode != 200 {
			t.Fatalf("the first request: %v %v", first, err)
		}
		second, body, err := c.answer()
		if err != nil || second.StatusCode != http.StatusForbidden || !strings.Contains(body, "is not the CONNECT host") {
			t.Fatalf("the second request: %v %v %q", second, err, body)
		}
	}
	for _, s := range f.requests() {
		if !strings.HasPrefix(s.host, "allowed.test") {
			t.Fatalf("the upstream saw a request for %s: %+v", s.host, s)
		}
	}
	if n := len(f.requests()); n != 2 {
		t.Fatalf("the upstream saw %d requests", n)
	}
}

// HTTP/2 is never spoken on a connection with a credential (one connection, many streams, each its own :authority):
// a client offering h2 and http/1.1 gets http/1.1, one offering h2 alone fails the handshake, and one sending the
// HTTP/2 preface without ALPN is refused (505) with nothing sent upstream.
// Mutation run: serverConfig's NextProtos {"h2", "http/1.1"}: h2 was negotiated, and this failed.
func TestHTTP2IsNeverNegotiated(t *testing.T) {
	f := startInjecting(t)
	c, err := f.open(t, "127.0.0.2", "weather", "allowed.test", "allowed.test", []string{"h2", "http/1.1"})
	if err != nil || c.tls.ConnectionState().NegotiatedProtocol != "http/1.1" {
		t.Fatalf("offered h2 and http/1.1: %v %q", err, c.tls.ConnectionState().NegotiatedProtocol)
	}
	if _, err := f.open(t, "127.0.0.2", "weather", "allowed.test", "allowed.test", []string{"h2"}); err == nil {
		t.Fatal("a client offering h2 alone completed the handshake")
	}
	c = f.openAllowed(t)
	c.send(t, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	resp, body, err := c.answer()
	if err != nil || resp.StatusCode/100 != 4 && resp.StatusCode != http.StatusHTTPVersionNotSupported {
		t.Fatalf("the HTTP/2 preface: %v %v %q", resp, err, body)
	}
	if seen := f.requests(); len(seen) != 0 {
		t.Fatalf("the upstream saw %v", seen)
	}
}

// The credential's value, and its encodings, appear in no log line, the proxy's own nor goproxy's, whether the
// request was served, echoed or refused; the lines name the credential instead (the CONNECT's decision too).
// An upstream's answer that is no HTTP and quotes the key gets a 502 whose reason (the parser's error, which quotes
// the line) is searched as a response is.
// Mutations run: (1) log added the request's headers (fields["headers"] = req.Header): the value appeared in the
// CREDENTIAL-INJECTED lines, and this failed; (2) the 502's reason not searched: the tool read the key in it, and
// this failed.
func TestTheCredentialIsInNoLogLine(t *testing.T) {
	f := startInjecting(t)
	c := f.openAllowed(t)
	c.send(t, f.get("allowed.test", "/echo")+f.get("allowed.test", "/redirect")+f.get("other.test", "/echo"))
	for i := 0; i < 3; i++ {
		if _, _, err := c.answer(); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.lines(credentialInjected)) != 2 || !f.refusedWith("is not the CONNECT host") {
		t.Fatalf("the lines expected are missing:\n%s", f.logs.String())
	}
	if connects := f.lines("CANONICAL-PROXY-DECISION"); len(connects) != 1 || connects[0]["credential"] != "weather-team-a" {
		t.Fatalf("the CONNECT's decision does not name the credential: %v", connects)
	}
	c = f.openAllowed(t)
	c.send(t, f.get("allowed.test", "/malformed"))
	resp, body, err := c.answer()
	if err != nil || resp.StatusCode != http.StatusBadGateway || strings.Contains(body, secretA) ||
		!strings.Contains(body, redactedMarker) {
		t.Fatalf("an answer that is no HTTP, quoting the key: %v %v %q", resp, err, body)
	}
	logged := f.logs.String() + f.upstreamLog.String()
	for _, needle := range newRedactor(secretA).needles {
		if bytes.Contains([]byte(logged), needle) {
			t.Fatalf("the log holds the credential (%q):\n%s", needle, logged)
		}
	}
}

// The value is read at each use: a Secret rotated reaches the next request; a value that cannot be read is a 503
// naming the credential, and the request is not sent without it.
func TestTheValueIsReadAtEachUse(t *testing.T) {
	f := startInjecting(t)
	file := filepath.Join(f.files, "weather-team-a")
	c := f.openAllowed(t)
	if err := os.WriteFile(file, []byte("sk-rotated-0000000000"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.send(t, f.get("allowed.test", "/bench"))
	if resp, _, err := c.answer(); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	if seen := f.requests(); seen[0].credentials[0] != "Bearer sk-rotated-0000000000" {
		t.Fatalf("the upstream got %v", seen[0].credentials)
	}
	_ = os.Remove(file)
	c.send(t, f.get("allowed.test", "/bench"))
	resp, body, err := c.answer()
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "weather-team-a") {
		t.Fatalf("%v %v %q", resp, err, body)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("the upstream saw %d requests", n)
	}
}

// A kept-alive connection the upstream closed while idle is replaced (smokescreen's dialer again) for a request
// without a body, so the tool does not see a 502 for the upstream's keep-alive timeout.
// Mutation run: no second try in roundTrip: the second request got 502, and this failed.
func TestAnUpstreamThatClosedAKeptAliveConnectionIsDialledAgain(t *testing.T) {
	f := startInjecting(t)
	c := f.openAllowed(t)
	for i := 0; i < 2; i++ {
		c.send(t, f.get("allowed.test", "/bench"))
		if resp, _, err := c.answer(); err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
		time.Sleep(600 * time.Millisecond) // the upstream's idle timeout is 300 ms
	}
}

// The body is searched as it streams: a value cut across reads, one byte at a time, is still found; a tail that is
// no start of the value is passed on at once.
func TestTheRedactorFindsTheValueAcrossReads(t *testing.T) {
	r := newRedactor(secretA)
	body := "a" + secretA + "b" + url.QueryEscape(secretA) + "c sk-team-a"
	out, err := io.ReadAll(r.body(io.NopCloser(iotest.OneByteReader(strings.NewReader(body)))))
	if err != nil || strings.Contains(string(out), secretA) || strings.Count(string(out), redactedMarker) != 2 ||
		!strings.HasSuffix(string(out), "c sk-team-a") {
		t.Fatalf("%q %v", out, err)
	}
	if n := r.pending([]byte("data: {}\n\n")); n != 0 {
		t.Fatalf("an event's end is held back (%d bytes)", n)
	}
}

func TestCredentialsThatCannotWorkAreRefused(t *testing.T) {
	ca := &CAFiles{CertFile: "/ca/tls.crt", KeyFile: "/ca/tls.key"}
	ok := Credential{Name: "k", Project: "team-a", Hosts: []string{"api.example"}, Header: "Authorization",
		File: "/k/value"}
	profile := func(cs ...Credential) []Profile {
		return []Profile{{Name: "w", Port: 3128, Hosts: []string{"api.example", "*.up.example"}, Ports: []int{443},
			Credentials: cs}}
	}
	with := func(change func(*Credential)) Credential {
		c := ok
		c.Hosts = append([]string(nil), ok.Hosts...)
		change(&c)
		return c
	}
	good := Config{MetricsPort: 9810, CA: ca, Profiles: profile(ok, with(func(c *Credential) {
		c.Name, c.Hosts = "u", []string{"x.up.example"}
	}))}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for why, c := range map[string]Config{
		"no CA":                     {MetricsPort: 9810, Profiles: profile(ok)},
		"a host not on the profile": {MetricsPort: 9810, CA: ca, Profiles: profile(with(func(c *Credential) { c.Hosts = []string{"b.example"} }))},
		"a wildcard host":           {MetricsPort: 9810, CA: ca, Profiles: profile(with(func(c *Credential) { c.Hosts = []string{"*.up.example"} }))},
		"a framing header":          {MetricsPort: 9810, CA: ca, Profiles: profile(with(func(c *Credential) { c.Header = "Host" }))},
		"a proxy header":            {MetricsPort: 9810, CA: ca, Profiles: profile(with(func(c *Credential) { c.Header = "Proxy-Authorization" }))},
		"no project":                {MetricsPort: 9810, CA: ca, Profiles: profile(with(func(c *Credential) { c.Project = "" }))},
		"a relative file":           {MetricsPort: 9810, CA: ca, Profiles: profile(with(func(c *Credential) { c.File = "value" }))},
		"twice for a host":          {MetricsPort: 9810, CA: ca, Profiles: profile(ok, with(func(c *Credential) { c.Name = "k2" }))},
	} {
		if c.Validate() == nil {
			t.Errorf("accepted %s", why)
		}
	}
}

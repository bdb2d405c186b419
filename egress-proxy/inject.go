package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stripe/goproxy"
)

// goproxy hands every allowed CONNECT here (its ConnectCopyHandler) once smokescreen has dialled the destination (its
// resolution, its address checks, its connection tracking) and answered the tool 200. Without a credential for the
// connection (credentials.go: its profile, its source pod's project, the CONNECT host) the bytes are copied both ways,
// as goproxy would. With one, the proxy terminates the tool's TLS with a certificate for the CONNECT host (ca.go; the
// tunnel guard has already checked the ClientHello's SNI is that host and refused Encrypted Client Hello), opens its
// own verified TLS to the host over the connection smokescreen dialled, and reads the tool's HTTP/1.1 requests one at
// a time. Each request, not only the first, must be HTTP/1.1 to the CONNECT host (Host, and an absolute URL's host);
// it loses every header named like the credential's (any case; '_' for '-' too), the hop-by-hop ones and its
// trailers, gets the credential, and is written anew (so its framing is the proxy's, not the tool's), then its
// response is read, searched for the credential (redact.go) and written back. A 3xx is passed back as it came: the
// proxy follows nothing, so the credential only ever goes to the CONNECT host. Any refusal is an HTTP error naming
// the rule, a CREDENTIAL-REFUSED line, and the end of the connection (nothing after it on that connection is read).

const (
	credentialInjected = "CREDENTIAL-INJECTED"
	credentialRefused  = "CREDENTIAL-REFUSED"
	upstreamHeaderMax  = 1 << 20 // what the proxy reads of an upstream's status line and headers
)

// injection is one connection the proxy adds a credential to.
type injection struct {
	proxy      *Proxy
	pctx       *goproxy.ProxyCtx
	credential *Credential
	profile    string
	source     string // the tool pod's address:port
	host       string // the CONNECT host, lower case
	port       int
	tool       *tls.Conn
}

// connectCopy is goproxy's ConnectCopyHandler (it runs on a goroutine of its own).
func (p *Proxy) connectCopy(pctx *goproxy.ProxyCtx, client, target net.Conn) {
	if c, profile, host, port := p.credentialOf(pctx.Req); c != nil {
		in := &injection{proxy: p, pctx: pctx, credential: c, profile: profile, source: pctx.Req.RemoteAddr,
			host: host, port: port}
		in.serve(client, target)
		return
	}
	go func() {
		_, err := io.Copy(target, client)
		if err != nil && pctx.ConnErrorHandler != nil && !errors.Is(err, net.ErrClosed) {
			pctx.ConnErrorHandler(err)
		}
		_ = target.Close()
	}()
	_, _ = io.Copy(client, target)
	_ = client.Close()
}

// credentialOf is the credential for a CONNECT request, if any: its profile by the port it arrived on, its project
// by its source address (projects.go), its host as the CONNECT named it.
func (p *Proxy) credentialOf(req *http.Request) (*Credential, string, string, int) {
	profile, ok := p.profileOfRequest(req)
	if !ok {
		return nil, "", "", 0
	}
	project, _ := p.projects.of(addressOf(remoteAddr(req.RemoteAddr)))
	host, port := requestedHostPort(req)
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return p.credentials.lookup(profile.Name, project, host), profile.Name, host, port
}

func remoteAddr(s string) net.Addr {
	if a, err := net.ResolveTCPAddr("tcp", s); err == nil {
		return a
	}
	return &net.TCPAddr{}
}

func (in *injection) serve(client, target net.Conn) {
	defer func() { _ = client.Close() }()
	in.tool = tls.Server(client, in.proxy.ca.serverConfig(in.host))
	if err := in.tool.Handshake(); err != nil {
		_ = target.Close()
		in.log(false, "no TLS with the tool: "+err.Error(), nil, 0)
		return
	}
	up := &upstream{in: in, conn: target}
	defer up.close()
	limit := &io.LimitedReader{R: in.tool, N: math.MaxInt64} // lowered to headerBytes while a request's head is read
	requests := bufio.NewReader(limit)
	headerWait := in.proxy.sconfig.ReadHeaderTimeout
	for {
		if _, err := requests.Peek(1); err != nil {
			return // the tool closed the connection, or it idled past idleSeconds (the tunnel guard's deadline)
		}
		limit.N = int64(in.proxy.limits.limits.HeaderBytes)
		closer := time.AfterFunc(headerWait, func() { _ = client.Close() })
		req, err := http.ReadRequest(requests)
		closer.Stop()
		limit.N = math.MaxInt64
		if err != nil {
			in.refuse(http.StatusBadRequest, "the request is no HTTP/1.1 request within "+
				strconv.Itoa(in.proxy.limits.limits.HeaderBytes)+" bytes and "+headerWait.String(), nil)
			return
		}
		if status, reason := in.check(req); status != 0 {
			in.refuse(status, reason, req)
			return
		}
		secret, err := in.credential.secret()
		if err != nil {
			in.refuse(http.StatusServiceUnavailable, err.Error(), req)
			return
		}
		in.prepare(req, secret)
		redactor := newRedactor(secret)
		resp, err := up.roundTrip(req)
		if err != nil { // the error may quote what the upstream sent: searched as a response is
			reason := string(redactor.replace([]byte("the request to " + in.host + " failed: " + err.Error())))
			in.refuse(http.StatusBadGateway, reason, req)
			return
		}
		if status, reason := in.redact(resp, req, redactor); status != 0 {
			_ = resp.Body.Close()
			in.refuse(status, reason, req)
			return
		}
		in.log(true, "credential "+in.credential.Name+" added to "+in.credential.Header, req, resp.StatusCode)
		err = resp.Write(in.tool)
		_ = resp.Body.Close()
		if err != nil || resp.Close || req.Close {
			return
		}
	}
}

// check holds a request to the rules of a connection with a credential; a status and a reason when it breaks one.
func (in *injection) check(req *http.Request) (int, string) {
	switch {
	case req.ProtoMajor != 1 || req.ProtoMinor != 1:
		return http.StatusHTTPVersionNotSupported, "a credential is added to HTTP/1.1 requests only, not " + req.Proto
	case req.Method == http.MethodConnect:
		return http.StatusForbidden, "no CONNECT inside a connection with a credential"
	case req.Header.Get("Upgrade") != "":
		return http.StatusForbidden, "no protocol upgrade (" + req.Header.Get("Upgrade") + ") on a connection with a " +
			"credential: the proxy reads HTTP/1.1 requests only"
	case !in.isHost(req.Host):
		return http.StatusForbidden, "the request's Host " + req.Host + " is not the CONNECT host " + in.host +
			": a credential goes to its CONNECT host only"
	case req.URL.IsAbs() && (!in.isHost(req.URL.Host) || req.URL.Scheme != "https"):
		return http.StatusForbidden, "the request's URL names " + req.URL.Scheme + "://" + req.URL.Host +
			", not https://" + in.host + ": a credential goes to its CONNECT host only"
	}
	return 0, ""
}

// isHost: authority is the CONNECT host, with the CONNECT port or none.
func (in *injection) isHost(authority string) bool {
	host, port := authority, in.port
	if h, p, err := net.SplitHostPort(authority); err == nil {
		host = h
		if port, err = strconv.Atoi(p); err != nil {
			return false
		}
	}
	return port == in.port && strings.EqualFold(strings.TrimSuffix(host, "."), in.host)
}

// hopByHop are the headers of one connection (RFC 9110, 7.6.1): not forwarded.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate",
	"Te", "Trailer", "Upgrade"}

// prepare makes the request the proxy sends: the tool's, less its hop-by-hop headers, its trailers and every header
// named like the credential's, plus the credential.
func (in *injection) prepare(req *http.Request, secret string) {
	for _, name := range req.Header.Values("Connection") {
		for _, n := range strings.Split(name, ",") {
			req.Header.Del(strings.TrimSpace(n))
		}
	}
	for _, name := range hopByHop {
		req.Header.Del(name)
	}
	req.Trailer = nil
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		_, _ = io.WriteString(in.tool, "HTTP/1.1 100 Continue\r\n\r\n")
	}
	req.Header.Del("Expect")
	wanted := normalHeader(in.credential.Header)
	for name := range req.Header {
		if normalHeader(name) == wanted {
			delete(req.Header, name)
		}
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // none, rather than Request.Write's Go-http-client/1.1
	}
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set(in.credential.Header, in.credential.Prefix+secret)
	req.Host = in.host
	if in.port != 443 {
		req.Host = net.JoinHostPort(in.host, strconv.Itoa(in.port))
	}
	req.RequestURI = ""
}

// normalHeader: header names a server may take for the same one (case; '_' for '-', as CGI and WSGI servers map them).
func normalHeader(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// redact makes the response safe to pass back: its headers and body searched for the credential, its body decoded
// when gzip (the proxy asked for none), refused in any other coding.
func (in *injection) redact(resp *http.Response, req *http.Request, r *redactor) (int, string) {
	resp.Header = r.headers(resp.Header)
	resp.Trailer = nil
	if req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent ||
		resp.StatusCode == http.StatusNotModified {
		return 0, ""
	}
	switch coding := strings.ToLower(resp.Header.Get("Content-Encoding")); coding {
	case "", "identity":
	case "gzip", "x-gzip":
		decoded, err := gzip.NewReader(resp.Body)
		if err != nil {
			return http.StatusBadGateway, "the upstream's gzip body cannot be read: " + err.Error()
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{decoded, resp.Body}
		resp.Header.Del("Content-Encoding")
	default:
		return http.StatusBadGateway, "the upstream answered in Content-Encoding " + coding + ", which the proxy " +
			"cannot search for the credential"
	}
	resp.Body = r.body(resp.Body)
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	resp.TransferEncoding = []string{"chunked"}
	return 0, ""
}

// refuse answers the tool with status and a line naming the rule, logs it, and ends the connection.
func (in *injection) refuse(status int, reason string, req *http.Request) {
	in.log(false, reason, req, status)
	body := "egress proxy: " + reason + "\n"
	_, _ = fmt.Fprintf(in.tool, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"+
		"Connection: close\r\n\r\n%s", status, http.StatusText(status), len(body), body)
}

// log writes the decision on one request: the credential's name and header, never its value.
func (in *injection) log(allowed bool, reason string, req *http.Request, status int) {
	fields := logrus.Fields{"proxy_type": "connect", "credential": in.credential.Name, "status_code": status}
	if req != nil {
		fields["method"] = req.Method
	}
	p := in.proxy
	p.fill(fields, in.profile, in.source, in.host, in.port, allowed, reason)
	if allowed {
		p.sconfig.Log.WithFields(fields).Info(credentialInjected)
	} else {
		p.sconfig.Log.WithFields(fields).Warn(credentialRefused)
	}
}

// upstream is the proxy's own TLS to the CONNECT host, verified against the roots for that name, over the connection
// smokescreen dialled; when the host has closed a kept-alive connection, a bodiless request is sent again once over a
// new one, dialled by smokescreen's dialer (the same checks) to the address it resolved for the CONNECT.
type upstream struct {
	in       *injection
	conn     net.Conn
	tls      *tls.Conn
	limit    *io.LimitedReader
	r        *bufio.Reader
	requests int
}

func (u *upstream) roundTrip(req *http.Request) (*http.Response, error) {
	resp, err := u.try(req)
	if err != nil && u.requests > 1 && req.ContentLength == 0 && len(req.TransferEncoding) == 0 &&
		(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)) {
		u.close()
		resp, err = u.try(req)
	}
	return resp, err
}

func (u *upstream) try(req *http.Request) (*http.Response, error) {
	if u.tls == nil {
		if err := u.connect(); err != nil {
			return nil, err
		}
	}
	u.requests++
	if err := req.Write(u.tls); err != nil {
		return nil, err
	}
	for {
		u.limit.N = upstreamHeaderMax
		resp, err := http.ReadResponse(u.r, req)
		u.limit.N = math.MaxInt64
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("it switched protocols")
		case resp.StatusCode < 200:
			continue // 1xx: informational, not passed on
		}
		return resp, nil
	}
}

func (u *upstream) connect() error {
	if u.conn == nil {
		ctx := context.WithValue(context.Background(), goproxy.ProxyContextKey, u.in.pctx)
		conn, err := u.in.proxy.handler.Tr.DialContext(ctx, "tcp", u.in.pctx.Req.Host)
		if err != nil {
			return err
		}
		u.conn = conn
	}
	u.tls = tls.Client(u.conn, &tls.Config{ServerName: u.in.host, RootCAs: u.in.proxy.roots,
		NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	if err := u.tls.Handshake(); err != nil {
		var unknown x509.UnknownAuthorityError
		if errors.As(err, &unknown) {
			return fmt.Errorf("%s's certificate is not signed by a root the proxy trusts", u.in.host)
		}
		return err
	}
	u.limit = &io.LimitedReader{R: u.tls, N: math.MaxInt64}
	u.r = bufio.NewReader(u.limit)
	return nil
}

func (u *upstream) close() {
	if u.tls != nil {
		_ = u.tls.Close()
	} else if u.conn != nil {
		_ = u.conn.Close()
	}
	u.tls, u.conn = nil, nil
}

package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"crypto/tls"
)

// A CONNECT tunnel must open with a TLS ClientHello whose SNI is the CONNECT host: otherwise a client allowed to reach
// one name could send its TLS to another behind it (domain fronting), or any protocol at all. smokescreen decides on
// the CONNECT line alone; tunnelGuard checks the tunnel's first bytes, without terminating TLS, and withholds every
// byte from the destination until it has. goproxy hands each hijacked CONNECT connection to tunnels.guard (its
// ConnectClientConnHandler) before smokescreen decides; the decision (PostDecisionRequestHandler) then tells the guard
// which host to expect. A connection no allowed decision reached expects nothing, and nothing passes.

const (
	helloLimit = 64 << 10         // a ClientHello is a few hundred bytes; a larger one is refused
	helloWait  = 10 * time.Second // the whole ClientHello must arrive within this
)

type tunnels struct {
	byRemote sync.Map // client address → *tunnelGuard, from the hijack to the decision
	refused  func(g *tunnelGuard, sni, reason string)
}

// guard wraps a hijacked client connection of a CONNECT request.
func (t *tunnels) guard(conn net.Conn) net.Conn {
	g := &tunnelGuard{Conn: conn, owner: t}
	t.byRemote.Store(conn.RemoteAddr().String(), g)
	return g
}

// expect records an allowed CONNECT's host for the connection it came on.
func (t *tunnels) expect(remote, host string) {
	if g, ok := t.byRemote.LoadAndDelete(remote); ok {
		g.(*tunnelGuard).expect(host)
	}
}

type tunnelGuard struct {
	net.Conn
	owner    *tunnels
	mu       sync.Mutex
	host     string // the allowed CONNECT host; empty until the decision
	checked  bool
	pending  []byte // read from the client, withheld until the ClientHello is complete and matches
	deadline time.Time
}

func (g *tunnelGuard) expect(host string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.host = host
}

// Host is the CONNECT host the guard expects ("" when no allowed decision reached it).
func (g *tunnelGuard) Host() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.host
}

// Read is called by one goroutine at a time (goproxy's copy from the client); only host is shared.
func (g *tunnelGuard) Read(b []byte) (int, error) {
	if g.checked {
		if len(g.pending) > 0 {
			n := copy(b, g.pending)
			g.pending = g.pending[n:]
			return n, nil
		}
		return g.Conn.Read(b)
	}
	if g.deadline.IsZero() {
		g.deadline = time.Now().Add(helloWait)
	}
	chunk := make([]byte, 16<<10)
	for {
		sni, complete, err := clientHelloSNI(g.pending)
		if complete {
			return g.decide(b, sni, err)
		}
		if len(g.pending) > helloLimit {
			return g.refuse("", "the tunnel's first bytes are no TLS ClientHello within 64 KiB")
		}
		if time.Now().After(g.deadline) {
			return g.refuse("", "no complete TLS ClientHello within 10 s")
		}
		_ = g.Conn.SetReadDeadline(g.deadline)
		n, err := g.Conn.Read(chunk)
		g.pending = append(g.pending, chunk[:n]...)
		if err != nil && n == 0 {
			var timeout net.Error
			if errors.As(err, &timeout) && timeout.Timeout() && time.Now().Before(g.deadline) {
				return 0, err // someone else's deadline (a hijack aborting a read): keep what was withheld
			}
			if errors.As(err, &timeout) && timeout.Timeout() {
				return g.refuse("", "no complete TLS ClientHello within 10 s")
			}
			return 0, err
		}
	}
}

func (g *tunnelGuard) decide(b []byte, sni string, err error) (int, error) {
	if err != nil {
		return g.refuse("", "the tunnel's first bytes are no TLS ClientHello")
	}
	host := g.Host()
	if host == "" {
		return g.refuse(sni, "no allowed CONNECT decision for this connection")
	}
	if !sameHost(sni, host) {
		if sni == "" {
			return g.refuse(sni, "the TLS ClientHello names no server (SNI), the CONNECT host is "+host)
		}
		return g.refuse(sni, "the TLS SNI "+sni+" is not the CONNECT host "+host)
	}
	g.checked = true
	_ = g.Conn.SetReadDeadline(time.Time{})
	n := copy(b, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

func (g *tunnelGuard) refuse(sni, reason string) (int, error) {
	g.pending = nil
	g.owner.refused(g, sni, reason)
	_ = g.Conn.Close()
	return 0, errors.New("egress proxy: " + reason)
}

func (g *tunnelGuard) Close() error {
	g.owner.byRemote.Delete(g.Conn.RemoteAddr().String())
	return g.Conn.Close()
}

func sameHost(sni, host string) bool {
	return sni != "" && strings.EqualFold(strings.TrimSuffix(sni, "."), strings.TrimSuffix(host, "."))
}

var errHelloRead = errors.New("client hello read")

// clientHelloSNI parses a TLS ClientHello with crypto/tls itself: complete is false while more bytes are needed;
// err is set when the bytes are not a ClientHello.
func clientHelloSNI(data []byte) (sni string, complete bool, err error) {
	if len(data) == 0 {
		return "", false, nil
	}
	var hello *tls.ClientHelloInfo
	err = tls.Server(&bytesConn{r: bytes.NewReader(data)}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			hello = h
			return nil, errHelloRead
		},
	}).Handshake()
	if hello != nil {
		return hello.ServerName, true, nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "", false, nil
	}
	return "", true, err
}

// bytesConn is a net.Conn over bytes already read: reads come from them, writes (an alert) go nowhere.
type bytesConn struct {
	r *bytes.Reader
}

func (c *bytesConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *bytesConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *bytesConn) Close() error                     { return nil }
func (c *bytesConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *bytesConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *bytesConn) SetDeadline(time.Time) error      { return nil }
func (c *bytesConn) SetReadDeadline(time.Time) error  { return nil }
func (c *bytesConn) SetWriteDeadline(time.Time) error { return nil }

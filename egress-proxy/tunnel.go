package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"crypto/tls"
)

// A CONNECT tunnel must open with a TLS ClientHello whose SNI is the CONNECT host: otherwise a client allowed to reach
// one name could send its TLS to another behind it (domain fronting), or any protocol at all. smokescreen decides on
// the CONNECT line alone; tunnelGuard checks the tunnel's first bytes, without terminating TLS, and withholds every
// byte from the destination until it has. goproxy hands each hijacked CONNECT connection to tunnels.guard (its
// ConnectClientConnHandler) before smokescreen decides; the decision (PostDecisionRequestHandler) then tells the guard
// which host to expect. A connection no allowed decision reached expects nothing, and nothing passes.
//
// The SNI checked is the one in the clear, the outer ClientHello's. A ClientHello with Encrypted Client Hello
// (extension encrypted_client_hello, or the draft encrypted_server_name before it) carries another, inner name that
// only the destination reads: the outer name could be the allowed host and the inner one any neighbour on the same
// address (a CDN), so such a ClientHello is refused. What the client sends inside TLS (the HTTP Host) is not seen.
//
// Once the ClientHello passed, the guard bounds the tunnel's client side as smokescreen's TimeoutConn would (it takes
// its place as goproxy's ConnectClientConnHandler): every read and write pushes both deadlines idle ahead, so a tunnel
// with no byte either way for that long, or whose client stops reading, is cut; and lifetime after the check it is
// closed whatever it does.

const (
	// A real ClientHello takes a few hundred bytes to 2 KB (with a post-quantum key share): 16 KiB, one TLS record, is
	// room enough, and bounds what a tunnel that never completes its ClientHello holds (crypto/tls would take 64 KiB).
	helloLimit  = 16 << 10
	helloParses = 8 // parses of a ClientHello that arrives in pieces, at most

	extensionEncryptedClientHello = 0xfe0d // RFC 9849
	extensionEncryptedServerName  = 0xffce // draft-ietf-tls-esni up to -02, ECH's predecessor
)

type tunnels struct {
	byRemote  sync.Map // client address → *tunnelGuard, from the hijack to the decision
	refused   func(g *tunnelGuard, sni, reason string)
	helloWait time.Duration // the whole ClientHello must arrive within this
	idle      time.Duration // no byte either way for this long closes an open tunnel
	lifetime  time.Duration // an open tunnel is closed this long after its check
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
	host     string      // the allowed CONNECT host; empty until the decision
	checked  atomic.Bool // the ClientHello passed: bytes flow, under the idle deadline
	pending  []byte      // read from the client, withheld until the ClientHello is complete and matches
	parses   int         // of the ClientHello so far
	deadline time.Time
	ended    *time.Timer // closes the tunnel at its lifetime
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
	if g.checked.Load() {
		if len(g.pending) > 0 {
			n := copy(b, g.pending)
			g.pending = g.pending[n:]
			if len(g.pending) == 0 {
				g.pending = nil
			}
			return n, nil
		}
		g.pushDeadline()
		return g.Conn.Read(b)
	}
	if g.deadline.IsZero() {
		g.deadline = time.Now().Add(g.owner.helloWait)
	}
	for {
		need := helloBytesNeeded(g.pending)
		if need > helloLimit {
			return g.refuse("", "the tunnel's first bytes are no TLS ClientHello within 16 KiB")
		}
		if len(g.pending) >= need {
			if g.parses++; g.parses > helloParses {
				return g.refuse("", "the TLS ClientHello came in too many pieces")
			}
			hello, complete, err := clientHelloOf(g.pending)
			if complete {
				return g.decide(b, hello, err)
			}
			need = len(g.pending) + 1
		}
		if time.Now().After(g.deadline) {
			return g.refuse("", "no complete TLS ClientHello within "+g.owner.helloWait.String())
		}
		_ = g.Conn.SetReadDeadline(g.deadline)
		g.pending = slices.Grow(g.pending, min(need, helloLimit)-len(g.pending))
		n, err := g.Conn.Read(g.pending[len(g.pending):cap(g.pending)])
		g.pending = g.pending[:len(g.pending)+n]
		if err != nil && n == 0 {
			var timeout net.Error
			if errors.As(err, &timeout) && timeout.Timeout() && time.Now().Before(g.deadline) {
				return 0, err // someone else's deadline (a hijack aborting a read): keep what was withheld
			}
			if errors.As(err, &timeout) && timeout.Timeout() {
				return g.refuse("", "no complete TLS ClientHello within "+g.owner.helloWait.String())
			}
			return 0, err
		}
	}
}

// helloBytesNeeded is the least the ClientHello can take, from the first record's header and the handshake message's
// length (a ClientHello in one record, as clients send one, takes exactly that): crypto/tls parses it only once that
// much has arrived, not again on every read of a ClientHello that trickles in. Bytes that are no TLS handshake record
// are handed to the parser at once, which refuses them.
func helloBytesNeeded(data []byte) int {
	const recordHeader, handshakeHeader = 5, 4
	if len(data) > 0 && data[0] != 0x16 { // not a handshake record
		return len(data)
	}
	if len(data) < recordHeader+handshakeHeader {
		return recordHeader + handshakeHeader
	}
	return recordHeader + handshakeHeader + (int(data[6])<<16 | int(data[7])<<8 | int(data[8]))
}

func (g *tunnelGuard) decide(b []byte, hello *tls.ClientHelloInfo, err error) (int, error) {
	if err != nil {
		return g.refuse("", "the tunnel's first bytes are no TLS ClientHello")
	}
	sni := hello.ServerName
	for _, extension := range hello.Extensions {
		if extension == extensionEncryptedClientHello || extension == extensionEncryptedServerName {
			return g.refuse(sni, "the TLS ClientHello encrypts the name it is for (Encrypted Client Hello): "+
				"the egress proxy checks only a name in the clear")
		}
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
	if g.owner.lifetime > 0 {
		g.mu.Lock()
		g.ended = time.AfterFunc(g.owner.lifetime, func() { _ = g.Close() })
		g.mu.Unlock()
	}
	g.checked.Store(true)
	g.pushDeadline()
	n := copy(b, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// pushDeadline moves both deadlines of an open tunnel idle ahead: a read waits that long for a byte, a write for the
// client to take one, whichever direction moves keeps the other alive.
func (g *tunnelGuard) pushDeadline() {
	if g.owner.idle > 0 {
		_ = g.Conn.SetDeadline(time.Now().Add(g.owner.idle))
	}
}

// Write is goproxy's copy to the client (and its answer to the CONNECT): bounded by the idle deadline; before the
// check only the write deadline, the read deadline being the ClientHello's.
func (g *tunnelGuard) Write(b []byte) (int, error) {
	if g.checked.Load() {
		g.pushDeadline()
	} else if g.owner.idle > 0 {
		_ = g.Conn.SetWriteDeadline(time.Now().Add(g.owner.idle))
	}
	return g.Conn.Write(b)
}

func (g *tunnelGuard) refuse(sni, reason string) (int, error) {
	g.pending = nil
	g.owner.refused(g, sni, reason)
	_ = g.Conn.Close()
	return 0, errors.New("egress proxy: " + reason)
}

func (g *tunnelGuard) Close() error {
	g.owner.byRemote.Delete(g.Conn.RemoteAddr().String())
	g.mu.Lock()
	if g.ended != nil {
		g.ended.Stop()
	}
	g.mu.Unlock()
	return g.Conn.Close()
}

func sameHost(sni, host string) bool {
	return sni != "" && strings.EqualFold(strings.TrimSuffix(sni, "."), strings.TrimSuffix(host, "."))
}

var errHelloRead = errors.New("client hello read")

// clientHelloOf parses a TLS ClientHello with crypto/tls itself: complete is false while more bytes are needed;
// err is set when the bytes are not a ClientHello. crypto/tls's server reads the whole message (across records),
// checks an Encrypted Client Hello extension's form (it has no keys: it goes no further), and hands over the outer
// ClientHello's server name and the list of its extensions.
func clientHelloOf(data []byte) (hello *tls.ClientHelloInfo, complete bool, err error) {
	if len(data) == 0 {
		return nil, false, nil
	}
	err = tls.Server(&bytesConn{r: bytes.NewReader(data)}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			hello = h
			return nil, errHelloRead
		},
	}).Handshake()
	if hello != nil {
		return hello, true, nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, false, nil
	}
	return nil, true, err
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

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Connections are counted where they are accepted, before a byte is read: a connection that never finishes its
// request holds memory as surely as a tunnel does. Each accepted connection is charged to the proxy, to its source
// address (one tool pod) and to the project of that pod (projects.go: from the address, never from the client; a
// source of no known project is charged to its address only), and released when it closes, whoever closes it (the
// server, goproxy, the tunnel guard). A connection over a limit is answered at once, before its request is read,
// with 429 (its pod's or its project's limit) or 503 (the proxy's), a line of text and Connection: close, then
// closed; its refusal is a decision line (CONNECTION-REFUSED, decision deny). netutil.LimitListener does not fit: it
// makes the accept wait (a silent hang for every source alike) and knows no pod or project.

const (
	connectionRefused = "CONNECTION-REFUSED"
	// refusing: a refused connection is drained this long before it is closed, so that the client reads the answer
	// rather than a reset; at most refusersMax at once (a flood of refusals is closed without the wait).
	refusalLinger = time.Second
	refusersMax   = 64
)

type connLimits struct {
	limits    Limits
	projects  projects
	refused   func(c net.Conn, limit, reason string)
	mu        sync.Mutex
	total     int
	bySource  map[string]int
	byProject map[string]int
	refusers  chan struct{}
}

func newConnLimits(l Limits, names projects, refused func(c net.Conn, limit, reason string)) *connLimits {
	return &connLimits{limits: l, projects: names, refused: refused, bySource: map[string]int{},
		byProject: map[string]int{}, refusers: make(chan struct{}, refusersMax)}
}

// open is the number of connections held now.
func (cl *connLimits) open() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.total
}

// acquire charges a connection from source, of project ("" when none is known), or says which limit it is over.
func (cl *connLimits) acquire(source, project string) (status int, limit, reason string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	switch {
	case cl.bySource[source] >= cl.limits.ConnectionsPerPod:
		return http.StatusTooManyRequests, "pod", fmt.Sprintf("this tool pod (%s) holds %d connections to the egress "+
			"proxy, its limit (tool.egress.proxy.limits.connectionsPerPod)", source, cl.bySource[source])
	case project != "" && cl.byProject[project] >= cl.limits.ConnectionsPerProject:
		return http.StatusTooManyRequests, "project", fmt.Sprintf("the tool pods of project %s hold %d connections to the "+
			"egress proxy, its limit (tool.egress.proxy.limits.connectionsPerProject)", project, cl.byProject[project])
	case cl.total >= cl.limits.Connections:
		return http.StatusServiceUnavailable, "proxy", fmt.Sprintf("the egress proxy holds %d connections, its limit "+
			"(tool.egress.proxy.limits.connections)", cl.total)
	}
	cl.total++
	cl.bySource[source]++
	if project != "" {
		cl.byProject[project]++
	}
	return 0, "", ""
}

func (cl *connLimits) release(source, project string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.total--
	if cl.bySource[source]--; cl.bySource[source] <= 0 {
		delete(cl.bySource, source)
	}
	if project != "" {
		if cl.byProject[project]--; cl.byProject[project] <= 0 {
			delete(cl.byProject, project)
		}
	}
}

// listen wraps a profile's listener: every connection it hands the server is charged, or refused.
func (cl *connLimits) listen(l net.Listener) net.Listener {
	return &limitedListener{Listener: l, limits: cl}
}

type limitedListener struct {
	net.Listener
	limits *connLimits
}

func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		source := addressOf(c.RemoteAddr())
		project, _ := l.limits.projects.of(source)
		if project == "unknown" {
			project = ""
		}
		status, limit, reason := l.limits.acquire(source, project)
		if status == 0 {
			boundBuffers(c, l.limits.limits.SocketBufferBytes)
			return &limitedConn{Conn: c, limits: l.limits, source: source, project: project}, nil
		}
		l.limits.refused(c, limit, reason)
		l.limits.refuse(c, status, reason)
	}
}

// refuse answers a connection over a limit and closes it, without waiting for its request: the answer is written at
// once (a fresh connection's send buffer takes it), then the write side is shut and what the client sends is read
// and dropped for refusalLinger before the close, so that the client reads the answer rather than a reset.
func (cl *connLimits) refuse(c net.Conn, status int, reason string) {
	body := "egress proxy: " + reason + "\n"
	answer := "HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"Retry-After: 1\r\nConnection: close\r\n\r\n" + body
	_ = c.SetDeadline(time.Now().Add(refusalLinger))
	if _, err := io.WriteString(c, answer); err != nil {
		_ = c.Close()
		return
	}
	select {
	case cl.refusers <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-cl.refusers }()
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
		_ = c.Close()
	}()
}

// limitedConn is an accepted connection charged to the limits until it is closed (once, whoever closes it).
type limitedConn struct {
	net.Conn
	limits          *connLimits
	source, project string
	once            sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() { c.limits.release(c.source, c.project) })
	return c.Conn.Close()
}

// CloseWrite keeps the half-close net/http uses before closing a connection it answered with an error.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// boundBuffers fixes a socket's kernel buffers (SO_RCVBUF, SO_SNDBUF), which Linux otherwise grows while they fill.
func boundBuffers(c net.Conn, size int) {
	if b, ok := c.(interface {
		SetReadBuffer(int) error
		SetWriteBuffer(int) error
	}); ok && size > 0 {
		_ = b.SetReadBuffer(size)
		_ = b.SetWriteBuffer(size)
	}
}

func addressOf(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

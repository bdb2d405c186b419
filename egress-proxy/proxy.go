package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"crypto/x509"

	"github.com/sirupsen/logrus"
	"github.com/stripe/goproxy"
	"github.com/stripe/smokescreen/pkg/smokescreen"
	acl "github.com/stripe/smokescreen/pkg/smokescreen/acl/v1"
	"github.com/stripe/smokescreen/pkg/smokescreen/conntrack"
	"golang.org/x/time/rate"
)

// Proxy is smokescreen, configured from Config: one ACL role per profile, chosen by the port a request arrived on;
// the profile's ports checked after smokescreen's own decision; CONNECT tunnels guarded (tunnel.go); every decision
// logged as one JSON line with the profile and the project (decisions.go); connections counted and bounded per pod,
// per project and in all, headers bounded in time and size, tunnels in idleness and age (limits.go).
type Proxy struct {
	config            *Config
	sconfig           *smokescreen.Config
	server            *http.Server
	tunnels           *tunnels
	projects          projects
	limits            *connLimits
	refusalLines      *rate.Limiter
	refusalsNotLogged atomic.Int64
	handler           *goproxy.ProxyHttpServer
	credentials       credentials    // what the proxy adds, for which profile, project and host (credentials.go)
	ca                *authority     // signs what the proxy shows a tool it adds a credential for (ca.go)
	roots             *x509.CertPool // what it trusts of those hosts; nil: the system's (ca.go)
}

// NewProxy builds the proxy. resolver may be nil (the system's: the pod's cluster DNS).
func NewProxy(c *Config, logger *logrus.Logger, resolver smokescreen.Resolver, names projects) (*Proxy, error) {
	sc := smokescreen.NewConfig()
	sc.Log = logger
	if resolver != nil {
		sc.Resolver = resolver
	}
	if err := sc.SetDenyRanges(c.BlockedCidrs); err != nil {
		return nil, err
	}
	if err := sc.SetAllowRanges(c.AllowedCidrs); err != nil {
		return nil, err
	}
	if c.ConnectTimeoutSeconds > 0 {
		sc.ConnectTimeout = time.Duration(c.ConnectTimeoutSeconds) * time.Second
	}
	rules := &acl.ACL{Rules: map[string]acl.Rule{}, Logger: logger}
	for _, p := range c.Profiles {
		if err := rules.Add(p.Name, acl.Rule{Policy: acl.Enforce, DomainGlobs: p.Hosts}); err != nil {
			return nil, fmt.Errorf("profile %q: %w", p.Name, err)
		}
	}
	sc.EgressACL = rules // no default rule: a request on no profile's port is refused
	sc.Port = uint16(c.Profiles[0].Port)
	limits := c.Limits.withDefaults()
	// smokescreen's idle timeout: the destination side of a tunnel (its InstrumentedConn bumps a deadline on every
	// read and write), its connection tracker, the pooled connections of plain HTTP requests. The client side of a
	// tunnel is the guard's (tunnel.go), which takes the place of smokescreen's ConnectClientConnHandler.
	sc.IdleTimeout = seconds(limits.IdleSeconds)
	sc.ReadHeaderTimeout = seconds(limits.HeaderSeconds)
	// smokescreen's own dial (it passes the address it resolved and checked), with the destination socket's buffers
	// bounded as the client's are (limits.go).
	sc.ProxyDialTimeout = func(ctx context.Context, network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, address)
		if err == nil {
			boundBuffers(conn, limits.SocketBufferBytes)
		}
		return conn, err
	}
	p := &Proxy{config: c, sconfig: sc, projects: names,
		refusalLines: rate.NewLimiter(refusalLinesPerSecond, refusalLinesPerSecond), credentials: newCredentials(c)}
	if len(p.credentials) > 0 {
		var err error
		if p.ca, err = loadAuthority(*c.CA); err != nil {
			return nil, err
		}
	}
	roots, err := loadRoots(c.UpstreamRootsFile)
	if err != nil {
		return nil, err
	}
	p.roots = roots
	p.tunnels = &tunnels{refused: p.logRefusedTunnel, helloWait: sc.ReadHeaderTimeout, idle: sc.IdleTimeout,
		lifetime: seconds(limits.TunnelSeconds)}
	p.limits = newConnLimits(limits, names, p.logRefusedConnection)
	sc.RoleFromRequest = p.profileOf
	sc.PostDecisionRequestHandler = p.afterDecision
	logger.AddHook(&decisionFields{proxy: p})
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if err := sc.InitializeSelfConnectionDetection(); err != nil {
		logger.WithError(err).Warn("self-connection detection unavailable")
	}
	sc.ConnTracker = conntrack.NewTracker(sc.IdleTimeout, sc.MetricsClient, sc.Log, sc.ShuttingDown, nil)
	handler := smokescreen.BuildProxy(sc)
	handler.ConnectClientConnHandler = p.tunnels.guard
	handler.ConnectCopyHandler = p.connectCopy // a tunnel, or a connection the proxy adds a credential to (inject.go)
	p.handler = handler
	// MaxHeaderBytes bounds what net/http buffers of a request line and its headers (it reads up to that plus its
	// 4 KiB buffer, then answers 431); goproxy reads no request of its own on a CONNECT it does not intercept.
	p.server = &http.Server{Handler: handler, ReadHeaderTimeout: sc.ReadHeaderTimeout, ReadTimeout: sc.ReadTimeout,
		WriteTimeout: sc.WriteTimeout, IdleTimeout: sc.IdleTimeout, MaxHeaderBytes: limits.HeaderBytes}
	return p, nil
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second))
}

// Serve serves one listener per profile (the listener's port is the profile) until Shutdown.
func (p *Proxy) Serve(listeners []net.Listener) error {
	p.sconfig.MetricsClient.SetStarted()
	p.sconfig.ShuttingDown.Store(false)
	errs := make(chan error, len(listeners))
	for _, l := range listeners {
		go func(l net.Listener) { errs <- p.server.Serve(p.limits.listen(l)) }(l)
	}
	err := <-errs
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for the requests under way (not for open tunnels).
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.sconfig.ShuttingDown.Store(true)
	return p.server.Shutdown(ctx)
}

// profileOf is smokescreen's role: the profile whose port the request arrived on.
func (p *Proxy) profileOf(req *http.Request) (string, error) {
	if profile, ok := p.profileOfRequest(req); ok {
		return profile.Name, nil
	}
	return "", errors.New("the request arrived on no profile's port")
}

func (p *Proxy) profileOfRequest(req *http.Request) (Profile, bool) {
	local, ok := req.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return Profile{}, false
	}
	tcp, ok := local.(*net.TCPAddr)
	if !ok {
		return Profile{}, false
	}
	return p.config.byPort(tcp.Port)
}

// afterDecision runs once smokescreen allowed a request by host: the profile's ports, then the tunnel's expected host.
func (p *Proxy) afterDecision(req *http.Request) error {
	profile, ok := p.profileOfRequest(req)
	if !ok {
		return errors.New("the request arrived on no profile's port")
	}
	host, port := requestedHostPort(req)
	if !profile.allowsPort(port) {
		return fmt.Errorf("port %d is not a port of egress profile %s", port, profile.Name)
	}
	if req.Method == http.MethodConnect {
		p.tunnels.expect(req.RemoteAddr, host)
	}
	return nil
}

// requestedHostPort is the destination of a CONNECT (its authority) or of a plain HTTP request (its URL).
func requestedHostPort(req *http.Request) (string, int) {
	authority := req.Host
	defaultPort := 80
	if req.Method != http.MethodConnect && req.URL != nil && req.URL.Host != "" {
		authority = req.URL.Host
		if req.URL.Scheme == "https" {
			defaultPort = 443
		}
	}
	host, portText, err := net.SplitHostPort(authority)
	if err != nil {
		return authority, defaultPort
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return host, 0
	}
	return host, port
}

package main

import (
	"net"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/stripe/smokescreen/pkg/smokescreen"
)

// Every decision is one JSON line with these fields beside smokescreen's own: profile, project, pod (from the tool
// pod's address, never from the client), source, host, port, decision (allow|deny) and reason. smokescreen writes one
// canonical line per request (CANONICAL-PROXY-DECISION); decisionFields adds the fields to it. A tunnel the guard
// refuses after smokescreen allowed its CONNECT gets a line of its own (TUNNEL-REFUSED) with decision deny, and so does
// a connection refused over a limit (CONNECTION-REFUSED, limits.go), at most refusalLinesPerSecond of those: a flood
// is refused by the thousand, and the line that is written counts the ones that were not (refusals_not_logged).

const (
	tunnelRefused         = "TUNNEL-REFUSED"
	refusalLinesPerSecond = 10
)

type decisionFields struct {
	proxy *Proxy
}

func (h *decisionFields) Levels() []logrus.Level { return logrus.AllLevels }

func (h *decisionFields) Fire(entry *logrus.Entry) error {
	if entry.Message != smokescreen.CanonicalProxyDecision {
		return nil
	}
	data := entry.Data
	source, _ := data[smokescreen.LogFieldInRemoteAddr].(string)
	requested, _ := data[smokescreen.LogFieldRequestedHost].(string)
	allowed, _ := data[smokescreen.LogFieldAllow].(bool)
	reason, _ := data[smokescreen.LogFieldDecisionReason].(string)
	if failure, ok := data[smokescreen.LogFieldError].(string); ok && failure != "" {
		allowed = false
		reason = failure
	}
	host, port := splitHostPort(requested)
	profile, _ := data[smokescreen.LogFieldRole].(string)
	h.proxy.fill(data, profile, source, host, port, allowed, reason)
	if project, _ := data["project"].(string); allowed && data[smokescreen.LogFieldProxyType] == "connect" {
		if c := h.proxy.credentials.lookup(profile, project, strings.ToLower(strings.TrimSuffix(host, "."))); c != nil {
			data["credential"] = c.Name // its connection is terminated and the credential added (inject.go)
		}
	}
	return nil
}

func (p *Proxy) fill(data logrus.Fields, profile, source, host string, port int, allowed bool, reason string) {
	ip, _, err := net.SplitHostPort(source)
	if err != nil {
		ip = source
	}
	project, pod := p.projects.of(ip)
	decision := "deny"
	if allowed {
		decision = "allow"
	}
	data["profile"] = profile
	data["project"] = project
	data["pod"] = pod
	data["source"] = source
	data["host"] = host
	data["port"] = port
	data["decision"] = decision
	data["reason"] = reason
}

func (p *Proxy) logRefusedTunnel(g *tunnelGuard, sni, reason string) {
	fields := logrus.Fields{"proxy_type": "connect", "sni": sni}
	profile := ""
	if local, ok := g.LocalAddr().(*net.TCPAddr); ok {
		if pr, found := p.config.byPort(local.Port); found {
			profile = pr.Name
		}
	}
	p.fill(fields, profile, g.RemoteAddr().String(), g.Host(), 0, false, reason)
	p.sconfig.Log.WithFields(fields).Warn(tunnelRefused)
}

func (p *Proxy) logRefusedConnection(c net.Conn, limit, reason string) {
	p.sconfig.MetricsClient.IncrWithTags("cn.refused", map[string]string{"limit": limit}, 1)
	if !p.refusalLines.Allow() {
		p.refusalsNotLogged.Add(1)
		return
	}
	profile := ""
	if local, ok := c.LocalAddr().(*net.TCPAddr); ok {
		if pr, found := p.config.byPort(local.Port); found {
			profile = pr.Name
		}
	}
	fields := logrus.Fields{"refusals_not_logged": p.refusalsNotLogged.Swap(0)}
	p.fill(fields, profile, c.RemoteAddr().String(), "", 0, false, reason)
	p.sconfig.Log.WithFields(fields).Warn(connectionRefused)
}

func splitHostPort(authority string) (string, int) {
	host, portText, err := net.SplitHostPort(authority)
	if err != nil {
		return authority, 0
	}
	port, _ := strconv.Atoi(portText)
	return host, port
}

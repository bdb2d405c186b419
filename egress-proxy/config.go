package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
)

// Config is the proxy's one input, rendered by the chart from tool.egress (charts/sandboxd/templates/egress-proxy.yaml).
type Config struct {
	Profiles              []Profile `json:"profiles"`
	BlockedCidrs          []string  `json:"blockedCidrs"`
	AllowedCidrs          []string  `json:"allowedCidrs"`
	MetricsPort           int       `json:"metricsPort"`
	Namespace             string    `json:"namespace"`
	ConnectTimeoutSeconds int       `json:"connectTimeoutSeconds"`
	Limits                Limits    `json:"limits"`
	// CA signs the certificates the proxy shows a tool on a connection it adds a credential to (credentials.go, ca.go):
	// required when a profile has credentials.
	CA *CAFiles `json:"ca,omitempty"`
	// UpstreamRootsFile, a PEM bundle, is what the proxy trusts of the hosts it adds credentials for; empty: the
	// system's roots, else the Mozilla roots compiled in (the image has no system store).
	UpstreamRootsFile string `json:"upstreamRootsFile,omitempty"`
}

// Limits bound what the proxy holds, so that no tool pod and no project can take it from the others and no flood can
// take its memory (limits.go). A field left out (or 0) takes the default below, the chart's (tool.egress.proxy.limits).
type Limits struct {
	// Connections held at once, all sources together: past it a new connection gets 503 and is closed. Sized from
	// the memory a held connection can cost (README.md) and the pod's memory limit.
	Connections int `json:"connections"`
	// Connections held at once from one source address (one tool pod): past it 429.
	ConnectionsPerPod int `json:"connectionsPerPod"`
	// Connections held at once from the tool pods of one project (by their address, projects.go): past it 429.
	ConnectionsPerProject int `json:"connectionsPerProject"`
	// A request's line and headers must arrive within this; then the connection is closed.
	HeaderSeconds float64 `json:"headerSeconds"`
	// A request's line and headers may take this many bytes; past it 431 and the connection is closed.
	HeaderBytes int `json:"headerBytes"`
	// A tunnel, or a kept-alive connection between requests, with no byte either way for this long is closed.
	IdleSeconds float64 `json:"idleSeconds"`
	// A tunnel is closed this long after it opened, busy or not.
	TunnelSeconds float64 `json:"tunnelSeconds"`
	// The kernel buffers of each of the proxy's sockets, each way (SO_RCVBUF, SO_SNDBUF; Linux allots up to twice
	// this): without them a tunnel whose client stops reading a download, or whose destination stops reading an
	// upload, holds megabytes of the pod's memory in its sockets (Linux grows them up to tcp_rmem, tcp_wmem).
	SocketBufferBytes int `json:"socketBufferBytes"`
}

// DefaultLimits are the limits of a configuration that leaves them out, and the chart's defaults. A held connection
// costs at most about 64 KB of the process and, a tunnel stalled both ways, 4 sockets' buffers of the kernel (each up
// to twice socketBufferBytes: 512 KiB); 256 of them, 144 MiB, and the process's own 35-40 MiB stay under the chart's
// 256 Mi (README.md has the measurements). One project may hold half.
var DefaultLimits = Limits{
	Connections:           256,
	ConnectionsPerPod:     32,
	ConnectionsPerProject: 128,
	HeaderSeconds:         10,
	HeaderBytes:           16 << 10,
	IdleSeconds:           120,
	TunnelSeconds:         3600,
	SocketBufferBytes:     64 << 10,
}

// withDefaults fills the limits left out.
func (l Limits) withDefaults() Limits {
	fill := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	fillSeconds := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	fill(&l.Connections, DefaultLimits.Connections)
	fill(&l.ConnectionsPerPod, DefaultLimits.ConnectionsPerPod)
	fill(&l.ConnectionsPerProject, DefaultLimits.ConnectionsPerProject)
	fillSeconds(&l.HeaderSeconds, DefaultLimits.HeaderSeconds)
	fill(&l.HeaderBytes, DefaultLimits.HeaderBytes)
	fillSeconds(&l.IdleSeconds, DefaultLimits.IdleSeconds)
	fillSeconds(&l.TunnelSeconds, DefaultLimits.TunnelSeconds)
	fill(&l.SocketBufferBytes, DefaultLimits.SocketBufferBytes)
	return l
}

// Profile is one egress profile: the port its tool pods reach the proxy on, and what they may reach through it.
type Profile struct {
	Name  string   `json:"name"`
	Port  int      `json:"port"`
	Hosts []string `json:"hosts"`
	Ports []int    `json:"ports"`
	// Credentials the proxy adds to the requests of one project's tools of this profile, bound for their hosts.
	Credentials []Credential `json:"credentials,omitempty"`
}

var (
	profileName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	hostGlob    = regexp.MustCompile(`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// LoadConfig reads and validates the configuration file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	decoder := json.NewDecoder(strings.NewReader(string(data)))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// Validate says what is wrong with the configuration, if anything.
func (c *Config) Validate() error {
	if len(c.Profiles) == 0 {
		return fmt.Errorf("no profiles")
	}
	names, ports := map[string]bool{}, map[int]bool{}
	for _, p := range c.Profiles {
		if !profileName.MatchString(p.Name) {
			return fmt.Errorf("profile name %q is not a DNS label", p.Name)
		}
		if names[p.Name] {
			return fmt.Errorf("profile %q is listed twice", p.Name)
		}
		names[p.Name] = true
		if p.Port < 1 || p.Port > 65535 || p.Port == c.MetricsPort || ports[p.Port] {
			return fmt.Errorf("profile %q: port %d is not a free port in 1..65535", p.Name, p.Port)
		}
		ports[p.Port] = true
		if len(p.Hosts) == 0 || len(p.Ports) == 0 {
			return fmt.Errorf("profile %q needs at least one host and one port", p.Name)
		}
		for _, h := range p.Hosts {
			if !hostGlob.MatchString(h) {
				return fmt.Errorf("profile %q: host %q is neither a DNS name nor *.<name>", p.Name, h)
			}
		}
		for _, port := range p.Ports {
			if port < 1 || port > 65535 {
				return fmt.Errorf("profile %q: port %d is not in 1..65535", p.Name, port)
			}
		}
		if err := p.validateCredentials(); err != nil {
			return fmt.Errorf("profile %q: %w", p.Name, err)
		}
	}
	if err := c.validateCA(); err != nil {
		return err
	}
	for _, cidr := range append(append([]string{}, c.BlockedCidrs...), c.AllowedCidrs...) {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			return fmt.Errorf("%q is not a CIDR", cidr)
		}
	}
	if c.MetricsPort < 1 || c.MetricsPort > 65535 {
		return fmt.Errorf("metricsPort %d is not in 1..65535", c.MetricsPort)
	}
	l := c.Limits
	for name, v := range map[string]float64{"connections": float64(l.Connections),
		"connectionsPerPod": float64(l.ConnectionsPerPod), "connectionsPerProject": float64(l.ConnectionsPerProject),
		"headerSeconds": l.HeaderSeconds, "headerBytes": float64(l.HeaderBytes), "idleSeconds": l.IdleSeconds,
		"tunnelSeconds": l.TunnelSeconds, "socketBufferBytes": float64(l.SocketBufferBytes)} {
		if v < 0 {
			return fmt.Errorf("limits.%s %v is negative", name, v)
		}
	}
	if l.HeaderBytes != 0 && l.HeaderBytes < 1024 {
		return fmt.Errorf("limits.headerBytes %d is under 1024: no real request would fit", l.HeaderBytes)
	}
	if l.SocketBufferBytes != 0 && l.SocketBufferBytes < 4096 {
		return fmt.Errorf("limits.socketBufferBytes %d is under 4096", l.SocketBufferBytes)
	}
	return nil
}

// byPort finds the profile that listens on a port.
func (c *Config) byPort(port int) (Profile, bool) {
	for _, p := range c.Profiles {
		if p.Port == port {
			return p, true
		}
	}
	return Profile{}, false
}

// byName finds a profile.
func (c *Config) byName(name string) (Profile, bool) {
	for _, p := range c.Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

func (p Profile) allowsPort(port int) bool {
	for _, allowed := range p.Ports {
		if allowed == port {
			return true
		}
	}
	return false
}

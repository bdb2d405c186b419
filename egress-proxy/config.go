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
}

// Profile is one egress profile: the port its tool pods reach the proxy on, and what they may reach through it.
type Profile struct {
	Name  string   `json:"name"`
	Port  int      `json:"port"`
	Hosts []string `json:"hosts"`
	Ports []int    `json:"ports"`
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
	}
	for _, cidr := range append(append([]string{}, c.BlockedCidrs...), c.AllowedCidrs...) {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			return fmt.Errorf("%q is not a CIDR", cidr)
		}
	}
	if c.MetricsPort < 1 || c.MetricsPort > 65535 {
		return fmt.Errorf("metricsPort %d is not in 1..65535", c.MetricsPort)
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

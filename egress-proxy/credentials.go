package main

import (
	"errors"
	"fmt"
	"net/textproto"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A credential is a key the proxy adds to the requests of one project's tool pods of one profile, bound for its hosts
// (issue 48, D18): the tool never holds it. Its value is a file (mounted from a Kubernetes Secret only the proxy
// reads), read at each use, so a Secret rotated reaches the next request without a restart and the value is held no
// longer than one request. A CONNECT from a pod of that project, on that profile's port, to one of its hosts is
// terminated by the proxy (inject.go) instead of tunnelled; every other CONNECT is tunnelled as before (tunnel.go).

// Credential is one key of one project, for the exact hosts it belongs to.
type Credential struct {
	// Name names it in the log and in the chart (the Secret's name); never the value.
	Name string `json:"name"`
	// Project is the sandboxd.io/project annotation of the tool pods it is added for (projects.go).
	Project string `json:"project"`
	// Hosts are the exact names it is sent to (no wildcard); each must be allowed by the profile.
	Hosts []string `json:"hosts"`
	// Header is the request header it fills, e.g. Authorization or x-api-key; any header of that name the tool
	// sends is removed.
	Header string `json:"header"`
	// Prefix goes before the value, e.g. "Bearer ".
	Prefix string `json:"prefix,omitempty"`
	// File holds the value (trailing white space ignored), e.g. a Secret's key mounted as a file.
	File string `json:"file"`
}

// CAFiles are the PEM files of the CA whose certificates tool pods of a profile with credentials trust (ca.go).
type CAFiles struct {
	CertFile string `json:"certFile"`
	KeyFile  string `json:"keyFile"`
}

// minimumSecret: a shorter value could not be searched for in responses (redact.go) without mangling them.
const minimumSecret = 8

var (
	credentialName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
	headerName     = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
	// headers that frame the message, route it or belong to the hop: never a credential's
	reservedHeaders = map[string]bool{"Host": true, "Content-Length": true, "Transfer-Encoding": true,
		"Connection": true, "Keep-Alive": true, "Upgrade": true, "Te": true, "Trailer": true, "Expect": true,
		"Proxy-Authorization": true, "Proxy-Connection": true, "Content-Encoding": true, "Accept-Encoding": true}
)

func (p Profile) validateCredentials() error {
	seen := map[[2]string]string{}
	for _, c := range p.Credentials {
		if !credentialName.MatchString(c.Name) {
			return fmt.Errorf("credential name %q is not a Kubernetes object name", c.Name)
		}
		if c.Project == "" || c.Project == "unknown" || strings.ContainsFunc(c.Project, isControl) {
			return fmt.Errorf("credential %s: project %q names no project", c.Name, c.Project)
		}
		canonical := textproto.CanonicalMIMEHeaderKey(c.Header)
		if !headerName.MatchString(c.Header) || reservedHeaders[canonical] || strings.HasPrefix(canonical, "Proxy-") {
			return fmt.Errorf("credential %s: %q cannot carry a credential", c.Name, c.Header)
		}
		if strings.ContainsFunc(c.Prefix, isControl) {
			return fmt.Errorf("credential %s: the prefix has a control character", c.Name)
		}
		if !filepath.IsAbs(c.File) {
			return fmt.Errorf("credential %s: file %q is not an absolute path", c.Name, c.File)
		}
		if len(c.Hosts) == 0 {
			return fmt.Errorf("credential %s names no host", c.Name)
		}
		for _, h := range c.Hosts {
			if strings.HasPrefix(h, "*.") || !hostGlob.MatchString(h) {
				return fmt.Errorf("credential %s: host %q is not an exact DNS name", c.Name, h)
			}
			if !p.allowsHost(h) {
				return fmt.Errorf("credential %s: host %s is not one of the profile's hosts", c.Name, h)
			}
			key := [2]string{c.Project, h}
			if other, ok := seen[key]; ok {
				return fmt.Errorf("credentials %s and %s both fill requests of project %s to %s", other, c.Name,
					c.Project, h)
			}
			seen[key] = c.Name
		}
	}
	return nil
}

func (c *Config) validateCA() error {
	some := false
	for _, p := range c.Profiles {
		some = some || len(p.Credentials) > 0
	}
	switch {
	case some && (c.CA == nil || !filepath.IsAbs(c.CA.CertFile) || !filepath.IsAbs(c.CA.KeyFile)):
		return errors.New("a profile has credentials: ca.certFile and ca.keyFile must be absolute paths")
	case c.UpstreamRootsFile != "" && !filepath.IsAbs(c.UpstreamRootsFile):
		return fmt.Errorf("upstreamRootsFile %q is not an absolute path", c.UpstreamRootsFile)
	}
	return nil
}

// allowsHost: the name is one of the profile's hosts, or under one of its *.domain.
func (p Profile) allowsHost(host string) bool {
	for _, h := range p.Hosts {
		if h == host || (strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:])) {
			return true
		}
	}
	return false
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// credentialKey: the profile a connection arrived on, the project of its source pod, the CONNECT host.
type credentialKey struct{ profile, project, host string }

type credentials map[credentialKey]*Credential

func newCredentials(c *Config) credentials {
	all := credentials{}
	for _, p := range c.Profiles {
		for i := range p.Credentials {
			for _, h := range p.Credentials[i].Hosts {
				all[credentialKey{p.Name, p.Credentials[i].Project, h}] = &p.Credentials[i]
			}
		}
	}
	return all
}

// lookup is the credential for a CONNECT: all three must match exactly, a host by its name as the tool gave it in
// the CONNECT (case and a final dot aside), never by the address it resolves to; a source of no known project has
// none.
func (all credentials) lookup(profile, project, host string) *Credential {
	if project == "" || project == "unknown" {
		return nil
	}
	return all[credentialKey{profile, project, strings.ToLower(strings.TrimSuffix(host, "."))}]
}

// secret reads the value now. Its errors name the credential, never the value.
func (c *Credential) secret() (string, error) {
	data, err := os.ReadFile(c.File)
	if err != nil {
		return "", fmt.Errorf("credential %s cannot be read", c.Name)
	}
	value := strings.TrimRight(string(data), " \t\r\n")
	if strings.ContainsFunc(value, isControl) {
		return "", fmt.Errorf("credential %s has a control character: no header value", c.Name)
	}
	if len(value) < minimumSecret {
		return "", fmt.Errorf("credential %s is shorter than %d characters", c.Name, minimumSecret)
	}
	return value, nil
}

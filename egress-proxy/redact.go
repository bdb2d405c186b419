package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
)

// An upstream may echo what it received (a debugging endpoint, an error quoting the request, a "who am I" answer):
// the credential would reach the tool in the response. The proxy replaces every occurrence of the credential's value
// in the response, in each header's name and value and in the body, with redactedMarker (D18): the tool still gets
// the answer, never the key. Searched for: the value itself and the forms an echo commonly takes (URL-escaped,
// JSON-escaped, base64 and base64url of the value alone). The body is searched as it streams: a read is passed on at
// once, but for a tail that could be the start of the value, held until the next read tells. The proxy asks for no
// content coding (Accept-Encoding: identity) and decodes gzip itself; a body in another coding, which it could not
// search, is refused (inject.go).

const redactedMarker = "[credential removed by the egress proxy]"

type redactor struct {
	needles [][]byte // longest first
}

func newRedactor(secret string) *redactor {
	quoted, _ := json.Marshal(secret)
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret), string(quoted[1 : len(quoted)-1]),
		base64.RawStdEncoding.EncodeToString([]byte(secret)), base64.RawURLEncoding.EncodeToString([]byte(secret))}
	r := &redactor{}
	for _, f := range forms {
		if !slices.ContainsFunc(r.needles, func(n []byte) bool { return string(n) == f }) {
			r.needles = append(r.needles, []byte(f))
		}
	}
	slices.SortFunc(r.needles, func(a, b []byte) int { return len(b) - len(a) })
	return r
}

func (r *redactor) replace(b []byte) []byte {
	for _, n := range r.needles {
		if bytes.Contains(b, n) {
			b = bytes.ReplaceAll(b, n, []byte(redactedMarker))
		}
	}
	return b
}

// pending is how many bytes at the end of b could begin a needle.
func (r *redactor) pending(b []byte) int {
	longest := 0
	for _, n := range r.needles {
		for k := min(len(n)-1, len(b)); k > longest; k-- {
			if bytes.HasSuffix(b, n[:k]) {
				longest = k
				break
			}
		}
	}
	return longest
}

// headers are h with every needle replaced, in names and values.
func (r *redactor) headers(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for name, values := range h {
		name = string(r.replace([]byte(name)))
		for _, v := range values {
			out[name] = append(out[name], string(r.replace([]byte(v))))
		}
	}
	return out
}

// body streams src with every needle replaced.
func (r *redactor) body(src io.ReadCloser) io.ReadCloser {
	return &redactingReader{src: src, r: r, buf: make([]byte, 32<<10)}
}

type redactingReader struct {
	src     io.ReadCloser
	r       *redactor
	buf     []byte
	held    []byte // read, not yet passed on: may end in the start of a needle
	out     []byte // searched, to pass on
	srcDone error
}

func (rr *redactingReader) Read(b []byte) (int, error) {
	for len(rr.out) == 0 {
		if rr.srcDone != nil {
			return 0, rr.srcDone
		}
		n, err := rr.src.Read(rr.buf)
		searched := rr.r.replace(append(rr.held, rr.buf[:n]...))
		keep := 0
		if err == nil {
			keep = rr.r.pending(searched)
		}
		rr.out = searched[:len(searched)-keep]
		rr.held = append([]byte(nil), searched[len(searched)-keep:]...)
		rr.srcDone = err
	}
	n := copy(b, rr.out)
	rr.out = rr.out[n:]
	return n, nil
}

func (rr *redactingReader) Close() error { return rr.src.Close() }

package transport

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// Hosts says which Host header values a server answers, against DNS
// rebinding: a web page of a name its author controls (evil.example), made
// to resolve to this machine, sends that name as the Host of every request
// it makes, page and WebSocket alike, and its Origin matches. A server that
// answers only names it knows leaves such a page nothing.
//
// A request is answered when its Host, port aside, is
//
//   - a loopback name: localhost or a name under .localhost (which
//     browsers resolve to loopback themselves, RFC 6761);
//   - a loopback address: 127.0.0.0/8 or ::1;
//   - the IP address the request came in on (the listen address's own, or
//     with a wildcard listen address the one the client reached): no page
//     of another name can send it;
//   - one of Public.
//
// The zero value answers loopback names and addresses, and the address a
// request came in on.
type Hosts struct {
	// Public are more names (or IP addresses) requests may name, each
	// with or without a port: with one, only that port is answered under
	// the name. Case does not matter.
	Public []string
}

// Check refuses a Public entry that is not a host name or address with an
// optional port, in one sentence naming it.
func (h Hosts) Check() error {
	var errs []error
	for _, p := range h.Public {
		if _, _, ok := splitHost(p); !ok {
			errs = append(errs, fmt.Errorf("%q is not a host name or address with an optional port (such as bots.example.com or bots.example.com:9187)", p))
		}
	}
	return errors.Join(errs...)
}

// splitHost splits a Host value into its lower-case name or address (IPv6
// without brackets, a trailing dot dropped) and its port ("" when none);
// ok is false when it is not a name or address with an optional port.
func splitHost(hostport string) (name, port string, ok bool) {
	name = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
			return "", "", false
		}
		name, port = h, p
	} else if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
		name = hostport[1 : len(hostport)-1]
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if name == "" {
		return "", "", false
	}
	if net.ParseIP(name) != nil {
		return name, port, true
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return "", "", false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", "", false
			}
		}
	}
	return name, port, true
}

// Allows reports whether a request naming host that came in on local (the
// address it reached, nil when unknown) is answered.
func (h Hosts) Allows(host string, local net.Addr) bool {
	name, port, ok := splitHost(host)
	if !ok {
		return false
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	if ip := net.ParseIP(name); ip != nil {
		if ip.IsLoopback() {
			return true
		}
		if tcp, ok := local.(*net.TCPAddr); ok && tcp.IP.Equal(ip) {
			return true
		}
	}
	for _, p := range h.Public {
		pn, pp, ok := splitHost(p)
		if ok && pn == name && (pp == "" || pp == port) {
			return true
		}
	}
	return false
}

// Guard answers a request whose Host h does not allow with 421 Misdirected
// Request and a sentence naming the Host and how to allow it, and passes
// every other request to next.
func (h Hosts) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if !h.Allows(r.Host, local) {
			name, _, _ := splitHost(r.Host)
			if name == "" {
				name = "NAME"
			}
			http.Error(w, fmt.Sprintf("this server does not answer the Host %q: it answers loopback names and addresses, its own address and the names it is given (start it with -public-host %s, or embedded, add it to bots.Server.PublicHosts, to answer this one)", r.Host, name), http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

package access

import "crypto/subtle"

// Local is the users directory of a host of one person: whoever presents
// its token is root, and no other token is anyone. It is what a host with
// no users file authenticates with (the reference server's local token),
// and what an embedder that serves one person passes as its directory; a
// service given no directory at all authenticates nobody.
type Local struct {
	token string
}

// NewLocal returns the directory in which token, and it alone, is root. An
// empty token is held by nobody.
func NewLocal(token string) Local { return Local{token: token} }

// Authenticate answers root for the directory's token, compared in
// constant time, and nobody for any other.
func (l Local) Authenticate(token string) (Principal, bool) {
	if l.token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(l.token)) != 1 {
		return Principal{}, false
	}
	return RootPrincipal(), true
}

// Principal knows no user: the one person of the host is root, who has no
// user id.
func (Local) Principal(string) (Principal, bool) { return Principal{}, false }

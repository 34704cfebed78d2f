package access

import "strings"

// Lookup finds a user's principal as a users directory has it now;
// usersfile.Users and usersfile.Directory are Lookups.
type Lookup interface {
	Principal(id string) (p Principal, ok bool)
}

// OwnerPrincipal returns who an owner string names, as users has them now:
// root:<host> is root; user:<id> is the user's principal, or nobody when
// users no longer holds them; team:<name> and project:<name> are a member
// of that team or project alone; anything else is nobody (the zero
// Principal). With no users directory (users nil) everybody is root, so
// every owner string is.
func OwnerPrincipal(owner string, users Lookup) Principal {
	kind, rest, _ := strings.Cut(owner, ":")
	switch {
	case users == nil || kind == "root":
		return RootPrincipal()
	case rest == "":
		return Principal{}
	case kind == "team" || kind == "project":
		return Principal{Memberships: []string{rest}}
	case kind == "user":
		if p, ok := users.Principal(rest); ok {
			return p
		}
	}
	return Principal{}
}

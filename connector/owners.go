package connector

import (
	"fmt"
	"strings"

	"github.com/agenthost/bots/access"
)

// Everybody is the owner of a vault entry that every signed-in person, and
// every bot, may use.
const Everybody = "*"

// CheckOwner reports whether s is an owner a vault entry may name: "*", or
// user:<id>, team:<name>, project:<name> or root:<host>. Its error says
// what is wrong, quoting s (an owner is no secret).
func CheckOwner(s string) error {
	if s == Everybody {
		return nil
	}
	kind, rest, ok := strings.Cut(s, ":")
	switch {
	case !ok || rest == "":
		return fmt.Errorf("owner %q is not user:<id>, team:<name>, project:<name>, root:<host> or *", s)
	case kind != "user" && kind != "team" && kind != "project" && kind != "root":
		return fmt.Errorf("owner %q is of kind %q: use user:, team:, project:, root: or *", s, kind)
	case strings.ContainsAny(rest, " \t\r\n"):
		return fmt.Errorf("owner %q holds a space", s)
	}
	return nil
}

// Permits reports whether p may use a credential whose entry names owners:
// one whose owners hold "*", p's own user:<id>, a team or project p is a
// member of, or - for a root principal - root:<host>. An entry that names
// no owners is root's alone. Nobody passes over the owners an entry
// names: neither root nor a holder of *:* (grants say what may be done to
// resources; the vault says whose a credential is, and the operator who
// writes it names root:<host> where the host's own bots and root
// connections may use an entry). A principal that is nobody (no user, no
// memberships: someone the users file no longer holds) may use none, "*"
// included.
func Permits(owners []string, p access.Principal) bool {
	switch {
	case p.Root && len(owners) == 0:
		return true
	case !p.Root && p.User == "" && len(p.Memberships) == 0:
		return false
	}
	for _, o := range owners {
		if o == Everybody || p.Owns(o) {
			return true
		}
	}
	return false
}

// deniedError is a refusal of a connector call: one sentence, with the
// alias and never a value, that matches ErrDenied.
type deniedError struct{ msg string }

func (e *deniedError) Error() string        { return e.msg }
func (e *deniedError) Is(target error) bool { return target == ErrDenied }

// permit refuses the call of alias unless both the bot's owner and the
// person who sent the message may use cred.
func permit(alias string, cred Credential, owner, from access.Principal) error {
	ownerOK, fromOK := Permits(cred.Owners, owner), Permits(cred.Owners, from)
	switch {
	case ownerOK && fromOK:
		return nil
	case !ownerOK && !fromOK:
		return &deniedError{fmt.Sprintf("connector %q may be used neither by this bot's owner nor by %s: its vault entry names neither as an owner", alias, who(from))}
	case !ownerOK:
		return &deniedError{fmt.Sprintf("connector %q may not be used by this bot's owner: its vault entry does not name them as an owner", alias)}
	}
	return &deniedError{fmt.Sprintf("connector %q may not be used by %s, who sent the message: its vault entry does not name them as an owner", alias, who(from))}
}

// who names p in a refusal.
func who(p access.Principal) string {
	if !p.Root && p.User == "" {
		return "a person the users file does not hold"
	}
	return p.String()
}

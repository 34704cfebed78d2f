package record

import (
	"fmt"
	"strings"
)

// MaxSlug is the longest slug, and the longest back session name.
const MaxSlug = 40

// turnWord is the word a session name may hold, which the turn id of each
// message replaces.
const turnWord = "{turn}"

// CheckSlug reports why s is not a slug: one to forty lowercase letters,
// digits and dashes, starting with a letter.
func CheckSlug(s string) error {
	if !isSlug(s) {
		return fmt.Errorf("%q is not a slug: use 1 to %d lowercase letters, digits and dashes, starting with a letter", s, MaxSlug)
	}
	return nil
}

func isSlug(s string) bool {
	if len(s) == 0 || len(s) > MaxSlug || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// checkSessionName reports why s is not a back session name: up to forty
// lowercase letters, digits and dashes starting with a letter, where {turn}
// may stand anywhere (it counts as one letter).
func checkSessionName(s string) error {
	if !isSlug(strings.ReplaceAll(s, turnWord, "t")) {
		return fmt.Errorf("session %q is not a session name: use up to %d lowercase letters, digits and dashes, starting with a letter, with {turn} anywhere", s, MaxSlug)
	}
	return nil
}

// FillSessionName returns the session name with {turn} replaced by the turn
// id, and an error when the result is no name a session can have.
func FillSessionName(name, turnID string) (string, error) {
	if name == "" {
		name = DefaultSession
	}
	out := strings.ReplaceAll(name, turnWord, turnID)
	if !isSlug(out) {
		return "", fmt.Errorf("session name %q filled with turn %q gives %q, which no session can have", name, turnID, out)
	}
	return out, nil
}

// checkOwner reports why s is not an owner: user:<id>, team:<team>,
// project:<team>:<project> or root:<host>.
func checkOwner(s string) error {
	kind, rest, _ := strings.Cut(s, ":")
	ok := false
	switch kind {
	case "user", "team", "root":
		ok = isName(rest)
	case "project":
		team, project, found := strings.Cut(rest, ":")
		ok = found && isName(team) && isName(project)
	}
	if !ok {
		return fmt.Errorf("owner %q is not an owner: use user:<id>, team:<team>, project:<team>:<project> or root:<host>", s)
	}
	return nil
}

// isName reports whether s is a non-empty id of letters, digits and . _ @ -.
func isName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '@' || c == '-') {
			return false
		}
	}
	return true
}

// IsRootOwner reports whether an owner names a host's root. Any root: owner
// is this host, whatever name follows it.
func IsRootOwner(s string) bool { return strings.HasPrefix(s, "root:") }

// checkWord reports why s is not a word, as a body must be: 1 to 40 letters,
// digits, dashes or underscores, starting with a letter.
func checkWord(field, s string) error {
	ok := len(s) > 0 && len(s) <= MaxSlug && isLetter(s[0])
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = isLetter(c) || '0' <= c && c <= '9' || c == '-' || c == '_'
	}
	if !ok {
		return fmt.Errorf("%s %q is not a word: use 1 to %d letters, digits, dashes or underscores, starting with a letter", field, s, MaxSlug)
	}
	return nil
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// connectorScheme starts every connector reference.
const connectorScheme = "connectors://"

// checkConnector reports why alias → ref is not a connector binding: the
// alias is a lowercase slug and ref is connectors://<adapter>/<id>.
func checkConnector(alias, ref string) error {
	if !isSlug(alias) {
		return fmt.Errorf("connector alias %q is not a lowercase slug", alias)
	}
	rest, ok := strings.CutPrefix(ref, connectorScheme)
	adapter, id, _ := strings.Cut(rest, "/")
	if !ok || !isName(adapter) || !isName(id) {
		return fmt.Errorf("connector %q is %q, not connectors://<adapter>/<id>", alias, ref)
	}
	return nil
}

// ParseConnector splits connectors://<adapter>/<id>.
func ParseConnector(ref string) (adapter, id string, err error) {
	if err := checkConnector("x", ref); err != nil {
		return "", "", fmt.Errorf("%q is not connectors://<adapter>/<id>", ref)
	}
	rest := strings.TrimPrefix(ref, connectorScheme)
	adapter, id, _ = strings.Cut(rest, "/")
	return adapter, id, nil
}

// checkToolName reports why s is not a tool name a record's tools list may
// hold: 1 to 40 lowercase letters, digits, underscores and dashes, starting
// with a letter. Which names a host offers is the host's to check.
func checkToolName(s string) error {
	ok := len(s) > 0 && len(s) <= MaxSlug && 'a' <= s[0] && s[0] <= 'z'
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("tools names %q, which is no tool name: use 1 to %d lowercase letters, digits, underscores and dashes, starting with a letter", s, MaxSlug)
	}
	return nil
}

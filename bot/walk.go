package bot

import "github.com/agenthost/bots/persona"

// partIsLink is isLink for part, a part of a folder below root; first
// says it is the first, a name directly under root, which the folder
// watch may know to be no link already, as the path is now. ident, when
// not nil (part is the whole folder), is given the identity of its
// AGENTS.md when the watch answers for both at once.
func (s *Service) partIsLink(part, name string, first bool, ident *agentsIdentity) (bool, error) {
	if !first {
		return isLink(part)
	}
	var ok bool
	var gen uint64
	if ident != nil {
		ok, gen, ident.id, ident.ok = s.walk.KnownIdentity(name)
	} else {
		ok, gen = s.walk.Known(name)
	}
	if ok {
		return false, nil
	}
	link, err := isLink(part)
	if err == nil && !link {
		s.walk.Remember(name, gen)
	}
	return link, err
}

// agentsIdentity is the identity of a bot's AGENTS.md that the check of
// its folder took (ok), for the persona reader
// (persona.Files.ReadIdentified): one look at what changed answers both
// the folder check and the file's identity.
type agentsIdentity struct {
	id persona.Identity
	ok bool
}

package bot

// partIsLink is isLink for part, a part of a folder below root; first
// says it is the first, a name directly under root, which the folder
// watch may know to be no link already, as the path is now.
func (s *Service) partIsLink(part, name string, first bool) (bool, error) {
	if !first {
		return isLink(part)
	}
	ok, gen := s.walk.known(name)
	if ok {
		return false, nil
	}
	link, err := isLink(part)
	if err == nil && !link {
		s.walk.remember(name, gen)
	}
	return link, err
}

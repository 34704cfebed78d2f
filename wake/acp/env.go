package acp

import (
	"os"
	"strings"
)

// DefaultPath is the PATH a child gets when its Command.Env does not name
// PATH.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// childEnv is the environment a child starts with: the variables env names,
// taken from environ, PATH (DefaultPath unless env names it) and HOME.
// Nothing else of the server's environment reaches the child.
func childEnv(environ []string, allow []string, home string) []string {
	from := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			from[k] = v
		}
	}
	out := []string{}
	seen := map[string]bool{"HOME": true}
	for _, name := range allow {
		if seen[name] {
			continue
		}
		seen[name] = true
		if v, ok := from[name]; ok {
			out = append(out, name+"="+v)
		}
	}
	if !seen["PATH"] {
		out = append(out, "PATH="+DefaultPath)
	}
	return append(out, "HOME="+home)
}

// validEnvName reports whether name may be an environment variable's name.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func environ(f func() []string) []string {
	if f == nil {
		return os.Environ()
	}
	return f()
}

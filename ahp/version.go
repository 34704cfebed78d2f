package ahp

import (
	"strconv"
	"strings"
)

// ProtocolVersion is the newest protocol version whose shapes this package
// follows. A host still answers whatever acceptable version the client offers.
const ProtocolVersion = "1.1.0"

// NegotiateVersion reports whether the offered protocol version is one this
// package speaks: any 1.x release (>=1.0.0 <2.0.0) or any 0.9.x release
// (>=0.9.0 <0.10.0). On success it answers the offered string unchanged, as
// initialize requires. Only plain MAJOR.MINOR.PATCH versions are accepted.
func NegotiateVersion(offered string) (string, bool) {
	major, minor, ok := parseVersion(offered)
	if !ok {
		return "", false
	}
	switch {
	case major == 1:
		return offered, true
	case major == 0 && minor == 9:
		return offered, true
	}
	return "", false
}

// PickVersion picks the version to answer from an initialize request's
// protocolVersions: the highest acceptable entry, whatever order the client
// offered them in, returned verbatim. It reports false when none is
// acceptable; the host then answers -32005 with [SupportedVersions].
func PickVersion(offered []string) (string, bool) {
	best, found := "", false
	var bestKey [3]int
	for _, v := range offered {
		if _, ok := NegotiateVersion(v); !ok {
			continue
		}
		key := versionKey(v)
		if !found || less(bestKey, key) {
			best, bestKey, found = v, key, true
		}
	}
	return best, found
}

// SupportedVersions returns the supportedVersions of the -32005
// UnsupportedProtocolVersion error data of a host that speaks this
// package's shapes alone: the SemVer ranges it accepts, newest first. (The
// transport package, which translates, adds ">=0.6.0 <0.9.0".)
func SupportedVersions() []string {
	return []string{">=1.0.0 <2.0.0", ">=0.9.0 <0.10.0"}
}

// UnsupportedProtocolVersionData is the data of a -32005 error.
type UnsupportedProtocolVersionData struct {
	// SupportedVersions lists exact versions or SemVer ranges the host speaks.
	SupportedVersions []string `json:"supportedVersions"`
}

// NewUnsupportedProtocolVersionData returns the -32005 error data for this
// package's [SupportedVersions].
func NewUnsupportedProtocolVersionData() UnsupportedProtocolVersionData {
	return UnsupportedProtocolVersionData{SupportedVersions: SupportedVersions()}
}

// parseVersion parses a strict MAJOR.MINOR.PATCH version (no prerelease, no
// build metadata, no leading zeros) and returns its major and minor numbers.
func parseVersion(v string) (major, minor int, ok bool) {
	key, ok := parseKey(v)
	if !ok {
		return 0, 0, false
	}
	return key[0], key[1], true
}

func parseKey(v string) ([3]int, bool) {
	var key [3]int
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return key, false
	}
	for i, p := range parts {
		if p == "" || len(p) > 9 || (len(p) > 1 && p[0] == '0') {
			return key, false
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return key, false
			}
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return key, false
		}
		key[i] = n
	}
	return key, true
}

func versionKey(v string) [3]int {
	key, _ := parseKey(v)
	return key
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

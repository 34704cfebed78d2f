package transport

import (
	"strconv"
	"strings"
)

// semver is a parsed MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD].
type semver struct {
	major, minor, patch int
	pre                 []string
}

func parseSemver(s string) (semver, bool) {
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	var v semver
	core, pre, hasPre := strings.Cut(s, "-")
	if hasPre {
		if pre == "" {
			return semver{}, false
		}
		v.pre = strings.Split(pre, ".")
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return semver{}, false
	}
	nums := [3]*int{&v.major, &v.minor, &v.patch}
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') {
			return semver{}, false
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return semver{}, false
		}
		*nums[i] = n
	}
	return v, true
}

// compare orders by SemVer precedence: -1, 0 or 1.
func (a semver) compare(b semver) int {
	for _, d := range [][2]int{{a.major, b.major}, {a.minor, b.minor}, {a.patch, b.patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < len(a.pre) && i < len(b.pre); i++ {
		x, y := a.pre[i], b.pre[i]
		xn, xerr := strconv.Atoi(x)
		yn, yerr := strconv.Atoi(y)
		switch {
		case xerr == nil && yerr == nil:
			if xn != yn {
				if xn < yn {
					return -1
				}
				return 1
			}
		case xerr == nil:
			return -1
		case yerr == nil:
			return 1
		case x != y:
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a.pre) < len(b.pre):
		return -1
	case len(a.pre) > len(b.pre):
		return 1
	}
	return 0
}

// accepted reports whether the server speaks v: 1.x (>=1.0.0 <2.0.0) and
// 0.9.x (>=0.9.0 <0.10.0) in its own shapes, 0.6.x to 0.8.x (>=0.6.0
// <0.9.0) translated (see dialect).
func (v semver) accepted() bool {
	return v.major == 1 || (v.major == 0 && v.minor >= 6 && v.minor <= 9)
}

// negotiate picks the highest offered version the server speaks, whatever
// the order of the offer, and returns it exactly as offered.
func negotiate(offered []string) (string, bool) {
	best, bestV, found := "", semver{}, false
	for _, s := range offered {
		v, ok := parseSemver(s)
		if !ok || !v.accepted() {
			continue
		}
		if !found || v.compare(bestV) > 0 {
			best, bestV, found = s, v, true
		}
	}
	return best, found
}

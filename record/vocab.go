package record

import (
	"math/rand/v2"
	"slices"
	"strings"
)

// Bodies are the fifteen suggested bodies. A body is a tag: any other word is
// kept too, and a client draws one it does not know with one of its own.
var bodies = []string{
	"robot", "humanoid", "alien", "gumbo", "circle", "semicircle", "smash", "square",
	"triangle", "pentagon", "hexagon", "drop", "bean", "cloud", "ghost",
}

// Colors are the eleven named colours. A colour may also be #rrggbb.
var colors = []string{
	"red", "orange", "yellow", "green", "teal", "blue", "purple", "pink", "brown", "grey", "black",
}

// Bodies returns the suggested bodies, in the spec's order.
func Bodies() []string { return slices.Clone(bodies) }

// Colors returns the named colours, in the spec's order; the first is the
// colour of a bot made without one.
func Colors() []string { return slices.Clone(colors) }

// DefaultColor is the colour a make that names none gets.
func DefaultColor() string { return colors[0] }

// RandomBody returns one of the suggested bodies at random.
func RandomBody() string { return bodies[rand.IntN(len(bodies))] }

// NormalizeColor checks a colour and returns the form a record keeps: a named
// colour as it is, a hex colour in lower case. #fff and 2f6fdf are refused.
func NormalizeColor(c string) (string, bool) {
	if slices.Contains(colors, c) {
		return c, true
	}
	if len(c) != 7 || c[0] != '#' {
		return "", false
	}
	for i := 1; i < 7; i++ {
		if !isHex(c[i]) {
			return "", false
		}
	}
	return strings.ToLower(c), true
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

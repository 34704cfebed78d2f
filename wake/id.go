package wake

import (
	"strings"

	"github.com/oklog/ulid/v2"
)

// newID returns a new lower-case ULID, fit for turn, message and call ids
// and for session names ({turn}).
func newID() string { return strings.ToLower(ulid.Make().String()) }

// Package slugorder keeps a store's slugs in order, so that a listing is
// one pass over them rather than a sort: a slug made is noted in O(1), a
// slug deleted is left for the next listing to skip, and the first
// listing after a change merges what was noted, in one pass.
package slugorder

import (
	"slices"
	"strings"
)

// Order is a store's bots in slug order, each an item of type T that
// names its slug: the slug itself, or the store's own handle of the bot.
// Make one with New. It is not safe for concurrent use: its store guards
// it with its lock, and calls Settle with that lock held for writing.
type Order[T any] struct {
	slug    func(T) string
	ids     []T // in order; may still hold bots deleted since the last Settle
	added   []T // made since the last Settle, in any order
	removed int // deletions since the last Settle
}

// New returns an empty Order whose items name their slug with slug.
func New[T any](slug func(T) string) *Order[T] { return &Order[T]{slug: slug} }

// Add notes that the bot of item was made.
func (o *Order[T]) Add(item T) { o.added = append(o.added, item) }

// Remove notes that a bot was deleted; IDs holds it until the next Settle.
func (o *Order[T]) Remove() { o.removed++ }

// Settled reports whether IDs holds exactly the store's slugs: nothing
// was made or deleted since the last Settle.
func (o *Order[T]) Settled() bool { return len(o.added) == 0 && o.removed == 0 }

// Settle brings IDs up to date: it merges the bots made since the last
// Settle and drops those for which live reports false, in one pass. Of
// two live items of one slug, the one noted last is kept.
func (o *Order[T]) Settle(live func(T) bool) {
	if o.Settled() {
		return
	}
	bySlug := func(a, b T) int { return strings.Compare(o.slug(a), o.slug(b)) }
	if !slices.IsSortedFunc(o.added, bySlug) { // a load notes its bots in order: one look, no sort
		slices.SortStableFunc(o.added, bySlug)
	}
	out := make([]T, 0, len(o.ids)+len(o.added))
	i, j := 0, 0
	for i < len(o.ids) || j < len(o.added) {
		var item T
		switch {
		case j == len(o.added) || (i < len(o.ids) && o.slug(o.ids[i]) <= o.slug(o.added[j])):
			item, i = o.ids[i], i+1
		default:
			item, j = o.added[j], j+1
		}
		if !live(item) {
			continue // a bot deleted
		}
		if n := len(out); n > 0 && o.slug(out[n-1]) == o.slug(item) {
			out[n-1] = item // noted twice: the later wins
			continue
		}
		out = append(out, item)
	}
	o.ids, o.added, o.removed = out, nil, 0
}

// Reset makes items, in any order and each slug once, the store's bots.
func (o *Order[T]) Reset(items []T) {
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(o.slug(a), o.slug(b)) })
	o.ids, o.added, o.removed = items, nil, 0
}

// IDs returns the items in slug order; after Settle, exactly the store's
// bots. The slice is the Order's own: it stays valid, unchanged, until
// the next Settle or Reset (which make a new one), so a caller may read
// it while holding its store's lock for reading only.
func (o *Order[T]) IDs() []T { return o.ids }

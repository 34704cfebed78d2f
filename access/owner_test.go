package access

import (
	"slices"
	"testing"
)

// lookup is a users directory as a map.
type lookup map[string]Principal

func (l lookup) Principal(id string) (Principal, bool) {
	p, ok := l[id]
	return p, ok
}

func TestOwnerPrincipalIsWhoTheOwnerStringNamesNow(t *testing.T) {
	t.Parallel()
	soft := Principal{User: "soft", Grants: []string{"bot:*"}, Memberships: []string{"backend"}}
	users := lookup{"soft": soft}
	for owner, want := range map[string]Principal{
		"root:my-host":  RootPrincipal(),
		"user:soft":     soft,
		"user:gone":     {},
		"user:":         {},
		"team:backend":  {Memberships: []string{"backend"}},
		"project:shop":  {Memberships: []string{"shop"}},
		"team:":         {},
		"robot:x":       {},
		"no colon here": {},
	} {
		got := OwnerPrincipal(owner, users)
		if got.Root != want.Root || got.User != want.User || !slices.Equal(got.Memberships, want.Memberships) || !slices.Equal(got.Grants, want.Grants) {
			t.Errorf("OwnerPrincipal(%q) = %+v, want %+v", owner, got, want)
		}
	}
	for _, owner := range []string{"user:soft", "team:backend", "nonsense"} {
		if !OwnerPrincipal(owner, nil).Root {
			t.Errorf("with no users directory %q is not root", owner)
		}
	}
}

// TestOwnedListsExactlyWhatOwnsAccepts holds Owned to Owns for principals
// that are not root, over owners of every kind.
func TestOwnedListsExactlyWhatOwnsAccepts(t *testing.T) {
	t.Parallel()
	people := []Principal{
		{},
		{User: "soft"},
		{User: "soft", Memberships: []string{"backend", "shop:website", ""}},
		{Memberships: []string{"backend"}},
		{User: "a:b", Grants: []string{"bot:get"}},
	}
	owners := []string{"", "user:", "user:soft", "user:other", "user:a:b", "team:backend", "project:backend",
		"team:shop:website", "project:shop:website", "project:shop", "team:", "project:", "root:h", "root:", "soft", "group:backend"}
	for _, p := range people {
		owned := p.Owned()
		for _, o := range owners {
			if got, want := slices.Contains(owned, o), p.Owns(o); got != want {
				t.Errorf("%+v: Owned holds %q: %v; Owns: %v", p, o, got, want)
			}
		}
	}
	if got := RootPrincipal().Owned(); got != nil {
		t.Errorf("root's Owned is %v, want nil", got)
	}
}

func TestUserHoldsTheGrantsGivenAndOwnsAsTheUser(t *testing.T) {
	t.Parallel()
	p := User("soft", "bot:put")
	if p.Root || p.User != "soft" || !p.Has("bot:put") || p.Has("bot:get") || p.Any() {
		t.Errorf("User(soft, bot:put) is %+v", p)
	}
	if got := p.Owner("my-host"); got != "user:soft" {
		t.Errorf("its owner is %q, want user:soft", got)
	}
	if got := RootPrincipal().Owner("my-host"); got != "root:my-host" {
		t.Errorf("root's owner is %q, want root:my-host", got)
	}
}

package access

import (
	"slices"
	"testing"
)

func TestOwnerPrincipalIsWhoTheOwnerStringNamesNow(t *testing.T) {
	users, err := ParseUsers([]byte(goodUsers))
	if err != nil {
		t.Fatal(err)
	}
	soft, _ := users.Principal("soft")
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

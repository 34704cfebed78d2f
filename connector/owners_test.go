package connector_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/connector"
)

// ownedVault gives every connector the same value, with the owners its id
// names in owners.
type ownedVault map[string][]string

func (v ownedVault) Resolve(_ context.Context, ref connector.Ref) (connector.Credential, error) {
	owners, ok := v[ref.ID]
	if !ok {
		return connector.Credential{}, fmt.Errorf("%s: %w", ref, connector.ErrNoCredential)
	}
	c := connector.NewCredential(secret, "", "")
	c.Owners = owners
	return c, nil
}

// TestConnectorPermissionMatrix calls every connector of a bot owned by
// soft (a member of team backend) as its owner, a team member, a reader,
// a stranger and a person the users file no longer holds, and then as a
// reader of a bot root owns, and as root: a call reaches the adapter only
// when the vault entry's owners hold both the bot's owner and the person
// (root too: root:<host>, "*" or no owners); a refusal is one sentence
// naming the alias, never the value.
func TestConnectorPermissionMatrix(t *testing.T) {
	t.Parallel()
	vault := ownedVault{
		"mine":    {"user:soft"},
		"team":    {"team:backend"},
		"all":     {connector.Everybody},
		"none":    nil,
		"project": {"project:shop:website"},
		"readers": {"user:rita"},
		"host":    {"root:h"},
		"lent":    {"user:rita", "root:h"},
	}
	m := map[string]string{}
	for id := range vault {
		m[id] = "connectors://echo/" + id
	}
	var reg connector.Registry
	a := &echoAdapter{}
	if err := reg.Register("echo", a); err != nil {
		t.Fatal(err)
	}
	tools, err := connector.NewTools(connector.ToolsConfig{Bot: "motion", Connectors: func() map[string]string { return m }, Registry: &reg, Vault: vault})
	if err != nil {
		t.Fatal(err)
	}
	soft := access.Principal{User: "soft", Grants: []string{"bot:*"}, Memberships: []string{"backend"}}
	tess := access.Principal{User: "tess", Memberships: []string{"backend", "shop:website"}}
	rita := access.Principal{User: "rita", Grants: []string{"bot:get"}}
	sam := access.Principal{User: "sam"}
	gone := access.Principal{}
	root := access.RootPrincipal()
	rows := []struct {
		name         string
		owner, from  access.Principal
		allowed      []string
		whoInRefusal string
	}{
		{"owner", soft, soft, []string{"mine", "team", "all"}, ""},
		{"team member", soft, tess, []string{"team", "all"}, "user:tess"},
		{"reader", soft, rita, []string{"all"}, "user:rita"},
		{"stranger", soft, sam, []string{"all"}, "user:sam"},
		{"person no longer in the users file", soft, gone, nil, "a person the users file does not hold"},
		{"reader of a root-owned bot", root, rita, []string{"all", "lent"}, "user:rita"},
		{"root", root, root, []string{"all", "none", "host", "lent"}, "root"},
	}
	for _, row := range rows {
		for alias := range vault {
			want := false
			for _, a := range row.allowed {
				want = want || a == alias
			}
			before := len(a.calls)
			_, err := tools.Call(context.Background(), row.owner, row.from, alias, nil)
			reached := len(a.calls) > before
			switch {
			case want && (err != nil || !reached):
				t.Errorf("%s, %s: refused (%v), want allowed", row.name, alias, err)
			case !want && (!errors.Is(err, connector.ErrDenied) || reached):
				t.Errorf("%s, %s: %v (reached the adapter: %v), want refused", row.name, alias, err, reached)
			case !want:
				msg := err.Error()
				if !strings.Contains(msg, `connector "`+alias+`"`) || strings.Contains(msg, secret) || strings.Count(msg, ". ") > 0 {
					t.Errorf("%s, %s: the refusal %q does not name the alias in one sentence, or holds the value", row.name, alias, msg)
				}
				ownerOK := connector.Permits(vault[alias], row.owner)
				if !ownerOK && !strings.Contains(msg, "this bot's owner") {
					t.Errorf("%s, %s: the refusal %q does not say the bot's owner may not", row.name, alias, msg)
				}
				if connector.Permits(vault[alias], row.from) == false && !strings.Contains(msg, row.whoInRefusal) {
					t.Errorf("%s, %s: the refusal %q does not name %s", row.name, alias, msg, row.whoInRefusal)
				}
			}
		}
	}
}

func TestEntryWithNoOwnersIsRootsAlone(t *testing.T) {
	t.Parallel()
	if connector.Permits(nil, access.Principal{User: "soft", Grants: []string{"*:*"}}) {
		t.Error("a user holding every grant may use an entry with no owners")
	}
	if !connector.Permits(nil, access.RootPrincipal()) {
		t.Error("root may not use an entry with no owners")
	}
	if !connector.Permits([]string{"team:backend"}, access.Principal{Memberships: []string{"backend"}}) {
		t.Error("a bot owned by team:backend may not use an entry of team:backend")
	}
}

func TestCheckOwner(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"*", "user:soft", "team:backend", "project:shop:website", "root:host"} {
		if err := connector.CheckOwner(ok); err != nil {
			t.Errorf("CheckOwner(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "soft", "user:", "group:x", "user:a b", "**"} {
		if err := connector.CheckOwner(bad); err == nil {
			t.Errorf("CheckOwner(%q) accepted", bad)
		}
	}
}

// TestRootAndEveryGrantUseAnEntryOnlyAsItsOwnersSay: neither a root
// principal nor a holder of *:* passes over a vault entry's owners. Root
// is held by an entry that names root:<host>, "*" or no owner at all; a
// holder of *:* by one naming them, a team of theirs or "*".
func TestRootAndEveryGrantUseAnEntryOnlyAsItsOwnersSay(t *testing.T) {
	t.Parallel()
	root := access.RootPrincipal()
	admin := access.Principal{User: "admin", Grants: []string{"*:*"}}
	for _, c := range []struct {
		who    string
		p      access.Principal
		owners []string
		want   bool
	}{
		{"root", root, []string{"user:soft"}, false},
		{"root", root, []string{"team:backend"}, false},
		{"root", root, []string{"root:h"}, true},
		{"root", root, []string{"*"}, true},
		{"root", root, nil, true},
		{"*:*", admin, []string{"user:soft"}, false},
		{"*:*", admin, nil, false},
		{"*:*", admin, []string{"user:admin"}, true},
		{"*:*", admin, []string{"*"}, true},
	} {
		if got := connector.Permits(c.owners, c.p); got != c.want {
			t.Errorf("%s on an entry of owners %q: Permits = %v, want %v", c.who, c.owners, got, c.want)
		}
	}
}

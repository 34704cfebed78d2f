package envvault_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/connector/envvault"
)

func TestNamingRule(t *testing.T) {
	t.Parallel()
	v := envvault.New(envvault.Config{})
	for ref, want := range map[connector.Ref]string{
		{Adapter: "ap-resend", ID: "account-123"}: "BOTS_CONNECTOR_AP_RESEND_ACCOUNT_123",
		{Adapter: "http", ID: "crm.Main@eu"}:      "BOTS_CONNECTOR_HTTP_CRM_MAIN_EU",
		{Adapter: "http", ID: "a_b"}:              "BOTS_CONNECTOR_HTTP_A_B",
	} {
		if got := v.Name(ref); got != want {
			t.Errorf("Name(%s) = %q, want %q", ref, got, want)
		}
	}
	if got := envvault.New(envvault.Config{Prefix: "X_"}).Name(connector.Ref{Adapter: "a", ID: "b"}); got != "X_A_B" {
		t.Errorf("with a prefix, Name = %q", got)
	}
}

func TestResolveReadsTheVariables(t *testing.T) {
	t.Setenv("BOTS_CONNECTOR_HTTP_CRM", "tok-123456789")
	t.Setenv("BOTS_CONNECTOR_HTTP_CRM__HEADER", "X-Api-Key")
	t.Setenv("BOTS_CONNECTOR_HTTP_CRM__URL", "https://crm.example.com/api")
	c, err := envvault.New(envvault.Config{}).Resolve(context.Background(), connector.Ref{Adapter: "http", ID: "crm"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Value() != "tok-123456789" || c.Header != "X-Api-Key" || c.URL != "https://crm.example.com/api" {
		t.Errorf("Resolve = %v with value %q", c, c.Value())
	}
}

func TestResolveSeesAChangeOnTheNextCall(t *testing.T) {
	t.Parallel()
	env := map[string]string{"BOTS_CONNECTOR_HTTP_CRM": "first-value"}
	v := envvault.New(envvault.Config{Lookup: func(k string) (string, bool) { s, ok := env[k]; return s, ok }})
	ref := connector.Ref{Adapter: "http", ID: "crm"}
	c1, _ := v.Resolve(context.Background(), ref)
	env["BOTS_CONNECTOR_HTTP_CRM"] = "second-value"
	c2, _ := v.Resolve(context.Background(), ref)
	if c1.Value() != "first-value" || c2.Value() != "second-value" {
		t.Errorf("values %q then %q", c1.Value(), c2.Value())
	}
}

func TestUnsetVariableIsNoCredential(t *testing.T) {
	t.Parallel()
	v := envvault.New(envvault.Config{Lookup: func(string) (string, bool) { return "", false }})
	_, err := v.Resolve(context.Background(), connector.Ref{Adapter: "http", ID: "crm"})
	if !errors.Is(err, connector.ErrNoCredential) || !strings.Contains(err.Error(), "BOTS_CONNECTOR_HTTP_CRM") {
		t.Fatalf("Resolve = %v, want ErrNoCredential naming the variable", err)
	}
}

func TestOwnersVariableSaysWhoMayUseIt(t *testing.T) {
	t.Parallel()
	env := map[string]string{"BOTS_CONNECTOR_HTTP_CRM": "tok-123456789", "BOTS_CONNECTOR_HTTP_CRM__OWNERS": "user:soft, team:backend"}
	v := envvault.New(envvault.Config{Lookup: func(k string) (string, bool) { s, ok := env[k]; return s, ok }})
	ref := connector.Ref{Adapter: "http", ID: "crm"}
	c, err := v.Resolve(context.Background(), ref)
	if err != nil || strings.Join(c.Owners, ",") != "user:soft,team:backend" {
		t.Fatalf("Resolve = %v, %v", c, err)
	}
	delete(env, "BOTS_CONNECTOR_HTTP_CRM__OWNERS")
	if c, err := v.Resolve(context.Background(), ref); err != nil || len(c.Owners) != 0 {
		t.Errorf("with no __OWNERS, Resolve = %v, %v; want root's alone (no owners)", c, err)
	}
	env["BOTS_CONNECTOR_HTTP_CRM__OWNERS"] = "soft"
	_, err = v.Resolve(context.Background(), ref)
	if !errors.Is(err, connector.ErrVault) || !strings.Contains(err.Error(), "BOTS_CONNECTOR_HTTP_CRM__OWNERS") || strings.Contains(err.Error(), "tok-123456789") {
		t.Errorf("a bad owner: %v", err)
	}
}

func TestValuesAreEveryCredentialOfThePrefix(t *testing.T) {
	t.Parallel()
	v := envvault.New(envvault.Config{Environ: func() []string {
		return []string{"BOTS_CONNECTOR_HTTP_CRM=one-value", "BOTS_CONNECTOR_HTTP_CRM__URL=https://x", "BOTS_CONNECTOR_HTTP_CRM__OWNERS=*", "HOME=/root", "BOTS_CONNECTOR_X_Y=two-value"}
	}})
	got, err := v.Values(context.Background())
	if err != nil || strings.Join(got, ",") != "one-value,two-value" {
		t.Errorf("Values = %q, %v", got, err)
	}
}

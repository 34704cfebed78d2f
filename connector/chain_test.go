package connector_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agenthost/bots/connector"
)

// chainVault holds credentials by connector id; err, when set, is what every
// Resolve answers.
type chainVault struct {
	values map[string]string
	err    error
	asked  int
}

func (m *chainVault) Resolve(_ context.Context, ref connector.Ref) (connector.Credential, error) {
	m.asked++
	if m.err != nil {
		return connector.Credential{}, m.err
	}
	if v, ok := m.values[ref.ID]; ok {
		return connector.NewCredential(v, "", ""), nil
	}
	return connector.Credential{}, fmt.Errorf("%w: %s", connector.ErrNoCredential, ref)
}

// listedChainVault is a chainVault that lists its values.
type listedChainVault struct{ *chainVault }

func (l listedChainVault) Values(context.Context) ([]string, error) {
	var out []string
	for _, v := range l.values {
		out = append(out, v)
	}
	return out, nil
}

func TestChainAsksTheNextVaultOnlyWhenOneHoldsNoCredential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	file := &chainVault{values: map[string]string{"crm": "file-crm"}}
	env := &chainVault{values: map[string]string{"crm": "env-crm", "mail": "env-mail"}}
	chain := connector.Chain{file, env}
	if c, err := chain.Resolve(ctx, connector.Ref{Adapter: "http", ID: "crm"}); err != nil || c.Value() != "file-crm" || env.asked != 0 {
		t.Errorf("crm: %v, %v, the environment asked %d times; want the file's alone", c, err, env.asked)
	}
	if c, err := chain.Resolve(ctx, connector.Ref{Adapter: "http", ID: "mail"}); err != nil || c.Value() != "env-mail" {
		t.Errorf("mail: %v, %v; want the environment's", c, err)
	}
	if _, err := chain.Resolve(ctx, connector.Ref{Adapter: "http", ID: "none"}); !errors.Is(err, connector.ErrNoCredential) {
		t.Errorf("none: %v, want ErrNoCredential", err)
	}
	if _, err := (connector.Chain{}).Resolve(ctx, connector.Ref{Adapter: "http", ID: "crm"}); !errors.Is(err, connector.ErrNoCredential) {
		t.Errorf("an empty chain: %v, want ErrNoCredential", err)
	}
}

func TestChainStopsAtAVaultThatCannotBeUsed(t *testing.T) {
	t.Parallel()
	broken := &chainVault{err: fmt.Errorf("%w: the file is mode 0644", connector.ErrVault)}
	env := &chainVault{values: map[string]string{"crm": "env-crm"}}
	_, err := connector.Chain{broken, env}.Resolve(context.Background(), connector.Ref{Adapter: "http", ID: "crm"})
	if !errors.Is(err, connector.ErrVault) || env.asked != 0 {
		t.Errorf("%v, the environment asked %d times; want the broken vault's error and no fallback", err, env.asked)
	}
}

func TestChainListsTheValuesOfEveryListingVault(t *testing.T) {
	t.Parallel()
	chain := connector.Chain{
		listedChainVault{&chainVault{values: map[string]string{"a": "one"}}},
		&chainVault{values: map[string]string{"b": "unlisted"}},
		listedChainVault{&chainVault{values: map[string]string{"c": "two"}}},
	}
	values, err := chain.Values(context.Background())
	slices.Sort(values)
	if err != nil || !slices.Equal(values, []string{"one", "two"}) {
		t.Errorf("values %q, %v; want one and two", values, err)
	}
}

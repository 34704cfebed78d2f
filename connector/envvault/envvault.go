// Package envvault is a connector.Vault that reads credentials from
// environment variables.
//
// The naming rule: the connector connectors://<adapter>/<id> has its value
// in the variable Prefix + NAME, where NAME is "<adapter>_<id>" uppercased
// with every character other than a letter or digit (-, ., @, _) turned into
// an underscore. With the default prefix, connectors://ap-resend/account-123
// is BOTS_CONNECTOR_AP_RESEND_ACCOUNT_123. The optional variables
// <that name>__HEADER and <that name>__URL give the header the value is sent
// in and the endpoint, and <that name>__OWNERS who may use it: owners
// separated by commas (user:soft,team:backend, or * for everybody signed
// in; see connector.Permits). With no __OWNERS the connector is root's
// alone: only root, and bots root owns, may use it. An owner of any other
// form refuses the connector, naming the variable. Two references that
// map to the same name share it.
package envvault

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agenthost/bots/connector"
)

// DefaultPrefix starts every variable name when Config.Prefix is empty.
const DefaultPrefix = "BOTS_CONNECTOR_"

// Config configures a Vault.
type Config struct {
	// Prefix starts every variable name; empty means DefaultPrefix.
	Prefix string
	// Lookup reads a variable; nil means os.LookupEnv.
	Lookup func(name string) (string, bool)
	// Environ lists the variables as "name=value"; nil means os.Environ.
	// Values reads it.
	Environ func() []string
}

// Vault resolves credentials from environment variables. It reads them on
// every Resolve, so a change is seen by the next call.
type Vault struct {
	prefix  string
	lookup  func(string) (string, bool)
	environ func() []string
}

var (
	_ connector.Vault  = (*Vault)(nil)
	_ connector.Lister = (*Vault)(nil)
)

// New makes a Vault, filling cfg's defaults.
func New(cfg Config) *Vault {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Lookup == nil {
		cfg.Lookup = os.LookupEnv
	}
	if cfg.Environ == nil {
		cfg.Environ = os.Environ
	}
	return &Vault{prefix: cfg.Prefix, lookup: cfg.Lookup, environ: cfg.Environ}
}

// Values answers the value of every variable of the prefix that is no
// __HEADER, __URL or __OWNERS.
func (v *Vault) Values(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []string
	for _, kv := range v.environ() {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || value == "" || !strings.HasPrefix(name, v.prefix) {
			continue
		}
		if strings.HasSuffix(name, "__HEADER") || strings.HasSuffix(name, "__URL") || strings.HasSuffix(name, "__OWNERS") {
			continue
		}
		out = append(out, value)
	}
	return out, nil
}

// Name is the variable that holds ref's value, by the package's rule.
func (v *Vault) Name(ref connector.Ref) string { return v.prefix + VarName(ref) }

// VarName is the part of a variable's name that ref gives, without the
// prefix: "<adapter>_<id>" uppercased, each character other than a letter
// or digit an underscore.
func VarName(ref connector.Ref) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(ref.Adapter + "_" + ref.ID) {
		if 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Resolve reads ref's variables. A variable that is unset or empty is no
// credential (connector.ErrNoCredential); the error names the variable.
func (v *Vault) Resolve(ctx context.Context, ref connector.Ref) (connector.Credential, error) {
	if err := ctx.Err(); err != nil {
		return connector.Credential{}, err
	}
	name := v.Name(ref)
	value, ok := v.lookup(name)
	if !ok || value == "" {
		return connector.Credential{}, fmt.Errorf("%s: the environment variable %s is not set: %w", ref, name, connector.ErrNoCredential)
	}
	header, _ := v.lookup(name + "__HEADER")
	url, _ := v.lookup(name + "__URL")
	c := connector.NewCredential(value, header, url)
	if owners, _ := v.lookup(name + "__OWNERS"); strings.TrimSpace(owners) != "" {
		for o := range strings.SplitSeq(owners, ",") {
			o = strings.TrimSpace(o)
			if err := connector.CheckOwner(o); err != nil {
				return connector.Credential{}, fmt.Errorf("%s: the environment variable %s__OWNERS: %v: %w", ref, name, err, connector.ErrVault)
			}
			c.Owners = append(c.Owners, o)
		}
	}
	return c, nil
}

package connector

import (
	"context"
	"errors"
	"fmt"
)

// Chain is a Vault that asks its vaults in order: the next is asked only
// when one holds no credential for the connector (ErrNoCredential), so a
// file of credentials can fall back to the environment.
type Chain []Vault

var _ Lister = Chain(nil)

// Resolve answers the first credential found. An error other than
// ErrNoCredential ends the search and is returned as it is; when no vault
// holds one, the error joins every vault's ErrNoCredential; an empty chain holds none.
func (c Chain) Resolve(ctx context.Context, ref Ref) (Credential, error) {
	var errs []error
	for _, v := range c {
		cred, err := v.Resolve(ctx, ref)
		if err == nil {
			return cred, nil
		}
		if !errors.Is(err, ErrNoCredential) {
			return Credential{}, err
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return Credential{}, fmt.Errorf("%w: the chain holds no vault", ErrNoCredential)
	}
	return Credential{}, errors.Join(errs...)
}

// Values answers the values of every vault of the chain that lists them
// (a Lister), with the errors of those that could not.
func (c Chain) Values(ctx context.Context) ([]string, error) {
	var out []string
	var errs []error
	for _, v := range c {
		if l, ok := v.(Lister); ok {
			values, err := l.Values(ctx)
			out = append(out, values...)
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

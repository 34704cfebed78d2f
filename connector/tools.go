package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/bots/access"
)

// ToolsConfig configures Tools.
type ToolsConfig struct {
	// Bot is the id of the bot whose connectors these are.
	Bot string
	// Connectors answers the bot's connectors map (alias →
	// connectors://<adapter>/<id>) as it is now. It is called on every
	// List and Call, so an edit reaches the next call. Required.
	Connectors func() map[string]string
	// Registry holds the host's adapters. Required.
	Registry *Registry
	// Vault resolves credentials at call time. Required.
	Vault Vault
	// Scrubber learns every credential resolved and takes it out of
	// results, errors and logs. Nil means a scrubber of these tools' own;
	// share one with the logs and files of the session to scrub them too.
	Scrubber *Scrubber
	// Logger receives a line per call, scrubbed. Nil discards.
	Logger *slog.Logger
}

// Tools offers a bot's connectors as tools, one per alias, reading the
// connectors map live. It is safe to use concurrently.
type Tools struct {
	bot        string
	connectors func() map[string]string
	registry   *Registry
	vault      Vault
	scrub      *Scrubber
	log        *slog.Logger
}

// NewTools checks cfg and makes the tools.
func NewTools(cfg ToolsConfig) (*Tools, error) {
	switch {
	case cfg.Connectors == nil:
		return nil, errors.New("connector tools: no connectors map")
	case cfg.Registry == nil:
		return nil, errors.New("connector tools: no adapter registry")
	case cfg.Vault == nil:
		return nil, errors.New("connector tools: no vault")
	}
	s := cfg.Scrubber
	if s == nil {
		s = &Scrubber{}
	}
	return &Tools{
		bot:        cfg.Bot,
		connectors: cfg.Connectors,
		registry:   cfg.Registry,
		vault:      cfg.Vault,
		scrub:      s,
		log:        s.Logger(cfg.Logger),
	}, nil
}

// Scrubber is the scrubber the tools teach every credential they resolve.
func (t *Tools) Scrubber() *Scrubber { return t.scrub }

// Tool is one connector offered as a tool.
type Tool struct {
	// Name is the alias. An alias is a lowercase slug, so it never takes
	// the name of a built-in tool such as post_message.
	Name string
	// Ref is the connector the alias names now.
	Ref Ref
	// Description says what the tool does.
	Description string
	// InputSchema is the JSON Schema of the tool's arguments.
	InputSchema json.RawMessage
}

// defaultSchema takes any JSON object.
const defaultSchema = `{"type":"object"}`

// List answers one tool per alias of the map as it is now, sorted by name.
// An alias whose value is no connector reference, or whose adapter is not
// registered, is left out and logged.
func (t *Tools) List() []Tool {
	m := t.connectors()
	aliases := make([]string, 0, len(m))
	for a := range m {
		aliases = append(aliases, a)
	}
	slices.Sort(aliases)
	out := make([]Tool, 0, len(aliases))
	for _, alias := range aliases {
		ref, a, err := t.lookup(m, alias)
		if err != nil {
			t.log.Warn("connector left out of the tools", "bot", t.bot, "alias", alias, "err", err)
			continue
		}
		tool := Tool{
			Name:        alias,
			Ref:         ref,
			Description: fmt.Sprintf("Calls the connector %s (%s).", alias, ref),
			InputSchema: json.RawMessage(defaultSchema),
		}
		if d, ok := a.(Describer); ok {
			desc, schema := d.Describe(ref)
			if desc != "" {
				tool.Description = desc
			}
			if len(schema) > 0 {
				tool.InputSchema = schema
			}
		}
		out = append(out, tool)
	}
	return out
}

func (t *Tools) lookup(m map[string]string, alias string) (Ref, Adapter, error) {
	s, ok := m[alias]
	if !ok {
		return Ref{}, nil, fmt.Errorf("connector %q is not among the bot's connectors (it may have been taken out): %w", alias, ErrNoAlias)
	}
	ref, err := ParseRef(s)
	if err != nil {
		return Ref{}, nil, fmt.Errorf("connector %q: %w", alias, err)
	}
	a, ok := t.registry.Adapter(ref.Adapter)
	if !ok {
		return Ref{}, nil, fmt.Errorf("connector %q names adapter %q, which this host does not offer: %w", alias, ref.Adapter, ErrNoAdapter)
	}
	return ref, a, nil
}

// Call calls the connector under alias, as the map is now, for the bot's
// owner and the person who sent the message, both as the users file has
// them now: it resolves the credential, teaches it to the scrubber,
// refuses the call unless both may use it (Permits; an error matching
// ErrDenied, one sentence naming the alias), and hands the call to the
// adapter. The result and the error have every known credential value
// taken out. A call after the alias was taken out fails with an error
// wrapping ErrNoAlias that names the alias.
func (t *Tools) Call(ctx context.Context, owner, from access.Principal, alias string, args json.RawMessage) (Result, error) {
	start := time.Now()
	res, err := t.call(ctx, owner, from, alias, args)
	res.Text = t.scrub.String(res.Text)
	err = t.scrub.Error(err)
	if err != nil {
		t.log.Info("connector call failed", "bot", t.bot, "alias", alias, "from", from.String(), "err", err, "took", time.Since(start))
	} else {
		t.log.Info("connector call", "bot", t.bot, "alias", alias, "from", from.String(), "isError", res.IsError, "bytes", len(res.Text), "took", time.Since(start))
	}
	return res, err
}

func (t *Tools) call(ctx context.Context, owner, from access.Principal, alias string, args json.RawMessage) (Result, error) {
	ref, a, err := t.lookup(t.connectors(), alias)
	if err != nil {
		return Result{}, err
	}
	if len(strings.TrimSpace(string(args))) == 0 {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		return Result{}, fmt.Errorf("connector %q: the arguments are not valid JSON", alias)
	}
	cred, err := t.vault.Resolve(ctx, ref)
	if err != nil {
		return Result{}, fmt.Errorf("connector %q: %w", alias, err)
	}
	t.scrub.Add(cred.Value())
	if err := permit(alias, cred, owner, from); err != nil {
		return Result{}, err
	}
	res, err := a.Call(ctx, Call{Owner: owner, From: from, Bot: t.bot, Alias: alias, Ref: ref, Args: args, Credential: cred})
	if err != nil {
		return res, fmt.Errorf("connector %q: %w", alias, err)
	}
	return res, nil
}

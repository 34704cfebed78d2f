package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// MaxBody is the largest body a make or an edit may carry.
const MaxBody = 1 << 20

// Opt is one field of a Patch: absent, null (clear it) or set to V.
type Opt[T any] struct {
	Set  bool // the body names the field
	Null bool // the body names it as null
	V    T
}

// Has reports whether the field is named with a value (not null).
func (o Opt[T]) Has() bool { return o.Set && !o.Null }

// Patch is a checked body of a make or an edit: each field absent, null or a
// value that passed the field's own check. Rules that need the record being
// edited, or the host (owner, folder, template), are applied later.
type Patch struct {
	ID           Opt[string]
	Name         Opt[string]
	Labels       Opt[[]string]
	Description  Opt[string]
	Body         Opt[string]
	Color        Opt[string]
	Instructions Opt[string]
	Template     Opt[string]
	Provider     Opt[string]
	Model        Opt[string]
	Preset       Opt[string]
	Workspace    Opt[string]
	Session      Opt[string]
	Computer     Opt[string]
	Connectors   Opt[map[string]string]
	Tools        Opt[[]string]
	Owner        Opt[string]
	CreatedAt    Opt[time.Time]
	UpdatedAt    Opt[time.Time]
}

// Keys are the fields a body may name, in the spec's order.
var keys = [...]string{
	"id", "name", "labels", "description", "body", "color", "instructions", "template",
	"provider", "model", "preset", "workspace", "session", "computer", "connectors",
	"tools", "owner", "createdAt", "updatedAt",
}

// Keys returns the names of the record's fields, in the spec's order.
func Keys() []string { return slices.Clone(keys[:]) }

// metaKey is ignored in a body: it is the host's, and a client that writes
// back what it read may carry it.
const metaKey = "_meta"

// ParsePatch checks a JSON body: an object whose keys are record fields and
// whose values have the field's type and form. The error is one sentence
// naming the offending key or value.
func ParsePatch(data []byte) (Patch, error) {
	if len(data) > MaxBody {
		return Patch{}, fmt.Errorf("the body is larger than %d bytes", MaxBody)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return Patch{}, errors.New("the body must be a JSON object")
		}
		return Patch{}, fmt.Errorf("the body is not valid JSON: %v", err)
	}
	if dec.More() {
		return Patch{}, errors.New("the body holds more than one JSON value")
	}
	if m == nil {
		return Patch{}, errors.New("the body must be a JSON object, not null")
	}
	return PatchFromMap(m)
}

// PatchFromMap checks a body already decoded into generic values, as JSON or
// YAML decoders produce them.
func PatchFromMap(m map[string]any) (Patch, error) {
	var buf [len(keys) + 4]string
	names := appendOrderedKeys(buf[:0], m)
	if err := checkSecrets(m, names); err != nil {
		return Patch{}, err
	}
	var p Patch
	for _, k := range names {
		if err := p.set(k, m[k]); err != nil {
			return Patch{}, err
		}
	}
	return p, nil
}

// appendOrderedKeys appends m's keys to names, the record's in the spec's
// order, then any other by name. It puts each key in its place by a look-up
// rather than sort, and allocates nothing when names has room: a load of
// many bots reads every frontmatter through it.
func appendOrderedKeys(names []string, m map[string]any) []string {
	var has [len(keys)]bool
	other := false
	for k := range m {
		if i := keyIndex(k); i < len(keys) {
			has[i] = true
		} else {
			other = true
		}
	}
	for i, ok := range has {
		if ok {
			names = append(names, keys[i])
		}
	}
	if !other {
		return names
	}
	known := len(names)
	for k := range m {
		if keyIndex(k) == len(keys) {
			names = append(names, k)
		}
	}
	sort.Strings(names[known:])
	return names
}

// keyIndex returns the place of k in keys, or len(keys) for a key a record
// does not have.
func keyIndex(k string) int {
	if i, ok := keyIndexes[k]; ok {
		return i
	}
	return len(keys)
}

// keyIndexes holds each record key's place in keys. It is a constant table:
// made once, never written.
var keyIndexes = func() map[string]int {
	m := make(map[string]int, len(keys))
	for i, k := range keys {
		m[k] = i
	}
	return m
}()

func (p *Patch) set(k string, v any) error {
	switch k {
	case "id":
		return str(&p.ID, k, v, CheckSlug)
	case "name":
		return str(&p.Name, k, v, func(s string) error {
			if strings.TrimSpace(s) == "" {
				return errors.New("name must not be empty")
			}
			return nil
		})
	case "labels":
		return labels(&p.Labels, v)
	case "description":
		return str(&p.Description, k, v, nil)
	case "body":
		return str(&p.Body, k, v, func(s string) error { return checkWord("body", s) })
	case "color":
		if err := str(&p.Color, k, v, nil); err != nil || !p.Color.Has() {
			return err
		}
		c, ok := NormalizeColor(p.Color.V)
		if !ok {
			return fmt.Errorf("color %q is neither one of %s nor #rrggbb", p.Color.V, strings.Join(colors, ", "))
		}
		p.Color.V = c
		return nil
	case "instructions":
		return str(&p.Instructions, k, v, nil)
	case "template":
		return str(&p.Template, k, v, func(s string) error {
			if !isSlug(s) {
				return fmt.Errorf("template %q is not a template name: use a lowercase slug", s)
			}
			return nil
		})
	case "provider":
		return str(&p.Provider, k, v, func(s string) error { return checkWord("provider", s) })
	case "model":
		return str(&p.Model, k, v, nonEmpty(k))
	case "preset":
		return str(&p.Preset, k, v, nonEmpty(k))
	case "workspace":
		return str(&p.Workspace, k, v, nonEmpty(k))
	case "session":
		return str(&p.Session, k, v, checkSessionName)
	case "computer":
		return str(&p.Computer, k, v, nonEmpty(k))
	case "connectors":
		return connectors(&p.Connectors, v)
	case "tools":
		return tools(&p.Tools, v)
	case "owner":
		return str(&p.Owner, k, v, checkOwner)
	case "createdAt":
		return stamp(&p.CreatedAt, k, v)
	case "updatedAt":
		return stamp(&p.UpdatedAt, k, v)
	case metaKey:
		return nil
	}
	return fmt.Errorf("unknown key %q: a bot has no such field", k)
}

func nonEmpty(k string) func(string) error {
	return func(s string) error {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("%s must not be empty: use null to clear it", k)
		}
		return nil
	}
}

func str(o *Opt[string], k string, v any, check func(string) error) error {
	o.Set = true
	if v == nil {
		o.Null = true
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("%s must be a string, not %s", k, typeName(v))
	}
	if check != nil {
		if err := check(s); err != nil {
			return err
		}
	}
	o.V = s
	return nil
}

func labels(o *Opt[[]string], v any) error {
	o.Set = true
	if v == nil {
		o.Null = true
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("labels must be a list of strings, not %s", typeName(v))
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return fmt.Errorf("labels[%d] must be a string, not %s", i, typeName(e))
		}
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("labels[%d] must not be empty", i)
		}
		out = append(out, s)
	}
	o.V = out
	return nil
}

func tools(o *Opt[[]string], v any) error {
	o.Set = true
	if v == nil {
		o.Null = true
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("tools must be a list of tool names, not %s", typeName(v))
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return fmt.Errorf("tools[%d] must be a string, not %s", i, typeName(e))
		}
		if err := checkToolName(s); err != nil {
			return err
		}
		if slices.Contains(out, s) {
			return fmt.Errorf("tools names %q twice", s)
		}
		out = append(out, s)
	}
	o.V = out
	return nil
}

func connectors(o *Opt[map[string]string], v any) error {
	o.Set = true
	if v == nil {
		o.Null = true
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("connectors must be an object of alias to connectors://<adapter>/<id>, not %s", typeName(v))
	}
	out := make(map[string]string, len(m))
	aliases := make([]string, 0, len(m))
	for a := range m {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	for _, a := range aliases {
		s, ok := m[a].(string)
		if !ok {
			return fmt.Errorf("connector %q must be a string connectors://<adapter>/<id>, not %s", a, typeName(m[a]))
		}
		if err := checkConnector(a, s); err != nil {
			return err
		}
		out[a] = s
	}
	o.V = out
	return nil
}

func stamp(o *Opt[time.Time], k string, v any) error {
	o.Set = true
	switch t := v.(type) {
	case nil:
		o.Null = true
		return nil
	case time.Time:
		o.V = t
		return nil
	case string:
		parsed, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return fmt.Errorf("%s %q is not an ISO time such as 2026-10-11T09:00:00.000Z", k, t)
		}
		o.V = parsed
		return nil
	}
	return fmt.Errorf("%s must be an ISO time string, not %s", k, typeName(v))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	case float64, json.Number, int, int64, uint64, float32, int32, uint32:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// Make builds a new record with the slug id from a make's body. It refuses a
// body naming another id and a body without a name; it fills the session
// name when absent. Owner, workspace, body, colour and times are the host's
// to fill.
func (p Patch) Make(id string) (Record, error) {
	if err := CheckSlug(id); err != nil {
		return Record{}, err
	}
	if p.ID.Has() && p.ID.V != id {
		return Record{}, fmt.Errorf("the body names id %q but the bot is %q", p.ID.V, id)
	}
	if !p.Name.Has() {
		return Record{}, errors.New("a bot must have a name")
	}
	return p.Apply(Record{ID: id, Session: DefaultSession})
}

// Apply merges an edit onto r: a field the edit does not name stays, null
// clears an optional field, and id, owner and workspace never move. Times are
// not touched: they are the host's.
func (p Patch) Apply(r Record) (Record, error) {
	r = r.Clone()
	if p.ID.Has() && p.ID.V != r.ID {
		return Record{}, fmt.Errorf("the body names id %q but the bot is %q", p.ID.V, r.ID)
	}
	if p.Name.Null {
		return Record{}, errors.New("name cannot be cleared: a bot must have a name")
	}
	if p.Owner.Has() && r.Owner != "" && p.Owner.V != r.Owner && !(IsRootOwner(p.Owner.V) && IsRootOwner(r.Owner)) {
		return Record{}, fmt.Errorf("owner cannot move: the bot is %s's, not %s", r.Owner, p.Owner.V)
	}
	if p.Owner.Null && r.Owner != "" {
		return Record{}, errors.New("owner cannot be cleared")
	}
	if p.Workspace.Has() && r.Workspace != "" && p.Workspace.V != r.Workspace {
		return Record{}, fmt.Errorf("workspace cannot move: the bot works in %s, not %s", r.Workspace, p.Workspace.V)
	}
	if p.Workspace.Null && r.Workspace != "" {
		return Record{}, errors.New("workspace cannot be cleared")
	}
	apply(&r.Name, p.Name)
	apply(&r.Labels, p.Labels)
	apply(&r.Description, p.Description)
	apply(&r.Body, p.Body)
	apply(&r.Color, p.Color)
	apply(&r.Instructions, p.Instructions)
	apply(&r.Template, p.Template)
	apply(&r.Provider, p.Provider)
	apply(&r.Model, p.Model)
	apply(&r.Preset, p.Preset)
	apply(&r.Computer, p.Computer)
	apply(&r.Connectors, p.Connectors)
	apply(&r.Tools, p.Tools)
	if len(r.Tools) == 0 {
		r.Tools = nil
	}
	apply(&r.Session, p.Session)
	if r.Session == "" {
		r.Session = DefaultSession
	}
	if r.Owner == "" {
		apply(&r.Owner, p.Owner)
	}
	if r.Workspace == "" {
		apply(&r.Workspace, p.Workspace)
	}
	return r, nil
}

func apply[T any](dst *T, o Opt[T]) {
	switch {
	case o.Null:
		var zero T
		*dst = zero
	case o.Set:
		*dst = o.V
	}
}

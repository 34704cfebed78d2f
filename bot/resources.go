package bot

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record"
)

// Scheme is the URI scheme bots are served under: bot://<slug>.
const Scheme = "bot"

// SchemeRoot is the URI of the scheme's root, which lists the bots.
const SchemeRoot = "bot://"

// contentType is what a read of a bot answers.
const contentType = "application/json"

// Provider is the bot: scheme as a engine.ResourceProvider.
type Provider struct{ svc *Service }

var _ engine.ResourceProvider = Provider{}

// Provider returns the service's bot: scheme provider.
func (s *Service) Provider() Provider { return Provider{svc: s} }

// ServeResource answers the resource methods on bot: URIs.
func (r Provider) ServeResource(ctx context.Context, call engine.Call) (any, error) {
	p := r.svc.current(call.Principal)
	switch call.Method {
	case ahp.MethodResourceRead:
		params, err := readParams(call.Params)
		if err != nil {
			return nil, err
		}
		id, err := botID(params.URI)
		if err != nil {
			return nil, err
		}
		b, err := r.svc.Read(ctx, p, id)
		if err != nil {
			return nil, err
		}
		// AppendJSON writes compact JSON, as MarshalJSON does, here
		// into a buffer on the stack: the answer keeps a copy.
		var buf [1024]byte
		data := b.Record.AppendJSON(buf[:0])
		if params.Encoding == "base64" {
			return ahp.ResourceReadResult{Data: base64.StdEncoding.EncodeToString(data), Encoding: "base64", ContentType: contentType}, nil
		}
		return ahp.ResourceReadResult{Data: string(data), Encoding: "utf-8", ContentType: contentType}, nil

	case ahp.MethodResourceWrite:
		var params ahp.ResourceWriteParams
		if err := decodeParams(call.Params, &params); err != nil {
			return nil, err
		}
		return ahp.EmptyResult{}, r.write(ctx, p, params)

	case ahp.MethodResourceList:
		var params ahp.ResourceListParams
		if err := decodeParams(call.Params, &params); err != nil {
			return nil, err
		}
		id, err := ParseURI(params.URI)
		if err != nil {
			return nil, err
		}
		if id != "" {
			if _, err := r.svc.Resolve(ctx, p, id); err != nil {
				return nil, err
			}
			return nil, errcode.New(errcode.Invalid, "%s is a bot, not a folder: list %s", uri(id), SchemeRoot)
		}
		bots, err := r.svc.List(ctx, p)
		if err != nil {
			return nil, err
		}
		entries := make([]ahp.DirectoryEntry, len(bots))
		for i, b := range bots {
			entries[i] = ahp.DirectoryEntry{Name: b.Record.ID, Type: ahp.ResourceFile}
		}
		return ahp.ResourceListResult{Entries: entries}, nil

	case ahp.MethodResourceResolve:
		var params ahp.ResourceResolveParams
		if err := decodeParams(call.Params, &params); err != nil {
			return nil, err
		}
		id, err := ParseURI(params.URI)
		if err != nil {
			return nil, err
		}
		if id == "" {
			return ahp.ResourceResolveResult{URI: SchemeRoot, Type: ahp.ResourceDirectory}, nil
		}
		m, err := r.svc.Resolve(ctx, p, id)
		if err != nil {
			return nil, err
		}
		return ahp.ResourceResolveResult{
			URI: uri(id), Type: ahp.ResourceFile, ContentType: contentType, Etag: m.ETag,
			Mtime: record.FormatTime(m.UpdatedAt), Ctime: record.FormatTime(m.CreatedAt),
		}, nil

	case ahp.MethodResourceDelete:
		var params ahp.ResourceDeleteParams
		if err := decodeParams(call.Params, &params); err != nil {
			return nil, err
		}
		id, err := botID(params.URI)
		if err != nil {
			return nil, err
		}
		return ahp.EmptyResult{}, r.svc.Delete(ctx, p, id, "")

	case ahp.MethodCreateResourceWatch:
		var params ahp.CreateResourceWatchParams
		if err := decodeParams(call.Params, &params); err != nil {
			return nil, err
		}
		ch, err := r.svc.catalog.CreateWatch(ctx, p, params.URI)
		if err != nil {
			return nil, err
		}
		return ahp.CreateResourceWatchResult{Channel: ch}, nil
	}
	return nil, errcode.New(errcode.Unsupported, "%s is not served on bot: URIs", call.Method)
}

// write is a make (createOnly, or a slug that has no bot) or an edit.
func (r Provider) write(ctx context.Context, p access.Principal, params ahp.ResourceWriteParams) error {
	if params.Mode != "" && params.Mode != ahp.WriteTruncate {
		return errcode.New(errcode.Invalid, "a bot is written whole: mode %q is not served, use truncate", params.Mode)
	}
	if params.Position != nil && *params.Position != 0 {
		return errcode.New(errcode.Invalid, "a bot is written whole: position must be 0")
	}
	body, err := decodeData(params.Data, params.Encoding)
	if err != nil {
		return err
	}
	id, err := ParseURI(params.URI)
	if err != nil {
		return err
	}
	if id == "" {
		id, err = idFromBody(body)
		if err != nil {
			return err
		}
		params.CreateOnly = true
	}
	if params.CreateOnly {
		_, err := r.svc.Make(ctx, p, id, body)
		return err
	}
	_, err = r.svc.Edit(ctx, p, id, body, params.IfMatch)
	if errcode.Of(err) == errcode.NotFound && params.IfMatch == "" {
		_, err = r.svc.Make(ctx, p, id, body)
	}
	return err
}

// idFromBody takes the slug of a make written to the scheme root from the
// body's id.
func idFromBody(body []byte) (string, error) {
	var head struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.ID == "" {
		return "", errcode.New(errcode.Invalid, "a write to %s makes a bot from a body that names its id; or write to bot://<slug>", SchemeRoot)
	}
	return head.ID, nil
}

func decodeData(data, encoding string) ([]byte, error) {
	switch encoding {
	case "", "utf-8":
		if !utf8.ValidString(data) {
			return nil, errcode.New(errcode.Invalid, "data is not valid UTF-8")
		}
		return []byte(data), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, errcode.New(errcode.Invalid, "data is not valid base64")
		}
		return b, nil
	}
	return nil, errcode.New(errcode.Invalid, "encoding %q is neither utf-8 nor base64", encoding)
}

// botID is the slug of a URI that must name one bot.
func botID(u string) (string, error) {
	id, err := ParseURI(u)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", errcode.New(errcode.Invalid, "%s is the list of bots: name one, bot://<slug>", SchemeRoot)
	}
	return id, nil
}

func decodeParams(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return errcode.New(errcode.Invalid, "params.%s must be %s", typeErr.Field, typeErr.Type)
		}
		return errcode.New(errcode.Invalid, "params are not valid: %v", err)
	}
	return nil
}

// readParams decodes the params of a read as decodeParams does. The usual
// params, an object of plain ASCII keys and plain string values (no
// escapes) that holds no _meta, are read without reflection.
func readParams(raw json.RawMessage) (ahp.ResourceReadParams, error) {
	if p, ok := scanReadParams(raw); ok {
		return p, nil
	}
	var p ahp.ResourceReadParams
	return p, decodeParams(raw, &p)
}

// scanReadParams reads raw when it is a flat JSON object of plain ASCII
// keys and plain string values; ok false for anything else. Keys match
// the fields without regard to case, the last of a repeated key wins, as
// in encoding/json.
func scanReadParams(raw []byte) (p ahp.ResourceReadParams, ok bool) {
	i := skipJSONSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return p, false
	}
	i = skipJSONSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return p, skipJSONSpace(raw, i+1) == len(raw)
	}
	for {
		key, next, ok := plainJSONString(raw, i)
		if !ok {
			return p, false
		}
		i = skipJSONSpace(raw, next)
		if i >= len(raw) || raw[i] != ':' {
			return p, false
		}
		for _, c := range key {
			if c >= utf8.RuneSelf {
				return p, false // encoding/json folds such keys by Unicode rules
			}
		}
		val, next, ok := plainJSONString(raw, skipJSONSpace(raw, i+1))
		if !ok || !utf8.Valid(val) {
			return p, false // invalid UTF-8 would be replaced
		}
		switch {
		case equalFoldASCII(key, "channel"):
			p.Channel = knownString(val, ahp.RootURI)
		case equalFoldASCII(key, "uri"):
			p.URI = string(val)
		case equalFoldASCII(key, "encoding"):
			p.Encoding = knownString(val, "utf-8")
		case equalFoldASCII(key, "_meta"):
			return p, false
		}
		i = skipJSONSpace(raw, next)
		if i >= len(raw) {
			return p, false
		}
		switch raw[i] {
		case ',':
			i = skipJSONSpace(raw, i+1)
		case '}':
			return p, skipJSONSpace(raw, i+1) == len(raw)
		default:
			return p, false
		}
	}
}

// knownString is string(val), known itself when it is that string: the
// usual value costs no allocation.
func knownString(val []byte, known string) string {
	if string(val) == known {
		return known
	}
	return string(val)
}

// plainJSONString reads the JSON string at raw[i] when it holds no escape and
// no control character: its contents and the index after it.
func plainJSONString(raw []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(raw) || raw[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			return raw[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20:
			return nil, i, false
		}
	}
	return nil, i, false
}

func skipJSONSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// equalFoldASCII reports whether key is name (lower case ASCII) without
// regard to ASCII case.
func equalFoldASCII(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range len(key) {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

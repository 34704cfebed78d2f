package bot

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/jsonx"
	"github.com/agenthost/bots/record"
)

// Scheme is the URI scheme bots are served under: bot://<slug>.
const Scheme = "bot"

// schemeRoot is the URI of the scheme's root, which lists the bots.
const schemeRoot = "bot://"

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
		params, err := readParams(call.Params, call.URI)
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
		if params.Encoding == "base64" {
			// AppendJSON writes compact JSON, as MarshalJSON does, here
			// into a buffer on the stack: the answer keeps its encoding.
			var buf [1024]byte
			data := b.Record.AppendJSON(buf[:0])
			return ahp.ResourceReadResult{Data: base64.StdEncoding.EncodeToString(data), Encoding: "base64", ContentType: contentType}, nil
		}
		bundled := r.svc.isBundled(id)
		return &readResult{r: b.Record, bundled: bundled, mayWrite: !bundled && CanWrite(p, b.Record)}, nil

	case ahp.MethodResourceWrite:
		var params ahp.ResourceWriteParams
		if err := call.Decode(&params); err != nil {
			return nil, err
		}
		return ahp.EmptyResult{}, r.write(ctx, p, params)

	case ahp.MethodResourceList:
		var params ahp.ResourceListParams
		if err := call.Decode(&params); err != nil {
			return nil, err
		}
		id, err := parseURI(params.URI)
		if err != nil {
			return nil, err
		}
		if id != "" {
			if _, err := r.svc.Resolve(ctx, p, id); err != nil {
				return nil, err
			}
			return nil, errcode.New(errcode.Invalid, "%s is a bot, not a folder: list %s", uri(id), schemeRoot)
		}
		ids, err := r.svc.ListIDs(ctx, p)
		if err != nil {
			return nil, err
		}
		entries := make([]ahp.DirectoryEntry, len(ids))
		for i, id := range ids {
			entries[i] = ahp.DirectoryEntry{Name: id, Type: ahp.ResourceFile}
		}
		return ahp.ResourceListResult{Entries: entries}, nil

	case ahp.MethodResourceResolve:
		var params ahp.ResourceResolveParams
		if err := call.Decode(&params); err != nil {
			return nil, err
		}
		id, err := parseURI(params.URI)
		if err != nil {
			return nil, err
		}
		if id == "" {
			return ahp.ResourceResolveResult{URI: schemeRoot, Type: ahp.ResourceDirectory}, nil
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
		if err := call.Decode(&params); err != nil {
			return nil, err
		}
		id, err := botID(params.URI)
		if err != nil {
			return nil, err
		}
		return ahp.EmptyResult{}, r.svc.Delete(ctx, p, id, "")

	case ahp.MethodCreateResourceWatch:
		var params ahp.CreateResourceWatchParams
		if err := call.Decode(&params); err != nil {
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

// readResult is the answer of a read in utf-8, ahp.ResourceReadResult
// with the record's JSON as its data, written in one pass: the record's
// JSON escaped as it is written, rather than written and then escaped a
// second time into the answer. Its _meta tells a client what the reader
// may do with the bot: "ahpd.bundled" (a bot bundled with the host, which
// no one edits or deletes: it is copied) and "ahpd.mayWrite" (the reader
// may edit and delete it).
type readResult struct {
	r                 record.Record
	bundled, mayWrite bool
}

// Read _meta keys: see readResult.
const (
	bundledMeta  = "ahpd.bundled"
	mayWriteMeta = "ahpd.mayWrite"
)

var _ engine.JSONAppender = (*readResult)(nil)

// readResultTail is what follows the data of a read in utf-8, up to its
// _meta.
const readResultTail = `","encoding":"utf-8","contentType":"` + contentType + `","_meta":{"` + bundledMeta + `":`

// AppendJSON appends what encoding/json writes, HTML escaping off, for
// ahp.ResourceReadResult{Data: <the record's JSON>, Encoding: "utf-8",
// ContentType: contentType}.
func (a *readResult) AppendJSON(b []byte) []byte {
	b = append(b, `{"data":"`...)
	b = a.r.AppendJSONInString(b)
	b = append(b, readResultTail...)
	b = strconv.AppendBool(b, a.bundled)
	b = append(b, `,"`+mayWriteMeta+`":`...)
	b = strconv.AppendBool(b, a.mayWrite)
	return append(b, "}}"...)
}

// MarshalJSON is AppendJSON, for anything that marshals the answer with
// encoding/json.
func (a *readResult) MarshalJSON() ([]byte, error) { return a.AppendJSON(make([]byte, 0, 1024)), nil }

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
	id, err := parseURI(params.URI)
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
		return "", errcode.New(errcode.Invalid, "a write to %s makes a bot from a body that names its id; or write to bot://<slug>", schemeRoot)
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
	id, err := parseURI(u)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", errcode.New(errcode.Invalid, "%s is the list of bots: name one, bot://<slug>", schemeRoot)
	}
	return id, nil
}

// readParams decodes the params of a read as engine.DecodeParams does, in
// one pass with jsonx; _meta, which holds any JSON, and a field of the
// wrong kind (to name it as DecodeParams does) are left to DecodeParams.
// uri is the URI the call names, which params.uri usually is: it is used
// rather than a copy.
func readParams(raw json.RawMessage, uri string) (ahp.ResourceReadParams, error) {
	var p ahp.ResourceReadParams
	var d jsonx.Decoder
	d.Reset(raw)
	typed := true
	for key := range d.Object {
		var field *string
		switch {
		case jsonx.KeyIs(key, "channel"):
			field = &p.Channel
		case jsonx.KeyIs(key, "uri"):
			field = &p.URI
		case jsonx.KeyIs(key, "encoding"):
			field = &p.Encoding
		case jsonx.KeyIs(key, "_meta"):
			typed = false
		default:
			continue
		}
		switch d.Peek() {
		case '"':
			if field != nil {
				*field = knownString(d.String(), uri)
			}
		case 'n': // leaves the field as it is
		default:
			typed = false
		}
	}
	if d.End() && typed {
		return p, nil
	}
	var q ahp.ResourceReadParams
	return q, engine.DecodeParams(raw, &q)
}

// knownString is string(v), without an allocation for the usual values:
// uri, the root channel and the encodings.
func knownString(v []byte, uri string) string {
	switch string(v) {
	case uri:
		return uri
	case ahp.RootURI:
		return ahp.RootURI
	case "utf-8":
		return "utf-8"
	case "base64":
		return "base64"
	}
	return string(v)
}

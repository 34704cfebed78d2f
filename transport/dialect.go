package transport

import (
	"bytes"
	"encoding/json"

	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/internal/jsonx"
)

// A dialect is the shapes a connection speaks, as its negotiated version
// says. The engine, the chats and the ahp package know one model, the
// 0.9.x and 1.x shapes (current); a connection that negotiated an older
// version has what it receives translated down to its shapes here, at the
// edge, and what it sends translated up. A current connection does none of
// this work: every translation starts with a check of the dialect.
type dialect uint8

const (
	// current is 0.9.x and 1.x: the ahp package's own shapes.
	current dialect = iota
	// v07 is 0.7.x and 0.8.x: chat/error carries an error member and a
	// failed turn an error member, not an error response part; the
	// lifecycle of a failed session is creationFailed; session and chat
	// summaries lack the members 0.9.0 added; 0.9-only actions are not
	// sent.
	v07
	// v06 is 0.6.x: as v07, and a session or chat has one
	// workingDirectory, not a workingDirectories set.
	v06
)

// dialectOf returns the dialect of a version negotiate accepted.
func dialectOf(version string) dialect {
	v, ok := parseSemver(version)
	switch {
	case !ok || v.major != 0 || v.minor >= 9:
		return current
	case v.minor == 6:
		return v06
	}
	return v07
}

// newerActions are the action types added in 0.9.0 or later. They are not
// sent to an older connection: its state has no place for what they change
// (the translated snapshots leave that out too), and its reducers do not
// know them.
var newerActions = map[string]bool{
	"chat/turnResume":                      true,
	"chat/backgroundWorkSet":               true,
	"chat/backgroundWorkRemoved":           true,
	"chat/movableChanged":                  true,
	"chat/changesetsChanged":               true,
	"chat/isReadChanged":                   true,
	"chat/isArchivedChanged":               true,
	"chat/canvasesChanged":                 true,
	"session/chatsReordered":               true,
	"session/mcpServerBackgroundRequested": true,
}

// member is one member of a JSON object, its value as it was written.
type member struct {
	key string
	val json.RawMessage
}

// object is a JSON object whose members keep their order, to be edited
// and written again.
type object []member

// parseObject reads raw as an object; false when it is not one.
func parseObject(raw []byte) (object, bool) {
	var d jsonx.Decoder
	d.Reset(raw)
	if d.Peek() != '{' {
		return nil, false
	}
	var o object
	for k := range d.Object {
		key := string(k)
		o = append(o, member{key: key, val: d.Skip()})
	}
	return o, d.End()
}

func (o object) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// str returns the member key when it is a string.
func (o object) str(key string) string {
	v, ok := o.get(key)
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// set replaces the member key, or appends it.
func (o *object) set(key string, val json.RawMessage) {
	for i, m := range *o {
		if m.key == key {
			(*o)[i].val = val
			return
		}
	}
	*o = append(*o, member{key: key, val: val})
}

// del removes the members named.
func (o *object) del(keys ...string) {
	out := (*o)[:0]
	for _, m := range *o {
		keep := true
		for _, k := range keys {
			if m.key == k {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, m)
		}
	}
	*o = out
}

// rename renames the member from to to, in its place.
func (o object) rename(from, to string) {
	for i, m := range o {
		if m.key == from {
			o[i].key = to
		}
	}
}

// edit applies f to the member key's value when it is present.
func (o object) edit(key string, f func(json.RawMessage) json.RawMessage) {
	for i, m := range o {
		if m.key == key {
			o[i].val = f(m.val)
		}
	}
}

func (o object) bytes() json.RawMessage {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonx.AppendStringNoHTML(b, m.key)
		b = append(b, ':')
		b = append(b, m.val...)
	}
	return append(b, '}')
}

// objectFunc applies f to raw when it is an object and returns what f made
// of it; raw unchanged otherwise.
func objectFunc(raw json.RawMessage, f func(*object)) json.RawMessage {
	o, ok := parseObject(raw)
	if !ok {
		return raw
	}
	f(&o)
	return o.bytes()
}

// eachElement applies f to every element of the array raw; keep false
// leaves an element out. raw unchanged when it is not an array.
func eachElement(raw json.RawMessage, f func(json.RawMessage) (json.RawMessage, bool)) json.RawMessage {
	var d jsonx.Decoder
	d.Reset(raw)
	if d.Peek() != '[' {
		return raw
	}
	b := []byte{'['}
	n := 0
	for range d.Array {
		v, keep := f(d.Skip())
		if !keep {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
		n++
	}
	if !d.End() {
		return raw
	}
	return append(b, ']')
}

// each applies f to every element of the array raw.
func each(raw json.RawMessage, f func(json.RawMessage) json.RawMessage) json.RawMessage {
	return eachElement(raw, func(v json.RawMessage) (json.RawMessage, bool) { return f(v), true })
}

// ─── down: from the current shapes to the connection's ───────────────

// state translates a snapshot's state: a chat (it has turns), a session
// (it has a lifecycle); any other unchanged.
func (d dialect) state(raw json.RawMessage) json.RawMessage {
	return objectFunc(raw, func(o *object) {
		if _, ok := o.get("turns"); ok {
			d.chatState(o)
		} else if _, ok := o.get("lifecycle"); ok {
			d.sessionState(o)
		}
	})
}

func (d dialect) chatState(o *object) {
	d.chatSummary(o)
	o.del("changesets", "backgroundWork", "canvases")
	o.edit("turns", d.turns)
	o.edit("activeTurn", func(v json.RawMessage) json.RawMessage {
		return objectFunc(v, func(t *object) { t.edit("responseParts", withoutErrorParts) })
	})
}

// turns translates an array of completed turns: an error response part
// becomes the turn's error member.
func (d dialect) turns(raw json.RawMessage) json.RawMessage {
	return each(raw, func(v json.RawMessage) json.RawMessage {
		return objectFunc(v, func(t *object) {
			parts, ok := t.get("responseParts")
			if !ok {
				return
			}
			var last json.RawMessage
			t.set("responseParts", eachElement(parts, func(p json.RawMessage) (json.RawMessage, bool) {
				if e, ok := errorPart(p); ok {
					last = e
					return nil, false
				}
				return p, true
			}))
			if last != nil {
				t.set("error", last)
			}
		})
	})
}

// errorPart returns the error of a response part of kind error.
func errorPart(p json.RawMessage) (json.RawMessage, bool) {
	o, ok := parseObject(p)
	if !ok || o.str("kind") != "error" {
		return nil, false
	}
	e, ok := o.get("error")
	return e, ok
}

func withoutErrorParts(raw json.RawMessage) json.RawMessage {
	return eachElement(raw, func(p json.RawMessage) (json.RawMessage, bool) {
		_, isErr := errorPart(p)
		return p, !isErr
	})
}

func (d dialect) sessionState(o *object) {
	if o.str("lifecycle") == "failed" {
		o.set("lifecycle", json.RawMessage(`"creationFailed"`))
	}
	o.edit("chats", func(v json.RawMessage) json.RawMessage {
		return each(v, func(c json.RawMessage) json.RawMessage { return objectFunc(c, d.chatSummary) })
	})
	d.directories(o)
}

// chatSummary drops what 0.9.0 added to a chat's summary.
func (d dialect) chatSummary(o *object) {
	o.del("changes", "movable")
	d.directories(o)
}

// partialChatSummary drops what 0.9.0 added to session/chatUpdated.
func (d dialect) partialChatSummary(o *object) {
	o.del("changes", "movable", "interactivity")
	d.directories(o)
}

// sessionSummary drops what 0.9.0 added to a session's summary (and to
// root/sessionSummaryChanged).
func (d dialect) sessionSummary(o *object) {
	o.del("chats", "defaultChat")
	d.directories(o)
}

// directories gives a 0.6 connection the first working directory as its
// one workingDirectory.
func (d dialect) directories(o *object) {
	if d != v06 {
		return
	}
	dirs, ok := o.get("workingDirectories")
	if !ok {
		return
	}
	var list []json.RawMessage
	if json.Unmarshal(dirs, &list) != nil || len(list) == 0 {
		o.del("workingDirectories")
		return
	}
	o.rename("workingDirectories", "workingDirectory")
	o.set("workingDirectory", list[0])
}

// action translates an action; false when the connection's version has
// no such action and it is not sent. An action of a type that needs no
// translation (most: every delta of a streamed reply) is only scanned for
// its type.
func (d dialect) action(raw json.RawMessage) (json.RawMessage, bool) {
	var typ []byte
	var dec jsonx.Decoder
	dec.Reset(raw)
	if dec.Peek() != '{' {
		return raw, true
	}
	for k := range dec.Object {
		if string(k) == "type" {
			if dec.Peek() == '"' {
				typ = dec.String()
			}
			break
		}
	}
	switch {
	case newerActions[string(typ)]:
		return nil, false
	case string(typ) == "chat/error", string(typ) == "chat/responsePart", string(typ) == "chat/turnsLoaded",
		string(typ) == "session/chatAdded", string(typ) == "session/chatUpdated":
	default:
		return raw, true
	}
	o, ok := parseObject(raw)
	if !ok {
		return raw, true
	}
	switch o.str("type") {
	case "chat/error":
		// 0.9.0 moved the error into an error response part.
		part, ok := o.get("part")
		if !ok {
			return raw, true
		}
		e, ok := errorPart(part)
		if !ok {
			return raw, true
		}
		o.rename("part", "error")
		o.set("error", e)
	case "chat/responsePart":
		if p, ok := o.get("part"); ok {
			if _, isErr := errorPart(p); isErr {
				return nil, false // a 0.9 error part comes with chat/error
			}
		}
		return raw, true
	case "chat/turnsLoaded":
		o.edit("turns", d.turns)
	case "session/chatAdded":
		o.edit("summary", func(v json.RawMessage) json.RawMessage { return objectFunc(v, d.chatSummary) })
	case "session/chatUpdated":
		o.edit("changes", func(v json.RawMessage) json.RawMessage { return objectFunc(v, d.partialChatSummary) })
	default:
		return raw, true
	}
	return o.bytes(), true
}

// envelope translates an action envelope; false when it is not sent.
func (d dialect) envelope(env *engine.Envelope) (*engine.Envelope, bool) {
	a, ok := d.action(env.Action)
	if !ok {
		return nil, false
	}
	if bytes.Equal(a, env.Action) {
		return env, true
	}
	c := *env
	c.Action = a
	return &c, true
}

// notification translates a notification's params.
func (d dialect) notification(m engine.Message) engine.Message {
	var key string
	var f func(*object)
	switch m.Method {
	case "root/sessionAdded":
		key, f = "summary", d.sessionSummary
	case "root/sessionSummaryChanged":
		key, f = "changes", d.sessionSummary
	default:
		return m
	}
	v, ok := m.Params[key]
	if !ok {
		return m
	}
	params := make(map[string]json.RawMessage, len(m.Params))
	for k, p := range m.Params {
		params[k] = p
	}
	params[key] = objectFunc(v, f)
	m.Params = params
	return m
}

// snapshots translates the states of snapshots.
func (d dialect) snapshots(s []snapshotResult) []snapshotResult {
	if d == current {
		return s
	}
	for i := range s {
		s[i].State = d.state(s[i].State)
	}
	return s
}

// envelopes translates a replay's envelopes, leaving out those not sent.
func (d dialect) envelopes(envs []engine.Envelope) []engine.Envelope {
	out := make([]engine.Envelope, 0, len(envs))
	for i := range envs {
		if e, ok := d.envelope(&envs[i]); ok {
			out = append(out, *e)
		}
	}
	return out
}

// result translates the result of a host method: the session summaries of
// listSessions, the turns of fetchTurns.
func (d dialect) result(method string, raw json.RawMessage) json.RawMessage {
	switch method {
	case "listSessions":
		return objectFunc(raw, func(o *object) {
			o.edit("items", func(v json.RawMessage) json.RawMessage {
				return each(v, func(s json.RawMessage) json.RawMessage { return objectFunc(s, d.sessionSummary) })
			})
		})
	case "fetchTurns":
		return objectFunc(raw, func(o *object) { o.edit("turns", d.turns) })
	}
	return raw
}

// ─── up: from the connection's shapes to the current ─────────────────

// upAction translates an action a client dispatched in its version's
// shapes: a 0.8 chat/error's error member becomes an error part.
func (d dialect) upAction(raw json.RawMessage) json.RawMessage {
	o, ok := parseObject(raw)
	if !ok || o.str("type") != "chat/error" {
		return raw
	}
	if _, hasPart := o.get("part"); hasPart {
		return raw
	}
	e, ok := o.get("error")
	if !ok {
		return raw
	}
	o.rename("error", "part")
	o.set("part", object{{"kind", json.RawMessage(`"error"`)}, {"error", e}}.bytes())
	return o.bytes()
}

// upParams translates the params of a 0.6 connection's createSession or
// createChat: its one workingDirectory becomes the set.
func (d dialect) upParams(method string, raw json.RawMessage) json.RawMessage {
	if d != v06 || (method != "createSession" && method != "createChat") {
		return raw
	}
	return objectFunc(raw, func(o *object) {
		wd, ok := o.get("workingDirectory")
		if !ok {
			return
		}
		if firstByte(wd) != '"' {
			o.del("workingDirectory")
			return
		}
		if _, has := o.get("workingDirectories"); !has {
			o.rename("workingDirectory", "workingDirectories")
			o.set("workingDirectories", append(append(json.RawMessage{'['}, wd...), ']'))
			return
		}
		o.del("workingDirectory")
	})
}

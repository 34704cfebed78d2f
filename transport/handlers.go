package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/telemetry"
)

// resourceMethods are routed by the scheme of their URI.
var resourceMethods = map[string]bool{
	"resourceRead": true, "resourceWrite": true, "resourceList": true,
	"resourceResolve": true, "resourceDelete": true, "resourceMove": true,
	"resourceCopy": true, "resourceMkdir": true, "resourceRequest": true,
	"createResourceWatch": true,
}

// hostMethods go to the host's Methods, when it has them.
var hostMethods = map[string]bool{
	"createSession": true, "disposeSession": true, "listSessions": true,
	"createChat": true, "disposeChat": true, "fetchTurns": true,
	"resolveSessionConfig": true, "sessionConfigCompletions": true,
	"completions": true, "authenticate": true,
	// the host's extensions: the chat-network routes (bot.MethodRouteList…)
	"x-ahpd/routeConnections": true, "x-ahpd/routeList": true, "x-ahpd/routePreflight": true,
	"x-ahpd/routeDeploy": true, "x-ahpd/routeDelete": true, "x-ahpd/routePair": true,
	"x-ahpd/routePairings": true, "x-ahpd/routeUnpair": true,
}

// rootLevel methods address the connection: their channel, when given,
// must be ahp-root://.
var rootLevel = map[string]bool{
	"reconnect": true, "listSessions": true, "resolveSessionConfig": true,
	"sessionConfigCompletions": true, "authenticate": true,
}

// handleFrame decodes and handles one frame.
func (c *conn) handleFrame(data []byte) {
	var m message
	if id, werr := readMessage(data, &m); werr != nil {
		c.replyError(id, werr)
		c.srv.meters.requests.Inc(telemetry.Other, codeLabels[werr.Code])
		return
	}
	if m.isResponse() {
		c.log.Debug("ignoring a response: the server sends no requests")
		return
	}
	began := c.begin(&m)
	c.handle(&m)
	c.end(&m, began)
}

func (c *conn) handle(m *message) {
	id := m.ID // nil for a notification: nothing is answered
	if !c.ready && m.Method != "ping" && m.Method != "initialize" && m.Method != "reconnect" {
		if id != nil {
			c.replyError(id, invalidRequest("initialize first: %s is refused before initialize", m.Method))
		}
		return
	}
	if rootLevel[m.Method] || resourceMethods[m.Method] {
		p := &m.route
		if p.badChannel {
			c.answerError(id, channelError(m.Params))
			return
		}
		if p.channel.set && p.channel.v != rootChannel {
			c.answerError(id, invalidParams("params.channel must be %q for %s", rootChannel, m.Method))
			return
		}
	}
	switch {
	case m.Method == "ping":
		c.answer(id, struct{}{})
	case m.Method == "initialize":
		c.initialize(id, m.Params)
	case m.Method == "reconnect":
		c.reconnect(id, m.Params)
	case m.Method == "subscribe":
		c.subscribe(id, m.Params)
	case m.Method == "unsubscribe":
		c.unsubscribe(id, m.Params)
	case m.Method == "dispatchAction":
		c.dispatch(id, m.Params)
	case resourceMethods[m.Method]:
		c.route(id, m.Method, m.Params, &m.route)
	case hostMethods[m.Method]:
		c.hostMethod(id, m.Method, m.Params, &m.route)
	default:
		c.answerError(id, methodNotFound("method not found: %s", m.Method))
	}
}

// answer replies to a request; a notification gets nothing.
func (c *conn) answer(id json.RawMessage, result any) {
	if id != nil {
		c.reply(id, result)
	}
}

func (c *conn) answerError(id json.RawMessage, e *wireError) {
	if id != nil {
		c.replyError(id, e)
	} else {
		c.log.Debug("notification refused", "code", e.Code, "message", e.Message)
	}
}

// supportedVersions is the data of -32005: the ranges the server accepts.
var supportedVersions = []string{">=1.0.0 <2.0.0", ">=0.9.0 <0.10.0", ">=0.6.0 <0.9.0"}

type initializeParams struct {
	ProtocolVersions     []string `json:"protocolVersions"`
	ClientID             *string  `json:"clientId"`
	InitialSubscriptions []string `json:"initialSubscriptions"`
}

type initializeResult struct {
	ProtocolVersion string           `json:"protocolVersion"`
	ServerSeq       int64            `json:"serverSeq"`
	Snapshots       []snapshotResult `json:"snapshots"`
	ServerInfo      Implementation   `json:"serverInfo"`
	Meta            map[string]any   `json:"_meta,omitempty"`
}

type snapshotResult struct {
	Resource string          `json:"resource"`
	State    json.RawMessage `json:"state"`
	FromSeq  int64           `json:"fromSeq"`
}

func (c *conn) initialize(id json.RawMessage, raw json.RawMessage) {
	if c.ready {
		c.answerError(id, invalidRequest("initialize may only be sent once"))
		return
	}
	var p initializeParams
	if werr := decodeParams(raw, &p); werr != nil {
		c.answerError(id, werr)
		return
	}
	if p.ProtocolVersions == nil {
		c.answerError(id, invalidParams("params.protocolVersions is required"))
		return
	}
	version, ok := negotiate(p.ProtocolVersions)
	if !ok {
		if id != nil {
			c.replyError(id, &wireError{
				Code:    CodeUnsupportedProtocol,
				Message: fmt.Sprintf("unsupported protocol version: offered %s", strings.Join(p.ProtocolVersions, ", ")),
				Data:    map[string]any{"supportedVersions": supportedVersions},
			})
		}
		c.closeAfterQueue(websocket.StatusPolicyViolation, "unsupported protocol version")
		return
	}
	c.clientID = c.newClientID(p.ClientID)
	meta, err := c.srv.host.Meta(c.requestCtx(), c.caller())
	if err != nil {
		c.replyHostError(id, "initialize", err)
		return
	}
	c.dialect = dialectOf(version)
	c.link.Initialize(c.caller(), version)
	c.ready, c.version = true, version

	batch := c.openSubs(p.InitialSubscriptions)
	c.finishSubs(batch, func(seq int64) ([]byte, error) {
		res := initializeResult{
			ProtocolVersion: version,
			ServerSeq:       seq,
			Snapshots:       batch.snapshots(),
			ServerInfo:      c.srv.cfg.ServerInfo,
			Meta:            meta,
		}
		if c.dialect != current {
			// before 0.9.0 InitializeResult had no _meta.
			res.Meta = nil
			res.Snapshots = c.dialect.snapshots(res.Snapshots)
		}
		return c.resultBytes(id, res)
	})
}

// newClientID returns the client's id, making one up for a client that
// gave none.
func (c *conn) newClientID(given *string) string {
	if given != nil && *given != "" {
		return *given
	}
	return fmt.Sprintf("anonymous-%d", c.srv.anonIDs.Add(1))
}

// resultBytes encodes the success response to id; nil for a notification.
func (c *conn) resultBytes(id json.RawMessage, result any) ([]byte, error) {
	if id == nil {
		return nil, nil
	}
	e := getEncoder()
	defer e.free()
	if err := e.result(id, result); err != nil {
		return nil, err
	}
	return e.bytes(), nil
}

type reconnectParams struct {
	ClientID          *string  `json:"clientId"`
	LastSeenServerSeq *int64   `json:"lastSeenServerSeq"`
	Subscriptions     []string `json:"subscriptions"`
}

type replayResult struct {
	Type    string            `json:"type"`
	Actions []engine.Envelope `json:"actions"`
	Missing []string          `json:"missing"`
}

type snapshotsResult struct {
	Type      string           `json:"type"`
	Snapshots []snapshotResult `json:"snapshots"`
}

// reconnect resumes a client on this connection, in place of initialize:
// with the envelopes it missed when its record still holds them all, else
// with fresh snapshots.
func (c *conn) reconnect(id json.RawMessage, raw json.RawMessage) {
	if c.ready {
		c.answerError(id, invalidRequest("reconnect must be the first request of a connection, in place of initialize"))
		return
	}
	var p reconnectParams
	if werr := decodeParams(raw, &p); werr != nil {
		c.answerError(id, werr)
		return
	}
	if p.ClientID == nil || *p.ClientID == "" {
		c.answerError(id, invalidParams("params.clientId is required"))
		return
	}
	if p.LastSeenServerSeq == nil {
		c.answerError(id, invalidParams("params.lastSeenServerSeq is required"))
		return
	}
	c.clientID = *p.ClientID
	version, replay := c.link.Reconnect(c.caller(), *p.LastSeenServerSeq, p.Subscriptions)
	// the engine holds this client's deliveries until Finish: the dialect
	// is set before any is written.
	c.ready, c.version, c.dialect = true, version, dialectOf(version)
	if replay != nil {
		// the answer is encoded here, outside the engine's lock, which
		// holds this client's deliveries until Finish sends it.
		actions := replay.Actions
		if c.dialect != current {
			actions = c.dialect.envelopes(actions)
		}
		data, err := c.resultBytes(id, replayResult{Type: "replay", Actions: actions, Missing: replay.Missing})
		if err != nil {
			c.log.Error("reconnect result did not marshal", "err", err)
		}
		c.link.Finish(nil, answer(data))
		return
	}
	batch := c.openSubs(p.Subscriptions)
	c.finishSubs(batch, func(int64) ([]byte, error) {
		return c.resultBytes(id, snapshotsResult{Type: "snapshot", Snapshots: c.dialect.snapshots(batch.snapshots())})
	})
}

type subscribeParams struct {
	Channel *string `json:"channel"`
}

type subscribeResult struct {
	Snapshot *snapshotResult `json:"snapshot,omitempty"`
}

func (c *conn) subscribe(id json.RawMessage, raw json.RawMessage) {
	var p subscribeParams
	if werr := decodeParams(raw, &p); werr != nil {
		c.answerError(id, werr)
		return
	}
	if p.Channel == nil || *p.Channel == "" {
		c.answerError(id, invalidParams("params.channel is required"))
		return
	}
	batch := c.openSubs([]string{*p.Channel})
	o := batch.items[0]
	if o.Err != nil {
		e, internal := errorFor("subscribe", o.Err)
		if internal {
			c.log.Error("internal error", "method", "subscribe", "channel", o.URI, "err", o.Err)
		}
		c.finishSubs(batch, func(int64) ([]byte, error) {
			if id == nil {
				return nil, nil
			}
			return encode(errorResponse{JSONRPC: jsonrpcVersion, ID: id, Error: e})
		})
		return
	}
	c.finishSubs(batch, func(int64) ([]byte, error) {
		var res subscribeResult
		if o.state != nil {
			state := o.state
			if c.dialect != current {
				state = c.dialect.state(state)
			}
			res.Snapshot = &snapshotResult{Resource: o.URI, State: state, FromSeq: o.Snapshot.Seq}
		}
		return c.resultBytes(id, res)
	})
}

func (c *conn) unsubscribe(id json.RawMessage, raw json.RawMessage) {
	var p subscribeParams
	if werr := decodeParams(raw, &p); werr != nil {
		c.answerError(id, werr)
		return
	}
	if p.Channel == nil {
		c.answerError(id, invalidParams("params.channel is required"))
		return
	}
	c.link.Unsubscribe(*p.Channel)
	c.answer(id, struct{}{})
}

// opening is one subscription being opened, with its snapshot's state
// marshalled.
type opening struct {
	*engine.Opening
	state json.RawMessage
}

// subBatch is the subscriptions one request opens together.
type subBatch struct {
	*engine.Batch
	items []opening
}

// snapshots returns the snapshots of the state-bearing subscriptions
// opened.
func (sb *subBatch) snapshots() []snapshotResult {
	out := []snapshotResult{}
	for _, o := range sb.items {
		if o.Err == nil && o.state != nil {
			out = append(out, snapshotResult{Resource: o.URI, State: o.state, FromSeq: o.Snapshot.Seq})
		}
	}
	return out
}

// openSubs subscribes to uris and marshals their snapshots. Until
// finishSubs, everything for this client is held back, so the answer
// comes before any action that follows its snapshots, and envelopes go
// out in serverSeq order.
func (c *conn) openSubs(uris []string) *subBatch {
	batch := &subBatch{Batch: c.link.Open(c.requestCtx(), c.srv.host, uris)}
	batch.items = make([]opening, len(batch.Openings))
	for i, o := range batch.Openings {
		batch.items[i].Opening = o
		if o.Err == nil && o.Snapshot.State != nil {
			var err error
			batch.items[i].state, err = marshalRaw(o.Snapshot.State)
			if err != nil {
				o.Err = fmt.Errorf("snapshot of %s: %w", o.URI, err)
			}
		}
	}
	return batch
}

// finishSubs makes the answer that respond encodes, then has the engine
// mark the batch's subscriptions ready (dropping those that failed) and
// deliver the answer, then what was held back.
func (c *conn) finishSubs(batch *subBatch, respond func(seq int64) ([]byte, error)) {
	data, err := respond(batch.Seq)
	if err != nil {
		c.log.Error("answer did not marshal", "err", err)
	}
	c.link.Finish(batch.Batch, answer(data))
}

// answer is data as Link.Finish takes it: nil when there is nothing to
// send (a notification gets no answer).
func answer(data []byte) any {
	if data == nil {
		return nil
	}
	return data
}

type dispatchParams struct {
	Channel   *string         `json:"channel"`
	ClientSeq *int64          `json:"clientSeq"`
	Action    json.RawMessage `json:"action"`
}

// dispatch hands a client's action to the channel's owner, who publishes
// it when it accepts it; a rejection goes back to this client alone.
func (c *conn) dispatch(id json.RawMessage, raw json.RawMessage) {
	var p dispatchParams
	if werr := decodeParams(raw, &p); werr != nil {
		c.answerError(id, werr)
		return
	}
	if p.Channel == nil || p.ClientSeq == nil {
		c.answerError(id, invalidParams("params.channel and params.clientSeq are required"))
		return
	}
	defer c.answer(id, struct{}{})
	origin := engine.Origin{ClientID: c.clientID, ClientSeq: *p.ClientSeq}
	var action struct {
		Type string `json:"type"`
	}
	if firstByte(p.Action) != '{' || json.Unmarshal(p.Action, &action) != nil || action.Type == "" {
		c.reject(*p.Channel, p.Action, origin, "an action is a JSON object with a string type")
		return
	}
	ch, err := c.srv.host.Channel(c.requestCtx(), c.caller(), *p.Channel)
	if err == nil && ch == nil {
		err = errcode.New(errcode.NotFound, "no channel %s", *p.Channel)
	}
	if err == nil {
		d, ok := ch.(engine.Dispatcher)
		if !ok {
			c.reject(*p.Channel, p.Action, origin, "this channel takes no actions")
			return
		}
		action := compact(p.Action)
		if c.dialect != current {
			action = c.dialect.upAction(action)
		}
		err = d.Dispatch(c.requestCtx(), engine.Dispatch{Caller: c.caller(), Channel: *p.Channel, Origin: origin, Action: action})
	}
	switch {
	case err == nil:
	case errcode.Of(err) == errcode.NotFound:
		c.log.Debug("action to an unknown channel ignored", "channel", *p.Channel, "err", err)
	default:
		e, internal := errorFor("dispatchAction", err)
		if internal {
			c.log.Error("internal error", "method", "dispatchAction", "channel", *p.Channel, "err", err)
		}
		c.reject(*p.Channel, p.Action, origin, e.Message)
	}
}

// reject sends a rejected action back to this client alone, at the
// current serverSeq, outside the replay buffer.
func (c *conn) reject(channel string, action json.RawMessage, origin engine.Origin, reason string) {
	if len(action) == 0 || !json.Valid(action) {
		action = json.RawMessage("null")
	}
	c.link.Reject(channel, compact(action), origin, reason)
}

// channelError is the answer to params whose channel is neither a string
// nor null, in the words json.Unmarshal gives decodeParams.
func channelError(raw json.RawMessage) *wireError {
	var p struct {
		Channel *string `json:"channel"`
	}
	return decodeParams(raw, &p)
}

// routeError is the answer to params whose uri, source or destination is
// neither a string nor null: the first such, as json.Unmarshal names it.
func routeError(raw json.RawMessage) *wireError {
	var p struct {
		URI         *string `json:"uri"`
		Source      *string `json:"source"`
		Destination *string `json:"destination"`
	}
	return decodeParams(raw, &p)
}

// route sends a resource method to the provider of its URI's scheme.
func (c *conn) route(id json.RawMessage, method string, raw json.RawMessage, p *routeParams) {
	if p.badRoute {
		c.answerError(id, routeError(raw))
		return
	}
	var uri string
	if method == "resourceMove" || method == "resourceCopy" {
		if !p.source.set || !p.destination.set {
			c.answerError(id, invalidParams("params.source and params.destination are required"))
			return
		}
		uri = p.source.v
		s1, ok1 := schemeOf(p.source.v)
		s2, ok2 := schemeOf(p.destination.v)
		if ok1 && ok2 && s1 != s2 {
			c.answerError(id, invalidParams("%s cannot cross schemes (%s: to %s:)", method, s1, s2))
			return
		}
	} else {
		if !p.uri.set {
			c.answerError(id, invalidParams("params.uri is required"))
			return
		}
		uri = p.uri.v
	}
	scheme, ok := schemeOf(uri)
	if !ok {
		c.answerError(id, invalidParams("%q is not a URI with a scheme", uri))
		return
	}
	prov := c.srv.host.Resources(scheme)
	if prov == nil {
		c.answerError(id, methodNotFound("no provider serves the %s: scheme", scheme))
		return
	}
	c.call(id, method, uri, raw, prov.ServeResource)
}

// hostMethod forwards a session method to the host.
func (c *conn) hostMethod(id json.RawMessage, method string, raw json.RawMessage, p *routeParams) {
	h, ok := c.srv.host.(engine.Methods)
	if !ok {
		c.answerError(id, methodNotFound("method not found: %s", method))
		return
	}
	if p.badChannel {
		c.answerError(id, channelError(raw))
		return
	}
	c.call(id, method, p.channel.v, raw, h.HandleMethod)
}

func (c *conn) call(id json.RawMessage, method, uri string, raw json.RawMessage, fn func(context.Context, engine.Call) (any, error)) {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if c.dialect != current {
		raw = c.dialect.upParams(method, raw)
	}
	res, err := fn(c.requestCtx(), engine.Call{Caller: c.caller(), Method: method, URI: uri, Params: raw})
	if err != nil {
		c.replyHostError(id, method, err)
		return
	}
	if c.dialect != current && id != nil && (method == "listSessions" || method == "fetchTurns") {
		data, err := marshalRaw(res)
		if err != nil {
			c.replyHostError(id, method, fmt.Errorf("result of %s: %w", method, err))
			return
		}
		res = c.dialect.result(method, data)
	}
	c.answer(id, res)
}

// schemeOf returns the lower-cased scheme of uri (RFC 3986: a letter, then
// letters, digits, "+", "-" or ".").
func schemeOf(uri string) (string, bool) {
	scheme, _, ok := strings.Cut(uri, ":")
	if !ok || scheme == "" {
		return "", false
	}
	for i, r := range scheme {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return "", false
		}
	}
	return strings.ToLower(scheme), true
}

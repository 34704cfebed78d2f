package wake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/bots/ahp"
)

// The tools and groups of tools a back session may hold, as a bot's record
// lists them in tools.
const (
	// AskQuestion asks the person in the main chat a question.
	AskQuestion = "ask_question"
	// ConnectorTools stands for every connector tool of the bot (one per
	// alias of its connectors map).
	ConnectorTools = "connectors"
	// WorkspaceTools stands for the six workspace tools, bot_list to
	// bot_delete.
	WorkspaceTools = "bots"
	// ChannelTools stands for the four channel tools, which list, check
	// and deploy the chat-network routes to bots.
	ChannelTools = "channels"
)

// The workspace tools: a back session makes, reads, edits and deletes bots
// with them, with the rights of the person whose message woke it.
const (
	BotList     = "bot_list"
	BotRead     = "bot_read"
	BotMake     = "bot_make"
	BotEdit     = "bot_edit"
	BotValidate = "bot_validate"
	BotDelete   = "bot_delete"
)

// The channel tools: a back session lists the host's chat-network
// connections and routes, checks a route and deploys one to a bot, with
// the rights of the person whose message woke it.
const (
	ChannelConnectionList = "channel_connection_list"
	ChannelRouteList      = "channel_route_list"
	ChannelRoutePreflight = "channel_route_preflight"
	BotDeployChannel      = "bot_deploy_channel"
)

// workspaceNames are the workspace tools, in the order they are offered.
var workspaceNames = []string{BotList, BotRead, BotMake, BotEdit, BotValidate, BotDelete}

// channelNames are the channel tools, in the order they are offered.
var channelNames = []string{ChannelConnectionList, ChannelRouteList, ChannelRoutePreflight, BotDeployChannel}

// ToolNames are every name a tools list may hold: the tools, then the
// groups.
func ToolNames() []string {
	names := append([]string{PostMessage, AskQuestion, ConnectorTools}, workspaceNames...)
	names = append(names, channelNames...)
	return append(names, WorkspaceTools, ChannelTools)
}

// ToolSet is a set of tools a back session holds, groups spelt out:
// post_message, ask_question, connectors (every connector tool) and the
// workspace tools by name. The zero value holds none.
type ToolSet struct{ names []string }

// NewToolSet returns the set of names, each group spelt out; names that
// are no tool are left out.
func NewToolSet(names ...string) ToolSet {
	var out []string
	add := func(n string) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, n := range names {
		switch {
		case n == WorkspaceTools:
			for _, w := range workspaceNames {
				add(w)
			}
		case n == ChannelTools:
			for _, w := range channelNames {
				add(w)
			}
		case n == PostMessage || n == AskQuestion || n == ConnectorTools || slices.Contains(workspaceNames, n) || slices.Contains(channelNames, n):
			add(n)
		}
	}
	slices.Sort(out)
	return ToolSet{names: out}
}

// Has reports whether the set holds the tool (or connectors, for the
// connector tools).
func (t ToolSet) Has(name string) bool {
	_, ok := slices.BinarySearch(t.names, name)
	return ok
}

// Names are the set's names, sorted.
func (t ToolSet) Names() []string { return slices.Clone(t.names) }

// Intersect returns the tools both sets hold.
func (t ToolSet) Intersect(o ToolSet) ToolSet {
	var out []string
	for _, n := range t.names {
		if o.Has(n) {
			out = append(out, n)
		}
	}
	return ToolSet{names: out}
}

// With returns the set with name added.
func (t ToolSet) With(name string) ToolSet { return NewToolSet(append(t.Names(), name)...) }

// ToolPolicy is what a host offers back sessions. A bot's tools list can
// only narrow it: a session holds Offered ∩ the list, or Default when the
// bot lists none, and always post_message, which answers the main turn
// that waits on every back session.
type ToolPolicy struct {
	// Offered are the tools and groups a bot may list; nil means
	// post_message, ask_question, connectors, bots and channels.
	Offered []string
	// Default are what a bot that lists no tools gets; nil means
	// post_message, ask_question and connectors: the workspace and channel
	// tools go only to bots that ask for them. Only what Offered holds counts.
	Default []string
}

// DefaultToolPolicy is the policy of a host that sets none.
func DefaultToolPolicy() ToolPolicy {
	return ToolPolicy{
		Offered: []string{PostMessage, AskQuestion, ConnectorTools, WorkspaceTools, ChannelTools},
		Default: []string{PostMessage, AskQuestion, ConnectorTools},
	}
}

func (p ToolPolicy) filled() ToolPolicy {
	d := DefaultToolPolicy()
	if p.Offered == nil {
		p.Offered = d.Offered
	}
	if p.Default == nil {
		p.Default = d.Default
	}
	return p
}

// CheckPolicy reports why p is no policy: it names a tool that does not
// exist.
func CheckPolicy(p ToolPolicy) error {
	for _, n := range append(slices.Clone(p.Offered), p.Default...) {
		if !slices.Contains(ToolNames(), n) {
			return fmt.Errorf("the tool policy names %q, which is no tool: use %s", n, strings.Join(ToolNames(), ", "))
		}
	}
	return nil
}

// Check reports the first name of a record's tools list that the host
// does not offer, in one sentence naming it.
func (p ToolPolicy) Check(list []string) error {
	p = p.filled()
	offered := NewToolSet(p.Offered...)
	for _, n := range list {
		if n == PostMessage {
			continue // every back session holds it
		}
		want := NewToolSet(n)
		if len(want.names) == 0 || len(want.Intersect(offered).names) != len(want.names) {
			return fmt.Errorf("tools names %q, which this host does not offer: it offers %s", n, strings.Join(p.Offered, ", "))
		}
	}
	return nil
}

// Listable are the names a bot's tools list may hold on a host of this
// policy, in ToolNames' order: post_message, and every tool and group it
// offers.
func (p ToolPolicy) Listable() []string {
	var out []string
	for _, n := range ToolNames() {
		if p.Check([]string{n}) == nil {
			out = append(out, n)
		}
	}
	return out
}

// For is what a back session of a bot whose record lists tools may hold:
// Offered ∩ tools (Default ∩ Offered when it lists none), always with
// post_message.
func (p ToolPolicy) For(tools []string) ToolSet {
	p = p.filled()
	want := p.Default
	if len(tools) > 0 {
		want = tools
	}
	return NewToolSet(want...).Intersect(NewToolSet(p.Offered...)).With(PostMessage)
}

// ToolGate is the service's side of a back session's tools: which it may
// hold now, and the workspace tools, called with the rights of the person
// the session answers. bot.Service gives one to a SessionHost that
// implements Gated; a harness finds it in SessionInfo.Gate.
type ToolGate interface {
	// Allowed answers the tools session s may hold now: the host's policy
	// narrowed by its bot's tools list as the record is now. A harness
	// holds no more than what Allowed answered when it opened the session,
	// so an edit never widens a running session, and asks again before
	// every call, so a narrowing counts from the next call.
	Allowed(ctx context.Context, s SessionInfo) (ToolSet, error)
	// Call calls the workspace tool name with its JSON input for the
	// person session s answers (s.Owner), and answers its text. An error
	// is one sentence for the agent to read.
	Call(ctx context.Context, s SessionInfo, name string, input json.RawMessage) (string, error)
}

// Gated is a SessionHost that gives its sessions a ToolGate, as wake/local's Host is.
type Gated interface {
	// SetToolGate sets the gate every session's SessionInfo.Gate asks,
	// those already open included.
	SetToolGate(g ToolGate)
}

// WorkspaceToolDefinitions are the workspace tools as an agent is offered
// them: names, descriptions and input schemas.
func WorkspaceToolDefinitions() []ahp.ToolDefinition {
	slug := `"slug":{"type":"string","description":"The bot's slug: 1 to 40 lowercase letters, digits and dashes, starting with a letter."}`
	body := `"bot":{"type":"object","description":"The bot's fields, as a make or edit body: name, description, instructions (what it is asked to be; written into its AGENTS.md), labels, body, color, provider, model, session, connectors, tools."}`
	ifMatch := `"ifMatch":{"type":"string","description":"The etag bot_read answered: the write applies only to that revision."}`
	return []ahp.ToolDefinition{
		{Name: BotList, Title: "List bots", Description: "List the bots the person may read: slug, name, description and owner.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: BotRead, Title: "Read a bot", Description: "Read one bot: its fields and its etag.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + slug + `},"required":["slug"]}`)},
		{Name: BotMake, Title: "Make a bot", Description: "Make a new bot for the person. Its instructions become its AGENTS.md. Validate the body first with bot_validate.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + slug + `,` + body + `},"required":["slug","bot"]}`)},
		{Name: BotEdit, Title: "Edit a bot", Description: "Change some fields of a bot; fields not named stay, null clears one.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + slug + `,` + body + `,` + ifMatch + `},"required":["slug","bot"]}`)},
		{Name: BotValidate, Title: "Validate a bot", Description: "Check a bot's body without writing anything: every problem is answered in one sentence.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + slug + `,` + body + `},"required":["bot"]}`)},
		{Name: BotDelete, Title: "Delete a bot", Description: "Delete a bot; its slug is never made again.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + slug + `,` + ifMatch + `},"required":["slug"]}`)},
	}
}

// ChannelToolDefinitions are the channel tools as an agent is offered
// them: names, descriptions and input schemas. A route is a JSON object:
// id, name, enabled, connection, bot, scope {kind: direct|group|thread,
// id, thread}, unmapped (refuse|pair), tools.
func ChannelToolDefinitions() []ahp.ToolDefinition {
	rt := `"route":{"type":"object","description":"The route: id (like a slug), name, enabled, connection (a connection's id), bot (a bot's slug), scope {kind: direct, group or thread; id: the person, channel or room; thread}, unmapped (refuse or pair), tools (narrows the bot's tools)."}`
	broad := `"broad":{"type":"boolean","description":"Allow a scope wider than one person's direct messages: a group, a thread, or anyone's direct messages."}`
	return []ahp.ToolDefinition{
		{Name: ChannelConnectionList, Title: "List chat-network connections", Description: "List the host's chat-network connections: id, network, safe settings, and whether each is connected or failing and why. No credential is shown.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: ChannelRouteList, Title: "List routes", Description: "List the routes that send a network's messages to the bots the person may read, or to one bot.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"bot":{"type":"string","description":"Only the routes to this bot's slug."}}}`)},
		{Name: ChannelRoutePreflight, Title: "Check a route", Description: "Check a route without saving it: the connection exists, is enabled and works; the bot exists and the person may route to it; the scope is no broader than asked; no other enabled route claims the scope.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + rt + `,` + broad + `},"required":["route"]}`)},
		{Name: BotDeployChannel, Title: "Deploy a bot to a network", Description: "Check a route, then save it. An enabled route that claims the same scope is a conflict, refused unless disableConflictingRoutes is true, which disables the other route.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + rt + `,` + broad + `,"disableConflictingRoutes":{"type":"boolean","description":"Disable the other enabled routes of the same scope instead of refusing."}},"required":["route"]}`)},
	}
}

package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
)

// gate is the service's wake.ToolGate: which tools a back session may
// hold, and the workspace tools, each acting as the person whose message
// woke the session, through the permission table a wire request meets.
type gate struct{ s *Service }

var _ wake.ToolGate = gate{}

// Allowed answers the host's tool policy narrowed by the session's bot's
// tools list as its record is now; a bot that is gone leaves post_message
// alone.
func (g gate) Allowed(ctx context.Context, si wake.SessionInfo) (wake.ToolSet, error) {
	id, _, _, ok := wake.BackSession(si.Meta)
	if !ok {
		return g.s.tools.For(nil), nil
	}
	e, err := g.s.store.Get(ctx, id)
	if errors.Is(err, record.ErrNotFound) {
		return wake.NewToolSet(wake.PostMessage), nil
	}
	if err != nil {
		return wake.ToolSet{}, fmt.Errorf("read bot %s: %w", id, err)
	}
	if !CanRead(g.s.personNow(si.Owner), e.Record) {
		// The person it answers may no longer read the bot: every step
		// of its turn is refused until the sweep ends it (revoke.go).
		return wake.NewToolSet(wake.PostMessage), nil
	}
	set := g.s.tools.For(e.Record.Tools)
	if r := wake.BackSessionRoute(si.Meta); r != "" {
		return g.s.routeNarrowed(ctx, r, set)
	}
	return set, nil
}

// routeNarrowed is set narrowed by the tools of the route id, for a back
// session that runs the route's turns: host ∩ bot ∩ route. A route that
// names none narrows nothing; one that is gone, or cannot be read, leaves
// post_message alone.
func (s *Service) routeNarrowed(ctx context.Context, id string, set wake.ToolSet) (wake.ToolSet, error) {
	only := wake.NewToolSet(wake.PostMessage)
	if s.routes == nil {
		return only, nil
	}
	routes, err := s.routes.store.Routes(ctx)
	if err != nil {
		s.log.Warn("bot: the routes cannot be read: a routed back session holds post_message alone", "route", id, "err", err)
		return only, nil
	}
	for _, r := range routes {
		if r.ID == id {
			if r.Tools == nil {
				return set, nil
			}
			return set.Intersect(wake.NewToolSet(r.Tools...)).With(wake.PostMessage), nil
		}
	}
	return only, nil
}

// channelMethods are the route methods the channel tools call.
var channelMethods = map[string]string{
	wake.ChannelConnectionList: MethodRouteConnections,
	wake.ChannelRouteList:      MethodRouteList,
	wake.ChannelRoutePreflight: MethodRoutePreflight,
	wake.BotDeployChannel:      MethodRouteDeploy,
}

// toolInput is the input of the workspace tools.
type toolInput struct {
	Slug    string          `json:"slug"`
	Bot     json.RawMessage `json:"bot"`
	IfMatch string          `json:"ifMatch"`
}

// Call calls a workspace tool for the person the session answers.
func (g gate) Call(ctx context.Context, si wake.SessionInfo, name string, input json.RawMessage) (string, error) {
	s := g.s
	p, err := s.personOf(si.Owner)
	if err != nil {
		return "", err
	}
	if method, ok := channelMethods[name]; ok {
		out, err := s.routeCall(ctx, p, method, input)
		if err != nil {
			return "", errors.New(errcode.Message(err))
		}
		return jsonText(out)
	}
	var in toolInput
	if len(bytes.TrimSpace(input)) > 0 {
		if err := json.Unmarshal(input, &in); err != nil {
			return "", fmt.Errorf("%s takes a JSON object of slug, bot and ifMatch: %w", name, err)
		}
	}
	in.Bot = unquoteBody(in.Bot)
	text, err := g.call(ctx, p, name, in)
	if err != nil {
		if errcode.Of(err) == errcode.Internal {
			s.log.Error("bot: a workspace tool failed", "tool", name, "bot", in.Slug, "err", err)
		}
		return "", errors.New(errcode.Message(err))
	}
	return text, nil
}

func (g gate) call(ctx context.Context, p access.Principal, name string, in toolInput) (string, error) {
	s := g.s
	switch name {
	case wake.BotList:
		bots, err := s.List(ctx, p)
		if err != nil {
			return "", err
		}
		type item struct {
			Slug        string `json:"slug"`
			Name        string `json:"name"`
			Description string `json:"description,omitempty"`
			Owner       string `json:"owner"`
			Bundled     bool   `json:"bundled,omitempty"`
		}
		out := make([]item, len(bots))
		for i, b := range bots {
			out[i] = item{Slug: b.Record.ID, Name: b.Record.Name, Description: b.Record.Description, Owner: b.Record.Owner, Bundled: s.isBundled(b.Record.ID)}
		}
		return jsonText(out)
	case wake.BotRead:
		b, err := s.Read(ctx, p, in.Slug)
		if err != nil {
			return "", err
		}
		r := b.Record
		r.Workspace = "" // a path on this host is not the agent's to know
		return jsonText(map[string]any{"bot": r, "etag": b.ETag})
	case wake.BotValidate:
		problems := s.validate(ctx, p, in.Slug, in.Bot, false)
		if len(problems) == 0 {
			return "The bot is valid: nothing was written.", nil
		}
		return fmt.Sprintf("%d problem(s), nothing was written:\n- %s", len(problems), strings.Join(problems, "\n- ")), nil
	case wake.BotMake, wake.BotEdit:
		if problems := s.validate(ctx, p, in.Slug, in.Bot, name == wake.BotEdit); len(problems) > 0 {
			return "", errcode.New(errcode.Invalid, "%s was not written: %s", uri(in.Slug), strings.Join(problems, " "))
		}
		var b Bot
		var err error
		if name == wake.BotMake {
			b, err = s.Make(ctx, p, in.Slug, in.Bot)
		} else {
			b, err = s.Edit(ctx, p, in.Slug, in.Bot, in.IfMatch)
		}
		if err != nil {
			return "", err
		}
		verb := "Made"
		if name == wake.BotEdit {
			verb = "Edited"
		}
		return fmt.Sprintf("%s %s (%s); its etag is now %s.", verb, uri(b.Record.ID), b.Record.Name, b.ETag), nil
	case wake.BotDelete:
		if err := s.Delete(ctx, p, in.Slug, in.IfMatch); err != nil {
			return "", err
		}
		return "Deleted " + uri(in.Slug) + "; its slug is never made again.", nil
	}
	return "", errcode.New(errcode.Invalid, "there is no workspace tool %q", name)
}

// unquoteBody takes a body an agent gave as a JSON string holding the
// object for the object itself.
func unquoteBody(b json.RawMessage) json.RawMessage {
	var text string
	if len(b) > 0 && b[0] == '"' && json.Unmarshal(b, &text) == nil {
		return json.RawMessage(text)
	}
	return b
}

func jsonText(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode a tool's answer: %w", err)
	}
	return string(data), nil
}

// personOf is the principal of the person a back session answers, as
// the users directory has them now.
func (s *Service) personOf(owner string) (access.Principal, error) {
	kind, rest, _ := strings.Cut(owner, ":")
	switch {
	case s.users == nil || kind == "root":
		return access.RootPrincipal(), nil
	case kind == "user" && rest != "":
		if p, ok := s.users.Principal(rest); ok {
			return p, nil
		}
		return access.Principal{}, errcode.New(errcode.PermissionDenied, "Permission denied: %s is no longer a user of this host", owner)
	}
	return access.Principal{}, errcode.New(errcode.PermissionDenied, "Permission denied: the session answers %q, who is no person of this host", owner)
}

// validate checks a make or edit body of bot slug by p without writing:
// each problem is one sentence. An empty slug, or one no bot has, is
// checked as a make; so is one taken by a bot p may not read, which is
// said to be not available and no more, as a make says it
// (slugNotAvailable) - but for an edit, which the edit itself refuses
// with the permission sentence the wire answers.
func (s *Service) validate(ctx context.Context, p access.Principal, slug string, body json.RawMessage, edit bool) []string {
	var problems []string
	making := true
	if slug != "" {
		if err := record.CheckSlug(slug); err != nil {
			problems = append(problems, sentence(err.Error()))
		} else if s.isBundled(slug) || s.exists(ctx, slug) {
			switch {
			case !s.mayReadBot(ctx, p, slug) && edit:
				making = false
			case !s.mayReadBot(ctx, p, slug):
				problems = append(problems, sentence(errcode.Message(slugNotAvailable(slug))))
			case s.isBundled(slug):
				problems = append(problems, fmt.Sprintf("%s is bundled with this host: it is never made, edited or deleted.", uri(slug)))
				making = false // the slug is taken: the body is no make's
			default:
				making = false
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return append(problems, "The bot must be a JSON object of its fields, such as {\"name\": \"…\", \"instructions\": \"…\"}.")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	order := record.Keys()
	slices.SortFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(order, a), slices.Index(order, b)
		if ia < 0 {
			ia = len(order)
		}
		if ib < 0 {
			ib = len(order)
		}
		return ia - ib
	})
	for _, k := range keys {
		p, err := record.PatchFromMap(map[string]any{k: m[k]})
		if err != nil {
			problems = append(problems, sentence(err.Error()))
			continue
		}
		switch {
		case k == "tools" && p.Tools.Has():
			if err := s.tools.Check(p.Tools.V); err != nil {
				problems = append(problems, sentence(err.Error()))
			}
		case k == "instructions" && p.Instructions.Has():
			if err := persona.CheckInstructions(p.Instructions.V, s.mode); err != nil {
				problems = append(problems, sentence(err.Error()))
			}
		case k == "workspace" && p.Workspace.Has():
			problems = append(problems, "workspace names a path on this host: leave it out, and the bot works in a folder of its own.")
			continue
		}
		if path := s.hostPath(m[k]); path != "" {
			problems = append(problems, fmt.Sprintf("%s names a path on this host (%s): a bot refers to its own folder as ./ and is given the rest through tools.", k, path))
		}
	}
	if making {
		if name, _ := m["name"].(string); strings.TrimSpace(name) == "" {
			problems = append(problems, "A bot must have a name.")
		}
	}
	return problems
}

// exists reports whether the store holds a bot of slug id.
func (s *Service) exists(ctx context.Context, id string) bool {
	_, err := s.store.Get(ctx, id)
	return err == nil
}

// sentence ends an error's text with a full stop; it starts with the
// field it names, as the wire's refusals do.
func sentence(s string) string {
	if s != "" && !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// homePath matches a path into a person's home folder, written out: ~/…,
// a ~ standing alone (not "~5", "~ two"), or /home/<name>, /Users/<name>
// or /root, whole words, and what follows them.
var homePath = regexp.MustCompile(`(?:^|[\s"'(\x60=:])(?:(~/[^\s"'\x60)]*)|(~)(?:$|["'\x60)])|((?:/home/[A-Za-z0-9._-]+|/Users/[A-Za-z0-9._-]+|/root)(?:/[^\s"'\x60)]*)?)(?:$|[\s"'\x60).,;:!?]))`)

// hostPath returns the first path of this host v (a value of a body, or
// the strings in it) names: one under the bots' root, the configuration
// folder or a home folder. "" when it names none.
func (s *Service) hostPath(v any) string {
	switch v := v.(type) {
	case string:
		for _, dir := range s.hostDirs() {
			if i := pathIndex(v, dir); i >= 0 {
				return firstField(v[i:])
			}
		}
		if m := homePath.FindStringSubmatch(v); m != nil {
			return strings.TrimRight(m[1]+m[2]+m[3], ".,;:!?")
		}
	case []any:
		for _, e := range v {
			if p := s.hostPath(e); p != "" {
				return p
			}
		}
	case map[string]any:
		for _, e := range v {
			if p := s.hostPath(e); p != "" {
				return p
			}
		}
	}
	return ""
}

// hostDirs are the paths of this host a bot's text must not name: the
// host's own secret files and their folders first (the vault, the users
// file), then the bots' root, the configuration folder, the home folder
// and the system's trees of secrets and state (systemDirs).
func (s *Service) hostDirs() []string {
	dirs := append(slices.Clone(s.hostPaths), s.root, s.configDir)
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) && home != "/" {
		dirs = append(dirs, home)
	}
	return append(dirs, systemDirs...)
}

// systemDirs are the trees of a Unix host that hold its secrets, its
// configuration and its state - /etc/shadow, /proc/self/environ, logs,
// sockets, data - which no bot has any business naming. /usr, /opt and
// /tmp are left: a bot may well name a program or a scratch file.
var systemDirs = []string{"/etc", "/proc", "/sys", "/boot", "/run", "/var", "/srv", "/mnt", "/media", "/private"}

// secretPaths are paths, made absolute, with the folder of each (but
// the file system's root): the names a bot's text must not use.
func secretPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		out = append(out, abs)
		if dir := filepath.Dir(abs); dir != filepath.Dir(dir) && !slices.Contains(out, dir) {
			out = append(out, dir)
		}
	}
	return out
}

// pathIndex is the index of the first place s names dir as a whole path
// (not "/rooted" for "/root", nor "/data/root"), or -1.
func pathIndex(s, dir string) int {
	for from := 0; ; {
		i := strings.Index(s[from:], dir)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(dir)
		j := end // past a full stop or comma ending a sentence
		for j < len(s) && strings.IndexByte(".,;:!?", s[j]) >= 0 {
			j++
		}
		before := i == 0 || !isPathByte(s[i-1])
		after := j == len(s) || j == end && s[j] == '/' || !isPathByte(s[j])
		if before && after {
			return i
		}
		from = i + 1
	}
}

// isPathByte reports whether c may be inside a path's component (or be
// its separator).
func isPathByte(c byte) bool {
	return c == '/' || c == '.' || c == '_' || c == '-' || c == '~' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return strings.TrimRight(f[0], `"'.,;)`)
	}
	return s
}

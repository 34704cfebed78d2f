package bot

import (
	"cmp"
	"context"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot/internal/mainchat"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/filerows"
	"github.com/agenthost/bots/wake/memrows"
)

// The main chats, a person's chats with the bots, are package mainchat's:
// the service makes them when it has a session host, and answers what
// they ask of the bots (chatBots).

// ChatProvider is the provider of a bot chat: a session a person talks to a
// bot in, which runs no model.
const ChatProvider = mainchat.Provider

// BotMeta is the _meta key that carries the bot a chat is with.
const BotMeta = mainchat.BotMeta

// KeepTurns is how many ended turns a chat holds in memory by default:
// its snapshot carries them, with turnsNextCursor when there are older
// ones, and fetchTurns reads the older ones from the chat's log.
const KeepTurns = mainchat.KeepTurns

// UnsavedType is the errorType of a turn that ended while a line of it
// could not be written to the chat's log: shown as complete, it would read
// back after a restart without its reply, so it ends in chat/error saying
// why instead.
const UnsavedType = mainchat.UnsavedType

// startChats makes the main chats of cfg, which replay the logs listed.
func (s *Service) startChats(cfg Config, listed *mainchat.Listing) (*mainchat.Chats, error) {
	rows := cfg.Rows
	if rows == nil {
		rows = &memrows.Rows{}
		if fb, ok := s.raw.(record.FileBacked); ok && fb.FileBacked() {
			rows = filerows.New(s.configDir)
		}
	}
	return mainchat.New(mainchat.Config{
		Bots:  chatBots{s},
		Store: s.store,
		Wake: wake.Config{
			Telemetry: s.meters.hub,
			Host:      cfg.Sessions, Rows: rows, Persona: s.personas, DefaultAgent: cfg.DefaultAgent,
			MainTurnPostMessageAbsent: s.options.MainTurnPostMessageAbsent, ContextIn: s.options.ContextIn, AskIn: s.options.AskIn,
			Deny: cfg.DenyTools, Logger: s.log, Now: s.now,
			Leases: cfg.Leases, Holder: cfg.Holder, LeaseTTL: cmp.Or(cfg.LeaseTTL, lease.DefaultTTL),
		},
		Logs:      cfg.Logs,
		Listed:    listed,
		Bus:       s.bus,
		HostName:  s.hostName,
		Directory: s.users != nil,
		DiskFull:  s.countDiskFull,
	})
}

// chatBots is the service as the main chats ask it of the bots.
type chatBots struct{ s *Service }

func (b chatBots) Principal(p access.Principal) access.Principal { return b.s.current(p) }

func (b chatBots) Person(owner string) access.Principal { return b.s.personNow(owner) }

func (b chatBots) Reads(ctx context.Context, p access.Principal, id string) bool {
	return b.s.readsBot(ctx, p, id)
}

func (b chatBots) CanRead(p access.Principal, r record.Record) bool { return CanRead(p, r) }

// Open reads the bot a chat is opened with, named by its slug or bot: URI.
func (b chatBots) Open(ctx context.Context, p access.Principal, bot string) (record.Record, error) {
	if id, err := parseURI(bot); err == nil && id != "" {
		bot = id
	}
	bt, err := b.s.Read(ctx, p, bot)
	return bt.Record, err
}

// ForTurn reads the bot a turn runs with, as a wake does: its folder
// checked, its persona read, a bundled bot's folder written from its
// bundle.
func (b chatBots) ForTurn(ctx context.Context, id string, dirs []string) (record.Record, error) {
	s := b.s
	e, err := s.store.Get(ctx, id)
	if err != nil {
		return record.Record{}, err
	}
	if s.chatOfHidden(ctx, id, dirs) {
		return record.Record{}, mainchat.ErrHidden
	}
	bt, err := s.withPersona(ctx, e, true)
	if err != nil {
		return record.Record{}, err
	}
	return bt.Record, s.writeBundled(ctx, id)
}

var _ mainchat.Bots = chatBots{}

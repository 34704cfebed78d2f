package mainchat

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/replica"
)

// A chat's log is kept by a chatlog.Logs under the key (chatlog.Chat, the
// bot's slug, its session URI); in files it is
// <configDir>/bots/<slug>/logs/<base64url of the session URI>.jsonl. Each
// line is one JSON object: the first opens the chat, each other
// is one action applied to the chat or its session. Every line carries the
// bot's mark in _meta["ahpd.bot"].

// logLine is one line of a chat log.
type logLine struct {
	// Kind is open, chat or session.
	Kind string `json:"kind"`
	// At is when the line was written (ISO 8601).
	At string `json:"at"`
	// Session, Chat, Owner, Bot, Title, Dir and CreatedAt are the open
	// line's: the chat's URIs, whose it is, which bot it is with, its
	// title, the folder it works in and when it was made.
	Session   string `json:"session,omitempty"`
	Chat      string `json:"chat,omitempty"`
	Owner     string `json:"owner,omitempty"`
	Bot       string `json:"bot,omitempty"`
	Title     string `json:"title,omitempty"`
	Dir       string `json:"workingDirectory,omitempty"`
	CreatedAt string `json:"createdAt,omitempty"`
	// Action is the action of a chat or session line.
	Action *ahp.Action `json:"action,omitempty"`
	// Meta carries the bot's mark.
	Meta map[string]any `json:"_meta"`
}

// maxSessionURI bounds a bot chat's session URI: its base64url names a
// log file.
const maxSessionURI = chatlog.MaxSession

// logKey names the log of the chat of session, with bot.
func logKey(bot, session string) chatlog.Key {
	return chatlog.Key{Kind: chatlog.Chat, Bot: bot, Session: session}
}

// createLog makes the log of key with its open line.
func createLog(logs chatlog.Logs, key chatlog.Key, open logLine) error {
	data, err := json.Marshal(open)
	if err != nil {
		return fmt.Errorf("encode log line: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), replica.Wait)
	defer cancel()
	return logs.Create(ctx, key, data)
}

// readLog reads a chat log, and how many lines it holds. A last line cut
// short by a crash mid-append is cut off (chatlog.Logs.Read); any other
// line that does not decode is skipped and reported in bad.
func readLog(logs chatlog.Logs, key chatlog.Key) (lines []logLine, n int64, bad []string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), replica.Wait)
	defer cancel()
	raw, bad, err := logs.Read(ctx, key)
	if err != nil {
		return nil, 0, bad, err
	}
	lines, bad = replica.Decode[logLine](raw, 0, bad)
	return lines, int64(len(raw)), bad, nil
}

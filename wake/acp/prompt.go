package acp

import (
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agenthost/bots/wake"
)

// QuestionPrompt is what the system prompt of a session this harness runs
// says of its question tool, after the session's own system prompt.
const QuestionPrompt = "Ask them a question with " + wake.AskQuestion + ": it waits for their answer and returns it."

// workspacePrompt is what the system prompt of a session that holds the
// workspace tools says of them, after QuestionPrompt.
const workspacePrompt = "Make, read, edit, validate and delete bots with bot_list, bot_read, bot_make, bot_edit, bot_validate and bot_delete: they act with the rights of the person whose message you answer."

// systemPrompt is what the agent is told before any message: the
// session's system prompt, then QuestionPrompt and workspacePrompt for
// the tools it holds; "" when the session has none.
func (a *agent) systemPrompt() string {
	if a.info.SystemPrompt == "" {
		return ""
	}
	a.heldMu.Lock()
	held := a.held
	a.heldMu.Unlock()
	prompt := a.info.SystemPrompt
	if held.Has(wake.AskQuestion) {
		prompt += " " + QuestionPrompt
	}
	if held.Has(wake.BotMake) {
		prompt += " " + workspacePrompt
	}
	return prompt
}

// promptInMeta reports whether the agent takes the system prompt out of
// band, as session/new's (and session/load's) _meta.systemPrompt.append:
// Claude Code's ACP adapter does, appending it to its own system prompt,
// and names itself so in initialize's agentInfo.
func promptInMeta(ai *sdk.Implementation) bool {
	if ai == nil {
		return false
	}
	return strings.HasSuffix(ai.Name, "claude-code-acp") || strings.HasSuffix(ai.Name, "claude-agent-acp")
}

// botName is the name of the bot a back session is of, for failure
// sentences: its title (the bot's name), else the bot's id; "" for a
// session that is no bot's.
func botName(s wake.SessionInfo) string {
	bot, _, _, ok := wake.BackSession(s.Meta)
	switch {
	case !ok:
		return ""
	case s.Title != "":
		return clean(s.Title)
	}
	return bot
}

// Package builder is the builder bot, a bundled bot whose instructions
// teach it to make and edit bots with the workspace tools (bot_list,
// bot_read, bot_make, bot_edit, bot_validate, bot_delete). Its record
// lists post_message, ask_question and bots as its tools. The reference
// server ships it; any host may give Bundle() to bot.Config.Bundled.
package builder

import (
	"embed"
	"io/fs"

	"github.com/agenthost/bots/bot"
)

// Slug is the builder bot's slug.
const Slug = "bot-builder"

//go:embed bot-builder
var files embed.FS

// FS holds the builder bot's folder, bot-builder/: its bot.md and its
// AGENTS.md.
func FS() fs.FS { return files }

// Bundle is the builder bot as a bundle a host ships.
func Bundle() bot.Bundle { return bot.Bundle{FS: files, Origin: "built in"} }

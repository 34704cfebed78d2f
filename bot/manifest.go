package bot

import (
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
)

// Manifest is the JSON Schema of the body a make takes, as advertised in
// _meta['ahpd.resourceProviders'].bot.manifest. It gives this host's own
// owner as a const, so a client sends it as given, and as the tools a
// list may name those the host's policy offers.
func Manifest(hostName string, tools wake.ToolPolicy) map[string]any {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	slug := "^[a-z][a-z0-9-]{0,39}$"
	return map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"title":                "Bot",
		"type":                 "object",
		"required":             []string{"name"},
		"additionalProperties": false,
		"properties": map[string]any{
			"id":          map[string]any{"type": "string", "pattern": slug, "description": "The slug; read but never obeyed."},
			"name":        map[string]any{"type": "string", "minLength": 1, "description": "What a person called it."},
			"labels":      map[string]any{"type": "array", "items": map[string]any{"type": "string", "minLength": 1}, "description": "Words a client groups bots by."},
			"description": str("One line about it, for a list of bots."),
			"body": map[string]any{"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]{0,39}$",
				"examples": record.Bodies(), "description": "Which body it is drawn with: any word, these are the suggestions."},
			"color": map[string]any{"type": "string", "description": "One of the named colours, or #rrggbb.",
				"anyOf": []any{map[string]any{"enum": record.Colors()}, map[string]any{"pattern": "^#[0-9A-Fa-f]{6}$"}}},
			"instructions": str("What it was asked to be, in its own words."),
			"template":     map[string]any{"type": "string", "pattern": slug, "description": "The template its AGENTS.md is made from."},
			"provider":     str("The agent provider a session of it runs on."),
			"model":        str("The model it asks for."),
			"preset":       str("The session preset it starts from; wins over provider and model."),
			"workspace":    str("The folder it works in, under root; never moved."),
			"session": map[string]any{"type": "string", "default": record.DefaultSession, "pattern": "^([a-z]|\\{turn\\})([a-z0-9-]|\\{turn\\}){0,39}$",
				"description": "The back session a message wakes; {turn} starts one per message."},
			"computer": str("The machine it runs in."),
			"connectors": map[string]any{"type": "object", "description": "Connectors by alias.",
				"propertyNames":        map[string]any{"pattern": slug},
				"additionalProperties": map[string]any{"type": "string", "pattern": "^connectors://[^/]+/.+$"}},
			"tools": map[string]any{"type": "array", "uniqueItems": true, "items": map[string]any{"type": "string", "enum": tools.Listable()},
				"description": "The tools its back sessions may hold: it narrows what the host offers; post_message always stays."},
			"owner": map[string]any{"type": "string", "description": "Whose it is.",
				"anyOf": []any{
					map[string]any{"const": "root:" + hostName},
					map[string]any{"pattern": "^(user|team):[A-Za-z0-9._@-]+$|^project:[A-Za-z0-9._@-]+:[A-Za-z0-9._@-]+$"},
				}},
			"createdAt": map[string]any{"type": "string", "format": "date-time", "readOnly": true},
			"updatedAt": map[string]any{"type": "string", "format": "date-time", "readOnly": true},
		},
	}
}

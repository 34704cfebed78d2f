package bot

import (
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
)

// Choices are what this host offers that a make may name: the agents
// its back sessions run on and the templates of AGENTS.md it has. The
// manifest lists them as examples (a record may still name an agent the
// host adds later).
type Choices struct {
	Agents    []string
	Templates []string
}

// makeSchema is the JSON Schema of the body a make takes, as advertised in
// _meta['ahpd.resourceProviders'].bot.manifest. It gives this host's own
// owner as a const, so a client sends it as given, as the tools a list
// may name those the host's policy offers, and the agents and templates
// of choices as examples. Each property's description is a sentence of
// help a form shows under its field.
func makeSchema(hostName string, tools wake.ToolPolicy, choices Choices) map[string]any {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	listed := func(m map[string]any, examples []string) map[string]any {
		if len(examples) > 0 {
			m["examples"] = examples
		}
		return m
	}
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
			"labels":      map[string]any{"type": "array", "items": map[string]any{"type": "string", "minLength": 1}, "description": "Words to group bots by in a list."},
			"description": str("One line about it, for a list of bots."),
			"body": map[string]any{"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]{0,39}$",
				"examples": record.Bodies(), "description": "Which body it is drawn with: any word, these are the suggestions."},
			"color": map[string]any{"type": "string", "description": "One of the named colours, or #rrggbb.",
				"anyOf": []any{map[string]any{"enum": record.Colors()}, map[string]any{"pattern": "^#[0-9A-Fa-f]{6}$"}}},
			"instructions": str("What it was asked to be, in its own words."),
			"template": listed(map[string]any{"type": "string", "pattern": slug,
				"description": "Which of this host's starting points its AGENTS.md is written from when it is made; leave it out for the plain one."}, choices.Templates),
			"provider":  listed(str("Which agent answers for it: one this host runs, or leave it out for the host's default."), choices.Agents),
			"model":     str("The model it asks its agent for; leave it out for the agent's own choice."),
			"preset":    str("A setting of agent and model this host keeps under a name; it wins over Agent and Model."),
			"workspace": str("The folder it works in, under this host's root; leave it out for a folder of its own. It never moves."),
			"session": map[string]any{"type": "string", "default": record.DefaultSession, "pattern": "^([a-z]|\\{turn\\})([a-z0-9-]|\\{turn\\}){0,39}$",
				"description": "Which of its working sessions a message wakes: the same one each time, so it remembers, or {turn} for a fresh one per message."},
			"computer": str("The machine it runs on, when it is not this host."),
			"connectors": map[string]any{"type": "object", "description": "The services it may use on your behalf, by the names it calls them: connectors://<adapter>/<id>.",
				"propertyNames":        map[string]any{"pattern": slug},
				"additionalProperties": map[string]any{"type": "string", "pattern": "^connectors://[^/]+/.+$"}},
			"tools": map[string]any{"type": "array", "uniqueItems": true, "items": map[string]any{"type": "string", "enum": tools.Listable()},
				"description": "What its agent may do here besides answering: fewer than the host allows, never more; post_message always stays."},
			"owner": map[string]any{"type": "string", "description": "Whose it is: leave it out for yours, or a team you are in (team:<name>).",
				"anyOf": []any{
					map[string]any{"const": "root:" + hostName},
					map[string]any{"pattern": "^(user|team):[A-Za-z0-9._@-]+$|^project:[A-Za-z0-9._@-]+:[A-Za-z0-9._@-]+$"},
				}},
			"createdAt": map[string]any{"type": "string", "format": "date-time", "readOnly": true},
			"updatedAt": map[string]any{"type": "string", "format": "date-time", "readOnly": true},
		},
	}
}

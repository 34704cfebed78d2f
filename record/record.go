// Package record is the bot record: its fields, the vocabularies of bodies
// and colours, the checks a make and an edit pass, the merge of an edit onto
// a record, and the Store port that keeps records and tombstones.
//
// The package is pure: it does no I/O and knows nothing of who is asking.
// The bot service applies permissions, folders and personas on top of it.
package record

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// DefaultSession is the back session name of a bot that names none.
const DefaultSession = "work"

// TimeLayout is how a record writes its times: UTC with milliseconds, as in
// 2026-10-11T09:00:00.000Z.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Record is one bot. The zero value of an optional field means absent.
type Record struct {
	ID           string            // the slug: URI path, folder name, never changes
	Name         string            // what a person called it; required
	Labels       []string          // words a client groups bots by
	Description  string            // one line about it
	Body         string            // which body it is drawn with: any word
	Color        string            // one of Colors, or #rrggbb in lower case
	Instructions string            // what it was asked to be
	Template     string            // the template its AGENTS.md is made from; empty is the default
	Provider     string            // the agent provider its sessions run on
	Model        string            // the model it asks for
	Preset       string            // the session preset; wins over Provider and Model
	Workspace    string            // the folder it works in; never moves
	Session      string            // the back session name; empty reads as DefaultSession
	Computer     string            // the machine it runs in, where it names one
	Connectors   map[string]string // alias → connectors://<adapter>/<id>
	Tools        []string          // the tools its back sessions may hold: narrows the host's offer; nil takes the host's default
	Owner        string            // user:<id>, team:<t>, project:<t>:<p> or root:<host>
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// SessionName is the bot's back session name, DefaultSession when it names
// none.
func (r Record) SessionName() string {
	if r.Session == "" {
		return DefaultSession
	}
	return r.Session
}

// Clone returns a deep copy of r: its slices and maps are its own.
func (r Record) Clone() Record {
	r.Labels = slices.Clone(r.Labels)
	r.Connectors = maps.Clone(r.Connectors)
	r.Tools = slices.Clone(r.Tools)
	return r
}

// Equal reports whether two records hold the same values.
func (r Record) Equal(o Record) bool {
	return r.ID == o.ID && r.Name == o.Name && slices.Equal(r.Labels, o.Labels) &&
		r.Description == o.Description && r.Body == o.Body && r.Color == o.Color &&
		r.Instructions == o.Instructions && r.Template == o.Template &&
		r.Provider == o.Provider && r.Model == o.Model && r.Preset == o.Preset &&
		r.Workspace == o.Workspace && r.SessionName() == o.SessionName() &&
		r.Computer == o.Computer && maps.Equal(r.Connectors, o.Connectors) &&
		slices.Equal(r.Tools, o.Tools) &&
		r.Owner == o.Owner && r.CreatedAt.Equal(o.CreatedAt) && r.UpdatedAt.Equal(o.UpdatedAt)
}

// wire is the JSON shape of a record, in the spec's field order.
type wire struct {
	ID           string            `json:"id"`
	Name         string            `json:"name"`
	Labels       []string          `json:"labels,omitempty"`
	Description  string            `json:"description,omitempty"`
	Body         string            `json:"body,omitempty"`
	Color        string            `json:"color,omitempty"`
	Instructions string            `json:"instructions,omitempty"`
	Template     string            `json:"template,omitempty"`
	Provider     string            `json:"provider,omitempty"`
	Model        string            `json:"model,omitempty"`
	Preset       string            `json:"preset,omitempty"`
	Workspace    string            `json:"workspace,omitempty"`
	Session      string            `json:"session,omitempty"`
	Computer     string            `json:"computer,omitempty"`
	Connectors   map[string]string `json:"connectors,omitempty"`
	Tools        []string          `json:"tools,omitempty"`
	Owner        string            `json:"owner,omitempty"`
	CreatedAt    string            `json:"createdAt,omitempty"`
	UpdatedAt    string            `json:"updatedAt,omitempty"`
}

// FormatTime writes t as a record does; the zero time is "".
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeLayout)
}

// MarshalJSON writes the record as a read answers it: absent fields left
// out, the session name always present, times in TimeLayout.
func (r Record) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, 512)), nil
}

// UnmarshalJSON reads what MarshalJSON wrote, without checking it: a client
// reading answers uses it. A host checks bodies with ParsePatch instead.
func (r *Record) UnmarshalJSON(data []byte) error {
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	var err error
	parse := func(s string) time.Time {
		if s == "" || err != nil {
			return time.Time{}
		}
		var t time.Time
		t, err = time.Parse(time.RFC3339Nano, s)
		if err != nil {
			err = fmt.Errorf("record time %q: %w", s, err)
		}
		return t
	}
	*r = Record{
		ID: w.ID, Name: w.Name, Labels: w.Labels, Description: w.Description,
		Body: w.Body, Color: w.Color, Instructions: w.Instructions, Template: w.Template,
		Provider: w.Provider, Model: w.Model, Preset: w.Preset, Workspace: w.Workspace,
		Session: w.Session, Computer: w.Computer, Connectors: w.Connectors, Tools: w.Tools,
		Owner: w.Owner, CreatedAt: parse(w.CreatedAt), UpdatedAt: parse(w.UpdatedAt),
	}
	return err
}

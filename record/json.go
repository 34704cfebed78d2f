package record

import (
	"slices"
	"time"

	"github.com/agenthost/bots/internal/jsonx"
)

// AppendJSON appends the record's JSON, as MarshalJSON answers it, to b.
func (r Record) AppendJSON(b []byte) []byte { return r.appendJSON(b) }

// appendJSON appends the record's JSON, as MarshalJSON answers it, to b.
// It writes exactly what encoding/json writes for the wire struct (HTML
// characters escaped, invalid UTF-8 replaced) without reflection: a read
// answers this on every request.
func (r Record) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"name":`...)
	b = appendString(b, r.Name)
	if len(r.Labels) > 0 {
		b = append(b, `,"labels":[`...)
		for i, l := range r.Labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, l)
		}
		b = append(b, ']')
	}
	b = appendField(b, "description", r.Description)
	b = appendField(b, "body", r.Body)
	b = appendField(b, "color", r.Color)
	b = appendField(b, "instructions", r.Instructions)
	b = appendField(b, "template", r.Template)
	b = appendField(b, "provider", r.Provider)
	b = appendField(b, "model", r.Model)
	b = appendField(b, "preset", r.Preset)
	b = appendField(b, "workspace", r.Workspace)
	b = appendField(b, "session", r.SessionName())
	b = appendField(b, "computer", r.Computer)
	if len(r.Connectors) > 0 {
		b = append(b, `,"connectors":{`...)
		aliases := make([]string, 0, len(r.Connectors))
		for a := range r.Connectors {
			aliases = append(aliases, a)
		}
		slices.Sort(aliases)
		for i, a := range aliases {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, a)
			b = append(b, ':')
			b = appendString(b, r.Connectors[a])
		}
		b = append(b, '}')
	}
	if len(r.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range r.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, t)
		}
		b = append(b, ']')
	}
	b = appendField(b, "owner", r.Owner)
	b = appendTime(b, "createdAt", r.CreatedAt)
	b = appendTime(b, "updatedAt", r.UpdatedAt)
	return append(b, '}')
}

// appendField appends ,"key":"value" when value is not empty.
func appendField(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

func appendTime(b []byte, key string, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, `":"`...)
	if TimeLayout == jsonx.MillisLayout {
		b = jsonx.AppendTimeMillis(b, t)
	} else {
		b = t.UTC().AppendFormat(b, TimeLayout)
	}
	return append(b, '"')
}

// appendString appends s as a JSON string as encoding/json's Marshal does.
func appendString(b []byte, s string) []byte { return jsonx.AppendString(b, s) }

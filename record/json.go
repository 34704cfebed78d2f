package record

import (
	"slices"
	"strings"
	"time"

	"github.com/agenthost/bots/internal/jsonx"
)

// AppendJSON appends the record's JSON, as MarshalJSON answers it, to b.
func (r Record) AppendJSON(b []byte) []byte { return r.appendJSON(b, false) }

// AppendJSONInString appends the record's JSON as the content of a JSON
// string, to b: exactly what jsonx.AppendStringNoHTML writes for
// string(r.AppendJSON(nil)), without its two quotes, written in one pass
// rather than written and then escaped (a read answers it as its data).
func (r Record) AppendJSONInString(b []byte) []byte { return r.appendJSON(b, true) }

// appendJSON appends the record's JSON, as MarshalJSON answers it, to b;
// in a string (in), escaped as the content of a JSON string. It writes
// exactly what encoding/json writes for the wire struct (HTML characters
// escaped, invalid UTF-8 replaced) without reflection: a read answers
// this on every request.
func (r Record) appendJSON(b []byte, in bool) []byte {
	b = appendText(b, `{"id":`, in)
	b = appendString(b, r.ID, in)
	b = appendText(b, `,"name":`, in)
	b = appendString(b, r.Name, in)
	if len(r.Labels) > 0 {
		b = appendText(b, `,"labels":[`, in)
		for i, l := range r.Labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, l, in)
		}
		b = append(b, ']')
	}
	b = appendField(b, "description", r.Description, in)
	b = appendField(b, "body", r.Body, in)
	b = appendField(b, "color", r.Color, in)
	b = appendField(b, "instructions", r.Instructions, in)
	b = appendField(b, "template", r.Template, in)
	b = appendField(b, "provider", r.Provider, in)
	b = appendField(b, "model", r.Model, in)
	b = appendField(b, "preset", r.Preset, in)
	b = appendField(b, "workspace", r.Workspace, in)
	b = appendField(b, "session", r.SessionName(), in)
	b = appendField(b, "computer", r.Computer, in)
	if len(r.Connectors) > 0 {
		b = appendText(b, `,"connectors":{`, in)
		aliases := make([]string, 0, len(r.Connectors))
		for a := range r.Connectors {
			aliases = append(aliases, a)
		}
		slices.Sort(aliases)
		for i, a := range aliases {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, a, in)
			b = append(b, ':')
			b = appendString(b, r.Connectors[a], in)
		}
		b = append(b, '}')
	}
	if len(r.Tools) > 0 {
		b = appendText(b, `,"tools":[`, in)
		for i, t := range r.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, t, in)
		}
		b = append(b, ']')
	}
	b = appendField(b, "owner", r.Owner, in)
	b = appendTime(b, "createdAt", r.CreatedAt, in)
	b = appendTime(b, "updatedAt", r.UpdatedAt, in)
	return append(b, '}')
}

// appendText appends JSON text of the encoder's own, which holds no
// backslash and no control character; in a string, its quotes escaped.
func appendText(b []byte, text string, in bool) []byte {
	if !in {
		return append(b, text...)
	}
	for {
		i := strings.IndexByte(text, '"')
		if i < 0 {
			return append(b, text...)
		}
		b = append(b, text[:i]...)
		b = append(b, '\\', '"')
		text = text[i+1:]
	}
}

// quote is a quote of the record's JSON, in a string or not.
func quote(b []byte, in bool) []byte {
	if in {
		return append(b, '\\', '"')
	}
	return append(b, '"')
}

// appendField appends ,"key":"value" when value is not empty.
func appendField(b []byte, key, value string, in bool) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',')
	b = quote(b, in)
	b = append(b, key...)
	b = quote(b, in)
	b = append(b, ':')
	return appendString(b, value, in)
}

func appendTime(b []byte, key string, t time.Time, in bool) []byte {
	if t.IsZero() {
		return b
	}
	b = append(b, ',')
	b = quote(b, in)
	b = append(b, key...)
	b = quote(b, in)
	b = append(b, ':')
	b = quote(b, in)
	// digits, '-', ':', '.', 'T' and 'Z' only: the same in a string.
	if TimeLayout == jsonx.MillisLayout {
		b = jsonx.AppendTimeMillis(b, t)
	} else {
		b = t.UTC().AppendFormat(b, TimeLayout)
	}
	return quote(b, in)
}

// appendString appends s as a JSON string as encoding/json's Marshal does;
// in a string, escaped again as the content of one.
func appendString(b []byte, s string, in bool) []byte {
	if in {
		return jsonx.AppendStringInString(b, s)
	}
	return jsonx.AppendString(b, s)
}

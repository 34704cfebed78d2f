package record

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestMarshalJSONMatchesEncodingJSONByteForByte(t *testing.T) {
	t.Parallel()
	records := []Record{
		{},
		sample(),
		{ID: "x", Name: "<b>&\"quotes\"</b>\n\t\r\b\f\x00\x1f\u2028\u2029 é 日本", Labels: []string{"a", ""},
			Connectors:   map[string]string{"z": "connectors://a/b", "a": "connectors://c/d"},
			Instructions: "bad utf-8: \xff\xfe end", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.FixedZone("x", 3600))},
	}
	for _, r := range records {
		got, _ := r.MarshalJSON()
		want, err := r.marshalReflect()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("MarshalJSON\n got %s\nwant %s", got, want)
		}
	}
}

// FuzzMarshalJSON checks the hand-written encoder against encoding/json on
// any strings.
func FuzzMarshalJSON(f *testing.F) {
	f.Add("motion", "Motion", "a\nb", "<&>", "\xff")
	f.Add("", "\u2028", "\x00", "\"\\", "日本")
	f.Fuzz(func(t *testing.T, id, name, desc, label, alias string) {
		r := Record{ID: id, Name: name, Description: desc, Labels: []string{label},
			Connectors: map[string]string{alias: desc}, Session: label}
		got, _ := r.MarshalJSON()
		want, err := r.marshalReflect()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("MarshalJSON\n got %s\nwant %s", got, want)
		}
	})
}

// marshalReflect is MarshalJSON through encoding/json, the reference the
// hand-written encoder must match byte for byte.
func (r Record) marshalReflect() ([]byte, error) {
	return json.Marshal(wire{
		ID: r.ID, Name: r.Name, Labels: r.Labels, Description: r.Description,
		Body: r.Body, Color: r.Color, Instructions: r.Instructions, Template: r.Template,
		Provider: r.Provider, Model: r.Model, Preset: r.Preset, Workspace: r.Workspace,
		Session: r.SessionName(), Computer: r.Computer, Connectors: r.Connectors, Tools: r.Tools,
		Owner: r.Owner, CreatedAt: FormatTime(r.CreatedAt), UpdatedAt: FormatTime(r.UpdatedAt),
	})
}

// AppendJSONInString is the record's JSON escaped as a string's content
// in one pass: what encoding/json writes for the JSON as a string, without
// HTML escaping, less its quotes.
func TestAppendJSONInStringIsTheJSONEscapedAgain(t *testing.T) {
	t.Parallel()
	for _, r := range []Record{
		{},
		sample(),
		{ID: "x", Name: "<b>&\"quotes\"</b>\n\t\r\b\f\x00\x1f\u2028\u2029 é 日本", Labels: []string{"a", ""},
			Connectors: map[string]string{"z": "connectors://a/b", "a": "connectors://c/d"}, Tools: []string{"t\\"},
			Instructions: "bad utf-8: \xff\xfe end", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.FixedZone("x", 3600))},
	} {
		checkInString(t, r)
	}
}

// FuzzAppendJSONInString checks the one-pass escape on any strings.
func FuzzAppendJSONInString(f *testing.F) {
	f.Add("motion", "Motion", "a\nb", "<&>", "\xff")
	f.Add("", "\u2028", "\x00", "\"\\", "日本")
	f.Fuzz(func(t *testing.T, id, name, desc, label, alias string) {
		checkInString(t, Record{ID: id, Name: name, Description: desc, Labels: []string{label, desc},
			Connectors: map[string]string{alias: desc, name: label}, Tools: []string{alias},
			Session: label, Workspace: name, Owner: alias, UpdatedAt: time.UnixMilli(int64(len(desc)) * 1e9)})
	})
}

func checkInString(t *testing.T, r Record) {
	t.Helper()
	js, err := r.marshalReflect()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(js)); err != nil {
		t.Fatal(err)
	}
	want := append([]byte("x"), bytes.TrimSuffix(buf.Bytes(), []byte("\"\n"))[1:]...)
	if got := r.AppendJSONInString([]byte("x")); !bytes.Equal(got, want) {
		t.Fatalf("AppendJSONInString\n got %s\nwant %s", got, want)
	}
}

package transport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agenthost/bots/ahp"
)

// The read result is written by hand; it must be what encoding/json writes.
func TestReadResultMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	if n := reflect.TypeFor[ahp.ResourceReadResult]().NumField(); n != 3 {
		t.Fatalf("ahp.ResourceReadResult has %d fields: readResult writes 3", n)
	}
	for _, r := range []ahp.ResourceReadResult{
		{},
		{Data: `{"id":"motion","name":"<b>&amp;</b>","x":"\u003c"}`, Encoding: "utf-8", ContentType: "application/json"},
		{Data: "eyJpZCI6Im1vdGlvbiJ9", Encoding: "base64"},
		{Data: "\x00\n\t\"\\\u2028\u2029\xff é", Encoding: "<&>", ContentType: "a\"b"},
	} {
		check := func(e *encoder) {
			t.Helper()
			got := e.buf.String()
			e.buf.Reset()
			if err := e.value(r); err != nil {
				t.Fatal(err)
			}
			if want := e.buf.String(); got != want {
				t.Errorf("%+v:\n got %s\nwant %s", r, got, want)
			}
		}
		e := getEncoder()
		if err := e.rawValue(r); err != nil {
			t.Fatal(err)
		}
		check(e)
		e.buf.Reset()
		e.buf.WriteString("prefix")
		e.readResult(r)
		if !bytes.HasPrefix(e.buf.Bytes(), []byte("prefix")) {
			t.Fatalf("readResult lost what the buffer held: %s", e.buf.Bytes())
		}
		e.buf.Next(len("prefix"))
		check(e)
		e.free()
	}
}

// The list result is written by hand too; it must be what encoding/json
// writes, through ahp.List's MarshalJSON.
func TestListResultMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	if n := reflect.TypeFor[ahp.DirectoryEntry]().NumField(); n != 2 {
		t.Fatalf("ahp.DirectoryEntry has %d fields: listResult writes 2", n)
	}
	if n := reflect.TypeFor[ahp.ResourceListResult]().NumField(); n != 1 {
		t.Fatalf("ahp.ResourceListResult has %d fields: listResult writes 1", n)
	}
	for _, r := range []ahp.ResourceListResult{
		{},
		{Entries: ahp.List[ahp.DirectoryEntry]{}},
		{Entries: ahp.List[ahp.DirectoryEntry]{{Name: "motion", Type: ahp.ResourceFile}}},
		{Entries: ahp.List[ahp.DirectoryEntry]{{Name: "a", Type: "file"}, {Name: "<b>&\"\\\u2028\x00\xff é", Type: "<&>"}, {}}},
	} {
		e := getEncoder()
		e.buf.WriteString("prefix")
		if err := e.rawValue(r); err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(e.buf.Bytes(), []byte("prefix")) {
			t.Fatalf("listResult lost what the buffer held: %s", e.buf.Bytes())
		}
		got := e.buf.String()[len("prefix"):]
		e.buf.Reset()
		if err := e.value(r); err != nil {
			t.Fatal(err)
		}
		if want := e.buf.String(); got != want {
			t.Errorf("%+v:\n got %s\nwant %s", r, got, want)
		}
		e.free()
	}
}

// appender is a result that writes its own JSON.
type appender struct{ json string }

func (a appender) AppendJSON(b []byte) []byte   { return append(b, a.json...) }
func (a appender) MarshalJSON() ([]byte, error) { return []byte(a.json), nil }

// A result that writes its own JSON (engine.JSONAppender) is written as it
// appends it, after what the buffer held, as encoding/json would write it.
func TestJSONAppenderResultIsWrittenAsItAppends(t *testing.T) {
	t.Parallel()
	for _, a := range []appender{{`{}`}, {`{"data":"{\"id\":\"x\"}","encoding":"utf-8"}`}, {`"` + strings.Repeat("x", 5000) + `"`}} {
		e := getEncoder()
		if err := e.result(json.RawMessage(`7`), a); err != nil {
			t.Fatal(err)
		}
		if got, want := e.buf.String(), `{"jsonrpc":"2.0","id":7,"result":`+a.json+`}`; got != want {
			t.Errorf("got %.80s\nwant %.80s", got, want)
		}
		e.buf.Reset()
		if err := e.value(a); err != nil {
			t.Fatal(err)
		}
		if got := e.buf.String(); got != a.json {
			t.Errorf("encoding/json wrote %.80s, want %.80s", got, a.json)
		}
		e.free()
	}
}

package transport

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/agenthost/bots/ahp"
)

// The read result is written by hand; it must be what encoding/json writes.
func TestReadResultMatchesEncodingJSON(t *testing.T) {
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

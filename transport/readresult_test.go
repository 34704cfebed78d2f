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

var validJSONCases = []string{
	``, ` `, `{}`, `[]`, `{ }`, `[ ]`, `{`, `}`, `[`, `]`, `{]`, `[}`, `{"a":1}`, `{"a":1,}`, `{,}`, `[1,]`, `[,1]`,
	`{"a"}`, `{"a":}`, `{a:1}`, `{"a" : [ 1 , 2 ] , "b" : { "c" : null } }`, `[[[]]]`, `[[[]]`, `[]]`,
	`true`, `false`, `null`, `tru`, `truex`, `nul`, `nulll`, `True`, ` null `, `null null`, `1 2`,
	`0`, `-0`, `01`, `-`, `-01`, `1.`, `1.5`, `.5`, `1e`, `1e5`, `1E+5`, `1e-5`, `1.5e5`, `1e+`, `+1`, `1x`, `-a`,
	`""`, `"`, `"a`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\x"`, `"\u00e9"`, `"\u00G9"`, `"\u00e"`, `"\u"`,
	"\"\x00\"", "\"\x1f\"", "\"\x7f\xff\xfe\"", "\"日本\"", "\t\r\n{}\n", "{}\v", "\xef\xbb\xbf{}",
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}}`,
	`[{"jsonrpc":"2.0"}]`, `{"id":{}}`, `{"a":[{"b":[{"c":"d"}]}],"e":-1.5e-3}`,
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	cases := validJSONCases
	for _, n := range []int{maxValidDepth - 1, maxValidDepth, maxValidDepth + 1, 10000, 10001} {
		for _, open := range []string{"[", `{"a":`} {
			closing := "]"
			if open != "[" {
				closing = "}"
			}
			deep := strings.Repeat(open, n) + "1" + strings.Repeat(closing, n)
			cases = append(cases, deep, deep[:len(deep)-1], deep+closing)
		}
	}
	for _, s := range cases {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.80q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, want %v", data, got, want)
		}
	})
}

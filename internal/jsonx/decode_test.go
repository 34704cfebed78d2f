package jsonx

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// decodeTree decodes the text d reads into what json.Unmarshal decodes
// into an any with UseNumber: maps, slices, strings, json.Number, bools
// and nil.
func decodeTree(d *Decoder) any {
	switch d.Peek() {
	case '{':
		m := map[string]any{}
		for key := range d.Object {
			k := string(key)
			m[k] = decodeTree(d)
		}
		return m
	case '[':
		s := []any{}
		for range d.Array {
			s = append(s, decodeTree(d))
		}
		return s
	case '"':
		return string(d.String())
	case 't', 'f':
		return string(d.Skip()) == "true"
	case 'n':
		d.Skip()
		return nil
	}
	return json.Number(d.Skip())
}

// checkDecoder checks that the Decoder accepts data when json.Valid
// does, and then decodes what encoding/json decodes.
func checkDecoder(t *testing.T, data []byte) {
	t.Helper()
	want := json.Valid(data)
	if got := Valid(data); got != want {
		t.Fatalf("Valid(%q) = %v, json.Valid %v", data, got, want)
	}
	var d Decoder
	d.Reset(data)
	tree := decodeTree(&d)
	if got := d.End(); got != want {
		t.Fatalf("%q: decoded to the end %v, json.Valid %v", data, got, want)
	}
	if !want {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var wantTree any
	if err := dec.Decode(&wantTree); err != nil {
		t.Fatalf("%q: encoding/json: %v", data, err)
	}
	if !reflect.DeepEqual(tree, wantTree) {
		t.Fatalf("%q: decoded %#v, encoding/json %#v", data, tree, wantTree)
	}
}

// fields is a struct of the kinds of fields the wire's params hold.
type fields struct {
	URI    string  `json:"uri"`
	Source *string `json:"source"`
	Meta   any     `json:"_meta"`
}

// decodeFields decodes data into a fields as the wire's callers use the
// Decoder; ok false where json.Unmarshal would answer an error.
func decodeFields(data []byte) (f fields, ok bool) {
	var d Decoder
	d.Reset(data)
	if d.Peek() == 'n' {
		d.Skip()
		return f, d.End()
	}
	typed := true
	for key := range d.Object {
		switch {
		case KeyIs(key, "uri"):
			switch d.Peek() {
			case '"':
				f.URI = string(d.String())
			case 'n':
			default:
				typed = false
			}
		case KeyIs(key, "source"):
			switch d.Peek() {
			case '"':
				s := string(d.String())
				f.Source = &s
			case 'n':
				f.Source = nil
			default:
				typed = false
			}
		case KeyIs(key, "_meta"):
			f.Meta = decodeTree(&d)
		}
	}
	return f, d.End() && typed
}

func checkFields(t *testing.T, data []byte) {
	t.Helper()
	got, ok := decodeFields(data)
	var want fields
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := dec.Decode(&want)
	if err == nil && !json.Valid(data) {
		err = errTrailing
	}
	if ok != (err == nil) {
		t.Fatalf("%q: decoded %v, encoding/json answers %v", data, ok, err)
	}
	if ok && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %#v, encoding/json %#v", data, got, want)
	}
}

var errTrailing = &json.SyntaxError{}

var decoderCases = []string{
	``, ` `, `{}`, `[]`, `null`, `true`, `false`, `0`, `-0.5e+3`, `01`, `1.`, `.5`, `-`, `1e`, `"`, `"\`,
	`{"uri":"bot://motion","channel":"ahp-root://"}`, ` { "a" : [ 1 , { "b" : "}" } ] } `,
	`{"a":1,"a":2}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1}{}`, `{1:2}`, `[1 2]`, `{"a":[}`,
	`"\u00e9\ud83d\ude00\ud800\udc00\ud800x\udc00\ud800\ud800"`, `"\uD83D"`, `"\u12"`, `"\x"`, `"\'"`,
	"\"a\xffb\xe2\x80\"", "\"\x7f\"", "\"\t\"", `"\/\b\f\n\r\t\"\\"`, `"ſ"`,
	`{"URI":"a","uri":"b","Uri":null}`, `{"ur\u0069":"x","\u0053ource":"s"}`, `{"ſource":"s","ﬀ":1}`,
	`{"uri":1}`, `{"source":{}}`, `{"source":"s","source":null}`, `{"_meta":{"a":[1e400]}}`, `[{"uri":1}]`, `"x"`,
	`{ }`, `[ ]`, `{`, `}`, `[`, `]`, `{]`, `[}`, `{,}`, `[,1]`, `{"a"}`, `{"a":}`, `{a:1}`, `[[[]]]`, `[[[]]`, `[]]`,
	`tru`, `truex`, `nul`, `nulll`, `True`, ` null `, `null null`, `1 2`, `-01`, `1e5`, `1E+5`, `1e-5`, `1.5e5`,
	`1e+`, `+1`, `1x`, `-a`, `""`, `"a`, `"\"`, `"\\"`, `"\u00G9"`, `"\u00e"`, `"\u"`, "\"\x00\"", "\"\x1f\"",
	"\"\x7f\xff\xfe\"", "\"日本\"", "\t\r\n{}\n", "{}\v", "\xef\xbb\xbf{}", `[{"jsonrpc":"2.0"}]`, `{"id":{}}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
	strings.Repeat(`[{"a":`, 40) + "1" + strings.Repeat("}]", 40),
}

func TestDecoderAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range decoderCases {
		checkDecoder(t, []byte(s))
		checkFields(t, []byte(s))
	}
}

// FuzzDecoder checks, on any input, that the Decoder accepts and rejects
// what encoding/json does, and decodes the same values: whole trees, and
// struct fields matched by name as json.Unmarshal matches them.
func FuzzDecoder(f *testing.F) {
	for _, s := range decoderCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecoder(t, data)
		checkFields(t, data)
	})
}

func TestKeyIsMatchesAsUnmarshal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		key, name string
		want      bool
	}{
		{"uri", "uri", true}, {"URI", "uri", true}, {"uRi", "uri", true}, {"ur", "uri", false},
		{"urj", "uri", false}, {"ſource", "source", true}, {"\u212aey", "key", true}, {"é", "É", true},
		{"uri\x00", "uri", false}, {"@", "`", false}, {"[", "{", false},
	} {
		if got := KeyIs([]byte(c.key), c.name); got != c.want {
			t.Errorf("KeyIs(%q, %q) = %v, want %v", c.key, c.name, got, c.want)
		}
	}
}

// TestDecoderReadsWithoutAllocating guards the wire's hot path: a frame of
// plain strings is read without an allocation.
func TestDecoderReadsWithoutAllocating(t *testing.T) {
	frame := []byte(`{"jsonrpc":"2.0","id":7,"method":"resourceRead","params":{"channel":"ahp-root://","uri":"bot://motion"}}`)
	var d Decoder
	allocs := testing.AllocsPerRun(100, func() {
		d.Reset(frame)
		for key := range d.Object {
			if string(key) == "params" {
				for range d.Object {
					d.String()
				}
			}
		}
		if !d.End() {
			t.Fatal("not read")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations, want 0", allocs)
	}
}

func BenchmarkDecoderFrame(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","id":7,"method":"resourceRead","params":{"channel":"ahp-root://","uri":"bot://motion"}}`)
	var d Decoder
	for b.Loop() {
		d.Reset(frame)
		for key := range d.Object {
			if string(key) == "params" {
				for range d.Object {
					d.String()
				}
			}
		}
	}
}

func BenchmarkJSONValidFrame(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","id":7,"method":"resourceRead","params":{"channel":"ahp-root://","uri":"bot://motion"}}`)
	for b.Loop() {
		json.Valid(frame)
	}
}

func TestDecoderReadsOneValue(t *testing.T) {
	t.Parallel()
	var d Decoder
	d.Reset([]byte(`1 2`))
	d.Skip()
	d.Skip()
	if d.End() {
		t.Error("read two values to the end of 1 2")
	}
	d.Reset([]byte(` `))
	if d.Peek() != 0 || d.End() {
		t.Error("a text of space ends without a value")
	}
}

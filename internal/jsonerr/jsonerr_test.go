package jsonerr_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agenthost/bots/internal/jsonerr"
)

type file struct {
	Agents map[string]struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	} `json:"agents"`
}

func decode(data string) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(data)))
	dec.DisallowUnknownFields()
	var f file
	return jsonerr.Locate([]byte(data), dec.Decode(&f))
}

func TestLocateNamesTheLineAndColumnOfWhatIsWrong(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, data, want string }{
		{"a syntax error at its character", "{\n  \"agents\": {\n    \"claude\": {\"command\": \"c\",}\n  }\n}",
			`line 3, column 31: invalid character '}' looking for beginning of object key string`},
		{"an unknown field at its key", "{\n  \"agents\": {\n    \"claude\": {\n      \"comand\": \"c\"\n    }\n  }\n}",
			`line 4, column 7: unknown field "comand"`},
		{"a value of the wrong type at its end", "{\"agents\": {\"claude\": {\"args\": \"-x\"}}}",
			`line 1, column 35: cannot unmarshal string into Go struct field .agents.args of type []string`},
		{"columns count characters, not bytes", "{\"agents\": {\"é\": {\"command\": \"c\", \"ärgs\": []}}}",
			`line 1, column 35: unknown field "ärgs"`},
		{"a text that ends early at its end", "{\n  \"agents\": {",
			`line 2, column 14: unexpected EOF`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := decode(c.data)
			var e *jsonerr.Error
			if !errors.As(err, &e) || err.Error() != c.want {
				t.Errorf("got %v (%T), want %s", err, err, c.want)
			}
		})
	}
}

func TestLocateKeepsTheDecodersErrorWithin(t *testing.T) {
	t.Parallel()
	err := decode(`{"agents": 1}`)
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &typ) {
		t.Errorf("%v does not unwrap to the decoder's %T", err, typ)
	}
}

func TestLocateLeavesAnErrorWithoutAPlaceAsItIs(t *testing.T) {
	t.Parallel()
	other := errors.New("disk gone")
	if got := jsonerr.Locate([]byte(`{}`), other); got != other {
		t.Errorf("got %v, want the error itself", got)
	}
	// An unknown field whose key is not in the text as quoted (escaped
	// there) has no place to name.
	if err := decode(`{"\u0061gents": {}, "b\u0061d": 1}`); err == nil || errors.As(err, new(*jsonerr.Error)) {
		t.Errorf("got %v, want the decoder's error without a place", err)
	}
}

// FuzzLocate holds Locate to a place inside the text or at its end,
// whatever the text.
func FuzzLocate(f *testing.F) {
	for _, s := range []string{`{"agents": {"a": {"command": "c"}}}`, `{"x": 1}`, "{\n", `{"agents": {"a": {"args": 1}}}`, "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		err := decode(data)
		var e *jsonerr.Error
		if !errors.As(err, &e) {
			return
		}
		lines := bytes.Split([]byte(data), []byte("\n"))
		if e.Line < 1 || e.Line > len(lines) || e.Column < 1 || e.Column > len([]rune(string(lines[e.Line-1])))+1 {
			t.Errorf("line %d, column %d is outside the text %q", e.Line, e.Column, data)
		}
	})
}

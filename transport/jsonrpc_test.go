package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/bots/errcode"
)

func TestDecodeFrame(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		frame    string
		wantCode int    // 0: decodes
		wantID   string // the id answered with, or the message's id
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0, `1`},
		{`{"jsonrpc":"2.0","id":"a b","method":"ping","params":{"channel":"ahp-root://"}}`, 0, `"a b"`},
		{`{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"x"}}`, 0, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`, 0, `1`},
		{` { "jsonrpc" : "2.0" , "id" : 1 , "result" : {} } `, 0, `1`},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, 0, `null`},
		{``, CodeParseError, `null`},
		{`{`, CodeParseError, `null`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}{}`, CodeParseError, `null`},
		{`[]`, CodeInvalidRequest, `null`},
		{`null`, CodeInvalidRequest, `null`},
		{`{"id":1,"method":"ping"}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":2,"id":1,"method":"ping"}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, CodeInvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, CodeInvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":1,"method":""}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":"2.0","id":1,"method":["ping"]}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":"2.0","id":1,"result":1,"error":{}}`, CodeInvalidRequest, `1`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`, CodeInvalidParams, `1`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`, CodeInvalidParams, `1`},
	} {
		m, id, werr := decodeFrame([]byte(tc.frame))
		switch {
		case tc.wantCode == 0 && werr != nil:
			t.Errorf("%s: error %v", tc.frame, werr)
		case tc.wantCode == 0 && string(m.ID) != tc.wantID:
			t.Errorf("%s: id %s, want %s", tc.frame, m.ID, tc.wantID)
		case tc.wantCode != 0 && (werr == nil || werr.Code != tc.wantCode):
			t.Errorf("%s: error %v, want code %d", tc.frame, werr, tc.wantCode)
		case tc.wantCode != 0 && string(id) != tc.wantID:
			t.Errorf("%s: answered id %s, want %s", tc.frame, id, tc.wantID)
		}
	}
}

func TestErrorForMapsEveryCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method   string
		err      error
		code     int
		message  string
		internal bool
	}{
		{"resourceRead", errcode.New(errcode.Invalid, "bad slug"), CodeInvalidParams, "bad slug", false},
		{"resourceRead", errcode.New(errcode.NotFound, "no bot x"), CodeNotFound, "no bot x", false},
		{"disposeSession", errcode.New(errcode.NotFound, "no session"), CodeSessionNotFound, "no session", false},
		{"resourceRead", errcode.New(errcode.PermissionDenied, "not yours"), CodePermissionDenied, "not yours", false},
		{"resourceWrite", errcode.New(errcode.AlreadyExists, "taken"), CodeAlreadyExists, "taken", false},
		{"createSession", errcode.New(errcode.AlreadyExists, "exists"), CodeSessionAlreadyExists, "exists", false},
		{"resourceWrite", errcode.New(errcode.Conflict, "stale"), CodeConflict, "stale", false},
		{"resourceRead", errcode.New(errcode.Unauthenticated, "sign in"), CodeAuthRequired, "sign in", false},
		{"resourceRead", errcode.New(errcode.Unsupported, "no"), CodeMethodNotFound, "no", false},
		{"resourceRead", errcode.New(errcode.Unavailable, "shutting down"), CodeInternalError, "shutting down", false},
		{"resourceRead", errcode.New(errcode.Unavailable, "internal error"), CodeInternalError, "resourceRead cannot be served now: try again later", false},
		{"resourceWrite", fmt.Errorf("make: %w", errcode.Wrap(errcode.Unavailable, errors.New("/secret/path: no space"), "the server's disk is full: bot://x was not saved")), CodeInternalError, "the server's disk is full: bot://x was not saved", false},
		{"resourceRead", errcode.New(errcode.Internal, "secret detail"), CodeInternalError, "internal error", true},
		{"resourceRead", errors.New("secret detail"), CodeInternalError, "internal error", true},
		{"resourceRead", fmt.Errorf("wrapped: %w", errcode.New(errcode.NotFound, "deep")), CodeNotFound, "deep", false},
	} {
		e, internal := errorFor(tc.method, tc.err)
		if e.Code != tc.code || e.Message != tc.message || internal != tc.internal {
			t.Errorf("%s %v: got %d %q internal=%v; want %d %q internal=%v", tc.method, tc.err, e.Code, e.Message, internal, tc.code, tc.message, tc.internal)
		}
	}
	e, _ := errorFor("resourceRead", errcode.New(errcode.Unauthenticated, "x"))
	if data, _ := json.Marshal(e.Data); string(data) != `{"resources":[]}` {
		t.Errorf("-32007 data %s, want the required resources list", data)
	}
}

// FuzzDecodeFrame checks that no frame panics the decoder, and that what
// it answers is a well-formed JSON-RPC error with a valid id.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}}`,
		`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"c","clientSeq":1,"action":{"type":"x"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`[{"jsonrpc":"2.0"}]`, `{`, ``, `null`, `"x"`, `{"id":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, id, werr := decodeFrame(data)
		if werr == nil {
			if m == nil || m.JSONRPC != "2.0" {
				t.Fatalf("decoded %q without jsonrpc 2.0", data)
			}
			if m.Method == "" && m.ID == nil {
				t.Fatalf("decoded %q as neither request nor response", data)
			}
			if m.Params != nil && firstByte(m.Params) != '{' {
				t.Fatalf("decoded %q with params %s", data, m.Params)
			}
			return
		}
		switch werr.Code {
		case CodeParseError, CodeInvalidRequest, CodeInvalidParams:
		default:
			t.Fatalf("%q: code %d", data, werr.Code)
		}
		out, err := encode(errorResponse{JSONRPC: jsonrpcVersion, ID: id, Error: werr})
		if err != nil || !json.Valid(out) {
			t.Fatalf("%q: the error response does not encode: %v %s", data, err, out)
		}
	})
}

// TestErrorForNeverAnswersAnEmptyMessage: a host error of any code whose
// message is empty (or only space) still goes out as a sentence that names
// the method and what kind of failure it was.
func TestErrorForNeverAnswersAnEmptyMessage(t *testing.T) {
	t.Parallel()
	for _, code := range []errcode.Code{
		errcode.Invalid, errcode.NotFound, errcode.PermissionDenied, errcode.AlreadyExists, errcode.Conflict,
		errcode.Unauthenticated, errcode.Unavailable, errcode.Unsupported,
	} {
		for _, err := range []error{
			errcode.New(code, ""),
			errcode.Wrap(code, errors.New("/secret/path: busy"), " "),
			fmt.Errorf("wrapped: %w", errcode.New(code, "")),
		} {
			e, internal := errorFor("resourceWrite", err)
			if internal || !strings.HasPrefix(e.Message, "resourceWrite ") || strings.Contains(e.Message, "secret") {
				t.Errorf("%v %q: answered %q (internal %v), want a sentence naming resourceWrite", code, err, e.Message, internal)
			}
		}
	}
	if e, _ := errorFor("resourceWrite", errcode.New(errcode.Unavailable, "")); !strings.Contains(e.Message, "try again") {
		t.Errorf("an empty Unavailable answers %q, which does not say to try again", e.Message)
	}
}

// decodeFrame decodes one text frame into a JSON-RPC message, reading it
// once. On failure it returns the error to answer and the id to answer it
// with (null when the id could not be read).
func decodeFrame(data []byte) (*message, json.RawMessage, *wireError) {
	m := &message{}
	if id, werr := readMessage(data, m); werr != nil {
		return nil, id, werr
	}
	return m, nil, nil
}

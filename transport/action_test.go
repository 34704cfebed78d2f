package transport

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agenthost/bots/engine"
)

// The action notification is written by hand; it must be what
// encoding/json writes for notification{"2.0", "action", envelope}, and
// an action that is not JSON must write nothing and fail, as it did.
func TestActionNotificationMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	if n := reflect.TypeFor[engine.Envelope]().NumField(); n != 5 {
		t.Fatalf("engine.Envelope has %d fields: encoder.action writes 5", n)
	}
	for _, env := range []engine.Envelope{
		{},
		{Channel: "ahp-catalog://bots", Action: json.RawMessage(`{"type":"catalog/botChanged","bot":{"id":"motion"}}`), ServerSeq: 42},
		{Channel: "ahp-chat:/a<b>&c\u2028", Action: json.RawMessage(" {\n \"type\" : \"x\", \"html\":\"<&>\" } "), ServerSeq: -1,
			Origin: &engine.Origin{ClientID: "c\"1\x00é", ClientSeq: 7}, RejectionReason: "no <access> \xff"},
		{Channel: "c", Action: json.RawMessage(`[1,2]`), Origin: &engine.Origin{}},
	} {
		want := getEncoder()
		if err := want.value(notification{JSONRPC: jsonrpcVersion, Method: "action", Params: &env}); err != nil {
			t.Fatal(err)
		}
		got := getEncoder()
		got.buf.WriteString("prefix")
		if err := got.action(&env); err != nil {
			t.Fatalf("%+v: %v", env, err)
		}
		if g, w := got.buf.String(), "prefix"+want.buf.String(); g != w {
			t.Errorf("%+v:\n got %s\nwant %s", env, g, w)
		}
		want.free()
		got.free()
	}
	for _, bad := range []json.RawMessage{{}, json.RawMessage(`{"type":`), json.RawMessage(`{} {}`)} {
		want := getEncoder()
		wantErr := want.value(notification{JSONRPC: jsonrpcVersion, Method: "action", Params: &engine.Envelope{Action: bad}})
		got := getEncoder()
		got.buf.WriteString("prefix")
		err := got.action(&engine.Envelope{Action: bad})
		if err == nil || wantErr == nil || got.buf.String() != "prefix" {
			t.Errorf("action %q: error %v (encoding/json: %v), buffer %q", bad, err, wantErr, got.buf.String())
		}
		want.free()
		got.free()
	}
}

package bot

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
)

var readParamsCases = []string{
	`{"channel":"ahp-root://","uri":"bot://motion"}`,
	` { "uri" : "bot://a" , "encoding" : "base64" } `,
	`{"URI":"bot://a","Uri":"bot://b","ENCODING":"utf-8"}`,
	`{}`, ` {} `, `{"x":"y"}`, `{"uri":"bot://ä"}`, "{\"uri\":\"\xff\"}",
	`{"uri":"a\"b"}`, `{"uri":"\u0062ot://a"}`, `{"ur\u0069":"bot://a"}`, `{"uri":1}`,
	`{"uri":null}`, `{"_meta":{}}`, `{"_META":"x"}`, `{"uri":"a"}x`, `{"uri":"a",}`,
	`{"uri" "a"}`, `{"uri":"a"`, `[]`, `null`, ``, `{"uri":"a"} {}`, "{\"uri\":\"a\tb\"}",
	`{"ſ":"x"}`, `{"uri":"a","x":{"y":1}}`, `{"uri":"a","uri":null}`, `{"encoding":5}`, `{"_meta":{"a":1e400}}`,
	`{"_meta":null,"uri":"\ud800x"}`, `{"chaNNel":"ahp-root://","encodinG":"base64"}`,
}

func TestReadParamsAgrees(t *testing.T) {
	t.Parallel()
	for _, s := range readParamsCases {
		checkReadParamsAgree(t, []byte(s))
	}
}

func FuzzReadParams(f *testing.F) {
	for _, s := range readParamsCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkReadParamsAgree(t, raw) })
}

// checkReadParamsAgree checks that readParams, in one pass, decodes what
// engine.DecodeParams (json.Unmarshal) decodes and fails as it fails, in the same
// words.
func checkReadParamsAgree(t *testing.T, raw []byte) {
	t.Helper()
	got, err := readParams(raw, "bot://a")
	var want ahp.ResourceReadParams
	wantErr := engine.DecodeParams(raw, &want)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("%q: error %v, DecodeParams %v", raw, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: read %+v, want %+v", raw, got, want)
	}
}

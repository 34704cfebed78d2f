package bot

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/bots/ahp"
)

var readParamsCases = []string{
	`{"channel":"ahp-root://","uri":"bot://motion"}`,
	` { "uri" : "bot://a" , "encoding" : "base64" } `,
	`{"URI":"bot://a","Uri":"bot://b","ENCODING":"utf-8"}`,
	`{}`, ` {} `, `{"x":"y"}`, `{"uri":"bot://ä"}`, "{\"uri\":\"\xff\"}",
	`{"uri":"a\"b"}`, `{"uri":"\u0062ot://a"}`, `{"ur\u0069":"bot://a"}`, `{"uri":1}`,
	`{"uri":null}`, `{"_meta":{}}`, `{"_META":"x"}`, `{"uri":"a"}x`, `{"uri":"a",}`,
	`{"uri" "a"}`, `{"uri":"a"`, `[]`, `null`, ``, `{"uri":"a"} {}`, "{\"uri\":\"a\tb\"}",
	`{"ſ":"x"}`, `{"uri":"a","x":{"y":1}}`,
}

func TestScanReadParamsAgrees(t *testing.T) {
	for _, s := range readParamsCases {
		checkReadParamsAgree(t, []byte(s))
	}
}

func FuzzScanReadParams(f *testing.F) {
	for _, s := range readParamsCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkReadParamsAgree(t, raw) })
}

// checkReadParamsAgree checks that what scanReadParams reads is what
// decodeParams decodes.
func checkReadParamsAgree(t *testing.T, raw []byte) {
	t.Helper()
	got, ok := scanReadParams(raw)
	var want ahp.ResourceReadParams
	err := decodeParams(raw, &want)
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("%q: scanned %+v, but decodeParams fails: %v", raw, got, err)
	}
	if got.Channel != want.Channel || got.URI != want.URI || got.Encoding != want.Encoding || want.Meta != nil {
		t.Fatalf("%q: scanned %+v, want %+v", raw, got, want)
	}
	if !json.Valid(raw) {
		t.Fatalf("%q: scanned invalid JSON", raw)
	}
}

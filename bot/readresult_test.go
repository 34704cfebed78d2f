package bot

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/record"
)

// A read's answer, written in one pass, is what encoding/json writes (HTML
// escaping off, as transport writes results) for the ResourceReadResult
// whose data is the record's JSON.
func TestReadResultIsTheRecordsJSONAsData(t *testing.T) {
	t.Parallel()
	for _, r := range []record.Record{
		{ID: "motion", Name: "Motion"},
		{ID: "x", Name: "<b>&\"quotes\"</b>\n\t\x00\u2028 é 日本", Labels: []string{"a", "<"},
			Description: "bad \xff utf-8", Connectors: map[string]string{"a": "connectors://c/d"}, Tools: []string{`t\`},
			Workspace: "/w/x", Owner: "user:soft", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)},
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		type withMeta struct {
			ahp.ResourceReadResult
			Meta map[string]bool `json:"_meta"`
		}
		if err := enc.Encode(withMeta{ahp.ResourceReadResult{Data: string(r.AppendJSON(nil)), Encoding: "utf-8", ContentType: contentType},
			map[string]bool{bundledMeta: false, mayWriteMeta: true}}); err != nil {
			t.Fatal(err)
		}
		wantB := bytes.TrimSuffix(want.Bytes(), []byte("\n"))
		a := &readResult{r: r, mayWrite: true}
		if got := a.AppendJSON([]byte("x")); !bytes.Equal(got, append([]byte("x"), wantB...)) {
			t.Errorf("AppendJSON\n got %s\nwant x%s", got, wantB)
		}
		if got, err := json.Marshal(a); err != nil || !bytes.Equal(got, wantB) {
			t.Errorf("json.Marshal\n got %s (%v)\nwant %s", got, err, wantB)
		}
	}
}

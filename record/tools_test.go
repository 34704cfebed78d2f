package record

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestToolsListIsKeptClearedByNullAndEmptyReadsAsAbsent(t *testing.T) {
	t.Parallel()
	r, err := mustParse(t, `{"name":"B","tools":["post_message","bots"]}`).Make("b")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Tools, []string{"post_message", "bots"}) {
		t.Fatalf("tools = %v", r.Tools)
	}
	data, _ := json.Marshal(r)
	var back Record
	if err := json.Unmarshal(data, &back); err != nil || !back.Equal(r) {
		t.Fatalf("JSON round trip: %s gives %+v (%v)", data, back, err)
	}
	kept, _ := mustParse(t, `{"color":"teal"}`).Apply(r)
	if !slices.Equal(kept.Tools, r.Tools) {
		t.Fatalf("an edit not naming tools changed them: %v", kept.Tools)
	}
	cleared, _ := mustParse(t, `{"tools":null}`).Apply(r)
	empty, _ := mustParse(t, `{"tools":[]}`).Apply(r)
	if cleared.Tools != nil || empty.Tools != nil {
		t.Fatalf("null gives %v and [] gives %v, want both absent", cleared.Tools, empty.Tools)
	}
}

func TestToolsListRefusesWhatNamesNoTool(t *testing.T) {
	t.Parallel()
	refuse(t, `{"tools":"bots"}`, "tools must be a list")
	refuse(t, `{"tools":[1]}`, "tools[0] must be a string")
	refuse(t, `{"tools":["Bad Name"]}`, `"Bad Name"`, "no tool name")
	refuse(t, `{"tools":["bots","bots"]}`, `names "bots" twice`)
}

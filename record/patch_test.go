package record

import (
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, body string) Patch {
	t.Helper()
	p, err := ParsePatch([]byte(body))
	if err != nil {
		t.Fatalf("ParsePatch(%s): %v", body, err)
	}
	return p
}

func refuse(t *testing.T, body string, wantInErr ...string) {
	t.Helper()
	_, err := ParsePatch([]byte(body))
	if err == nil {
		t.Fatalf("ParsePatch(%s) accepted it", body)
	}
	for _, w := range wantInErr {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("ParsePatch(%s) error %q does not name %q", body, err, w)
		}
	}
}

func TestMakeFromNameAloneGetsDefaultSession(t *testing.T) {
	t.Parallel()
	r, err := mustParse(t, `{"name":"Motion"}`).Make("motion")
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "motion" || r.Name != "Motion" || r.Session != DefaultSession {
		t.Fatalf("got %+v", r)
	}
}

func TestMakeRefusesBodyWithoutName(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{}`, `{"name":null}`, `{"description":"x"}`} {
		if _, err := mustParse(t, body).Make("motion"); err == nil || !strings.Contains(err.Error(), "name") {
			t.Errorf("Make(%s): %v, want an error naming name", body, err)
		}
	}
	refuse(t, `{"name":""}`, "name")
	refuse(t, `{"name":"   "}`, "name")
}

func TestParseRefusesUnknownKeyNamingIt(t *testing.T) {
	t.Parallel()
	refuse(t, `{"name":"M","harness":"x"}`, `"harness"`)
	refuse(t, `{"name":"M","chat":"x"}`, `"chat"`)
}

func TestParseIgnoresMetaKey(t *testing.T) {
	t.Parallel()
	mustParse(t, `{"name":"M","_meta":{"x":1}}`)
}

func TestParseRefusesBodyThatIsNotAnObject(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`[]`, `"x"`, `null`, `1`, ``, `{`, `{"name":"a"} {}`} {
		refuse(t, body)
	}
}

func TestParseRefusesWrongTypesNamingTheField(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`{"name":1}`:                   "name",
		`{"labels":"ci"}`:              "labels",
		`{"labels":["ci",2]}`:          "labels[1]",
		`{"description":true}`:         "description",
		`{"color":{}}`:                 "color",
		`{"connectors":["a"]}`:         "connectors",
		`{"connectors":{"a":1}}`:       `"a"`,
		`{"createdAt":5}`:              "createdAt",
		`{"updatedAt":"yesterday"}`:    "updatedAt",
		`{"session":["work"]}`:         "session",
		`{"owner":false}`:              "owner",
		`{"workspace":""}`:             "workspace",
		`{"provider":"two words"}`:     "provider",
		`{"template":"../etc/passwd"}`: "template",
	}
	for body, name := range cases {
		refuse(t, body, name)
	}
}

func TestParseRefusesColorThatIsNeitherNameNorHex(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"#fff", "2f6fdf", "Teal", "#2f6fdz", "#2f6fdf0", "", "navy"} {
		refuse(t, `{"color":"`+c+`"}`, "color")
	}
}

func TestParseKeepsHexColorInLowerCase(t *testing.T) {
	t.Parallel()
	if p := mustParse(t, `{"color":"#2F6FDF"}`); p.Color.V != "#2f6fdf" {
		t.Fatalf("color %q", p.Color.V)
	}
	for _, c := range Colors() {
		if p := mustParse(t, `{"color":"`+c+`"}`); p.Color.V != c {
			t.Fatalf("color %q read as %q", c, p.Color.V)
		}
	}
}

func TestVocabulariesAreTheSpecs(t *testing.T) {
	t.Parallel()
	if n := len(Bodies()); n != 15 {
		t.Fatalf("%d bodies", n)
	}
	if n := len(Colors()); n != 11 || DefaultColor() != "red" {
		t.Fatalf("%d colours, first %s", n, DefaultColor())
	}
	for range 100 {
		b := RandomBody()
		found := false
		for _, s := range Bodies() {
			found = found || s == b
		}
		if !found {
			t.Fatalf("random body %q is not a suggestion", b)
		}
	}
}

func TestParseKeepsAnyBodyWordButRefusesNonWords(t *testing.T) {
	t.Parallel()
	if p := mustParse(t, `{"body":"octopus"}`); p.Body.V != "octopus" {
		t.Fatalf("body %q", p.Body.V)
	}
	for _, b := range []string{"", "two words", "9lives", "a/b", strings.Repeat("a", 41)} {
		refuse(t, `{"body":"`+b+`"}`, "body")
	}
}

func TestSlugRules(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "motion", "m-1", strings.Repeat("a", 40)} {
		if err := CheckSlug(ok); err != nil {
			t.Errorf("CheckSlug(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Motion", "1a", "-a", "a_b", "a b", "a/b", "..", strings.Repeat("a", 41), "é"} {
		err := CheckSlug(bad)
		if err == nil {
			t.Errorf("CheckSlug(%q) accepted it", bad)
		} else if !strings.Contains(err.Error(), `"`+bad+`"`) && bad != "" {
			t.Errorf("CheckSlug(%q) error %q does not name it", bad, err)
		}
	}
}

func TestSessionNameRules(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"work", "w-{turn}", "{turn}", "a{turn}b", "review-2"} {
		mustParse(t, `{"session":"`+ok+`"}`)
	}
	for _, bad := range []string{"Work", "1st", "", "{turn", "a b", "-x", strings.Repeat("a", 41), "{Turn}"} {
		refuse(t, `{"session":"`+bad+`"}`, "session")
	}
}

func TestFillSessionNameTakesTurnID(t *testing.T) {
	t.Parallel()
	got, err := FillSessionName("w-{turn}", "01jz")
	if err != nil || got != "w-01jz" {
		t.Fatalf("got %q, %v", got, err)
	}
	if got, _ := FillSessionName("", "x"); got != "work" {
		t.Fatalf("empty name filled as %q", got)
	}
	if _, err := FillSessionName("w-{turn}", "01JZ"); err == nil {
		t.Fatal("a filled name that is no session name was accepted")
	}
}

func TestConnectorRules(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `{"connectors":{"work":"connectors://ap-resend/account-123"}}`)
	if p.Connectors.V["work"] != "connectors://ap-resend/account-123" {
		t.Fatalf("connectors %v", p.Connectors.V)
	}
	refuse(t, `{"connectors":{"Work":"connectors://a/b"}}`, `"Work"`)
	refuse(t, `{"connectors":{"work":"https://a/b"}}`, `"work"`)
	refuse(t, `{"connectors":{"work":"connectors://a"}}`, `"work"`)
	refuse(t, `{"connectors":{"work":"connectors:///b"}}`, `"work"`)
	refuse(t, `{"connectors":"x"}`, "connectors")
	a, id, err := ParseConnector("connectors://ap-resend/account-123")
	if err != nil || a != "ap-resend" || id != "account-123" {
		t.Fatalf("ParseConnector: %q %q %v", a, id, err)
	}
}

func TestOwnerForms(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"user:soft", "team:backend", "project:shop:website", "root:host-1"} {
		mustParse(t, `{"owner":"`+ok+`"}`)
	}
	for _, bad := range []string{"soft", "user:", "group:x", "project:shop", "project::x", "user:a b"} {
		refuse(t, `{"owner":"`+bad+`"}`, "owner")
	}
}

func TestMakeRefusesBodyNamingAnotherID(t *testing.T) {
	t.Parallel()
	if _, err := mustParse(t, `{"id":"other","name":"M"}`).Make("motion"); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("got %v", err)
	}
	if _, err := mustParse(t, `{"id":"motion","name":"M"}`).Make("motion"); err != nil {
		t.Fatalf("same id refused: %v", err)
	}
}

func TestMakeReadsButNeverObeysTimes(t *testing.T) {
	t.Parallel()
	r, err := mustParse(t, `{"name":"M","createdAt":"2020-01-01T00:00:00.000Z","updatedAt":"2020-01-01T00:00:00.000Z"}`).Make("motion")
	if err != nil {
		t.Fatal(err)
	}
	if !r.CreatedAt.IsZero() || !r.UpdatedAt.IsZero() {
		t.Fatalf("times obeyed: %v %v", r.CreatedAt, r.UpdatedAt)
	}
}

func sample() Record {
	return Record{
		ID: "motion", Name: "Motion", Labels: []string{"ci"}, Description: "d", Body: "robot",
		Color: "teal", Provider: "claude", Model: "m", Session: "work", Workspace: "/w/motion",
		Owner: "user:soft", Connectors: map[string]string{"a": "connectors://x/y"},
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

func TestEditLeavesWhatItDoesNotNameAndClearsNull(t *testing.T) {
	t.Parallel()
	r, err := mustParse(t, `{"provider":"gemini","model":null,"labels":null,"connectors":null}`).Apply(sample())
	if err != nil {
		t.Fatal(err)
	}
	want := sample()
	want.Provider, want.Model, want.Labels, want.Connectors = "gemini", "", nil, nil
	if !r.Equal(want) {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
}

func TestEditNullSessionGoesBackToWork(t *testing.T) {
	t.Parallel()
	s := sample()
	s.Session = "x-{turn}"
	r, err := mustParse(t, `{"session":null}`).Apply(s)
	if err != nil || r.Session != "work" {
		t.Fatalf("session %q, %v", r.Session, err)
	}
}

func TestEditCannotClearName(t *testing.T) {
	t.Parallel()
	if _, err := mustParse(t, `{"name":null}`).Apply(sample()); err == nil {
		t.Fatal("name cleared")
	}
}

func TestEditNeverMovesOwnerOrWorkspace(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"owner":"user:other"}`, `{"owner":null}`, `{"workspace":"/w/other"}`, `{"workspace":null}`} {
		if _, err := mustParse(t, body).Apply(sample()); err == nil {
			t.Errorf("Apply(%s) moved it", body)
		}
	}
	for _, body := range []string{`{"owner":"user:soft"}`, `{"workspace":"/w/motion"}`} {
		if _, err := mustParse(t, body).Apply(sample()); err != nil {
			t.Errorf("Apply(%s) refused naming the same value: %v", body, err)
		}
	}
	root := sample()
	root.Owner = "root:old-name"
	if _, err := mustParse(t, `{"owner":"root:new-name"}`).Apply(root); err != nil {
		t.Errorf("any root: owner is this host, but: %v", err)
	}
}

func TestApplyDoesNotShareSlicesWithInput(t *testing.T) {
	t.Parallel()
	in := sample()
	out, err := mustParse(t, `{}`).Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	out.Labels[0] = "changed"
	out.Connectors["a"] = "changed"
	if in.Labels[0] != "ci" || in.Connectors["a"] != "connectors://x/y" {
		t.Fatal("Apply's result shares memory with its input")
	}
}

func TestParseRefusesOversizedBody(t *testing.T) {
	t.Parallel()
	refuse(t, `{"description":"`+strings.Repeat("x", MaxBody)+`"}`, "larger")
}

func TestRecordJSONRoundTrip(t *testing.T) {
	t.Parallel()
	r := sample()
	r.CreatedAt = time.Date(2026, 10, 11, 9, 0, 0, 0, time.UTC)
	data, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"createdAt":"2026-10-11T09:00:00.000Z"`) {
		t.Fatalf("time written as %s", data)
	}
	var back Record
	if err := back.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(r) {
		t.Fatalf("round trip\n got %+v\nwant %+v", back, r)
	}
	// What a read answers is a body a write takes back.
	if _, err := ParsePatch(data); err != nil {
		t.Fatalf("a read answer is not a valid body: %v", err)
	}
}

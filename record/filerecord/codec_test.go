package filerecord_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/frontmatter"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
	"github.com/agenthost/bots/record/recordtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// specExample is the record file of BOTS.md, "The record file", byte for
// byte: the golden file must never drift from it.
const specExample = `---
id: motion
labels:
- review
- ci
body: robot
color: teal
provider: claude
model: claude-sonnet-5
session: work
workspace: /srv/bots/motion
owner: user:soft
createdAt: 2026-10-11T09:00:00.000Z
updatedAt: 2026-10-11T09:00:00.000Z
---
`

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestFileFormatMatchesSpecExample(t *testing.T) {
	t.Parallel()
	r := smallBot("motion")
	got := filerecord.Encode(r)
	golden(t, "motion.md", got)
	if string(got) != specExample {
		t.Fatalf("Encode differs from the spec's example\n got:\n%s\nwant:\n%s", got, specExample)
	}
	back, err := filerecord.Decode("motion", []byte(specExample))
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(r) {
		t.Fatalf("Decode(spec example) = %+v, want %+v", back, r)
	}
}

func TestFileOfBotWithEveryFieldKeepsPersonaInFile(t *testing.T) {
	t.Parallel()
	r := recordtest.Sample("motion")
	got := filerecord.Encode(r)
	golden(t, "every-field.md", got)
	back, err := filerecord.Decode("motion", got)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(r) {
		t.Fatalf("round trip\n got: %+v\nwant: %+v", back, r)
	}
}

func TestStringsYAMLWouldMisreadAreQuoted(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"no", "Yes", "on", "OFF", "y", "null", "~", "true", "1e3", "0x10", ".inf", "123",
		"2026-10-11", "a: b", "a #b", "- x", "[x]", "{x}", "*x", "&x", "!x", "%x", "@x", "`x`",
		"'x'", `"x"`, "x:", " x", "x ", "a  b", "line\nline", "tab\there", "\x00", "\u2028", "\ufeff",
		"é", "😀", "\u0085", "#x", "?x", "|x", ">x", ",x",
	} {
		// A label must not be blank; a description may be.
		r := record.Record{ID: "motion", Description: s, Labels: []string{"x" + s}}
		data := filerecord.Encode(r)
		back, err := filerecord.Decode("motion", data)
		if err != nil {
			t.Errorf("%q: %v\n%s", s, err, data)
			continue
		}
		if back.Description != s || len(back.Labels) != 1 || back.Labels[0] != "x"+s {
			t.Errorf("%q read back as %q and %q\n%s", s, back.Description, back.Labels, data)
		}
	}
}

func TestInstructionsGoBelowTheFrontmatter(t *testing.T) {
	t.Parallel()
	r := record.Record{ID: "motion", Name: "Motion", Instructions: "You review.\n---\nStill you."}
	data := filerecord.Encode(r)
	want := "---\nid: motion\nname: Motion\nsession: work\n---\n\nYou review.\n---\nStill you.\n"
	if string(data) != want {
		t.Fatalf("Encode:\n%s\nwant:\n%s", data, want)
	}
	for _, in := range []string{"", "\n", "x\n", "\nx", "\n\n", "x\r"} {
		r.Instructions = in
		back, err := filerecord.Decode("motion", filerecord.Encode(r))
		if err != nil || back.Instructions != in {
			t.Errorf("instructions %q read back as %q, %v", in, back.Instructions, err)
		}
	}
}

func TestMissingSessionReadsAsDefault(t *testing.T) {
	t.Parallel()
	r, err := filerecord.Decode("motion", []byte("---\nid: motion\nowner: user:soft\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Session != record.DefaultSession || r.Name != "" {
		t.Fatalf("session %q name %q", r.Session, r.Name)
	}
}

func TestFrontmatterWithoutIDReadsAsItsFolder(t *testing.T) {
	t.Parallel()
	r, err := filerecord.Decode("motion", []byte("---\nbody: robot\n---\n"))
	if err != nil || r.ID != "motion" || r.Body != "robot" {
		t.Fatalf("%+v, %v", r, err)
	}
}

func TestDecodeRefusesWhatIsNotABotRecord(t *testing.T) {
	t.Parallel()
	bomb := "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n---\n"
	huge := "---\nid: motion\ndescription: " + strings.Repeat("x", frontmatter.MaxSize) + "\n---\n"
	for _, tc := range []struct {
		name, id, file, says string
	}{
		{"OtherID", "motion", "---\nid: other\n---\n", `names id "other" but the file is in the folder of "motion"`},
		{"AliasBomb", "motion", bomb, "anchors and aliases are not allowed"},
		{"Oversized", "motion", huge, "larger than 1048576 bytes"},
		{"BrokenYAML", "motion", "---\nid: [motion\n---\n", "not a bot record"},
		{"RepeatedKey", "motion", "---\nid: motion\nid: motion\n---\n", "already defined"},
		{"WrongType", "motion", "---\nlabels: robot\n---\n", "labels must be a list of strings"},
		{"NumberForString", "motion", "---\nmodel: 5\n---\n", "model must be a string, not a number"},
		{"BadColour", "motion", "---\ncolor: mauve\n---\n", `color "mauve" is neither`},
		{"UnknownKey", "motion", "---\nmood: sunny\n---\n", `unknown key "mood"`},
		{"BadTime", "motion", "---\ncreatedAt: yesterday\n---\n", "createdAt"},
		{"NoFrontmatter", "motion", "id: motion\n", "has no frontmatter"},
		{"Unclosed", "motion", "---\nid: motion\n", "never closed"},
		{"NotAMap", "motion", "---\n- motion\n---\n", "not a bot record"},
		{"BadFolderName", "Motion", "---\n---\n", "folder name is no bot id"},
		{"InstructionsTwice", "motion", "---\ninstructions: a\n---\nb\n", "both in the frontmatter and below it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := filerecord.Decode(tc.id, []byte(tc.file))
			if err == nil {
				t.Fatal("Decode accepted it")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %q does not say %q", err, tc.says)
			}
			if strings.Contains(err.Error(), "\n") || len(err.Error()) > 300 {
				t.Fatalf("error is not one short sentence: %q", err)
			}
		})
	}
}

// validRecord builds a record from fuzzed strings, keeping each field only
// when it passes the field's check, as a record the host keeps does. A
// record holds text: bytes that are not UTF-8 become U+FFFD first.
func validRecord(s1, s2, s3, s4 string, ms int64) record.Record {
	s1, s2 = strings.ToValidUTF8(s1, "\uFFFD"), strings.ToValidUTF8(s2, "\uFFFD")
	s3, s4 = strings.ToValidUTF8(s3, "\uFFFD"), strings.ToValidUTF8(s4, "\uFFFD")
	keep := func(key string, v any) bool {
		_, err := record.PatchFromMap(map[string]any{key: v})
		return err == nil
	}
	str := func(key, v string) string {
		if keep(key, v) {
			return v
		}
		return ""
	}
	r := record.Record{ID: "motion"}
	r.Name = str("name", s1)
	r.Description = str("description", s2)
	r.Instructions = s4
	r.Body = str("body", s3)
	r.Color, _ = record.NormalizeColor(s2) // a record keeps a hex colour in lower case
	r.Template = str("template", s1)
	r.Provider = str("provider", s2)
	r.Model = str("model", s3)
	r.Preset = str("preset", s4)
	r.Workspace = str("workspace", s1+s2)
	r.Session = str("session", s3)
	r.Computer = str("computer", s4)
	r.Owner = str("owner", s1)
	for _, l := range strings.Split(s3+","+s4, ",") {
		if keep("labels", []any{l}) {
			r.Labels = append(r.Labels, l)
		}
	}
	for _, alias := range []string{s1, s2, "mail"} {
		ref := "connectors://" + s3 + "/" + s4
		if !keep("connectors", map[string]any{alias: ref}) {
			ref = "connectors://resend/account-1"
		}
		if keep("connectors", map[string]any{alias: ref}) {
			if r.Connectors == nil {
				r.Connectors = map[string]string{}
			}
			r.Connectors[alias] = ref
		}
	}
	// Times a record keeps: milliseconds, years 1 to 9999.
	const span = 253402300799999 - (-62135596800000)
	if ms != 0 {
		at := time.UnixMilli((ms%span+span)%span - 62135596800000).UTC()
		r.CreatedAt, r.UpdatedAt = at, at.Add(time.Duration(ms%1000)*time.Millisecond)
	}
	return r
}

// FuzzRoundTrip checks that Decode(Encode(r)) equals r for any valid
// record, and that Decode never panics on any bytes (and what it accepts
// round-trips too).
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte(specExample), "Motion", "Reads pull requests.", "robot", "You review.", int64(1791709200000))
	f.Add(filerecord.Encode(recordtest.Sample("motion")), "no", "y", "a: b", "- x", int64(-1))
	f.Fuzz(func(t *testing.T, file []byte, s1, s2, s3, s4 string, ms int64) {
		if r, err := filerecord.Decode("motion", file); err == nil {
			roundTrip(t, r)
		}
		roundTrip(t, validRecord(s1, s2, s3, s4, ms))
	})
}

func roundTrip(t *testing.T, r record.Record) {
	t.Helper()
	data := filerecord.Encode(r)
	back, err := filerecord.Decode(r.ID, data)
	if err != nil {
		t.Fatalf("Decode(Encode(%+v)): %v\n%s", r, err, data)
	}
	if !back.Equal(r) {
		t.Fatalf("round trip\n got: %+v\nwant: %+v\nfile:\n%s", back, r, data)
	}
	if err := filerecord.FastPathAgrees(data); err != nil {
		t.Fatalf("%v\nfile:\n%s", err, data)
	}
}

func TestBotFileWithCRLFLineEndingsReadsWithoutCarriageReturns(t *testing.T) {
	t.Parallel()
	lf := "---\nid: motion\nname: Motion\ndescription: Reads pull requests.\nlabels:\n- review\ncolor: teal\nowner: user:soft\n---\n\nYou review pull requests.\n\nSay what would break.\n"
	crlf := strings.ReplaceAll(lf, "\n", "\r\n")
	want, err := filerecord.Decode("motion", []byte(lf))
	if err != nil {
		t.Fatal(err)
	}
	got, err := filerecord.Decode("motion", []byte(crlf))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) || strings.ContainsRune(got.Instructions, '\r') {
		t.Fatalf("CRLF file read as %+v\nwant %+v", got, want)
	}
	if got.Instructions != "You review pull requests.\n\nSay what would break." {
		t.Fatalf("instructions %q", got.Instructions)
	}
	dir := t.TempDir()
	writeFile(t, botFile(dir, "motion"), crlf)
	e, err := open(t, dir, nil).Get(t.Context(), "motion")
	if err != nil || e.Record.Instructions != want.Instructions {
		t.Fatalf("loaded %q, %v", e.Record.Instructions, err)
	}
}

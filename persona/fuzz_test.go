package persona

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/agenthost/bots/internal/frontmatter"
)

// FuzzRead checks that Read never panics, and that the quick frontmatter
// scanner answers exactly what the YAML decoder answers whenever it answers.
func FuzzRead(f *testing.F) {
	for _, s := range readSeeds {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, src []byte, body bool) {
		m := InSection
		if body {
			m = InBody
		}
		p, err := Read(src, m)
		if err != nil {
			return
		}
		doc, err := frontmatter.Split(src)
		if err != nil {
			t.Fatalf("Read accepted a document Split refuses: %v", err)
		}
		if name, desc, ok := scanFront(doc.Front); ok {
			dm, err := frontmatter.Decode(doc.Front)
			if err != nil {
				t.Fatalf("the scanner read %q, the decoder refuses it: %v", doc.Front, err)
			}
			dn, err1 := textValue(dm, "name")
			dd, err2 := textValue(dm, "description")
			if err1 != nil || err2 != nil || dn != name || dd != desc {
				t.Fatalf("front %q: scanner read (%q, %q), decoder (%q, %q, %v, %v)", doc.Front, name, desc, dn, dd, err1, err2)
			}
		}
		if again := Normalize(p); again != p {
			t.Fatalf("Read answered parts that are not normalised: %#v", p)
		}
	})
}

// FuzzEdit checks Edit's contract on any document Read accepts and any parts
// CheckInstructions passes: Read gives the parts back, every byte outside
// our parts survives, and editing to what Read answers changes nothing.
func FuzzEdit(f *testing.F) {
	for i, s := range readSeeds {
		n := editSeeds[i%len(editSeeds)]
		f.Add([]byte(s), n.Name, n.Description, n.Instructions, i%3 == 0)
	}
	f.Fuzz(func(t *testing.T, src []byte, name, desc, instr string, body bool) {
		m := InSection
		if body {
			m = InBody
		}
		cur, err := Read(src, m)
		if err != nil {
			return
		}
		same, err := Edit(src, cur, m)
		if err != nil || !bytes.Equal(same, src) {
			t.Fatalf("editing to what Read answers changed the file (err %v):\n%q\n%q", err, src, same)
		}
		p := Parts{name, desc, instr}
		if CheckInstructions(instr, m) != nil || !utf8.ValidString(name) || !utf8.ValidString(desc) {
			if _, err := Edit(src, p, m); err == nil {
				t.Fatalf("Edit took parts it must refuse: %#v", p)
			}
			return
		}
		out, err := Edit(src, p, m)
		if errors.Is(err, errUneditable) {
			if !uneditableFront(t, src) {
				t.Fatalf("Edit called a plain block frontmatter uneditable:\n%q", src)
			}
			return
		}
		if errors.Is(err, frontmatter.ErrTooLarge) {
			return
		}
		if err != nil {
			t.Fatalf("Edit(%q, %#v): %v", src, p, err)
		}
		got, err := Read(out, m)
		if err != nil {
			t.Fatalf("Read of the edit %q: %v", out, err)
		}
		if want := Normalize(p); got != want {
			t.Fatalf("Read of the edit answered %#v, want %#v\nsrc %q\nout %q", got, want, src, out)
		}
		checkSurvives(t, src, out, m)
	})
}

// uneditableFront reports whether a frontmatter is one Edit may refuse to
// change in place: one that is not plainly a block mapping of keys at
// column one. It is judged from the text alone, apart from Edit's code: a
// line starting with a flow collection, a complex key, a tag, an anchor, an
// alias, a directive, a document marker (--- with text after it is not
// the closing delimiter) or a ":" whose key is on an earlier line, or a
// first entry that is
// indented.
func uneditableFront(t *testing.T, src []byte) bool {
	doc, _ := frontmatter.Split(src)
	first := true
	for _, line := range strings.Split(string(unixBreaks(doc.Front)), "\n") {
		t := strings.TrimLeft(line, " \t")
		if t == "" || t[0] == '#' {
			continue
		}
		if (first && t != line) || t[0] == ':' {
			return true
		}
		first = false
		if line != t {
			continue
		}
		if strings.ContainsRune("{[?!&*%.:", rune(line[0])) || strings.HasPrefix(line, "---") {
			return true
		}
	}
	return false
}

// checkSurvives checks that every line of src outside our parts is in out,
// in order. Our parts are: in the frontmatter, the lines of a name or
// description entry, from its key line up to the next top-level key as the
// YAML parser places them; in the body, the Instructions section's text (or
// the whole body in InBody mode).
func checkSurvives(t *testing.T, src, out []byte, m Mode) {
	t.Helper()
	sdoc, _ := frontmatter.Split(src)
	odoc, err := frontmatter.Split(out)
	if err != nil {
		t.Fatalf("split the edit: %v", err)
	}
	ours := ourLines(t, sdoc.Front)
	var kept [][]byte
	for i, l := range yamlLines(sdoc.Front) {
		if !ours[i] {
			kept = append(kept, sdoc.Front[l.start:l.end])
		}
	}
	var outFront [][]byte
	for _, l := range yamlLines(odoc.Front) {
		outFront = append(outFront, odoc.Front[l.start:l.end])
	}
	if missing := notSubsequence(kept, outFront); missing != nil {
		t.Fatalf("frontmatter line %q of the source is missing from the edit\nsrc %q\nout %q", missing, src, out)
	}
	if m == InBody {
		return
	}
	s, ok := findSection(sdoc.Body)
	if !ok {
		if !bytes.HasPrefix(odoc.Body, sdoc.Body) {
			t.Fatalf("the body before the appended section changed\nsrc %q\nout %q", src, out)
		}
		return
	}
	o, ok := findSection(odoc.Body)
	if !ok {
		t.Fatalf("the edit lost the Instructions section\nsrc %q\nout %q", src, out)
	}
	if !bytes.Equal(sdoc.Body[:s.headEnd], odoc.Body[:o.headEnd]) {
		t.Fatalf("the body up to the Instructions heading changed\nsrc %q\nout %q", src, out)
	}
	if !bytes.Equal(sdoc.Body[s.contentEnd:], odoc.Body[o.contentEnd:]) {
		t.Fatalf("the body after the Instructions section changed\nsrc %q\nout %q", src, out)
	}
}

// ourLines marks the lines of a frontmatter that belong to its name and
// description entries, per the YAML parser's own key positions.
func ourLines(t *testing.T, front []byte) map[int]bool {
	f, err := parser.ParseBytes(unixBreaks(front), 0)
	if err != nil {
		t.Fatalf("parse a frontmatter Read took: %v", err)
	}
	if len(f.Docs) == 0 {
		return nil
	}
	mn, ok := f.Docs[0].Body.(*ast.MappingNode)
	if !ok {
		return nil
	}
	ours := map[int]bool{}
	n := len(yamlLines(front))
	for i, mv := range mn.Values {
		k := mv.Key.GetToken()
		if k.Value != "name" && k.Value != "description" {
			continue
		}
		end := n
		if i+1 < len(mn.Values) {
			end = mn.Values[i+1].Key.GetToken().Position.Line - 1
		}
		for l := k.Position.Line - 1; l < end; l++ {
			ours[l] = true
		}
	}
	return ours
}

// notSubsequence returns the first line of want that is not found, in order,
// in have, or nil.
func notSubsequence(want, have [][]byte) []byte {
	j := 0
	for _, w := range want {
		for j < len(have) && !bytes.Equal(have[j], w) {
			j++
		}
		if j == len(have) {
			return append([]byte{}, w...)
		}
		j++
	}
	return nil
}

var editSeeds = []Parts{
	{"Motion", "Reads pull requests and says what would break.", "You review pull requests."},
	{"a: b", "line one\nline two", "  indented\r\nsecond\r\n"},
	{"", "", ""},
	{"#hash", `"quoted" and 'single'`, "---\nlooks like a frontmatter"},
	{"true", "null", "### a subheading is refused"},
	{"tab\there", "\x00\x7f\u0085\u2028\ufeff", "# one hash is fine"},
	{" leading space", "trailing space ", "text"},
	{"多言語", "emoji 😀", "é"},
}

var readSeeds = []string{
	"",
	"---\nname: Motion\ndescription: Reads pull requests and says what would break.\n---\n## Instructions\nYou review pull requests. Say what would break, in one paragraph.\n## How you work\nThis file is your rules.\n",
	"---\r\nname: Motion\r\ndescription: x\r\n---\r\n## Instructions\r\nDo it.\r\n## Next\r\n",
	"---\n# a comment\nname: Motion # the bot's name\ntools: [read, write]\nmodel: gpt\ndescription: |\n  multi\n  line\n\n# trailing comment\nhandoffs:\n  - label: x\n    agent: y\n---\nbefore\n## Instructions\n\nold\n\n## After\nafter\n",
	"no frontmatter at all\n## Other\ntext",
	"---\n---\n",
	"---\n{name: flow}\n---\nbody",
	"---\n\"name\": quoted key\n'description': single\n---\n",
	"---\nname:\n  folded\n  plain\ndescription: >-\n  folded\n  block\n---\n",
	"---\nname: \"a\n  b\"\nother: 1\n---\n",
	"---\nname: 2024\ndescription: 1.10\n---\n",
	"---\nname: [a]\n---\n",
	"---\nname: a\n...\n---\n",
	"## Instructions",
	"## Instructions\r\n  text  \r\n",
	"---\nx: 1\n---\n## instructions\nlower case heading\n### sub\nmore\n",
	"---\nname: a\rdescription: b\r---\n",
	"---\nname: a\n---\n---\nbody starting with a delimiter\n",
	"---\nname: 'it''s'\ndescription: \"esc \\\" \\n\"\n---\n",
	"---\n? name\n: complex\n---\n",
	"---\nname: a\n  # indented comment\nother: b\n---\n",
	"---\nname: Motion\ntools: [read, 'search', \"fetch\"]\nmodel: gpt-5\ntemperature: 0.2\n---\n## Instructions\nx\n",
}

// FuzzScalar checks the YAML a value is written as: encodeScalar's text reads
// back as exactly the value, by the decoder and the quick scanner alike, and
// a line "key: <text>" the scanner reads, it reads as the decoder does.
func FuzzScalar(f *testing.F) {
	for _, p := range editSeeds {
		f.Add(p.Name)
		f.Add(p.Description)
	}
	for _, s := range []string{"a #b", "a: b", "a:b", "it's", "say \"hi\"", "a, b", "a - b", "Nan", "y", "~", "a\tb", "a  b", "'q'", `"q"  # c`, "é", "a|b>c", "[read, 'search', \"x\"]", "[]", "[ a , b ]", "[a,]", "[a b]", "0.2", "1e5", "0x", "0b2", "1_000", "2024-01-01", "gpt-5", "[1, 2.5, true, null]", "[a, [b]]", "['a''b']"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if strings.ContainsAny(v, "\n\r") {
			// The raw line check below needs one line; the encoder is
			// checked with the line breaks escaped.
			v2 := strings.NewReplacer("\n", " ", "\r", " ").Replace(v)
			checkRawLine(t, v2)
		} else {
			checkRawLine(t, v)
		}
		if !utf8.ValidString(v) {
			return
		}
		front := []byte("name: " + encodeScalar(v) + "\n")
		m, err := frontmatter.Decode(front)
		if err != nil {
			t.Fatalf("encoded %q as %q, which does not decode: %v", v, front, err)
		}
		if got, _ := m["name"].(string); got != v {
			t.Fatalf("encoded %q as %q, which decodes to %#v", v, front, m["name"])
		}
		if n, _, ok := scanFront(front); ok && n != v {
			t.Fatalf("encoded %q as %q, which the scanner reads as %q", v, front, n)
		}
	})
}

// checkRawLine checks the scanner against the decoder on "name: <v>", and
// on "tools: <v>", a key not ours, whose value need only decode.
func checkRawLine(t *testing.T, v string) {
	t.Helper()
	front := []byte("name: " + v + "\n")
	if n, _, ok := scanFront(front); ok {
		m, err := frontmatter.Decode(front)
		if err != nil {
			t.Fatalf("the scanner read %q, the decoder refuses it: %v", front, err)
		}
		if dn, err := textValue(m, "name"); err != nil || dn != n {
			t.Fatalf("%q: the scanner read %q, the decoder %q (%v)", front, n, dn, err)
		}
	}
	front = []byte("tools: " + v + "\nname: n\n")
	if n, _, ok := scanFront(front); ok {
		m, err := frontmatter.Decode(front)
		if err != nil {
			t.Fatalf("the scanner read %q, the decoder refuses it: %v", front, err)
		}
		if dn, err := textValue(m, "name"); err != nil || dn != n {
			t.Fatalf("%q: the scanner read %q, the decoder %q (%v)", front, n, dn, err)
		}
	}
}

package filerecord

import (
	"reflect"
	"testing"

	"github.com/agenthost/bots/internal/frontmatter"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/recordtest"
)

func TestFastDecodeReadsWhatEncodeWrites(t *testing.T) {
	data := Encode(recordtest.Sample("motion"))
	doc, err := frontmatter.Split(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decodeFast(doc.Front); !ok {
		t.Fatalf("the fast path refused a file Encode wrote:\n%s", data)
	}
	agree(t, doc.Front)
}

// agree fails when the fast path reads front differently from the YAML
// decoder.
func agree(t *testing.T, front []byte) {
	t.Helper()
	fast, ok := decodeFast(front)
	if !ok {
		return
	}
	slow, err := frontmatter.Decode(front)
	if err != nil {
		t.Fatalf("the fast path read what the YAML decoder refuses (%v):\n%q", err, front)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("the fast path and the YAML decoder differ on\n%q\nfast: %#v\nyaml: %#v", front, fast, slow)
	}
}

// FuzzFastDecodeAgreesWithYAML holds the fast path to the YAML decoder:
// whatever it reads, the YAML decoder reads the same.
func FuzzFastDecodeAgreesWithYAML(f *testing.F) {
	for _, s := range []string{
		"id: motion\nlabels:\n- review\n- ci\nbody: robot\n",
		"connectors:\n  mail: connectors://resend/account-123\n  \"no\": connectors://a/b\n",
		"description: \"a \\\"b\\\" \\\\ \\n\\t\\r \\u2028 \\U0001F600 é\"\n",
		"name: a:b c/d e@f g+h i-j k.l m_n\n",
		"createdAt: 2026-10-11T09:00:00.000Z\n",
		"name: \"no\"\nmodel: \"1e3\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, front []byte) { agree(t, front) })
}

func TestFastPathKnowsEveryRecordKey(t *testing.T) {
	for _, k := range record.Keys() {
		if got, ok := recordKey([]byte(k)); !ok || got != k {
			t.Errorf("recordKey(%q) = %q, %v", k, got, ok)
		}
	}
}

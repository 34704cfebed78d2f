package filerecord

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/agenthost/bots/internal/frontmatter"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/recordtest"
)

func TestFastDecodeReadsWhatEncodeWrites(t *testing.T) {
	t.Parallel()
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
	d := newDecoder() // one decoder for every input, as a load's reader
	f.Fuzz(func(t *testing.T, front []byte) {
		agree(t, front)
		want, _ := decodeFast(front)
		got, _ := d.fast(front)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("a decoder that read other files before reads\n%q\nas %#v, a new one as %#v", front, got, want)
		}
		clear(d.front)
	})
}

func TestADecoderReadsEachFileAsANewOneWould(t *testing.T) {
	t.Parallel()
	var files [][]byte
	for i := range 3 {
		r := recordtest.Sample(fmt.Sprintf("bot-%d", i))
		files = append(files, Encode(r))
		r.Model, r.Labels, r.Body = "\"quoted\"", []string{"robot", "ci"}, "review"
		files = append(files, Encode(r))
	}
	files = append(files, []byte("---\nbody: \"robot\"\nmodel: robot\nlabels:\n- \"ci\"\n---\n"))
	d := newDecoder()
	for range 2 {
		for _, data := range files {
			doc, err := frontmatter.Split(data)
			if err != nil {
				t.Fatal(err)
			}
			id, _ := decodeFast(doc.Front)
			slug, _ := id["id"].(string)
			if slug == "" {
				slug = "motion"
			}
			want, wantErr := newDecoder().decode(slug, data)
			got, err := d.decode(slug, data)
			if !reflect.DeepEqual(got, want) || (err == nil) != (wantErr == nil) {
				t.Fatalf("a reused decoder read\n%s\nas %#v (%v), a new one as %#v (%v)", data, got, err, want, wantErr)
			}
		}
	}
}

func TestBotsThatRepeatAValueShareOneString(t *testing.T) {
	t.Parallel()
	d := newDecoder()
	a, err := d.decode("a", Encode(recordtest.Sample("a")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.decode("b", Encode(recordtest.Sample("b")))
	if err != nil {
		t.Fatal(err)
	}
	if a.Model == "" || unsafe.StringData(a.Model) != unsafe.StringData(b.Model) {
		t.Errorf("two bots of model %q hold two strings", a.Model)
	}
	for i := range 2 * maxShared {
		data := fmt.Appendf(nil, "---\nbody: robot-%d\n---\n", i)
		if _, err := d.decode("c", data); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.shared) > maxShared {
		t.Errorf("a decoder keeps %d values to share, more than %d", len(d.shared), maxShared)
	}
}

func TestFastPathKnowsEveryRecordKey(t *testing.T) {
	t.Parallel()
	for _, k := range record.Keys() {
		if got, ok := recordKey([]byte(k)); !ok || got != k {
			t.Errorf("recordKey(%q) = %q, %v", k, got, ok)
		}
	}
}

// decodeFast is a fresh decoder's fast read of front.
func decodeFast(front []byte) (map[string]any, bool) {
	return newDecoder().fast(front)
}

package jsonx

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

func encodingJSON(t *testing.T, s string, html bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func checkString(t *testing.T, s string) {
	t.Helper()
	if got, want := AppendString(nil, s), encodingJSON(t, s, true); !bytes.Equal(got, want) {
		t.Errorf("AppendString(%q)\n got %s\nwant %s", s, got, want)
	}
	if got, want := AppendStringNoHTML(nil, s), encodingJSON(t, s, false); !bytes.Equal(got, want) {
		t.Errorf("AppendStringNoHTML(%q)\n got %s\nwant %s", s, got, want)
	}
	// the string's JSON (HTML escaped), as a string's content: encoding/json
	// twice, the second time without HTML escaping, less the outer quotes.
	twice := encodingJSON(t, string(encodingJSON(t, s, true)), false)
	if got, want := AppendStringInString([]byte("x"), s), append([]byte("x"), twice[1:len(twice)-1]...); !bytes.Equal(got, want) {
		t.Errorf("AppendStringInString(%q)\n got %s\nwant %s", s, got, want)
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "plain", `{"id":"motion","name":"<b>&amp;</b>"}`, "\\\"", "\x00\x01\x1f\x7f",
		"\n\r\t\b\f", "\u2028\u2029", "é 日本 🙂", "bad \xff\xfe utf-8 \xe2\x80", `\u003c`,
	} {
		checkString(t, s)
	}
	for c := range 256 {
		checkString(t, string([]byte{'a', byte(c), 'z'}))
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("motion")
	f.Add("<&>\u2028\xff\"\\\x00")
	f.Fuzz(checkString)
}

func TestAppendTimeMillisMatchesAppendFormat(t *testing.T) {
	t.Parallel()
	times := []time.Time{
		{},
		time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.FixedZone("x", 3600)),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(999, 6, 7, 8, 9, 10, 1, time.FixedZone("y", -7*3600)),
		time.Unix(0, 0),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		times = append(times, time.Unix(rng.Int64N(400e9)-200e9, rng.Int64N(1e9)).In(time.FixedZone("z", rng.IntN(50000)-25000)))
	}
	for _, tm := range times {
		got := AppendTimeMillis([]byte("x"), tm)
		want := tm.UTC().AppendFormat([]byte("x"), MillisLayout)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendTimeMillis(%v) = %s, want %s", tm, got, want)
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	s := benchData
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		buf = AppendStringNoHTML(buf[:0], s)
	}
}

func BenchmarkEncodingJSONString(b *testing.B) {
	s := benchData
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for b.Loop() {
		buf.Reset()
		enc.Encode(s)
	}
}

const benchData = `{"id":"motion","name":"Motion","labels":["review","ci"],"description":"Reads pull requests.","body":"ghost","color":"red","instructions":"You review pull requests. Say what would break, in one paragraph.","workspace":"/tmp/BenchmarkResourceReadRoundTripread2317164644/001/bots/motion","session":"work","owner":"user:soft","createdAt":"2026-11-30T06:03:24.444Z","updatedAt":"2026-11-30T06:03:24.444Z"}`

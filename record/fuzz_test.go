package record

import "testing"

// FuzzParsePatch checks that no body makes the checks panic, and that a
// body they accept makes a record whose JSON they accept again.
func FuzzParsePatch(f *testing.F) {
	for _, s := range []string{
		`{"name":"Motion"}`,
		`{"name":"M","labels":["a"],"color":"#ABCDEF","connectors":{"w":"connectors://a/b"},"session":"x-{turn}"}`,
		`{"owner":"project:a:b","createdAt":"2026-10-11T09:00:00.000Z"}`,
		`[]`, `null`, `{"name":null}`, `{"labels":[1,2]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePatch(data)
		if err != nil {
			return
		}
		r, err := p.Make("fuzz")
		if err != nil {
			return
		}
		out, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := ParsePatch(out); err != nil {
			t.Fatalf("a made record's JSON %s is refused: %v", out, err)
		}
	})
}

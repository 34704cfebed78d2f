package transport

import "testing"

func TestNegotiate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		offered []string
		want    string
	}{
		{[]string{"1.1.0", "1.0.0", "0.10.0", "0.9.0", "0.8.0"}, "1.1.0"},
		{[]string{"0.9.0", "1.0.0"}, "1.0.0"},
		{[]string{"0.8.0", "0.9.2", "0.9.10"}, "0.9.10"},
		{[]string{"1.2.0-beta.1", "1.1.0"}, "1.2.0-beta.1"},
		{[]string{"1.2.0-beta.1", "1.2.0"}, "1.2.0"},
		{[]string{"1.0.0-alpha", "1.0.0-alpha.1"}, "1.0.0-alpha.1"},
		{[]string{"1.0.0+build.5"}, "1.0.0+build.5"},
		{[]string{"1.99.3"}, "1.99.3"},
		{[]string{"2.0.0", "0.10.0", "0.5.9"}, ""},
		// the Go client's own offer (module 0.7.0): the highest it speaks
		{[]string{"0.8.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"}, "0.8.0"},
		{[]string{"0.5.2", "0.6.0", "0.7.3"}, "0.7.3"},
		{[]string{"0.5.2", "0.5.1", "0.4.0"}, ""},
		{[]string{"1", "1.0", "01.0.0", "1.0.0-", "v1.0.0", ""}, ""},
		{nil, ""},
	} {
		got, ok := negotiate(tc.offered)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("negotiate(%q) = %q, %v; want %q", tc.offered, got, ok, tc.want)
		}
	}
}

func TestDialectOfEachAcceptedVersion(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]dialect{
		"1.1.0": current, "1.0.0": current, "0.9.0": current, "0.9.3-rc.1": current,
		"0.8.0": v07, "0.8.4": v07, "0.7.0": v07, "0.6.0": v06, "0.6.2": v06,
	} {
		if got := dialectOf(v); got != want {
			t.Errorf("dialectOf(%q) = %d, want %d", v, got, want)
		}
	}
}

package ahp

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestNegotiateVersionAccepts1xAnd09x(t *testing.T) {
	t.Parallel()
	tests := []struct {
		offered string
		ok      bool
	}{
		{"1.0.0", true},
		{"1.1.0", true},
		{"1.37.12", true},
		{"0.9.0", true},
		{"0.9.4", true},
		{"0.8.0", false},
		{"0.10.0", false},
		{"2.0.0", false},
		{"0.5.2", false},
		{"1.0", false},
		{"1.0.0-beta.1", false},
		{"01.0.0", false},
		{"v1.0.0", false},
		{"", false},
		{"1.0.0.0", false},
	}
	for _, tt := range tests {
		got, ok := NegotiateVersion(tt.offered)
		if ok != tt.ok {
			t.Errorf("NegotiateVersion(%q) ok = %v, want %v", tt.offered, ok, tt.ok)
		}
		if ok && got != tt.offered {
			t.Errorf("NegotiateVersion(%q) = %q, want the offered string", tt.offered, got)
		}
		if !ok && got != "" {
			t.Errorf("NegotiateVersion(%q) = %q on refusal, want empty", tt.offered, got)
		}
	}
}

func TestPickVersionPicksTheHighestAcceptableOffer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		offered []string
		want    string
		ok      bool
	}{
		{[]string{"1.1.0", "1.0.0", "0.10.0", "0.9.0", "0.8.0"}, "1.1.0", true},
		{[]string{"0.8.0", "0.9.0", "1.0.0"}, "1.0.0", true},
		{[]string{"0.9.1", "0.9.3", "0.8.0"}, "0.9.3", true},
		{[]string{"1.2.0", "1.10.0"}, "1.10.0", true},
		{[]string{"0.8.0", "0.7.0", "2.0.0"}, "", false},
		{nil, "", false},
	}
	for _, tt := range tests {
		got, ok := PickVersion(tt.offered)
		if got != tt.want || ok != tt.ok {
			t.Errorf("PickVersion(%q) = %q, %v; want %q, %v", tt.offered, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSupportedVersionsAreTheAcceptedRanges(t *testing.T) {
	t.Parallel()
	got := SupportedVersions()
	want := []string{">=1.0.0 <2.0.0", ">=0.9.0 <0.10.0"}
	if !slices.Equal(got, want) {
		t.Errorf("SupportedVersions() = %q, want %q", got, want)
	}
	got[0] = "changed"
	if SupportedVersions()[0] != want[0] {
		t.Error("SupportedVersions returned shared storage")
	}
	data, err := json.Marshal(NewUnsupportedProtocolVersionData())
	if err != nil {
		t.Fatal(err)
	}
	var back UnsupportedProtocolVersionData
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.SupportedVersions, want) {
		t.Errorf("error data %s", data)
	}
}

package errcode

import (
	"errors"
	"fmt"
	"testing"
)

func TestOfFindsTheCodeThroughWrapping(t *testing.T) {
	err := fmt.Errorf("outer: %w", New(NotFound, "no bot at %s", "bot://x"))
	if Of(err) != NotFound {
		t.Fatalf("code %v", Of(err))
	}
	if Of(errors.New("plain")) != Internal || Of(nil) != Internal {
		t.Fatal("an uncoded error is not Internal")
	}
}

func TestMessageHidesInternalDetail(t *testing.T) {
	if m := Message(errors.New("open /secret/path: denied")); m != "internal error" {
		t.Fatalf("message %q", m)
	}
	if m := Message(Wrap(Internal, errors.New("disk"), "write failed")); m != "internal error" {
		t.Fatalf("message %q", m)
	}
	if m := Message(Wrap(Conflict, errors.New("etag"), "bot://x changed")); m != "bot://x changed" {
		t.Fatalf("message %q", m)
	}
}

func TestWrapKeepsTheCause(t *testing.T) {
	cause := errors.New("cause")
	err := Wrap(Invalid, cause, "bad %s", "thing")
	if !errors.Is(err, cause) || err.Error() != "bad thing: cause" {
		t.Fatalf("err %v", err)
	}
}

func TestCodesHaveNames(t *testing.T) {
	for c := Internal; c <= Unsupported; c++ {
		if c.String() == "" || c.String() == fmt.Sprintf("code(%d)", int(c)) {
			t.Errorf("code %d has no name", c)
		}
	}
	if Code(99).String() != "code(99)" {
		t.Error("an unknown code is not named by number")
	}
}

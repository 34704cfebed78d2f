package wake

import "fmt"

// PostMessageAbsent is the mainTurnPostMessageAbsent option: what a main
// turn does when its back session's turn ends without post_message. The
// empty value is the default, PostMessageAbsentPost.
type PostMessageAbsent string

// The values of PostMessageAbsent.
const (
	// PostMessageAbsentPost posts the back turn's final text, if any.
	PostMessageAbsentPost PostMessageAbsent = "post"
	// PostMessageAbsentNotice says the bot finished without a reply.
	PostMessageAbsentNotice PostMessageAbsent = "notice"
	// PostMessageAbsentSilence says nothing.
	PostMessageAbsentSilence PostMessageAbsent = "silence"
	// PostMessageAbsentPostNotice posts the final text, or the notice
	// when there is none.
	PostMessageAbsentPostNotice PostMessageAbsent = "postNotice"
)

// Check refuses a value that is not one of the constants (or empty).
func (v PostMessageAbsent) Check() error {
	switch v {
	case "", PostMessageAbsentPost, PostMessageAbsentNotice, PostMessageAbsentSilence, PostMessageAbsentPostNotice:
		return nil
	}
	return fmt.Errorf("mainTurnPostMessageAbsent %q is not one of post, notice, silence or postNotice", string(v))
}

// ContextIn is the contextIn option: where a woken message's context goes.
// The empty value is the default, ContextInText.
type ContextIn string

// The values of ContextIn.
const (
	// ContextInText puts the context block before the person's words.
	ContextInText ContextIn = "text"
	// ContextInMeta sends the words alone, the context in _meta.
	ContextInMeta ContextIn = "meta"
)

// Check refuses a value that is not one of the constants (or empty).
func (v ContextIn) Check() error {
	switch v {
	case "", ContextInText, ContextInMeta:
		return nil
	}
	return fmt.Errorf("contextIn %q is neither text nor meta", string(v))
}

// AskIn is the askIn option: where a back session's question or approval
// is shown. The empty value is the default, AskInMain.
type AskIn string

// The values of AskIn.
const (
	// AskInMain shows it in the main turn, answered there.
	AskInMain AskIn = "main"
	// AskInOwn lists it on the main session, answered in the back
	// session's own chat.
	AskInOwn AskIn = "own"
)

// Check refuses a value that is not one of the constants (or empty).
func (v AskIn) Check() error {
	switch v {
	case "", AskInMain, AskInOwn:
		return nil
	}
	return fmt.Errorf("askIn %q is neither main nor own", string(v))
}

// or returns v, or def when v is empty.
func or[T ~string](v, def T) T {
	if v == "" {
		return def
	}
	return v
}

// Package local is the in-process wake.SessionHost: Host runs back
// sessions in this process on wake.Harnesses, keeps each in a chat log
// (chatlog.Back) it replays at start, and serves their state as AHP
// session and chat channels. With logs other instances share, it holds a
// copy of every instance's back sessions and follows their logs
// (follow.go); one instance, under the Waker's lease, runs each.
//
// A session's state, locks and publishing are a replica.Chat; its log
// lines are in log.go, its turns' Work in work.go, the scrubbing of what
// its agent hands out in scrub.go.
package local

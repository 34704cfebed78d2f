// Package mainchat holds the main chats: the sessions of the bot-chat
// provider, in which a person talks to a bot. A chat runs no model: each
// message begins a turn that wakes the bot's back session (wake), which
// answers into the chat.
//
// A chat is a replica.Chat whose every change is a line of its log
// (chatlog.Chat), replayed when the service starts (chats.go). Its
// channels take a person's actions (channel.go), decided by replica.Decide;
// with logs several instances share, each instance follows what the
// others write (follow.go) and leases the turns it runs (lease.go). Older
// turns are read back from the log (turns.go). The chats end what a person
// may no longer use (revoke.go), and go with a deleted bot (delete.go).
//
// What a chat needs of the bots (who a principal is now, whether they may
// read a bot, the bot a turn runs with) it asks of the service that keeps
// them, package bot, through Bots.
//
// A chat is reached only through that service, and is tested through it:
// package bot's chat*_test.go, revoke_test.go, sharedlogs_test.go,
// crash_test.go and diskfull_test.go.
package mainchat

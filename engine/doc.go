// Package engine is the session engine behind the wire: one global
// serverSeq shared by every channel (the Bus), the state channels a client
// subscribes to and their subscribers, snapshots taken at a seq, actions
// dispatched by clients, and each client's replay record, which survives
// its connection so that a reconnect resumes it.
//
// It knows no WebSocket and no JSON-RPC framing. A server (package
// transport) serves it: it links each connection to the engine with
// Clients.Link, giving a Peer through which the engine delivers that
// client's actions, notifications and answers, in order and without
// blocking. The engine never encodes a frame while it holds its lock; the
// Peer does, later, on its own time.
//
// Channel owners (the bot service, the catalogue, the wake) import this
// package alone: they publish on the Bus and implement Host, Channel and
// its optional parts.
package engine

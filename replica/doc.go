// Package replica is the machine both kinds of chat the host keeps share:
// a bot chat (package bot) and a back session (package wake/local). Each is an
// AHP chat whose every change is a line of its log (chatlog), replicated
// on every instance that shares the logs.
//
// The machine is in three parts, in the way of etcd's raft:
//
//   - Decide, a pure step: a client's action against the chat as it is
//     answers the Step it takes once logged, or the one sentence that
//     refuses it. It reads no clock, no log and no lock, and is tested by
//     table.
//   - Log, the driver's cursor in a chat's log: it appends a line at the
//     count of lines the replica holds applied, so that of two instances
//     writing at once one gets in and the other reads what it missed
//     (ReadNew) and decides again; Durable says which lines are fsynced.
//     Replay folds a log read back into the states a replica holds.
//   - Follow, which hears every write to the logs of one kind and tells
//     the holder of the chats, and after a gap tells it every log's count.
//
// What a step does (wake an agent, stop it, hand it an answer) is the
// holder's: the bot chats wake a back session, a back session runs its
// agent.
package replica

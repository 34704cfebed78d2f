// Package ahp holds the Agent Host Protocol (AHP) wire types, action
// constructors and pure reducers a bots server needs. It does no I/O: the
// transport package frames JSON-RPC 2.0 and moves the values defined here.
//
// # What is here
//
//   - Wire types for everything inside a JSON-RPC message: the params and
//     results of initialize, reconnect, subscribe, dispatchAction,
//     createSession, disposeSession, listSessions, the resource* family and
//     createResourceWatch; the action envelope; the root, session, chat and
//     resource-watch states; the error data of -32005.
//   - [Action], a state action that marshals to and from the protocol's JSON
//     exactly. An action of a type this package does not know keeps its raw
//     JSON and round-trips unchanged.
//   - Short constructors for the actions a server emits ([TurnStarted],
//     [Delta], [TurnComplete], [ToolCallStart], [AgentsChanged], …).
//   - Pure reducers [ApplyRoot], [ApplySession], [ApplyChat] and
//     [ApplyResourceWatch]: (state, action) → new state. They never modify
//     their input, never read the clock and never panic: an action they do not
//     know, or one naming an unknown turn or tool call, leaves the state as it
//     was. Run every emitted action through them and serve snapshots from the
//     result, so the snapshot and the action stream cannot disagree.
//   - Protocol version negotiation: [NegotiateVersion], [PickVersion] and
//     [SupportedVersions], for the versions whose shapes this package
//     follows. The transport package also accepts 0.6.x to 0.8.x, whose
//     frames it translates to and from these shapes at the edge: this
//     package keeps one model.
//
// # Which upstream the types follow
//
// The shapes follow microsoft/agent-host-protocol as spoken by protocol
// versions 0.9.x and 1.x (the Go client's generated ahptypes at
// ProtocolVersion 1.1.0, and the reference reducers after 0.9.0): chat/error
// carries an error response part and chat/turnResume reopens a resumable turn;
// a failed session's lifecycle is "failed"; a chat's modifiedAt is derived
// from the turn actions (startedAt, and startedAt + duration when a turn
// ends), not from a clock. The reducer fixtures in testdata/reducers come from
// upstream commit eb3109868e91e9dff782f4baae90540fb83f6e46 (the 0.8.0
// development line); TestReducerFixtures runs all of them and documents the
// few whose meaning changed in 0.9.0.
//
// # Value conventions
//
// Optional fields are omitted when absent: strings use omitempty, optional
// lists and maps use omitzero (nil is absent, an empty non-nil value is sent
// as [] or {}), optional booleans and numbers whose zero is meaningful are
// pointers. Lists the protocol requires use [List], which encodes nil as [].
// _meta bags are map[string]any. Opaque payloads this server only carries
// (customizations, changesets, schemas, MCP auth challenges) are
// json.RawMessage.
//
// States are values that share structure: a reducer copies what it changes and
// reuses the rest, so treat a state returned by a reducer, and everything it
// points to, as read-only.
package ahp

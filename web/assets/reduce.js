// The reducers the page keeps its state with: the chat reducer of
// ahp (ApplyChat), and the x-ahpd-bots:// catalogue's. Each takes
// a state and an action and returns the next state without changing the
// one it was given, so a part or turn that did not change keeps its
// identity (the page redraws only what changed). An action that names a
// turn, part or tool call that is not there changes nothing.

export const Status = { Idle: 1, Error: 2, InProgress: 8, InputNeeded: 24, IsRead: 32, IsArchived: 64 };
const activityMask = (1 << 5) - 1;

const withActivity = (s, a) => (s & ~activityMask) | (a & activityMask);

const terminal = (st) => st === "completed" || st === "cancelled";
const known = (st) => ["streaming", "pending-confirmation", "running", "auth-required",
  "pending-result-confirmation", "completed", "cancelled"].includes(st);
const blocking = (tc) => ["pending-confirmation", "pending-result-confirmation", "auth-required"].includes(tc.status);

function partId(p) {
  switch (p.kind) {
    case "markdown": case "reasoning": return p.id;
    case "toolCall": return p.toolCall.toolCallId;
  }
  return "";
}

function waitsOnUser(at) {
  if (!at) return false;
  return at.responseParts.some((p) =>
    (p.kind === "inputRequest" && !p.response) || (p.kind === "toolCall" && blocking(p.toolCall)));
}

function chatStatus(s, term) {
  let a = term;
  if (!a) a = waitsOnUser(s.activeTurn) ? Status.InputNeeded : s.activeTurn ? Status.InProgress : Status.Idle;
  return withActivity(s.status || 0, a);
}

const activeIs = (s, id) => s.activeTurn && s.activeTurn.id === id;

function addMillis(ts, ms) {
  const t = Date.parse(ts);
  return Number.isNaN(t) ? null : new Date(t + ms).toISOString();
}

// base keeps a tool call's common fields, its _meta replaced when meta is set.
function base(tc, meta) {
  const n = { toolCallId: tc.toolCallId, toolName: tc.toolName, displayName: tc.displayName };
  for (const k of ["intention", "contributor", "_meta"]) if (tc[k] !== undefined) n[k] = tc[k];
  if (meta !== undefined) n._meta = meta;
  return n;
}

function setIf(o, k, v) { if (v !== undefined && v !== null && v !== "") o[k] = v; }

function updatePart(s, turnId, id, f) {
  if (!activeIs(s, turnId) || !id) return s;
  const parts = s.activeTurn.responseParts;
  const i = parts.findIndex((p) => partId(p) === id);
  if (i < 0) return s;
  const next = f(parts[i]);
  if (!next) return s;
  const np = parts.slice(); np[i] = next;
  return { ...s, activeTurn: { ...s.activeTurn, responseParts: np } };
}

function updateToolCall(s, turnId, id, refresh, f) {
  if (!activeIs(s, turnId)) return s;
  const parts = s.activeTurn.responseParts;
  const i = parts.findIndex((p) => p.kind === "toolCall" && p.toolCall.toolCallId === id);
  if (i < 0) return s;
  const tc = f(parts[i].toolCall);
  if (!tc) return s;
  const np = parts.slice(); np[i] = { kind: "toolCall", toolCall: tc };
  const n = { ...s, activeTurn: { ...s.activeTurn, responseParts: np } };
  if (refresh) n.status = chatStatus(n, 0);
  return n;
}

function openInput(parts, id) {
  return parts.findIndex((p) => p.kind === "inputRequest" && !p.response && p.request.id === id);
}

function updateInput(s, id, refresh, f) {
  if (!s.activeTurn) return s;
  const i = openInput(s.activeTurn.responseParts, id);
  if (i < 0) return s;
  const np = s.activeTurn.responseParts.slice();
  np[i] = f(np[i]);
  const n = { ...s, activeTurn: { ...s.activeTurn, responseParts: np } };
  if (refresh) n.status = chatStatus(n, 0);
  return n;
}

function endTurn(s, a, state, term, errPart) {
  if (!activeIs(s, a.turnId)) return s;
  const at = s.activeTurn;
  const parts = at.responseParts.map((p) => {
    if (p.kind !== "toolCall" || terminal(p.toolCall.status) || !known(p.toolCall.status)) return p;
    const tc = p.toolCall;
    const n = base(tc);
    n.status = "cancelled"; n.reason = "skipped";
    n.invocationMessage = tc.invocationMessage === undefined ? "" : tc.invocationMessage;
    if (tc.status !== "streaming") setIf(n, "toolInput", tc.toolInput);
    return { kind: "toolCall", toolCall: n };
  });
  if (errPart) parts.push({ kind: "error", ...errPart });
  const duration = Math.max(a.duration || 0, 0);
  const turn = { id: at.id, message: at.message, responseParts: parts, state, duration };
  setIf(turn, "startedAt", at.startedAt);
  if (at.usage) turn.usage = at.usage;
  const n = { ...s, activeTurn: undefined, turns: [...(s.turns || []), turn] };
  delete n.activeTurn;
  const m = addMillis(at.startedAt, duration);
  if (m) n.modifiedAt = m;
  n.status = chatStatus(n, term);
  return n;
}

function withoutQueued(q, id) {
  if (!q || !q.some((m) => m.id === id)) return q;
  const n = q.filter((m) => m.id !== id);
  return n.length ? n : undefined;
}

function clean(o) {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

// applyChat is ahp's ApplyChat: the next chat state after a.
export function applyChat(s, a) {
  switch (a.type) {
    case "chat/turnStarted": {
      const n = { ...s, activeTurn: { id: a.turnId, startedAt: a.startedAt, message: a.message, responseParts: [] } };
      n.status = chatStatus(n, 0) & ~Status.IsRead;
      n.modifiedAt = a.startedAt;
      if (a.queuedMessageId) {
        if (n.steeringMessage && n.steeringMessage.id === a.queuedMessageId) delete n.steeringMessage;
        n.queuedMessages = withoutQueued(n.queuedMessages, a.queuedMessageId);
      }
      return clean(n);
    }
    case "chat/delta":
      return updatePart(s, a.turnId, a.partId, (p) => p.kind === "markdown" && { ...p, content: p.content + a.content });
    case "chat/reasoning":
      return updatePart(s, a.turnId, a.partId, (p) => p.kind === "reasoning" && { ...p, content: p.content + a.content });
    case "chat/responsePart":
      if (!activeIs(s, a.turnId) || a.part.kind === "error") return s;
      return { ...s, activeTurn: { ...s.activeTurn, responseParts: [...s.activeTurn.responseParts, a.part] } };
    case "chat/usage":
      if (!activeIs(s, a.turnId)) return s;
      return { ...s, activeTurn: { ...s.activeTurn, usage: a.usage } };
    case "chat/turnComplete": return endTurn(s, a, "complete", 0);
    case "chat/turnCancelled": return endTurn(s, a, "cancelled", 0);
    case "chat/error": return endTurn(s, a, "error", Status.Error, a.part || { error: { errorType: "", message: "" } });
    case "chat/turnResume": {
      const turns = s.turns || [];
      if (s.activeTurn || !turns.length) return s;
      const last = turns[turns.length - 1];
      const parts = last.responseParts || [];
      if (last.id !== a.turnId || last.state !== "error" || !parts.length) return s;
      const tail = parts[parts.length - 1];
      if (tail.kind !== "error" || !tail.resumable) return s;
      const at = { id: last.id, startedAt: last.startedAt || s.modifiedAt, message: last.message, responseParts: parts };
      if (last.usage) at.usage = last.usage;
      const n = { ...s, turns: turns.slice(0, -1), activeTurn: at };
      n.status = chatStatus(n, 0) & ~Status.IsRead;
      return n;
    }
    case "chat/activityChanged": return clean({ ...s, activity: a.activity || undefined });
    case "chat/isReadChanged":
      return { ...s, status: a.isRead ? s.status | Status.IsRead : s.status & ~Status.IsRead };
    case "chat/isArchivedChanged":
      return { ...s, status: a.isArchived ? s.status | Status.IsArchived : s.status & ~Status.IsArchived };
    case "chat/toolCallStart": {
      if (!activeIs(s, a.turnId)) return s;
      const tc = { status: "streaming", toolCallId: a.toolCallId, toolName: a.toolName, displayName: a.displayName };
      setIf(tc, "intention", a.intention); setIf(tc, "contributor", a.contributor); setIf(tc, "_meta", a._meta);
      return { ...s, activeTurn: { ...s.activeTurn, responseParts: [...s.activeTurn.responseParts, { kind: "toolCall", toolCall: tc }] } };
    }
    case "chat/toolCallDelta":
      return updateToolCall(s, a.turnId, a.toolCallId, false, (tc) => {
        if (tc.status !== "streaming") return null;
        const n = { ...tc };
        if (a.content != null) n.partialInput = (tc.partialInput || "") + a.content;
        if (a._meta) n._meta = a._meta;
        if (a.invocationMessage != null) n.invocationMessage = a.invocationMessage;
        return n;
      });
    case "chat/toolCallReady":
      return updateToolCall(s, a.turnId, a.toolCallId, true, (tc) => toolCallReady(tc, a));
    case "chat/toolCallConfirmed":
      return updateToolCall(s, a.turnId, a.toolCallId, true, (tc) => {
        if (tc.status !== "pending-confirmation") return null;
        const n = base(tc, a._meta);
        setIf(n, "invocationMessage", tc.invocationMessage); setIf(n, "toolInput", tc.toolInput);
        const opt = a.selectedOptionId && (tc.options || []).find((o) => o.id === a.selectedOptionId);
        if (opt) n.selectedOption = opt;
        if (a.approved) {
          if (a.editedToolInput != null && tc.toolInput != null && typeof tc.toolInput === "string") n.toolInput = a.editedToolInput;
          n.status = "running"; n.confirmed = a.confirmed || "not-needed";
          return n;
        }
        n.status = "cancelled"; n.reason = a.reason || "denied";
        setIf(n, "reasonMessage", a.reasonMessage); setIf(n, "userSuggestion", a.userSuggestion);
        return n;
      });
    case "chat/toolCallComplete":
      return updateToolCall(s, a.turnId, a.toolCallId, true, (tc) => toolCallComplete(tc, a));
    case "chat/toolCallResultConfirmed":
      return updateToolCall(s, a.turnId, a.toolCallId, true, (tc) => {
        if (tc.status !== "pending-result-confirmation") return null;
        const n = base(tc, a._meta);
        setIf(n, "invocationMessage", tc.invocationMessage); setIf(n, "toolInput", tc.toolInput);
        setIf(n, "selectedOption", tc.selectedOption);
        if (a.approved) {
          n.status = "completed";
          for (const k of ["success", "pastTenseMessage", "content", "structuredContent", "error", "confirmed"]) if (tc[k] !== undefined) n[k] = tc[k];
          return n;
        }
        n.status = "cancelled"; n.reason = "result-denied";
        return n;
      });
    case "chat/toolCallContentChanged":
      return updateToolCall(s, a.turnId, a.toolCallId, false, (tc) => {
        if (tc.status !== "running") return null;
        const n = { ...tc, content: a.content ? a.content.slice() : [] };
        if (a._meta) n._meta = a._meta;
        return n;
      });
    case "chat/toolCallAuthRequired":
      return updateToolCall(s, a.turnId, a.toolCallId, true, (tc) => {
        if (tc.status !== "running" || !tc.contributor || tc.contributor.kind !== "mcp") return null;
        const n = base(tc, a._meta);
        n.status = "auth-required";
        for (const k of ["invocationMessage", "toolInput", "confirmed", "selectedOption", "content"]) setIf(n, k, tc[k]);
        n.auth = a.auth;
        return n;
      });
    case "chat/toolCallAuthResolved":
      return updateToolCall(s, a.turnId, a.toolCallId, true, (tc) => {
        if (tc.status !== "auth-required") return null;
        const n = base(tc, a._meta);
        n.status = "running";
        for (const k of ["invocationMessage", "toolInput", "confirmed", "selectedOption", "content"]) setIf(n, k, tc[k]);
        return n;
      });
    case "chat/workingDirectorySet":
      if ((s.workingDirectories || []).includes(a.directory)) return s;
      return { ...s, workingDirectories: [...(s.workingDirectories || []), a.directory] };
    case "chat/workingDirectoryRemoved":
      if (!(s.workingDirectories || []).includes(a.directory)) return s;
      return { ...s, workingDirectories: s.workingDirectories.filter((d) => d !== a.directory) };
    case "chat/backgroundWorkSet": {
      const w = (s.backgroundWork || []).slice();
      const i = w.findIndex((x) => x.id === a.work.id);
      if (i < 0) w.push(a.work); else w[i] = a.work;
      return { ...s, backgroundWork: w };
    }
    case "chat/backgroundWorkRemoved": {
      if (!(s.backgroundWork || []).some((x) => x.id === a.id)) return s;
      return { ...s, backgroundWork: s.backgroundWork.filter((x) => x.id !== a.id) };
    }
    case "chat/truncated": {
      const n = { ...s };
      if (!a.turnId) { n.turns = []; delete n.turnsNextCursor; } else {
        const i = (s.turns || []).findIndex((t) => t.id === a.turnId);
        if (i < 0) return s;
        n.turns = s.turns.slice(0, i + 1);
      }
      delete n.activeTurn;
      n.status = chatStatus(n, 0);
      return n;
    }
    case "chat/turnsLoaded": {
      const have = new Set((s.turns || []).map((t) => t.id));
      const n = { ...s, turns: [...(a.turns || []).filter((t) => !have.has(t.id)), ...(s.turns || [])] };
      if (a.turnsNextCursor) n.turnsNextCursor = a.turnsNextCursor; else delete n.turnsNextCursor;
      return n;
    }
    case "chat/inputRequested": {
      if (!s.activeTurn) return s;
      const req = { ...a.request };
      const np = s.activeTurn.responseParts.slice();
      const i = openInput(np, req.id);
      if (i < 0) np.push({ kind: "inputRequest", request: req });
      else {
        if (req.answers === undefined && np[i].request.answers !== undefined) req.answers = np[i].request.answers;
        np[i] = { kind: "inputRequest", request: req };
      }
      const n = { ...s, activeTurn: { ...s.activeTurn, responseParts: np } };
      n.status = chatStatus(n, 0) & ~Status.IsRead;
      return n;
    }
    case "chat/inputAnswerChanged":
      return updateInput(s, a.requestId, false, (p) => {
        const answers = { ...(p.request.answers || {}) };
        if (a.answer == null) delete answers[a.questionId]; else answers[a.questionId] = a.answer;
        const req = { ...p.request, answers };
        if (!Object.keys(answers).length) delete req.answers;
        return { ...p, request: req };
      });
    case "chat/inputCompleted":
      return updateInput(s, a.requestId, true, (p) => {
        const answers = { ...(p.request.answers || {}), ...(a.answers || {}) };
        const req = { ...p.request, answers };
        if (!Object.keys(answers).length) delete req.answers;
        return { ...p, request: req, response: a.response };
      });
    case "chat/pendingMessageSet": {
      const entry = { id: a.id, message: a.message };
      if (a.kind === "steering") return { ...s, steeringMessage: entry };
      if (a.kind !== "queued") return s;
      const q = (s.queuedMessages || []).slice();
      const i = q.findIndex((m) => m.id === a.id);
      if (i < 0) q.push(entry); else q[i] = entry;
      return { ...s, queuedMessages: q };
    }
    case "chat/pendingMessageRemoved": {
      if (a.kind === "steering") {
        if (!s.steeringMessage || s.steeringMessage.id !== a.id) return s;
        const n = { ...s }; delete n.steeringMessage; return n;
      }
      if (a.kind !== "queued") return s;
      return clean({ ...s, queuedMessages: withoutQueued(s.queuedMessages, a.id) });
    }
    case "chat/queuedMessagesReordered": {
      if (!s.queuedMessages) return s;
      const byId = new Map(s.queuedMessages.map((m) => [m.id, m]));
      const seen = new Set(); const q = [];
      for (const id of a.order || []) if (byId.has(id) && !seen.has(id)) { seen.add(id); q.push(byId.get(id)); }
      for (const m of s.queuedMessages) if (!seen.has(m.id)) q.push(m);
      return { ...s, queuedMessages: q };
    }
    case "chat/draftChanged": return clean({ ...s, draft: a.draft || undefined });
  }
  return s;
}

function toolCallReady(tc, a) {
  if (!["streaming", "running", "pending-confirmation"].includes(tc.status)) return null;
  const n = base(tc, a._meta);
  n.contributor = refineContributor(tc.contributor, a.contributor);
  if (n.contributor === undefined) delete n.contributor;
  if (a.intention) n.intention = a.intention;
  n.invocationMessage = a.invocationMessage;
  let input = a.toolInput;
  if (input == null && tc.status !== "streaming") input = tc.toolInput;
  setIf(n, "toolInput", input);
  if (a.confirmed) { n.status = "running"; n.confirmed = a.confirmed; return n; }
  n.status = "pending-confirmation";
  for (const k of ["confirmationTitle", "riskAssessment", "edits", "editable", "options"]) {
    let v = a[k];
    if (v == null && tc.status === "pending-confirmation") v = tc[k];
    if (v != null) n[k] = v;
  }
  return n;
}

function refineContributor(cur, next) {
  if (!next) return cur;
  if (cur && cur.kind === "client") return next.kind === "client" && next.clientId === cur.clientId ? next : cur;
  return next.kind === "client" ? cur : next;
}

function toolCallComplete(tc, a) {
  const n = base(tc, a._meta);
  setIf(n, "invocationMessage", tc.invocationMessage); setIf(n, "toolInput", tc.toolInput);
  n.confirmed = "not-needed";
  let earlier, fromAuth = false;
  switch (tc.status) {
    case "running": n.confirmed = tc.confirmed; setIf(n, "selectedOption", tc.selectedOption); break;
    case "pending-confirmation": break;
    case "auth-required":
      if (a.result.success) return null;
      n.confirmed = tc.confirmed; setIf(n, "selectedOption", tc.selectedOption);
      earlier = tc.content; fromAuth = true; break;
    default: return null;
  }
  const r = a.result;
  n.success = r.success; n.pastTenseMessage = r.pastTenseMessage;
  setIf(n, "structuredContent", r.structuredContent); setIf(n, "error", r.error);
  if (r.content) n.content = r.content.slice();
  if (a.requiresResultConfirmation && !fromAuth) { n.status = "pending-result-confirmation"; return n; }
  if (!n.content && earlier) n.content = earlier.slice();
  n.status = "completed";
  return clean(n);
}

// applyCatalogue applies an x-ahpd-bots:// action to {bots: [...]}: added
// and changed put the bot in place by id, removed takes it out.
export function applyCatalogue(s, a) {
  const bots = s.bots || [];
  switch (a.type) {
    case "x-ahpd-bots/added":
    case "x-ahpd-bots/changed": {
      const i = bots.findIndex((b) => b.id === a.bot.id);
      const next = bots.slice();
      if (i < 0) next.push(a.bot); else next[i] = a.bot;
      return { ...s, bots: next };
    }
    case "x-ahpd-bots/removed":
      return { ...s, bots: bots.filter((b) => b.id !== a.id) };
  }
  return s;
}

// applyProblems applies an x-ahpd-problems:// action to {problems: [...]}:
// changed replaces the list whole.
export function applyProblems(s, a) {
  if (a.type === "x-ahpd-problems/changed") return { ...s, problems: a.problems || [] };
  return s;
}

const awaitsUser = (r) => r.kind !== "toolClientExecution";

function inputNeededStatus(status, list) {
  if (list.some(awaitsUser)) return withActivity(status || 0, Status.InputNeeded);
  return (status || 0) & ~(Status.InputNeeded & ~Status.InProgress);
}

// applySession is ahp's ApplySession for what the page follows
// of a session: its title and the requests that wait on the person
// (inputNeeded), which -ask-in own lists there. Other actions change
// nothing the page reads.
export function applySession(s, a) {
  switch (a.type) {
    case "session/titleChanged": return { ...s, title: a.title };
    case "session/inputNeededSet": {
      const list = (s.inputNeeded || []).slice();
      const i = list.findIndex((r) => r.id === a.request.id);
      if (i < 0) list.push(a.request); else list[i] = a.request;
      return { ...s, inputNeeded: list, status: inputNeededStatus(s.status, list) };
    }
    case "session/inputNeededRemoved": {
      const list = (s.inputNeeded || []).filter((r) => r.id !== a.id);
      if (list.length === (s.inputNeeded || []).length) return s;
      const n = { ...s, inputNeeded: list, status: inputNeededStatus(s.status, list) };
      if (!list.length) delete n.inputNeeded;
      return n;
    }
  }
  return s;
}

// applyRoot is ahp's ApplyRoot.
export function applyRoot(s, a) {
  switch (a.type) {
    case "root/agentsChanged": return { ...s, agents: (a.agents || []).slice() };
    case "root/activeSessionsChanged": return { ...s, activeSessions: a.activeSessions };
    case "root/terminalsChanged": return { ...s, terminals: (a.terminals || []).slice() };
    case "root/configChanged": {
      if (!s.config) return s;
      const values = a.replace || !s.config.values ? {} : { ...s.config.values };
      return { ...s, config: { ...s.config, values: Object.assign(values, a.config || {}) } };
    }
  }
  return s;
}

// reducerFor returns the reducer of a channel; a channel whose state the
// page does not keep changes only with its snapshots.
export function reducerFor(uri) {
  if (uri.startsWith("ahp-chat:")) return applyChat;
  if (uri.startsWith("ahp-session:")) return applySession;
  if (uri === "ahp-root://") return applyRoot;
  if (uri === "x-ahpd-bots://") return applyCatalogue;
  if (uri === "x-ahpd-problems://") return applyProblems;
  return (s) => s;
}

// A chat with a bot: the transcript drawn from the chat's reduced state,
// the reply streaming in, the back session's work as a collapsible step,
// questions and approvals answered in place, stop, keep going, and older
// turns loaded as the person scrolls up. A part or turn whose state did
// not change keeps its element, so typing in an answer survives a stream.

import { h, replace, reconcile, markdown } from "./dom.js";
import { randomId } from "./client.js";
import { say, plain, swatch } from "./ui.js";

export function chatView(app, main, session, chat) {
  const client = app.client;
  const stops = [];
  const name = h("h1", { id: "chat-title" }, "Chat");
  const face = h("span", {});
  const back = h("a", { class: "button secondary", href: "#/" }, "Bots");
  const state = h("span", { class: "state", id: "chat-state", role: "status", "aria-live": "polite" });
  const older = h("div", { class: "older" });
  const list = h("div", { id: "turns" });
  const waiting = h("div", { id: "waiting", "aria-live": "polite" });
  const transcript = h("div", { class: "transcript", id: "transcript", tabindex: "0", "aria-label": "Messages" }, older, list, waiting);
  const text = h("textarea", { id: "message", "aria-label": "Message", placeholder: "Write a message", title: "Enter sends; Shift+Enter starts a new line" });
  const send = h("button", { type: "submit", id: "send", disabled: true }, "Send"); // until the chat is in
  const stop = h("button", { type: "button", class: "danger", id: "stop", hidden: true }, "Stop");
  const form = h("form", { class: "composer", onsubmit: (ev) => { ev.preventDefault(); submit(); } }, text, send, stop);
  // The bot's problems (an agent that cannot do what it is for…), live.
  const trouble = h("div", { id: "chat-problems" });
  let watching = "";
  replace(main, h("section", { class: "chat" }, h("div", { class: "chat-head" }, back, face, name, state), trouble, transcript, form));
  text.focus();

  let cur = null; // the chat's state
  const turnEls = new Map(); // turn id -> {turn, el}
  const partEls = new Map(); // turn id/index -> {part, el}
  const steps = new Map(); // tool call id -> {open, unwatch, inner}: a step
  stops.push(() => { for (const st of steps.values()) if (st.unwatch) st.unwatch(); });
  let loading = false;
  const hello = h("p", { class: "muted" }, "Say hello.");

  text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); submit(); }
  });

  let sendWhenIn = false;
  function submit() {
    const words = text.value.trim();
    if (!words) return;
    if (!cur) { sendWhenIn = true; return; } // sent once the chat is in
    if (cur.activeTurn) { say("Wait for the reply, or stop it, before sending another message."); return; }
    try {
      client.dispatch(chat, { type: "chat/turnStarted", turnId: randomId("t-"), startedAt: new Date().toISOString(), message: { text: words, origin: { kind: "user" } } });
      text.value = "";
    } catch (e) { say("Not sent: " + plain(e)); }
  }

  stop.addEventListener("click", () => {
    if (!cur || !cur.activeTurn) return;
    const d = Math.max(0, Date.now() - Date.parse(cur.activeTurn.startedAt)) | 0;
    try { client.dispatch(chat, { type: "chat/turnCancelled", turnId: cur.activeTurn.id, duration: d }); } catch (e) { say(plain(e)); }
  });

  async function loadOlder() {
    if (loading || !cur || !cur.turnsNextCursor) return;
    loading = true;
    const first = list.firstElementChild; const top = first && first.getBoundingClientRect().top;
    try { await client.request("fetchTurns", { channel: chat, cursor: cur.turnsNextCursor }); } catch (e) { say("Older messages could not be loaded: " + plain(e)); }
    loading = false;
    if (first) transcript.scrollTop += first.getBoundingClientRect().top - top; // keep the reading place
    // Still at the top (scrolled up while the page loaded): the observer
    // hears no change, so load the next page here.
    requestAnimationFrame(() => { if (!loading && inView(older)) loadOlder(); });
  }
  function inView(el) {
    const r = el.getBoundingClientRect(), v = transcript.getBoundingClientRect();
    return r.height > 0 && r.bottom >= v.top && r.top <= v.bottom;
  }
  const olderButton = h("button", { type: "button", class: "secondary", id: "older", onclick: loadOlder }, "Load older messages");
  // An entry tells of the layout when it was taken: the first one may be
  // from before the chat was drawn and scrolled to its end, so the button
  // is asked again whether it is in view now.
  const seen = new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting) && inView(older)) loadOlder(); }, { root: transcript });
  seen.observe(older);
  stops.push(() => seen.disconnect());

  function dispatch(action) {
    try { client.dispatch(chat, action); } catch (e) { say("Not sent: " + plain(e)); }
  }

  function partEl(turn, i, p, active) {
    const key = turn.id + "/" + i;
    const had = partEls.get(key);
    if (had && had.part === p && had.active === active) return had.el;
    const el = drawPart(turn, p, active);
    partEls.set(key, { part: p, el, active });
    return el;
  }

  function drawPart(turn, p, active) {
    switch (p.kind) {
      case "markdown": {
        const bot = cur && cur._meta && cur._meta["ahpd.bot"];
        const msg = h("div", { class: "msg bot", dataset: { part: p.id } }, markdown(p.content));
        if (!bot) return msg;
        const f = swatch(bot);
        f.classList.add("small");
        return h("div", { class: "reply" }, f, msg);
      }
      case "reasoning": return h("details", { class: "step" }, h("summary", {}, "Thinking"), h("div", { class: "pre" }, p.content));
      case "systemNotification": return h("p", { class: "state" }, typeof p.content === "string" ? p.content : markdown(p.content.markdown));
      case "error": return h("div", { class: "errpart", role: "alert" }, p.error.message || p.error.errorType);
      case "inputRequest": return drawAsk(turn, p, active);
      case "toolCall": return drawTool(turn, p.toolCall, active);
    }
    return null;
  }

  function drawAsk(turn, p, active) {
    const req = p.request;
    if (p.response || !active) {
      const answers = Object.values(req.answers || {}).map((a) => a.value && a.value.value).filter((v) => v !== undefined);
      return h("div", { class: "state" }, (req.message || (req.questions || []).map((q) => q.message).join(" ")) + " — " +
        (p.response === "accept" ? "answered: " + answers.join(", ") : p.response ? "declined" : "not answered"));
    }
    return askForm(req, dispatch);
  }

  // askForm is a question to answer, its answer dispatched with send (to
  // the chat that asked).
  function askForm(req, send) {
    const fields = (req.questions || []).map((q) => {
      const id = "q-" + req.id + "-" + q.id;
      let input;
      if (q.kind === "boolean") input = h("input", { type: "checkbox", id });
      else if (q.kind === "single-select" && q.options) input = h("select", { id }, q.options.map((o) => h("option", { value: o.id }, o.label || o.id)));
      else input = h("input", { type: q.kind === "number" || q.kind === "integer" ? "number" : "text", id, autocomplete: "off" });
      return { q, input, el: h("div", { class: "field" }, h("label", { for: id }, q.title || q.message), q.title ? h("p", { class: "hint" }, q.message) : null, input) };
    });
    const answer = () => {
      const answers = {};
      for (const { q, input } of fields) {
        let value;
        if (q.kind === "boolean") value = { kind: "boolean", value: input.checked };
        else if (q.kind === "number" || q.kind === "integer") value = { kind: "number", value: Number(input.value) };
        else if (q.kind === "single-select" && q.options) value = { kind: "selected", value: input.value };
        else value = { kind: "text", value: input.value };
        answers[q.id] = { state: "submitted", value };
      }
      send({ type: "chat/inputCompleted", requestId: req.id, response: "accept", answers });
    };
    const el = h("form", { class: "ask", dataset: { request: req.id }, onsubmit: (ev) => { ev.preventDefault(); answer(); } },
      req.message ? h("p", {}, req.message) : null, fields.map((f) => f.el),
      h("div", { class: "row" }, h("button", { type: "submit", class: "answer" }, "Answer"),
        h("button", { type: "button", class: "secondary decline", onclick: () => send({ type: "chat/inputCompleted", requestId: req.id, response: "decline" }) }, "Decline")));
    queueMicrotask(() => { if (fields[0] && document.activeElement === document.body) fields[0].input.focus(); });
    return el;
  }

  // approval asks the person to approve tool call tc of turnId, the answer
  // dispatched with send (to the chat the call is in).
  function approval(turnId, tc, send) {
    const label = tc.displayName || tc.toolName;
    const answer = (approved) => send(approved
      ? { type: "chat/toolCallConfirmed", turnId, toolCallId: tc.toolCallId, approved: true, confirmed: "user-action" }
      : { type: "chat/toolCallConfirmed", turnId, toolCallId: tc.toolCallId, approved: false, reason: "denied" });
    return h("div", { class: "ask", dataset: { tool: tc.toolCallId } },
      h("p", {}, h("strong", {}, tc.confirmationTitle ? rich(tc.confirmationTitle) : label)),
      tc.invocationMessage ? h("p", {}, rich(tc.invocationMessage)) : null,
      typeof tc.toolInput === "string" && tc.toolInput ? h("pre", { class: "pre" }, tc.toolInput) : null,
      h("div", { class: "row" }, h("button", { type: "button", class: "approve", onclick: () => answer(true) }, "Approve"),
        h("button", { type: "button", class: "secondary deny", onclick: () => answer(false) }, "Deny")));
  }

  function drawTool(turn, tc, active) {
    const label = tc.displayName || tc.toolName;
    if (tc.status === "pending-confirmation" && active) return approval(turn.id, tc, dispatch);
    const sub = (tc.content || []).find((c) => c.type === "subagent");
    const status = { streaming: "starting", running: "working…", completed: tc.success === false ? "failed" : "done",
      cancelled: tc.reason === "denied" ? "denied" : "stopped", "pending-confirmation": "waiting for approval" }[tc.status] || tc.status;
    const inner = h("div", {});
    const det = h("details", { class: "step", dataset: { tool: tc.toolCallId } },
      h("summary", {}, sub || tc.toolName === "subagent" ? `Back session of ${label}: ${status}` : `${label}: ${status}`),
      tc.invocationMessage ? h("p", { class: "state" }, rich(tc.invocationMessage)) : null,
      tc.pastTenseMessage ? h("p", { class: "state" }, rich(tc.pastTenseMessage)) : null, inner);
    // The step keeps its open state when it is drawn again (its call
    // changed); open, it follows the back session's own chat, from when
    // the call names it.
    let st = steps.get(tc.toolCallId);
    if (!st) { st = { open: false, unwatch: null }; steps.set(tc.toolCallId, st); }
    st.inner = inner;
    const follow = () => {
      if (sub && st.open && !st.unwatch) st.unwatch = client.watch(sub.resource, (s) => { if (s) replace(st.inner, backTranscript(s)); });
      else if (!st.open && st.unwatch) { st.unwatch(); st.unwatch = null; }
    };
    const now = sub && st.unwatch && client.state(sub.resource);
    if (now) replace(inner, backTranscript(now));
    det.open = st.open;
    det.addEventListener("toggle", () => { st.open = det.open; follow(); });
    follow();
    return det;
  }

  function rich(v) { return typeof v === "string" ? v : v && v.markdown !== undefined ? markdown(v.markdown) : ""; }

  // withoutContext leaves out the context block a back session's message
  // starts with: the person wrote only what follows it.
  function withoutContext(s) {
    const end = s.startsWith("<context>") ? s.indexOf("</context>\n") : -1;
    return end < 0 ? s : s.slice(end + "</context>\n".length);
  }

  function backTranscript(st) {
    const turns = [...(st.turns || []), ...(st.activeTurn ? [st.activeTurn] : [])];
    return turns.map((t) => h("div", { class: "turn" },
      h("p", { class: "state pre" }, "→ " + withoutContext((t.message && t.message.text) || "")),
      (t.responseParts || []).map((p) => p.kind === "markdown" ? h("div", { class: "msg bot" }, markdown(p.content))
        : p.kind === "toolCall" ? h("p", { class: "state" }, "• " + (p.toolCall.displayName || p.toolCall.toolName) + " (" + p.toolCall.status + ")")
          : null)));
  }

  // turnEl is the turn's element, kept across redraws: only its parts
  // that changed are drawn again.
  function turnEl(turn, active) {
    let had = turnEls.get(turn.id);
    if (had && had.turn === turn && had.active === active) return had.el;
    if (!had) {
      had = { el: h("article", { class: "turn" }), user: h("div", { class: "msg user" }) };
      turnEls.set(turn.id, had);
    }
    had.turn = turn; had.active = active;
    const parts = (turn.responseParts || []).map((p, i) => partEl(turn, i, p, active));
    const last = (turn.responseParts || [])[turn.responseParts.length - 1];
    const foot = [];
    if (!active && turn.state === "cancelled") foot.push(h("p", { class: "state" }, "Stopped."));
    if (!active && turn.state === "error" && cur && cur.turns && cur.turns[cur.turns.length - 1] === turn && last && last.kind === "error" && last.resumable && !cur.activeTurn) {
      foot.push(h("button", { type: "button", id: "keep-going", onclick: () => dispatch({ type: "chat/turnResume", turnId: turn.id }) },
        last.error.errorType === "executionInterrupted" ? "Keep going" : "Try again"));
    }
    if (active) foot.push(h("p", { class: "state working" }, "Working…"));
    had.el.dataset.turn = turn.id;
    had.el.dataset.state = active ? "active" : turn.state;
    had.user.textContent = (turn.message && turn.message.text) || "";
    return reconcile(had.el, [had.user, ...parts, ...foot]);
  }

  function draw(st, sub) {
    if (sub && sub.error) { replace(list, h("p", { class: "error", role: "alert" }, "This chat cannot be shown: " + sub.error)); return; }
    if (!st) return;
    const prevLast = cur && cur.turns && cur.turns[cur.turns.length - 1];
    cur = st;
    transcript.dataset.status = String(st.status || 0);
    const nearBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 80;
    const bot = st._meta && st._meta["ahpd.bot"];
    if (bot) { name.textContent = bot.name || bot.id; replace(face, swatch(bot)); back.href = "#/bots/" + encodeURIComponent(bot.id); }
    if (bot && bot.id && watching !== bot.id && app.watchBotProblems) {
      watching = bot.id;
      stops.push(app.watchBotProblems(bot.id, trouble));
    }
    const olderAdded = !older.firstChild && st.turnsNextCursor;
    replace(older, st.turnsNextCursor ? olderButton : null);
    const turns = st.turns || [];
    // The last ended turn is redrawn when it stops being the last, so a
    // "Keep going" button does not outlive it.
    if (prevLast && turns[turns.length - 1] !== prevLast) { const e = turnEls.get(prevLast.id); if (e) e.turn = null; }
    const els = turns.map((t) => turnEl(t, false));
    if (st.activeTurn) els.push(turnEl(st.activeTurn, true));
    reconcile(list, els.length ? els : [hello]);
    stop.hidden = !st.activeTurn;
    send.disabled = !!st.activeTurn;
    if (sendWhenIn) { sendWhenIn = false; submit(); }
    state.textContent = st.activeTurn ? "replying…" : "";
    if (nearBottom) transcript.scrollTop = transcript.scrollHeight;
    // The observer hears only of changes: a button drawn where its empty
    // place was already in view (a window taller than the turns, or a
    // scroll to the top before the next frame) is asked here.
    if (olderAdded) requestAnimationFrame(() => { if (!loading && inView(older)) loadOlder(); });
  }

  // What waits on the person in the session rather than the chat (a back
  // session's question or approval with -ask-in own), answered in the
  // chat it names. An entry keeps its element while it waits.
  const waitEls = new Map(); // entry id -> {entry, el}
  function drawWaiting(st) {
    const entries = ((st && st.inputNeeded) || []).filter((e) => e.chat && (e.kind === "chatInput" ? e.request : e.kind === "toolConfirmation" && e.toolCall));
    const els = entries.map((e) => {
      const had = waitEls.get(e.id);
      if (had && had.entry === e) return had.el;
      const send = (a) => { try { client.dispatch(e.chat, a); } catch (err) { say("Not sent: " + plain(err)); } };
      const el = e.kind === "chatInput" ? askForm(e.request, send) : approval(e.turnId, e.toolCall, send);
      el.dataset.waiting = e.id;
      waitEls.set(e.id, { entry: e, el });
      return el;
    });
    for (const id of [...waitEls.keys()]) if (!entries.some((e) => e.id === id)) waitEls.delete(id);
    reconcile(waiting, els);
    if (els.length && transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 80) transcript.scrollTop = transcript.scrollHeight;
  }

  stops.push(client.watch(chat, draw));
  // The session is followed too, so the chat stays announced to the server.
  stops.push(client.watch(session, (st) => drawWaiting(st)));
  return () => { for (const f of stops.splice(0)) f(); };
}

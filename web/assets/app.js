// The page: sign in, the bots a person may see (live), a bot's page with
// its chats, the make and edit forms built from the schema the server
// advertises, and chats. Views are drawn from the states the client keeps;
// every string from the server is set as text, or rendered as sanitized
// markdown.

import { Client, defaultChatURI, randomId } from "./client.js";
import { say, clearNotice, plain, swatch, when, ago } from "./ui.js";
import { h, replace, markdown } from "./dom.js";
import { botForm, fieldOf } from "./form.js";
import { chatView } from "./chat.js";

const TOKEN = "bots.token";
const main = document.getElementById("main");
const conn = document.getElementById("conn");
const signout = document.getElementById("signout");

const app = { client: null, init: null, root: null, cleanup: null };

const statusText = { connecting: "Connecting…", open: "Connected", reconnecting: "Reconnecting…", refused: "Not signed in", closed: "Offline" };

function setStatus(state, detail) {
  conn.dataset.state = state;
  conn.textContent = statusText[state] || state;
  conn.title = detail || "";
  conn.dataset.resumed = (app.client && app.client.resumed) || "";
  if (state === "refused") { signIn(detail); return; }
  if (state === "open") clearNotice();
  else if (detail) say(detail);
}



function connect() {
  if (app.client) app.client.close();
  const socket = document.querySelector('meta[name="ahp-socket"]').content || "/";
  const token = sessionStorage.getItem(TOKEN) || "";
  signout.hidden = !token;
  app.client = new Client({
    url: socket, token,
    onStatus: setStatus,
    onRejected: (reason) => say("The server refused that: " + reason),
  });
  app.root = null;
  app.client.start().then((init) => {
    app.init = init;
    // The root state, kept with its reducer: its _meta is the host's
    // advertisements as they are now.
    app.client.watch("ahp-root://", (st) => { if (st) app.root = st; });
    route();
  }, () => { /* onStatus says why */ });
}

function signIn(message) {
  if (app.cleanup) { app.cleanup(); app.cleanup = null; }
  clearNotice();
  signout.hidden = true; // nothing to sign out of on the sign-in screen
  const input = h("input", { id: "token", name: "token", type: "password", autocomplete: "current-password", required: true });
  const form = h("form", { class: "card signin", onsubmit: (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN, input.value.trim());
    connect();
  } },
  h("h1", {}, "Sign in"),
  message ? h("p", { class: "error", id: "signin-error", role: "alert" }, message) : null,
  h("div", { class: "field" }, h("label", { for: "token" }, "Your token"), input,
    h("p", { class: "hint" }, "It is kept in this tab only, and sent to this server alone.")),
  h("button", { type: "submit" }, "Sign in"));
  replace(main, form);
  input.focus();
}

signout.addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN);
  if (app.client) app.client.close();
  app.client = null;
  signout.hidden = true;
  signIn("");
});

// meta is the host's _meta: the root state's, or initialize's until the
// root state is in.
function meta() {
  return (app.root && app.root._meta) || (app.init && app.init._meta) || {};
}

// manifest is the make schema the server advertises.
function manifest() {
  const p = meta()["ahpd.resourceProviders"];
  return (p && p.bot && p.bot.manifest) || { properties: { name: { type: "string" } }, required: ["name"] };
}

function route() {
  if (!app.client || !app.init) return;
  if (app.cleanup) { app.cleanup(); app.cleanup = null; }
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  let cleanup;
  if (parts[0] === "make") cleanup = makeView(parts[1]);
  else if (parts[0] === "bots" && parts[1] && parts[2] === "edit") cleanup = editView(parts[1]);
  else if (parts[0] === "bots" && parts[1]) cleanup = botView(parts[1]);
  else if (parts[0] === "chats" && parts[1]) cleanup = chatView(app, main, parts[1], defaultChatURI(parts[1]));
  else cleanup = botsView();
  // The list of bots is a grid that takes a wide screen's width; forms,
  // cards and chats keep a line a person can read.
  main.classList.toggle("wide", !parts[0] || (parts[0] !== "make" && parts[0] !== "bots" && parts[0] !== "chats"));
  app.cleanup = cleanup || null;
  // Keyboard users start in the new view, where the view put the focus.
  if (!main.contains(document.activeElement)) main.focus({ preventScroll: true });
}
window.addEventListener("hashchange", route);


// hasChannel reports whether the server advertises a plugin channel.
function hasChannel(scheme) {
  const cs = meta()["ahpd.channels"];
  return Array.isArray(cs) && cs.some((c) => c && c.scheme === scheme);
}

// watchProblems calls f with the problems the person may see, now and as
// they appear and clear; it returns what stops watching.
function watchProblems(f) {
  if (!hasChannel("x-ahpd-problems")) return () => {};
  return app.client.watch("x-ahpd-problems://", (state, sub) => { if (!sub.error && state) f(state.problems || []); });
}

// watchBotProblems draws the problems of bot slug into el as they come and
// go, for a view that is not the bot's own (its chats); it returns what
// stops watching.
app.watchBotProblems = (slug, el) => watchProblems((ps) => replace(el, problemList(ps.filter((p) => p.bot === slug), "chat-problems-list", "Problems")));

// problemList is a card listing problems, or null for none.
function problemList(problems, id, title) {
  if (!problems.length) return null;
  return h("div", { class: "card problems", id, role: "status" }, h("h2", {}, title),
    h("ul", {}, problems.map((p) => h("li", {}, p.bot && id === "all-problems" ? h("strong", {}, p.bot + ": ") : null, p.reason,
      p.path ? h("span", { class: "path" }, " (" + p.path + ")") : null))));
}

function botsView() {
  const list = h("ul", { class: "bots", id: "bots", "aria-live": "polite" });
  const empty = h("p", { class: "muted", id: "no-bots" }, "No bots yet.");
  const trouble = h("div", {});
  replace(main, h("div", { class: "row" }, h("h1", {}, "Your bots"), h("a", { class: "button", href: "#/make", id: "make" }, "Make a bot")),
    trouble, list, empty, pairForm());
  let bots = [], problems = [];
  const draw = () => {
    const flagged = new Set(problems.map((p) => p.bot).filter(Boolean));
    replace(list, bots.map((b) => h("li", { class: "bot", dataset: { id: b.id } },
      h("a", { href: "#/bots/" + encodeURIComponent(b.id) }, swatch(b),
        h("span", {}, h("span", { class: "name" }, b.name || b.id), h("span", { class: "desc" }, b.description || ""),
          h("span", { class: "kind" }, [b.body, b.color].filter(Boolean).join(" · ")),
          flagged.has(b.id) ? h("span", { class: "flag" }, "Has a problem") : null)))));
    empty.hidden = bots.length > 0;
    // Problems of no bot listed here: a bot left out, the bots folder.
    const listed = new Set(bots.map((b) => b.id));
    replace(trouble, problemList(problems.filter((p) => !listed.has(p.bot)), "all-problems", "Problems"));
  };
  const stopBots = app.client.watch("x-ahpd-bots://", (state, sub) => {
    if (sub.error) { say("The list of bots cannot be shown: " + sub.error); return; }
    bots = [...(state.bots || [])].sort((a, b) => (a.name || a.id).localeCompare(b.name || b.id));
    draw();
  });
  const stopProblems = watchProblems((ps) => { problems = ps; draw(); });
  return () => { stopBots(); stopProblems(); };
}

// pairForm pairs a chat-network account (IRC, XMPP, Telegram, Slack) with
// the person on the page: a route answers an account it does not know
// with a code, entered here. It lists the accounts paired, each of which
// the person may let go. Shown folded: most people never need it.
function pairForm() {
  const code = h("input", { id: "pair-code", name: "code", autocomplete: "off", placeholder: "ABCD-EFGH", "aria-label": "Pairing code" });
  const said = h("p", { id: "pair-said", role: "status" });
  const paired = h("div", { id: "pairings" });
  const tell = (text, ok) => { replace(said, text); said.className = ok ? "ok" : "error"; };
  const list = async () => {
    try {
      const r = await app.client.request("x-ahpd/routePairings", {});
      const ps = r.pairings || [];
      const item = (p) => h("li", {}, h("span", { class: "identity" }, p.identity), h("span", { class: "muted" }, " as " + p.person),
        h("button", { type: "button", class: "secondary small unpair", "aria-label": "Let go of " + p.identity, onclick: () => unpair(p.identity) }, "Let go"));
      replace(paired, ps.length ? [h("p", {}, "Paired accounts:"), h("ul", { class: "routes" }, ps.map(item))] : null);
    } catch (err) { tell(plain(err), false); }
  };
  const unpair = async (identity) => {
    try {
      await app.client.request("x-ahpd/routeUnpair", { identity });
      tell(identity + " is no longer paired: it is asked for a code again.", true);
    } catch (err) { tell(plain(err), false); }
    list();
  };
  const submit = async (e) => {
    e.preventDefault();
    try {
      const r = await app.client.request("x-ahpd/routePair", { code: code.value });
      tell("Paired: " + r.identity + " now talks to bots as you.", true);
      code.value = "";
    } catch (err) { tell(plain(err), false); }
    list();
  };
  const box = h("details", { id: "pair", hidden: true }, h("summary", {}, "Pair a chat account"),
    h("p", { class: "muted" }, "A bot on a chat network (IRC, XMPP, Telegram, Slack) that does not know you answers with a code. Enter it here to make that account yours: its messages then reach your bots as you."),
    h("form", { class: "row", onsubmit: submit }, code, h("button", { type: "submit" }, "Pair")), said, paired);
  // Shown only where the host has a chat network to pair from.
  app.client.request("x-ahpd/routeConnections", {}).then((r) => {
    box.hidden = !(r.connections || []).length;
    if (!box.hidden) list();
  }, () => {});
  return box;
}

async function readBot(slug) {
  const [r, res] = await Promise.all([
    app.client.request("resourceRead", { channel: "ahp-root://", uri: "bot://" + slug }),
    app.client.request("resourceResolve", { channel: "ahp-root://", uri: "bot://" + slug }),
  ]);
  // _meta says what the reader may do: edit and delete it (ahpd.mayWrite),
  // or only copy it, as a bot bundled with the host (ahpd.bundled).
  const m = r._meta || {};
  return { bot: JSON.parse(r.data), etag: res.etag, mayWrite: m["ahpd.mayWrite"] === true, bundled: m["ahpd.bundled"] === true };
}

function field(label, value, id) {
  if (value === undefined || value === null || value === "" || (Array.isArray(value) && !value.length)) return null;
  const text = Array.isArray(value) ? value.join(", ") : typeof value === "string" ? value : JSON.stringify(value);
  return [h("dt", {}, label), h("dd", { id }, text)];
}

// ownerWords says whose a bot is: "you", "team backend", "this host".
function ownerWords(owner) {
  if (!owner) return "";
  if (owner === meta()["ahpd.principal"]) return "you";
  const [kind, a, b] = owner.split(":");
  switch (kind) {
    case "user": return a;
    case "team": return "team " + a;
    case "project": return `project ${b} of team ${a}`;
    case "root": return "this host";
  }
  return owner;
}

// agentWords names the agent a bot runs on.
function agentWords(bot) {
  if (bot.preset) return "preset " + bot.preset;
  const agent = bot.provider || "the host's default agent";
  return bot.model ? `${agent}, model ${bot.model}` : agent;
}

function botView(slug) {
  const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  // The bot's problems, live: a hand edit refused, a folder that left root.
  const trouble = h("div", { id: "bot-problems" });
  replace(main, box);
  let gone = false;
  const draw = async () => {
    let bot, mayWrite, bundled;
    try { ({ bot, mayWrite, bundled } = await readBot(slug)); } catch (e) { replace(box, h("p", { class: "error" }, plain(e)), trouble); return; }
    if (gone) return;
    const chats = h("ul", { class: "chats", id: "chats" }, h("li", { class: "muted" }, "Loading…"));
    const routes = h("div", { id: "routes" });
    const face = swatch(bot);
    face.classList.add("large");
    replace(box,
      h("a", { class: "button secondary back", href: "#/", id: "back" }, "Bots"),
      h("div", { class: "card bot-card" },
        h("div", { class: "row head" }, face, h("div", {},
          h("h1", { id: "bot-name" }, bot.name || slug),
          bot.description ? h("p", { id: "bot-description" }, bot.description) : null,
          h("p", { class: "muted", id: "bot-look" }, [bot.body, bot.color].filter(Boolean).join(" · ")))),
      h("div", { class: "row" },
        h("button", { type: "button", id: "new-chat", onclick: () => newChat(slug) }, "Chat"),
        mayWrite ? h("a", { class: "button secondary", href: "#/bots/" + encodeURIComponent(slug) + "/edit", id: "edit" }, "Edit") : null,
        mayWrite ? h("button", { type: "button", class: "secondary", id: "delete", onclick: () => deleteBot(slug, bot.name || slug) }, "Delete") : null,
        bundled ? h("a", { class: "button secondary", href: "#/make/" + encodeURIComponent(slug), id: "copy" }, "Make a copy") : null),
      trouble,
      bot.instructions ? h("h2", {}, "Instructions") : null,
      bot.instructions ? h("div", { class: "instructions", id: "bot-instructions" }, markdown(bot.instructions)) : null,
      h("dl", { class: "facts" },
        field("Owner", ownerWords(bot.owner), "bot-owner"),
        field("Agent", agentWords(bot), "bot-agent"),
        field("Tools", bot.tools && bot.tools.length ? bot.tools : "the host's default", "bot-tools"),
        field("Labels", bot.labels, "bot-labels")),
      h("details", { id: "bot-details" }, h("summary", {}, "Details"),
        h("dl", { class: "facts" },
          field("Works in", bot.workspace, "bot-workspace"), field("Back session", bot.session || "work", "bot-session"),
          field("Template", bot.template), field("Made", bot.createdAt ? when(bot.createdAt) : ""),
          field("Changed", bot.updatedAt ? when(bot.updatedAt) : "")))),
      h("h2", {}, "Chats"), chats, routes);
    drawRoutes(slug, routes, mayWrite || bundled);
    try {
      const r = await app.client.request("listSessions", { channel: "ahp-root://" });
      const mine = (r.items || []).filter((s) => s.provider === "bot-chat" && s._meta && s._meta["ahpd.bot"] && s._meta["ahpd.bot"].id === slug);
      mine.sort((a, b) => String(b.modifiedAt).localeCompare(String(a.modifiedAt)));
      replace(chats, mine.length ? mine.map((s) => {
        const info = (s._meta && s._meta["ahpd.turns"]) || {};
        const turns = Number(info.turns) || 0;
        // The server titles a chat with the bot's name: its first message
        // tells chats apart.
        const title = (s.title && s.title !== (bot.name || slug) ? s.title : info.firstMessage) || s.title || "New chat";
        return h("li", { dataset: { turns: String(turns) } },
          h("a", { href: "#/chats/" + encodeURIComponent(s.resource), class: "chat-title" }, title),
          h("span", { class: "muted chat-when", title: when(s.modifiedAt) },
            ago(s.modifiedAt) + " · " + (turns === 1 ? "1 turn" : turns + " turns")));
      }) : h("li", { class: "muted" }, "No chats yet."));
    } catch (e) { replace(chats, h("li", { class: "error" }, plain(e))); }
  };
  draw();
  // Redraw when someone else edits or deletes it.
  let seen;
  const stop = app.client.watch("x-ahpd-bots://", (state) => {
    if (!state) return;
    const entry = (state.bots || []).find((b) => b.id === slug);
    if (seen === undefined) { seen = entry; return; }
    if (entry === seen) return;
    seen = entry;
    if (!entry) {
      replace(box, h("p", { class: "error", id: "bot-gone" }, "This bot was deleted, or you may no longer see it."));
      return;
    }
    draw();
  });
  const stopProblems = watchProblems((ps) => replace(trouble, problemList(ps.filter((p) => p.bot === slug), "problems", "Problems")));
  return () => { gone = true; stop(); stopProblems(); };
}

// scopeWords says what a route listens to.
function scopeWords(scope) {
  if (!scope) return "";
  if (scope.kind === "direct") return scope.id ? "direct messages from " + scope.id : "anyone's direct messages";
  if (scope.kind === "thread") return "a thread of " + scope.id;
  return "everyone in " + scope.id;
}

// drawRoutes shows the routes that bring a chat network to the bot, each
// with its connection's state and a button that checks it, and, to whom
// may route to the bot (edit), buttons that turn it off or on and remove
// it, and a form that adds one; nothing when the host keeps no routes.
async function drawRoutes(slug, box, mayEdit) {
  let routes, conns;
  try {
    routes = (await app.client.request("x-ahpd/routeList", { bot: slug })).routes || [];
    conns = (await app.client.request("x-ahpd/routeConnections", {})).connections || [];
  } catch { return; } // a host without routes
  if (!routes.length && !conns.length) return; // nor any network to route from
  const byID = Object.fromEntries(conns.map((c) => [c.id, c]));
  replace(box, h("h2", {}, "Chat networks"), h("ul", { class: "routes", id: "route-list" }, routes.length ? routes.map((r) => {
    const c = byID[r.connection] || {};
    const verdict = h("div", { class: "route-check" });
    const check = async () => {
      try {
        const p = await app.client.request("x-ahpd/routePreflight", { route: r, broad: true });
        const bad = [...(p.problems || []), ...(p.conflicts || []).map((id) => "The enabled route " + id + " claims the same scope.")];
        const warnings = p.warnings || [];
        replace(verdict, bad.length ? h("ul", { class: "error" }, bad.map((l) => h("li", {}, l))) : h("p", { class: "ok" }, "Ready: messages flow."),
          warnings.length ? h("ul", { class: "muted" }, warnings.map((l) => h("li", {}, l))) : null);
      } catch (e) { replace(verdict, h("p", { class: "error" }, plain(e))); }
    };
    // change saves the route changed, or removes it, and draws again.
    const change = (method, params) => async () => {
      try {
        await app.client.request(method, params);
        drawRoutes(slug, box, mayEdit);
      } catch (e) { replace(verdict, h("p", { class: "error" }, plain(e))); }
    };
    return h("li", { dataset: { route: r.id } },
      h("strong", {}, r.name || r.id), " ",
      h("span", { class: "muted" }, [c.network || r.connection, scopeWords(r.scope), r.enabled ? "" : "disabled"].filter(Boolean).join(" · ")), " ",
      h("span", { class: "route-state state-" + (c.state || "off"), title: c.reason || "" }, c.state || "unknown"),
      c.reason ? h("span", { class: "muted" }, " (" + c.reason + ")") : null, " ",
      h("button", { type: "button", class: "secondary small", onclick: check }, "Check"),
      mayEdit ? h("button", { type: "button", class: "secondary small route-toggle",
        onclick: change("x-ahpd/routeDeploy", { route: { ...r, enabled: !r.enabled }, broad: true }) }, r.enabled ? "Turn off" : "Turn on") : null,
      mayEdit ? h("button", { type: "button", class: "secondary small route-remove",
        onclick: change("x-ahpd/routeDelete", { id: r.id, version: r.version }) }, "Remove") : null,
      verdict);
  }) : h("li", { class: "muted" }, "No chat network sends messages to this bot. " +
    (mayEdit && conns.length ? "Add one below, or ask Bot Builder." : "A builder bot deploys one: ask Bot Builder."))),
  mayEdit && conns.length ? routeForm(slug, conns, () => drawRoutes(slug, box, mayEdit)) : null);
}

// routeForm adds a route to the bot from one of the host's connections:
// the direct messages of anyone the host knows there, or everyone in one
// group or channel. The server checks it first (preflight), and a refusal
// is shown as it says it.
function routeForm(slug, conns, added) {
  const conn = h("select", { name: "connection", "aria-label": "Chat network" },
    conns.map((c) => h("option", { value: c.id }, c.id + " (" + c.network + ")")));
  const kind = h("select", { name: "kind", "aria-label": "Who talks to the bot" },
    h("option", { value: "direct" }, "direct messages from anyone this host knows"),
    h("option", { value: "group" }, "everyone in a group or channel"));
  const where = h("input", { name: "where", autocomplete: "off", placeholder: "#channel, room or chat id", "aria-label": "Group or channel", hidden: true });
  kind.addEventListener("change", () => { where.hidden = kind.value !== "group"; });
  const said = h("p", { class: "route-said", role: "status" });
  const submit = async (e) => {
    e.preventDefault();
    const scope = kind.value === "group" ? { kind: "group", id: where.value.trim() } : { kind: "direct" };
    const base = (slug + "-" + conn.value).replace(/[^a-z0-9-]/g, "-").slice(0, 32);
    const route = { id: base + "-" + randomId("").slice(0, 6), name: conn.value, enabled: true, connection: conn.value, bot: slug, scope };
    try {
      await app.client.request("x-ahpd/routeDeploy", { route, broad: true });
      added();
    } catch (err) { replace(said, h("span", { class: "error" }, plain(err))); }
  };
  return h("details", { id: "route-add" }, h("summary", {}, "Add a chat network"),
    h("form", { class: "row route-form", onsubmit: submit }, conn, kind, where, h("button", { type: "submit" }, "Add")), said);
}

async function newChat(slug) {
  const session = "ahp-session:/" + randomId("web-");
  try {
    await app.client.request("createSession", { channel: session, provider: "bot-chat", config: { bot: slug } });
    location.hash = "#/chats/" + encodeURIComponent(session);
  } catch (e) { say("The chat could not be opened: " + plain(e)); }
}

function deleteBot(slug, name) {
  const dlg = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = `Delete ${name}? Its slug "${slug}" can never be used again.`;
  dlg.returnValue = "";
  dlg.onclose = async () => {
    if (dlg.returnValue !== "ok") return;
    try {
      await app.client.request("resourceDelete", { channel: "ahp-root://", uri: "bot://" + slug });
      location.hash = "#/";
    } catch (e) { say("The bot was not deleted: " + plain(e)); }
  };
  dlg.showModal();
}

// makeView is the make form; from names a bot it starts as a copy of.
function makeView(from) {
  if (from) {
    const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
    replace(main, box);
    readBot(from).then(({ bot }) => {
      if (location.hash !== "#/make/" + encodeURIComponent(from)) return;
      const copy = {};
      for (const k of ["name", "description", "instructions", "body", "color", "labels", "provider", "model", "preset", "template", "tools"]) if (bot[k] !== undefined) copy[k] = bot[k];
      makeForm(copy, "Copy " + (bot.name || from));
    }, (e) => replace(box, h("p", { class: "error" }, plain(e))));
    return;
  }
  makeForm(undefined, "Make a bot");
}

function makeForm(values, heading) {
  const form = botForm(manifest(), { make: true, values, onsubmit: async (body, slug, f) => {
    try {
      await app.client.request("resourceWrite", { channel: "ahp-root://", uri: "bot://" + slug, data: JSON.stringify(body), encoding: "utf-8", createOnly: true });
      location.hash = "#/bots/" + encodeURIComponent(slug);
    } catch (e) {
      if (e.code === -32010) f.refuse("slug", e.message + ": that slug is taken, or was used by a deleted bot; choose another.");
      else f.refuse(fieldOf(e.message, f.keys, true), plain(e));
    }
  } });
  replace(main, h("h1", {}, heading), form.el);
  form.focus();
}

function editView(slug) {
  const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  replace(main, box);
  let gone = false;
  (async () => {
    let cur;
    try { cur = await readBot(slug); } catch (e) { replace(box, h("p", { class: "error" }, plain(e))); return; }
    if (gone) return;
    if (!cur.mayWrite) {
      replace(box, h("p", { class: "error", id: "no-edit" }, `You may not edit ${cur.bot.name || slug}.`),
        cur.bundled ? h("a", { class: "button", href: "#/make/" + encodeURIComponent(slug), id: "copy" }, "Make a copy") : null);
      return;
    }
    const form = botForm(manifest(), { make: false, values: cur.bot, onsubmit: async (patch, _slug, f) => {
      try {
        await app.client.request("resourceWrite", { channel: "ahp-root://", uri: "bot://" + slug, data: JSON.stringify(patch), encoding: "utf-8", ifMatch: cur.etag });
        location.hash = "#/bots/" + encodeURIComponent(slug);
      } catch (e) {
        if (e.code !== -32011) { f.refuse(fieldOf(e.message, f.keys, false), plain(e)); return; }
        // Someone saved first: show theirs, and let the person choose.
        let theirs;
        try { theirs = await readBot(slug); } catch (e2) { f.refuse("", plain(e2)); return; }
        f.conflict(theirs.bot, {
          keepMine: () => { cur = { bot: theirs.bot, etag: theirs.etag }; f.rebase(theirs.bot); f.submit(); },
          takeTheirs: () => { cur = theirs; f.reset(theirs.bot); },
        });
      }
    } });
    replace(box, h("h1", {}, "Edit ", h("span", {}, cur.bot.name || slug)), form.el);
    form.focus();
  })();
  return () => { gone = true; };
}

// takeToken keeps a token the page was opened with (/?tkn=…, the address
// the server prints with its local token) for this tab, as signing in
// does, and takes it off the address bar and the tab's history, so that
// it is neither shown, bookmarked nor shared with the address.
function takeToken() {
  const u = new URL(location.href);
  if (!u.searchParams.has("tkn")) return;
  const token = u.searchParams.get("tkn").trim();
  if (token) sessionStorage.setItem(TOKEN, token);
  u.searchParams.delete("tkn");
  history.replaceState(history.state, "", u.pathname + u.search + u.hash);
}

takeToken();
connect();

// An AHP client over one WebSocket: requests with answers, dispatched
// actions, and subscribed channels whose state is kept with the reducers
// (snapshot, then actions). When the connection drops it connects again
// and asks for a replay of what it missed (reconnect), or fresh snapshots
// when the server has no replay for it.

import { reducerFor } from "./reduce.js";

export class RPCError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

const ROOT = "ahp-root://";

function randomId(prefix) {
  const b = new Uint8Array(9);
  crypto.getRandomValues(b);
  return prefix + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
export { randomId };

export class Client {
  // url is the WebSocket's URL without the token; token may be empty.
  // onStatus(state, detail) hears "connecting", "open", "reconnecting",
  // "refused" and "closed"; onRejected(reason, channel, action) hears
  // actions the server refused.
  constructor({ url, token, onStatus, onRejected, onNotification }) {
    this.url = url; this.token = token;
    this.onStatus = onStatus || (() => {});
    this.onRejected = onRejected || (() => {});
    this.onNotification = onNotification || (() => {});
    this.clientId = randomId("web-");
    this.nextId = 1; this.clientSeq = 0; this.lastSeen = 0;
    this.waiting = new Map();
    this.subs = new Map(); // uri -> {state, reduce, listeners:Set}
    this.ready = false; this.everReady = false; this.closedByUs = false;
    this.retry = 0;
    this.upRefusals = 0; // sockets refused in a row while the server answered
    this.init = null; // the initialize result
    this.readyWaiters = [];
  }

  socketURL() {
    const u = new URL(this.url, location.href);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    if (this.token) u.searchParams.set("tkn", this.token);
    return u.toString();
  }

  // start connects and resolves with the initialize result.
  start() {
    this.open();
    return this.whenReady();
  }

  whenReady() {
    if (this.ready) return Promise.resolve(this.init);
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }));
  }

  close() {
    this.closedByUs = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000, "bye");
  }

  open() {
    this.onStatus(this.everReady ? "reconnecting" : "connecting");
    let opened = false;
    const ws = new WebSocket(this.socketURL());
    this.ws = ws;
    ws.onopen = () => { opened = true; this.upRefusals = 0; this.handshake(); };
    ws.onmessage = (ev) => this.receive(ev.data);
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ready = false;
      for (const [, w] of this.waiting) w.reject(new RPCError(-32000, "the connection closed"));
      this.waiting.clear();
      if (this.closedByUs) return;
      if (!opened) this.refusedOrDown();
      else this.again();
    };
  }

  // refusedOrDown tells a refused token from a server that is not there:
  // a browser does not show a WebSocket's HTTP status, so it asks the page's
  // own address whether the server answers. A server that was down when
  // the socket tried and is up by the time it is asked (a restart) looks
  // the same once, so the socket is tried again before the token is
  // called refused.
  async refusedOrDown() {
    let up = false;
    try { up = (await fetch(location.pathname, { method: "HEAD", cache: "no-store" })).ok; } catch { up = false; }
    this.upRefusals = up ? this.upRefusals + 1 : 0;
    if (up && this.upRefusals < 2) {
      this.again();
      return;
    }
    if (up && !this.everReady) {
      this.onStatus("refused", this.token
        ? "The server refused this token (HTTP 401). Check it and sign in again."
        : "This server needs a token (HTTP 401). Sign in with yours (a server with no users file prints its address with it, ?tkn=…, and keeps it in its configuration folder's local-token file).");
      for (const w of this.readyWaiters.splice(0)) w.reject(new RPCError(401, "refused"));
      return;
    }
    if (up) {
      // The token worked before: it may have been revoked.
      this.onStatus("refused", "The server no longer accepts this token (HTTP 401). Sign in again.");
      return;
    }
    this.again();
  }

  again() {
    this.onStatus(this.everReady ? "reconnecting" : "closed", "The server cannot be reached; trying again…");
    const delay = Math.min(5000, 250 * 2 ** this.retry++);
    this.timer = setTimeout(() => this.open(), delay);
  }

  async handshake() {
    try {
      if (this.everReady) {
        await this.resume();
      } else {
        this.init = await this.call("initialize", { channel: ROOT, protocolVersions: ["1.1.0", "1.0.0"], clientId: this.clientId,
          clientInfo: { name: "bots-web", title: "Bots in a browser" } });
        this.lastSeen = Math.max(this.lastSeen, this.init.serverSeq || 0);
      }
    } catch (e) {
      if (e.code === -32000) return; // the connection closed: onclose tries again
      this.onStatus("closed", "The server did not accept this client: " + e.message);
      for (const w of this.readyWaiters.splice(0)) w.reject(e);
      return;
    }
    this.ready = true; this.everReady = true; this.retry = 0;
    this.onStatus("open");
    for (const w of this.readyWaiters.splice(0)) w.resolve(this.init);
  }

  // resume asks for what was missed since lastSeen on every subscription.
  async resume() {
    const uris = [...this.subs.keys()];
    let r;
    try {
      r = await this.call("reconnect", { channel: ROOT, clientId: this.clientId, lastSeenServerSeq: this.lastSeen, subscriptions: uris });
    } catch (e) {
      if (e.code === -32000) throw e; // the connection went again
      // A server that will not resume this client: start afresh.
      this.init = await this.call("initialize", { channel: ROOT, protocolVersions: ["1.1.0", "1.0.0"], clientId: this.clientId });
      this.resumed = "snapshot";
      for (const uri of uris) this.resubscribe(uri);
      return;
    }
    this.resumed = r.type; // "replay" or "snapshot"
    if (r.type === "replay") {
      for (const env of r.actions || []) this.apply(env);
      for (const uri of r.missing || []) this.resubscribe(uri);
      return;
    }
    const got = new Set();
    for (const snap of r.snapshots || []) {
      got.add(snap.resource);
      this.setState(snap.resource, snap.state, snap.fromSeq);
    }
    for (const uri of uris) if (!got.has(uri)) this.resubscribe(uri);
  }

  async resubscribe(uri) {
    try {
      const r = await this.call("subscribe", { channel: uri });
      if (r.snapshot) this.setState(uri, r.snapshot.state, r.snapshot.fromSeq);
    } catch (e) {
      const sub = this.subs.get(uri);
      if (sub) { sub.error = e.message; this.emit(uri); }
    }
  }

  send(msg) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) throw new RPCError(-32000, "not connected");
    this.ws.send(JSON.stringify(msg));
  }

  call(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      try { this.send({ jsonrpc: "2.0", id, method, params }); } catch (e) { this.waiting.delete(id); reject(e); }
    });
  }

  // request waits for the connection, then calls.
  async request(method, params) {
    await this.whenReady();
    return this.call(method, params);
  }

  dispatch(channel, action) {
    this.send({ jsonrpc: "2.0", method: "dispatchAction", params: { channel, clientSeq: ++this.clientSeq, action } });
  }

  receive(data) {
    let m;
    try { m = JSON.parse(data); } catch { return; }
    if (m.id !== undefined && m.id !== null && !m.method) {
      const w = this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id);
      if (m.error) w.reject(new RPCError(m.error.code, m.error.message));
      else w.resolve(m.result || {});
      return;
    }
    if (m.method === "action") { this.apply(m.params); return; }
    if (m.method) this.onNotification(m.method, m.params);
  }

  apply(env) {
    if (env.rejectionReason) { this.onRejected(env.rejectionReason, env.channel, env.action); return; }
    if (typeof env.serverSeq === "number") this.lastSeen = Math.max(this.lastSeen, env.serverSeq);
    const sub = this.subs.get(env.channel);
    if (!sub || sub.state === undefined) return;
    if (typeof env.serverSeq === "number" && env.serverSeq <= sub.fromSeq) return; // in the snapshot already
    sub.state = sub.reduce(sub.state, env.action);
    this.emit(env.channel);
  }

  setState(uri, state, fromSeq) {
    const sub = this.subs.get(uri);
    if (!sub) return;
    sub.state = state; sub.fromSeq = fromSeq || 0; sub.error = null;
    this.lastSeen = Math.max(this.lastSeen, sub.fromSeq);
    this.emit(uri);
  }

  emit(uri) {
    const sub = this.subs.get(uri);
    if (sub) for (const f of sub.listeners) f(sub.state, sub);
  }

  // watch subscribes to uri (once per connection) and calls f with its
  // state now and after every change; it returns the function that stops
  // watching (and unsubscribes when nobody watches any more).
  watch(uri, f) {
    let sub = this.subs.get(uri);
    if (!sub) {
      sub = { state: undefined, fromSeq: 0, reduce: reducerFor(uri), listeners: new Set(), error: null };
      this.subs.set(uri, sub);
      sub.pending = this.request("subscribe", { channel: uri }).then((r) => {
        if (r.snapshot) this.setState(uri, r.snapshot.state, r.snapshot.fromSeq);
      }, (e) => { sub.error = e.message; this.emit(uri); });
    }
    sub.listeners.add(f);
    if (sub.state !== undefined || sub.error) f(sub.state, sub);
    return () => {
      sub.listeners.delete(f);
      if (sub.listeners.size === 0 && this.subs.get(uri) === sub) {
        this.subs.delete(uri);
        if (this.ready) try { this.send({ jsonrpc: "2.0", method: "unsubscribe", params: { channel: uri } }); } catch { /* closed */ }
      }
    };
  }

  state(uri) { const s = this.subs.get(uri); return s && s.state; }
}

// defaultChatURI is ahp-chat://default/<base64url(sessionUri)>.
export function defaultChatURI(session) {
  const bytes = new TextEncoder().encode(session);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return "ahp-chat://default/" + btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

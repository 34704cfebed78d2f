// What every view shares: the notice line, plain error sentences, a bot's
// swatch and times.

import { RPCError } from "./client.js";
import { h } from "./dom.js";

const notice = document.getElementById("notice");

export function say(text) {
  notice.textContent = text;
  notice.hidden = false;
}


export function clearNotice() { notice.hidden = true; notice.textContent = ""; }

// plain turns an error into a sentence a person can act on.
export function plain(e) {
  if (!(e instanceof RPCError)) return String(e && e.message || e);
  switch (e.code) {
    case -32009: return "You may not do that: " + e.message;
    case -32008: return "Not found: " + e.message;
    case -32000: return "The connection closed before the server answered; try again.";
  }
  return e.message;
}

export function swatch(bot) {
  const el = h("span", { class: "swatch", "aria-hidden": "true" }, (bot.body || "bot").slice(0, 3));
  if (bot.color) el.style.background = bot.color;
  return el;
}

export function when(ts) {
  const t = Date.parse(ts);
  return Number.isNaN(t) ? "" : new Date(t).toLocaleString();
}

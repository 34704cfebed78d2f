// What every view shares: the notice line, plain error sentences, a bot's
// swatch and times.

import { RPCError } from "./client.js";
import { h } from "./dom.js";

const notice = document.getElementById("notice");

// say shows a sentence in the notice line.
export function say(text) {
  notice.textContent = text;
  notice.hidden = false;
}

// clearNotice hides the notice line.
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

// swatch is a bot's colour with the first letter of its name.
export function swatch(bot) {
  const initial = Array.from((bot.name || bot.id || "?").trim())[0] || "?";
  const el = h("span", { class: "swatch", "aria-hidden": "true", title: bot.body || "" }, initial.toUpperCase());
  if (bot.color) el.style.background = bot.color;
  return el;
}

// when is a protocol timestamp in the person's own words.
export function when(ts) {
  const t = Date.parse(ts);
  return Number.isNaN(t) ? "" : new Date(t).toLocaleString();
}

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

// The bodies the page draws; any other is drawn as the default shape.
const BODIES = ["robot", "humanoid", "alien", "gumbo", "circle", "semicircle", "smash", "square",
  "triangle", "pentagon", "hexagon", "drop", "bean", "cloud", "ghost"];

// swatch is a bot drawn in its body and colour, with its initial.
export function swatch(bot) {
  const initial = Array.from((bot.name || bot.id || "?").trim())[0] || "?";
  const body = BODIES.includes(bot.body) ? " b-" + bot.body : "";
  const el = h("span", { class: "swatch" + body, "aria-hidden": "true", title: bot.body || "" }, initial.toUpperCase());
  if (bot.color) el.style.background = bot.color;
  return el;
}

// when is a protocol timestamp in the person's own words.
export function when(ts) {
  const t = Date.parse(ts);
  return Number.isNaN(t) ? "" : new Date(t).toLocaleString();
}

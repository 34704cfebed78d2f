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
    case -32009: return "You may not do that: " + e.message.replace(/^Permission denied:\s*/i, "");
    case -32008: return "Not found: " + e.message;
    case -32000: return "The connection closed before the server answered; try again.";
  }
  return e.message;
}

// The bodies the page draws (record/vocab.go's suggestions); any other word
// is drawn as a circle with the bot's initial.
export const BODIES = ["robot", "humanoid", "alien", "gumbo", "circle", "semicircle", "smash", "square",
  "triangle", "pentagon", "hexagon", "drop", "bean", "cloud", "ghost"];

// COLORS are the named colours (record/vocab.go) and the paint of each.
export const COLORS = {
  red: "#d64545", orange: "#e07b24", yellow: "#e3b505", green: "#3f9c4a", teal: "#1f9a94", blue: "#2f6fdf",
  purple: "#8250c8", pink: "#d9559b", brown: "#8a5a36", grey: "#7b8088", black: "#262626",
};

// paint is the fill of a bot's colour: a named colour or #rrggbb, anything
// else (a bot's colour is untrusted) the grey of a bot without one.
export function paint(color) {
  if (Object.hasOwn(COLORS, color)) return COLORS[color];
  return /^#[0-9a-fA-F]{6}$/.test(color || "") ? color.toLowerCase() : COLORS.grey;
}

const NS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

// SHAPES draw each body in a 32×32 box: [tag, attributes] of the filled
// outline, then the details (eyes, antenna) drawn over it in white.
const SHAPES = {
  robot: [["rect", { x: 5, y: 8, width: 22, height: 20, rx: 4 }], ["line", { x1: 16, y1: 8, x2: 16, y2: 3, stroke: "currentColor", "stroke-width": 2 }],
    ["circle", { cx: 16, cy: 3, r: 2 }], ["rect", { class: "eye", x: 10, y: 14, width: 4, height: 4 }], ["rect", { class: "eye", x: 18, y: 14, width: 4, height: 4 }],
    ["rect", { class: "eye", x: 11, y: 22, width: 10, height: 2 }]],
  humanoid: [["circle", { cx: 16, cy: 10, r: 7 }], ["path", { d: "M3 31c0-8 6-12 13-12s13 4 13 12z" }]],
  alien: [["ellipse", { cx: 16, cy: 15, rx: 12, ry: 14 }], ["ellipse", { class: "eye", cx: 11, cy: 14, rx: 3.5, ry: 5, transform: "rotate(-20 11 14)" }],
    ["ellipse", { class: "eye", cx: 21, cy: 14, rx: 3.5, ry: 5, transform: "rotate(20 21 14)" }]],
  gumbo: [["path", { d: "M16 2c7 0 14 5 13 12s-2 8 0 11-5 6-12 5S3 29 3 22s-2-9 1-13 5-7 12-7z" }], ["circle", { class: "eye", cx: 12, cy: 13, r: 2 }], ["circle", { class: "eye", cx: 20, cy: 13, r: 2 }]],
  circle: [["circle", { cx: 16, cy: 16, r: 14 }]],
  semicircle: [["path", { d: "M2 24a14 14 0 0 1 28 0z" }]],
  smash: [["polygon", { points: "16,1 20,11 31,11 22,18 26,30 16,22 6,30 10,18 1,11 12,11" }]],
  square: [["rect", { x: 3, y: 3, width: 26, height: 26, rx: 2 }]],
  triangle: [["polygon", { points: "16,2 30,29 2,29" }]],
  pentagon: [["polygon", { points: "16,2 30,12.5 25,29 7,29 2,12.5" }]],
  hexagon: [["polygon", { points: "9,3 23,3 30,16 23,29 9,29 2,16" }]],
  drop: [["path", { d: "M16 2C16 2 5 15 5 21a11 11 0 0 0 22 0C27 15 16 2 16 2z" }]],
  bean: [["path", { d: "M10 4c6-3 11 1 12 5s1 5 5 8-1 12-8 12S3 27 3 19 4 7 10 4z" }]],
  cloud: [["path", { d: "M8 26a6 6 0 0 1-1-12 8 8 0 0 1 15-3 6 6 0 0 1 4 11 4 4 0 0 1-2 4z" }]],
  ghost: [["path", { d: "M4 30V14a12 12 0 0 1 24 0v16l-4-3-4 3-4-3-4 3-4-3z" }], ["circle", { class: "eye", cx: 12, cy: 14, r: 2.5 }], ["circle", { class: "eye", cx: 20, cy: 14, r: 2.5 }]],
};

// face is a bot's body drawn as an SVG in its colour, made with DOM calls
// alone: nothing the bot wrote is parsed as markup.
export function face(body, color, initial) {
  const fill = paint(color);
  const known = BODIES.includes(body);
  const svg = svgEl("svg", { viewBox: "0 0 32 32", class: "face", "aria-hidden": "true", "data-body": known ? body : "other", fill });
  svg.style.color = fill;
  for (const [tag, attrs] of SHAPES[known ? body : "circle"]) {
    const el = svgEl(tag, attrs);
    if (attrs.class === "eye") el.setAttribute("fill", "#fff");
    svg.append(el);
  }
  if (!known) {
    const t = svgEl("text", { x: 16, y: 21.5, "text-anchor": "middle", class: "initial", fill: "#fff" });
    t.textContent = initial || "?";
    svg.append(t);
  }
  return svg;
}

// swatch is a bot drawn in its body and colour; a body the page does not
// know is a circle with the bot's initial.
export function swatch(bot) {
  const initial = (Array.from((bot.name || bot.id || "?").trim())[0] || "?").toUpperCase();
  const el = h("span", { class: "swatch", title: [bot.body, bot.color].filter(Boolean).join(", ") }, face(bot.body, bot.color, initial));
  return el;
}

// when is a protocol timestamp in the person's own words.
export function when(ts) {
  const t = Date.parse(ts);
  return Number.isNaN(t) ? "" : new Date(t).toLocaleString();
}

// ago is a protocol timestamp as a time from now: "just now", "5 minutes
// ago", "yesterday", else the date.
export function ago(ts, now = Date.now()) {
  const t = Date.parse(ts);
  if (Number.isNaN(t)) return "";
  const s = Math.max(0, Math.round((now - t) / 1000));
  const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  if (s < 45) return "just now";
  if (s < 3600) return rtf.format(-Math.round(s / 60), "minute");
  if (s < 86400) return rtf.format(-Math.round(s / 3600), "hour");
  if (s < 7 * 86400) return rtf.format(-Math.round(s / 86400), "day");
  return new Date(t).toLocaleDateString();
}

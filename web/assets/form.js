// The make and edit forms, built from the make schema the server
// advertises (_meta['ahpd.resourceProviders'].bot.manifest): one field per
// property, the schema's own checks before sending, and each refusal of
// the server shown beside the field it names.

import { h, replace } from "./dom.js";
import { face } from "./ui.js";

// The fields shown first, in this order; the others go under "More".
const FIRST = ["name", "description", "instructions", "body", "color", "labels"];
// Fields fixed once a bot is made.
const FIXED = ["workspace", "template", "owner"];
const LONG = ["instructions"];
const LABELS = { color: "Colour", body: "Body", provider: "Agent", session: "Back session" };

function title(k) { return LABELS[k] || k.charAt(0).toUpperCase() + k.slice(1); }

// fieldOf names the field a refusal is about: the field its message starts
// with, "slug" for a slug the server will not take, else "" (the form).
export function fieldOf(message, keys, make) {
  const m = /^([a-z]+)\b/i.exec(message || "");
  if (m && keys.includes(m[1])) return m[1];
  if (/\bconnectors?\b/.test(message) && keys.includes("connectors")) return "connectors";
  if (/a bot must have a name|name cannot be cleared/.test(message)) return "name";
  if (make && /is not a slug|slug/.test(message)) return "slug";
  for (const k of keys) if (new RegExp("^" + k + "\\[").test(message)) return k;
  return "";
}

function toText(v) {
  if (v === undefined || v === null) return "";
  if (Array.isArray(v)) return v.join(", ");
  if (typeof v === "object") return JSON.stringify(v, null, 2);
  return String(v);
}

function options(p) {
  const out = [];
  if (Array.isArray(p.examples)) out.push(...p.examples);
  for (const alt of p.anyOf || []) if (Array.isArray(alt.enum)) out.push(...alt.enum);
  if (Array.isArray(p.enum)) out.push(...p.enum);
  return out;
}

// check applies the schema's own rules to one value; it returns a sentence
// or "".
function check(k, p, text, required) {
  if (!text) return required ? `${title(k)} is required.` : "";
  if (p.type === "string") {
    if (p.minLength && text.length < p.minLength) return `${title(k)} is too short.`;
    if (p.pattern && !new RegExp(p.pattern).test(text)) {
      if (k === "slug") return "The slug must be 1 to 40 lowercase letters, digits and dashes, starting with a letter (like motion or pr-review).";
      return `${title(k)} must match ${p.pattern}.`;
    }
  }
  if (p.type === "object") {
    try { const v = JSON.parse(text); if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error(); } catch { return `${title(k)} must be a JSON object.`; }
  }
  return "";
}

function parse(p, text) {
  if (p.type === "array") return text.split(",").map((s) => s.trim()).filter(Boolean);
  if (p.type === "object") return JSON.parse(text);
  return text;
}

// botForm returns {el, keys, focus, refuse, conflict, rebase, reset, submit}.
// onsubmit(body, slug, form) gets the whole body for a make, or only what
// changed (null for a cleared field) for an edit.
export function botForm(schema, { make, values, onsubmit }) {
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const keys = Object.keys(props).filter((k) => k !== "id" && !props[k].readOnly && (make || !FIXED.includes(k)));
  keys.sort((a, b) => (FIRST.indexOf(a) + 1 || 99) - (FIRST.indexOf(b) + 1 || 99));
  let base = values || {};
  const inputs = {}; const errors = {}; const wraps = {};
  const top = h("p", { class: "error", id: "form-error", role: "alert", tabindex: "-1", hidden: true });
  const conflictBox = h("div", { class: "card problems", id: "conflict", role: "alert", hidden: true });

  function row(k, p, req) {
    const id = "f-" + k;
    const list = options(p);
    const attrs = { id, name: k, "aria-describedby": id + "-err " + id + "-hint" };
    if (req) attrs.required = true;
    let input;
    if (LONG.includes(k) || p.type === "object") input = h("textarea", attrs);
    else {
      if (list.length) attrs.list = id + "-list";
      input = h("input", { ...attrs, type: "text", autocomplete: "off" });
    }
    inputs[k] = input;
    errors[k] = h("p", { class: "error", id: id + "-err", "aria-live": "polite" });
    const hint = p.description || (k === "slug" ? "The bot's address, bot://<slug>: lowercase letters, digits and dashes, starting with a letter. It never changes." : "");
    wraps[k] = h("div", { class: "field", dataset: { field: k } },
      h("label", { for: id }, title(k), req ? " (required)" : ""), input,
      list.length ? h("datalist", { id: id + "-list" }, list.map((o) => h("option", { value: o }))) : null,
      (k === "body" || k === "color") && list.length ? picker(k, list, input) : null,
      hint ? h("p", { class: "hint", id: id + "-hint" }, hint + (p.type === "array" ? " Separate them with commas." : "") +
        // The choices that exist, in words (the field also suggests them).
        (list.length && k !== "body" && k !== "color" ? " This host has: " + list.join(", ") + "." : "")) : null,
      errors[k]);
    return wraps[k];
  }

  // picker shows the suggestions of body or color drawn, each a button
  // that puts its word in the field (which still takes any other word).
  function picker(k, list, input) {
    const buttons = list.map((o) => h("button", {
      type: "button", class: "pick", title: o, "aria-label": o, dataset: { value: o },
      onclick: () => { input.value = o; input.dispatchEvent(new Event("input")); mark(); },
    }, k === "body" ? face(o, inputs.color ? inputs.color.value : "", "") : face("circle", o, ""), h("span", {}, o)));
    const mark = () => {
      for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.value === input.value.trim()));
      // Bodies are drawn in the colour chosen.
      if (k === "color" && pickers.body) pickers.body.recolor(input.value.trim());
    };
    input.addEventListener("input", mark);
    const el = h("div", { class: "picker", id: "f-" + k + "-picker", role: "group", "aria-label": title(k) + " suggestions" }, buttons);
    pickers[k] = {
      mark,
      recolor(c) { for (const b of buttons) b.firstChild.replaceWith(face(b.dataset.value, c, "")); },
    };
    queueMicrotask(mark);
    return el;
  }
  const pickers = {};

  const slugProp = { type: "string", pattern: (props.id && props.id.pattern) || "^[a-z][a-z0-9-]{0,39}$" };
  const firstRows = []; const moreRows = [];
  if (make) firstRows.push(row("slug", slugProp, true));
  for (const k of keys) (FIRST.includes(k) ? firstRows : moreRows).push(row(k, props[k], required.has(k)));
  const save = h("button", { type: "submit", id: "save" }, make ? "Make" : "Save");
  const el = h("form", { class: "card", id: make ? "make-form" : "edit-form", novalidate: true, onsubmit: (ev) => { ev.preventDefault(); submit(); } },
    top, conflictBox, firstRows,
    moreRows.length ? h("details", {}, h("summary", {}, "More"), moreRows) : null,
    h("div", { class: "row" }, save, h("a", { class: "button secondary", href: make ? "#/" : "#/bots/" + encodeURIComponent(base.id || "") }, "Cancel")));

  function fill(v) {
    for (const k of keys) inputs[k].value = toText(v[k]);
    for (const p of Object.values(pickers)) p.mark();
  }
  fill(base);

  function clear() {
    top.hidden = true; top.textContent = "";
    for (const k of Object.keys(errors)) { errors[k].textContent = ""; wraps[k].classList.remove("invalid"); inputs[k].removeAttribute("aria-invalid"); }
  }

  // refuse shows a refusal beside its field, or at the form's top, and
  // brings it into view with the focus: a Save at the foot of a long form
  // would otherwise leave it out of sight (the page's scroll padding keeps
  // it from under the sticky header).
  function refuse(k, msg) {
    if (!k || !errors[k]) { top.textContent = msg; top.hidden = false; top.focus(); return; }
    // One spelling on the page: the server says "color", the page "Colour".
    errors[k].textContent = k === "color" ? msg.replace(/^color\b/, "Colour") : msg;
    wraps[k].classList.add("invalid");
    inputs[k].setAttribute("aria-invalid", "true");
    if (wraps[k].parentElement.tagName === "DETAILS") wraps[k].parentElement.open = true;
    inputs[k].focus();
  }

  async function submit() {
    clear();
    let bad = null;
    const body = {};
    const all = make ? ["slug", ...keys] : keys;
    for (const k of all) {
      const p = k === "slug" ? slugProp : props[k];
      const text = inputs[k].value.trim();
      const msg = check(k, p, text, k === "slug" || (make && required.has(k)));
      if (msg) { refuse(k, msg); bad = bad || k; continue; }
      if (k === "slug") continue;
      if (make) { if (text) body[k] = parse(p, text); continue; }
      if (text === toText(base[k]).trim()) continue;
      body[k] = text ? parse(p, text) : null;
    }
    if (bad) { inputs[bad].focus(); return; }
    if (!make && !Object.keys(body).length) { refuse("", "Nothing changed."); return; }
    save.disabled = true;
    try { await onsubmit(body, make ? inputs.slug.value.trim() : base.id, api); } finally { save.disabled = false; }
  }

  const api = {
    el, keys: make ? ["slug", ...keys] : keys,
    focus: () => inputs[make ? "slug" : keys[0]].focus(),
    refuse, submit,
    // conflict shows that someone saved first, and what they saved.
    conflict(theirs, { keepMine, takeTheirs }) {
      const diff = keys.filter((k) => toText(theirs[k]) !== toText(base[k]));
      replace(conflictBox,
        h("p", {}, "Someone else saved this bot while you were editing it."),
        diff.length ? h("ul", {}, diff.map((k) => h("li", {}, `${title(k)} is now: `, h("span", { class: "pre" }, toText(theirs[k]) || "(empty)")))) : null,
        h("div", { class: "row" },
          h("button", { type: "button", id: "keep-mine", onclick: () => { conflictBox.hidden = true; keepMine(); } }, "Save mine over theirs"),
          h("button", { type: "button", class: "secondary", id: "take-theirs", onclick: () => { conflictBox.hidden = true; takeTheirs(); } }, "Use theirs")));
      conflictBox.hidden = false;
      conflictBox.scrollIntoView({ block: "nearest" });
    },
    // rebase makes theirs the base an edit is compared with, keeping what
    // the person typed.
    rebase(theirs) { base = theirs; },
    reset(theirs) { base = theirs; fill(theirs); clear(); },
  };
  return api;
}

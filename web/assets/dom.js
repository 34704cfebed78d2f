// Small DOM helpers. Text is always set as text: nothing a bot or an agent
// wrote reaches innerHTML except through markdown.js's sanitizer.

import { marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.mjs";

// h makes an element: attrs are properties or attributes ("on…" are
// listeners), children are nodes or strings (as text).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k in el && typeof v !== "string") el[k] = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// replace sets el's children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// reconcile makes el's children exactly nodes, moving only those out of
// place, so an element that stays (and the focus or typing in it) is kept.
export function reconcile(el, nodes) {
  const want = nodes.filter((n) => n instanceof Node);
  want.forEach((n, i) => { if (el.childNodes[i] !== n) el.insertBefore(n, el.childNodes[i] || null); });
  while (el.childNodes.length > want.length) el.lastChild.remove();
  return el;
}

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

// markdown renders untrusted markdown into a fragment: marked makes HTML,
// DOMPurify keeps only harmless elements and attributes.
export function markdown(text) {
  const html = marked.parse(String(text || ""), { async: false, gfm: true, breaks: true });
  return DOMPurify.sanitize(html, { RETURN_DOM_FRAGMENT: true, FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select"] });
}

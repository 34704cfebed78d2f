package main

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// What the browser tests check of any screen: readable contrast, a name on
// every control, and no sideways scrolling.

// minContrast is WCAG 2's AA ratio for body text.
const minContrast = 4.5

// contrastJS lists the visible elements with text of their own whose
// contrast against what is behind them is under minContrast, as WCAG 2
// computes it: the relative luminance of the text's colour, blended over
// the backgrounds of its ancestors, against that of the backgrounds. A
// control that is disabled, and what is hidden from assistive technology
// (a bot's swatch), are left out, as WCAG leaves them.
const contrastJS = `(() => {
	const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return [0, 0, 0, 0];
		const v = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
	const over = (top, under) => { const a = top[3]; return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat(1); };
	const behind = (el) => { const layers = []; let base = [255, 255, 255, 1];
		for (let e = el; e; e = e.parentElement) { const b = parse(getComputedStyle(e).backgroundColor);
			if (b[3] >= 1) { base = b; break; } if (b[3] > 0) layers.push(b); }
		let c = base; for (let i = layers.length - 1; i >= 0; i--) c = over(layers[i], c); return c; };
	const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
		return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
	const out = []; let checked = 0;
	for (const el of document.querySelectorAll("body *")) {
		if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
		if (el.closest("[aria-hidden=true], script, style, noscript") || el.matches(":disabled")) continue;
		const r = el.getBoundingClientRect(); const cs = getComputedStyle(el);
		if (!r.width || !r.height || cs.visibility === "hidden") continue;
		let opacity = 1; for (let e = el; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
		const bg = behind(el); const fg0 = parse(cs.color); const fg = over([fg0[0], fg0[1], fg0[2], fg0[3] * opacity], bg);
		const [a, b] = [lum(fg), lum(bg)]; const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
		checked++;
		if (ratio < MIN) out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") +
			" " + JSON.stringify(el.textContent.trim().slice(0, 30)) + ": " + ratio.toFixed(2) + " (" + cs.color + " on rgb(" + bg.slice(0, 3).map(Math.round).join(", ") + "))");
	}
	return { checked, poor: out };
})()`

// unnamedJS lists the visible controls a screen reader would have no name
// for: no text, no label, no aria-label and no title.
const unnamedJS = `[...document.querySelectorAll("button, a[href], input, textarea, select, summary, [tabindex]")].filter((el) => {
	const r = el.getBoundingClientRect(); if (!r.width || !r.height || el.closest("[aria-hidden=true]")) return false;
	const labelled = el.id && document.querySelector('label[for="' + CSS.escape(el.id) + '"]');
	return !(el.textContent.trim() || el.getAttribute("aria-label") || el.getAttribute("title") || labelled || el.closest("label"));
}).map((el) => el.outerHTML.slice(0, 80))`

// readable checks the screen the tab shows: the contrast of its text, a
// name on each control and no page wider than the window.
func (b *tab) readable(where string) {
	b.t.Helper()
	type result struct {
		Checked int
		Poor    []string
	}
	r := eval[result](b, strings.Replace(contrastJS, "MIN", fmt.Sprint(minContrast), 1))
	if r.Checked == 0 {
		b.t.Errorf("%s: no text was checked for contrast", where)
	}
	for _, p := range r.Poor {
		b.t.Errorf("%s: contrast under %.1f:1: %s", where, minContrast, p)
	}
	for _, el := range eval[[]string](b, unnamedJS) {
		b.t.Errorf("%s: a control with no name: %s", where, el)
	}
	if w := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); w > 0 {
		b.t.Errorf("%s: the page scrolls sideways by %dpx", where, w)
	}
	b.accessible(where)
}

// axeJS is axe-core (testdata/axe/VENDOR), the accessibility engine the
// browser tests run over every screen they look at.
//
//go:embed testdata/axe/axe.min.js
var axeJS string

// axeRunJS runs axe over the page, WCAG 2 A and AA and best practices, and
// lists its serious and critical violations, one line each: the rule,
// what it says and the elements it names.
const axeRunJS = `axe.run(document, {resultTypes: ["violations"], runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}})
  .then(r => r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
    .map(v => v.impact + " " + v.id + ": " + v.help + " - " + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", ")))`

// accessible fails the test for each serious or critical violation axe
// finds on the tab's page now.
func (b *tab) accessible(where string) {
	b.t.Helper()
	if !eval[bool](b, `typeof axe !== "undefined"`) {
		eval[bool](b, axeJS+"; true")
	}
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](axeRunJS, chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
	if err != nil {
		b.t.Errorf("%s: axe did not run: %v", where, err)
		return
	}
	for _, v := range found {
		b.t.Errorf("%s: %s", where, v)
	}
}

// colorScheme makes the tab prefer a light or a dark colour scheme.
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	})
}

// recordJS starts recording, in the page, each distinct text the elements
// matching sel hold while a turn is active, as the page renders it: a
// MutationObserver sees every change, however fast, that a test polling
// from outside could miss.
func recordJS(name, sel string) string {
	return fmt.Sprintf(`(() => {
		const seen = window[%[1]q] = [];
		const look = () => { const t = [...document.querySelectorAll(%[2]q)].map((e) => e.textContent.trim()).join("|");
			if (t && seen[seen.length - 1] !== t) seen.push(t); };
		new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
		return true;
	})()`, name, sel)
}

// prefixes reports whether texts grow: each is a proper prefix of the next.
func prefixes(texts []string) bool {
	for i := 1; i < len(texts); i++ {
		if !strings.HasPrefix(texts[i], texts[i-1]) || texts[i] == texts[i-1] {
			return false
		}
	}
	return true
}

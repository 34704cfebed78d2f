package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
)

// The browser tests: the web page served by the real server, driven in
// headless Chromium as a person would use it. Each test starts one
// browser, which its subtests share in tabs. They skip when no Chromium is installed,
// unless BOTS_REQUIRE_CHROMIUM=1 (CI) makes that a failure.
// BOTS_SCREENSHOTS=<dir> writes screenshots of the main screens there.

// chromium returns the path of a Chromium or Chrome, or "".
func chromium() string {
	if p := os.Getenv("BOTS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser starts one headless Chromium for t and returns its context; a
// tab is a chromedp.NewContext of it.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := chromium()
	if exe == "" {
		if os.Getenv("BOTS_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("no Chromium found and BOTS_REQUIRE_CHROMIUM=1: run scripts/ci-deps.sh")
		}
		t.Skip("no Chromium installed (apt-get install chromium, or scripts/ci-deps.sh): the browser tests are skipped")
	}
	browserHome := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		// Chromium writes crash reports and dconf under HOME whatever its
		// profile folder: give it a HOME of the test's own.
		chromedp.Env("HOME="+browserHome, "XDG_CONFIG_HOME="+browserHome+"/.config", "XDG_CACHE_HOME="+browserHome+"/.cache"),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-background-timer-throttling", true), chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1200, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	// Start the browser now, so a browser that cannot start fails here. The
	// first run on a context owns what it starts: it gets no deadline of
	// its own, or the browser would end with it.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	return bctx
}

// tab is one browser tab on the page, with the test's deadline.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string // http://host:port
}

func newTab(t *testing.T, b context.Context, base string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b)
	t.Cleanup(cancel)
	// Open the tab on its own context (see browser).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return &tab{t: t, ctx: ctx, base: base}
}

// step is how long one thing a person waits for may take.
const step = 20 * time.Second

// do runs actions within step.
func (b *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\npage: %s", what, err, b.bodyText())
	}
}

// eval returns the value of a JavaScript expression.
func eval[T any](b *tab, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAsValue))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// until waits for a JavaScript expression to be truthy.
func (b *tab) until(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("(() => { try { return !!("+expr+") } catch { return false } })()", chromedp.WithPollingTimeout(step), chromedp.WithPollingInterval(25*time.Millisecond))); err != nil {
		b.t.Fatalf("waiting for %s: %v\npage: %s", what, err, b.bodyText())
	}
}

func (b *tab) bodyText() string {
	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ""`))
	return s
}

// textOf is the expression "the element sel holds want in its text".
func textOf(sel, want string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].some(e => e.textContent.includes(%q))`, sel, want)
}

// fill types value into the element sel, replacing what it held.
func (b *tab) fill(sel, value string) {
	b.t.Helper()
	b.do("find "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	eval[bool](b, fmt.Sprintf(`(e => (e.value = "", e.focus(), true))(document.querySelector(%q))`, sel))
	b.do("fill "+sel, chromedp.SendKeys(chromedp.CSS(sel), value))
}

func (b *tab) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
}

// shot writes a screenshot named name when BOTS_SCREENSHOTS names a folder.
func (b *tab) shot(name string) {
	b.t.Helper()
	dir := os.Getenv("BOTS_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// visit goes to a place in the page, as a link does.
func (b *tab) visit(hash string) {
	b.t.Helper()
	eval[string](b, fmt.Sprintf(`location.hash = %q`, hash))
}

// signIn opens the page and signs in with token.
func (b *tab) signIn(token string) {
	b.t.Helper()
	b.do("open the page", chromedp.Navigate(b.base+"/"))
	b.fill("#token", token)
	b.click(".signin button[type=submit]")
	b.until("the bot list", `document.querySelector("#bots") && document.querySelector("#conn").dataset.state === "open"`)
}

// say sends a chat message and waits for the reply that holds want.
func (b *tab) say(msg string) {
	b.t.Helper()
	b.until("the composer", `!document.querySelector("#send").disabled`)
	b.fill("#message", msg)
	b.click("#send")
	b.until("the message "+msg, textOf(".msg.user", msg))
}

// TestWebPage drives the page as a person does: signs in, makes a bot
// through the form, sees it in a second tab, chats with it on the echo
// agent, edits and deletes it; with an XSS attempt that runs nothing.
func TestWebPage(t *testing.T) {
	b := browser(t)
	d := newDirs(t)
	s := startServer(t, d.args())
	base := "http://" + s.addr

	t.Run("ServedWithAPolicyBesideTheSocket", func(t *testing.T) {
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET / answered %d %s, want the page", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		for _, want := range []string{"script-src 'self'", "default-src 'none'", "connect-src 'self' ws://" + s.addr} {
			if !strings.Contains(csp, want) {
				t.Errorf("policy %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("policy %q allows inline or eval", csp)
		}
		h, err := http.Get(base + "/healthz")
		if err != nil || h.StatusCode != 200 {
			t.Errorf("/healthz: %v %v", h, err)
		}
		h.Body.Close()
		// The WebSocket is still at "/".
		c := dial(testCtx(t), t, s, softToken, byQuery)
		c.initialize(t, "beside-the-page")
	})

	one := newTab(t, b, base)
	two := newTab(t, b, base)
	t.Run("TheChatReducerAgreesWithGo", func(t *testing.T) {
		one.t = t
		one.do("open the page", chromedp.Navigate(base+"/"))
		reducersAgree(t, one)
	})
	t.Run("AWrongTokenIsShownPlainly", func(t *testing.T) {
		one.t = t
		one.do("open the page", chromedp.Navigate(base+"/"))
		one.until("the sign-in form", `document.querySelector("#token")`)
		one.fill("#token", "not-a-token")
		one.click(".signin button[type=submit]")
		one.until("the refusal", textOf("#signin-error", "refused this token (HTTP 401)"))
		if u := eval[string](one, "location.href"); strings.Contains(u, "not-a-token") {
			t.Errorf("the token is in the page's URL %s", u)
		}
	})
	t.Run("SignInShowsTheBots", func(t *testing.T) {
		one.t, two.t = t, t
		one.signIn(softToken)
		two.signIn(softToken)
		if u := eval[string](one, "location.href"); strings.Contains(u, softToken) {
			t.Errorf("the token is in the page's URL %s", u)
		}
	})
	t.Run("MakeThroughTheFormShowsRefusalsBesideTheirFields", func(t *testing.T) {
		one.t, two.t = t, t
		one.click("#make")
		one.fill("#f-slug", "Bad Slug")
		one.fill("#f-name", "Motion")
		one.click("#save")
		one.until("the slug's refusal", textOf(`[data-field="slug"] .error`, "must match"))
		one.fill("#f-slug", "motion")
		one.fill("#f-color", "#12")
		one.click("#save")
		// The server's refusal, beside the colour.
		one.until("the colour's refusal", textOf(`[data-field="color"] .error`, "neither one of"))
		one.shot("make-error")
		one.fill("#f-color", "teal")
		one.fill("#f-description", "Reviews pull requests")
		one.click("#save")
		one.until("the bot's page", textOf("#bot-name", "Motion"))
		// The second tab hears it without a reload.
		two.until("the bot in the second tab", `document.querySelector('#bots li[data-id="motion"]')`)
		two.until("its description", textOf(`#bots li[data-id="motion"]`, "Reviews pull requests"))
		two.until("its colour", textOf(`#bots li[data-id="motion"] .kind`, "teal")+
			` && getComputedStyle(document.querySelector('#bots li[data-id="motion"] .swatch')).backgroundColor === "rgb(0, 128, 128)"`)
		two.shot("bots")
	})
	t.Run("ChatWithTheEchoAgent", func(t *testing.T) {
		one.t = t
		one.click("#new-chat")
		one.until("the chat", `document.querySelector("#message")`)
		one.say("hello")
		one.until("the reply", textOf(".msg.bot", "Motion heard: hello"))
		one.until("the back session as a step", `document.querySelector("details.step")`)
	})
	t.Run("AQuestionIsAnsweredInThePage", func(t *testing.T) {
		one.t = t
		one.say("ask your name?")
		one.until("the question", textOf("form.ask", "your name?"))
		one.fill("form.ask input", "Ad")
		// An action that arrives while the person types redraws the chat
		// and leaves the answer, and the focus, where they were.
		session, err := url.PathUnescape(strings.TrimPrefix(eval[string](one, "location.hash"), "#/chats/"))
		if err != nil {
			t.Fatal(err)
		}
		c := dial(testCtx(t), t, s, rootToken, byQuery)
		c.initialize(t, "reader")
		c.notify(t, "dispatchAction", map[string]any{"channel": ahp.DefaultChatURI(session), "clientSeq": 1,
			"action": map[string]any{"type": "chat/isReadChanged", "isRead": true}})
		one.until("the action applied", `document.querySelector("#transcript").dataset.status & 32`)
		if !eval[bool](one, `document.activeElement === document.querySelector("form.ask input") && document.activeElement.value === "Ad"`) {
			t.Error("the answer being typed lost its focus or its text when the chat was redrawn")
		}
		one.do("type on", chromedp.SendKeys(chromedp.CSS("form.ask input"), "a"))
		one.shot("question")
		one.click("form.ask .answer")
		one.until("the answer's reply", textOf(".msg.bot", "you said: Ada"))
	})
	t.Run("AnApprovalIsGivenInThePage", func(t *testing.T) {
		one.t = t
		one.say("approve")
		one.click(".ask .approve")
		one.until("the approved reply", textOf(".msg.bot", "approved"))
	})
	t.Run("ARunningTurnIsStopped", func(t *testing.T) {
		one.t = t
		one.say("sleep 5")
		one.until("the stop button", `!document.querySelector("#stop").hidden`)
		one.until("the back session working", textOf("details.step summary", "working"))
		// The step opens onto the back session's own chat.
		one.click(`article[data-state="active"] details.step summary`)
		one.until("the back session's turn", textOf(`article[data-state="active"] details.step`, "sleep 5"))
		one.shot("chat-mid-turn")
		one.click("#stop")
		one.until("the turn stopped", `[...document.querySelectorAll('article[data-state="cancelled"]')].some(a => a.textContent.includes("sleep 5"))`)
		one.until("the composer back", `document.querySelector("#stop").hidden && !document.querySelector("#send").disabled`)
	})
	t.Run("AReloadShowsTheChatAgain", func(t *testing.T) {
		one.t = t
		one.do("reload", chromedp.Reload())
		one.until("the chat after a reload", textOf(".msg.bot", "Motion heard: hello"))
		one.until("the stopped turn after a reload", `document.querySelector('article[data-state="cancelled"]')`)
		// And the bot's page lists it.
		one.click(".chat-head a.button")
		one.until("the chat in the bot's list", `document.querySelectorAll("#chats a").length === 1`)
	})
	t.Run("EditingInstructionsChangesTheRead", func(t *testing.T) {
		one.t = t
		one.click("#edit")
		one.fill("#f-instructions", "Answer in haiku.")
		one.click("#save")
		one.until("the new instructions", textOf("#bot-instructions", "Answer in haiku."))
	})
	t.Run("AStaleEditIsShownAndResolved", func(t *testing.T) {
		one.t = t
		two.t = t
		two.visit("#/bots/motion")
		two.until("the bot's page in the other tab", textOf("#bot-name", "Motion"))
		one.click("#edit")
		one.until("the form", `document.querySelector("#f-instructions").value === "Answer in haiku."`)
		// Someone else saves first.
		c := dial(testCtx(t), t, s, rootToken, byQuery)
		c.initialize(t, "someone-else")
		c.editBot(t, "motion", `{"description":"Edited elsewhere"}`, "")
		// A bot's page follows an edit made elsewhere.
		two.until("the edit in the other tab", textOf("#bot-description", "Edited elsewhere"))
		one.fill("#f-instructions", "Answer in limericks.")
		one.click("#save")
		one.until("the conflict", textOf("#conflict", "Edited elsewhere"))
		one.click("#keep-mine")
		one.until("the saved instructions", textOf("#bot-instructions", "Answer in limericks."))
		if got := c.readBot(t, "motion")["instructions"]; got != "Answer in limericks." {
			t.Errorf("the bot's instructions read %q", got)
		}
	})
	t.Run("WhatABotOrAPersonWritesRunsNothing", func(t *testing.T) {
		one.t, two.t = t, t
		const evil = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`
		one.visit("#/")
		two.visit("#/")
		one.click("#make")
		one.fill("#f-slug", "xss")
		one.fill("#f-name", evil)
		one.click("#save")
		one.until("the bot's page", `document.querySelector("#new-chat")`)
		two.until("the name, as text, in the second tab", textOf(`#bots li[data-id="xss"] .name`, evil))
		one.click("#new-chat")
		one.say(evil + " **bold** [link](javascript:window.__xss=3)")
		one.until("the reply", `document.querySelector(".msg.bot strong")`)
		if n := eval[int](one, `document.querySelectorAll('a[href^="javascript:"]').length`); n != 0 {
			t.Errorf("%d javascript: links on the page", n)
		}
		for _, tb := range []*tab{one, two} {
			if n := eval[int](tb, `document.querySelectorAll("img[onerror], script:not([src])").length`); n != 0 {
				t.Errorf("%d elements with handlers or inline scripts on the page", n)
			}
			if v := eval[bool](tb, `window.__xss !== undefined`); v {
				t.Error("the injected script ran")
			}
		}
		one.click(".chat-head a.button")
		one.click("#delete")
		one.click("#confirm-ok")
		one.until("the list", `location.hash === "#/"`)
		two.until("the bot gone from the second tab", `!document.querySelector('#bots li[data-id="xss"]')`)
	})
	t.Run("ByKeyboardARefusalIsSaidPlainly", func(t *testing.T) {
		two.t = t
		// nemo may make nothing: the refusal says so, at the form's top.
		two.click("#signout")
		two.fill("#token", nemoToken)
		two.do("sign in with Enter", chromedp.KeyEvent(kb.Enter))
		two.until("the bot list", `document.querySelector("#make") && document.querySelector("#conn").dataset.state === "open"`)
		two.visit("#/make")
		// The slug has the focus; Tab goes to the name; Enter makes.
		two.until("the focus in the slug", `document.activeElement && document.activeElement.id === "f-slug"`)
		two.do("type a slug, Tab, a name, Enter", chromedp.KeyEvent("nemos"+kb.Tab+"Nemo's"+kb.Enter))
		two.until("the refusal", textOf("#form-error", "You may not do that"))
	})
	t.Run("PhoneWidth", func(t *testing.T) {
		one.t = t
		one.do("a phone-sized window", chromedp.EmulateViewport(390, 844))
		one.visit("#/")
		one.until("the list", `document.querySelector('#bots li[data-id="motion"]')`)
		if w := eval[int](one, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("the page is %dpx wide in a 390px window", w)
		}
		one.shot("phone")
		one.click(`#bots li[data-id="motion"] a`)
		one.click("#chats a")
		one.until("the chat", textOf(".msg.bot", "Motion heard: hello"))
		if w := eval[int](one, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("the chat is %dpx wide in a 390px window", w)
		}
		one.shot("phone-chat")
	})
}

// reducersAgree runs the page's chat reducer (reduce.js) over every chat
// fixture of ahp's reducer tests, and checks it comes to the
// state Go's ahp.ApplyChat comes to, without changing its input.
func reducersAgree(t *testing.T, b *tab) {
	t.Helper()
	files, err := filepath.Glob("../../ahp/testdata/reducers/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no reducer fixtures: %v", err)
	}
	type fixture struct {
		Name    string            `json:"name"`
		Reducer string            `json:"reducer"`
		Initial json.RawMessage   `json:"initial"`
		Actions []json.RawMessage `json:"actions"`
	}
	var chats []fixture
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx fixture
		if err := json.Unmarshal(data, &fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if fx.Reducer == "chat" {
			fx.Name = strings.TrimSuffix(filepath.Base(f), ".json")
			chats = append(chats, fx)
		}
	}
	in, err := json.Marshal(chats)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		State   string `json:"state"`
		Mutated bool   `json:"mutated"`
	}
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]result](`import("/assets/reduce.js").then(m => `+string(in)+`.map(fx => {
		const before = JSON.stringify(fx.initial);
		let s = fx.initial;
		for (const a of fx.actions) s = m.applyChat(s, a);
		return { state: JSON.stringify(s), mutated: JSON.stringify(fx.initial) !== before };
	}))`, chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
	if err != nil {
		t.Fatalf("run the page's reducer: %v", err)
	}
	if len(got) != len(chats) {
		t.Fatalf("%d results for %d fixtures", len(got), len(chats))
	}
	for i, fx := range chats {
		var s ahp.ChatState
		if err := json.Unmarshal(fx.Initial, &s); err != nil {
			t.Fatalf("%s: %v", fx.Name, err)
		}
		for _, raw := range fx.Actions {
			var a ahp.Action
			if err := json.Unmarshal(raw, &a); err != nil {
				t.Fatalf("%s: %v", fx.Name, err)
			}
			s = ahp.ApplyChat(s, a)
		}
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].Mutated {
			t.Errorf("%s: the page's reducer changed its input", fx.Name)
		}
		if diff := cmp.Diff(withoutNulls(t, want), withoutNulls(t, []byte(got[i].State))); diff != "" {
			t.Errorf("%s: the page's reducer disagrees with ahp.ApplyChat (-Go +page):\n%s", fx.Name, diff)
		}
	}
	t.Logf("ran %d chat fixtures", len(chats))
}

// withoutNulls parses JSON, leaving out members that are null, as absent.
func withoutNulls(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("parse %s: %v", data, err)
	}
	var drop func(any) any
	drop = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if e == nil {
					delete(x, k)
				} else {
					x[k] = drop(e)
				}
			}
		case []any:
			for i, e := range x {
				x[i] = drop(e)
			}
		}
		return v
	}
	return drop(v)
}

// TestWebPageOlderTurnsEarlierChatsAndARestart opens a server with no
// users file (no sign-in), a chat longer than a snapshot holds, and a turn
// a restart interrupts: older turns load as the person scrolls up, the
// chat is reopened from the bot's list, the page reconnects by itself and
// offers to keep the interrupted turn going.
func TestWebPageOlderTurnsEarlierChatsAndARestart(t *testing.T) {
	b := browser(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := newDirs(t)
	d.users = ""
	s := startServer(t, d.args("-addr", addr))
	base := "http://" + addr

	c := dialChat(t, addr, "setup")
	c.makeBot("motion", `{"name": "Motion", "color": "teal"}`)
	session := "ahp-session:/long"
	chat := c.openChat(session, "motion")
	const turns = bot.KeepTurns + 4
	for i := range turns {
		id := fmt.Sprint("t", i)
		c.dispatch(chat, ahp.TurnStarted(id, time.Now(), ahp.UserMessage(fmt.Sprint("m", i))))
		c.turn(chat, id)
	}

	one := newTab(t, b, base)
	t.Run("NoTokenIsNeededWithoutAUsersFile", func(t *testing.T) {
		one.t = t
		// The first load, on an empty cache: its weight and the time from
		// navigation to the bot list (docs/PERFORMANCE.md).
		start := time.Now()
		one.do("open the page", chromedp.Navigate(base+"/"))
		one.until("the bot list", `document.querySelector('#bots li[data-id="motion"]')`)
		took := time.Since(start)
		type weight struct{ Transferred, Decoded, Files int }
		w := eval[weight](one, `(() => {
			const es = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")];
			return { transferred: es.reduce((n, e) => n + e.transferSize, 0), decoded: es.reduce((n, e) => n + e.decodedBodySize, 0), files: es.length };
		})()`)
		t.Logf("first load: %d files, %d bytes transferred (%d decoded); %v from navigation to the bot list", w.Files, w.Transferred, w.Decoded, took.Round(time.Millisecond))
		if w.Decoded > 300<<10 || w.Decoded == 0 {
			t.Errorf("the first load decodes %d bytes, want at most 300 KB", w.Decoded)
		}
		one.until("no sign-in", `!document.querySelector("#token") && document.querySelector("#signout").hidden`)
	})
	t.Run("AnEarlierChatIsReopened", func(t *testing.T) {
		one.t = t
		one.click(`#bots li[data-id="motion"] a`)
		one.until("the chat in the list", `document.querySelector("#chats a")`)
		one.click("#chats a")
		one.until("its latest turn", textOf(".msg.bot", fmt.Sprint("Motion heard: m", turns-1)))
	})
	t.Run("OlderTurnsLoadOnScrollingUp", func(t *testing.T) {
		one.t = t
		if eval[bool](one, textOf(".msg.user", "m0")) {
			t.Fatal("the first turn is shown before scrolling up; the chat is too short to test this")
		}
		one.until("the older-messages button", `document.querySelector("#older")`)
		eval[int](one, `document.querySelector("#transcript").scrollTop = 0`)
		one.until("the first turn", textOf(".msg.bot", "Motion heard: m0"))
		one.until("no more older turns", `!document.querySelector("#older")`)
	})
	t.Run("ARestartIsReconnectedAndTheTurnKeptGoing", func(t *testing.T) {
		one.t = t
		one.say("sleep 60")
		one.until("the turn running", `!document.querySelector("#stop").hidden`)
		s.stop(t)
		one.until("the connection state", `["reconnecting", "closed"].includes(document.querySelector("#conn").dataset.state)`)
		startServer(t, d.args("-addr", addr))
		one.until("reconnected", `document.querySelector("#conn").dataset.state === "open"`)
		// A new server has no replay for the page: it resumed from fresh
		// snapshots.
		if how := eval[string](one, `document.querySelector("#conn").dataset.resumed`); how != "snapshot" {
			t.Errorf("the page resumed from a %q, want fresh snapshots", how)
		}
		one.until("the interrupted turn", `document.querySelector('article[data-state="error"]')`)
		eval[bool](one, `(document.querySelector("#keep-going").scrollIntoView({block: "center"}), true)`)
		one.shot("keep-going")
		one.click("#keep-going")
		one.until("the turn running again", `document.querySelector('article[data-state="active"]') && !document.querySelector("#stop").hidden`)
		one.click("#stop")
		one.until("the turn stopped", `document.querySelector("#stop").hidden`)
	})
}

// dropper is a TCP proxy in front of the server that can drop every
// connection through it at once, as a network that goes away does.
type dropper struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newDropper(t *testing.T, target string) *dropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &dropper{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); d.drop(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			d.mu.Lock()
			d.conns = append(d.conns, c, s)
			d.mu.Unlock()
			wg.Go(func() { io.Copy(s, c); s.Close() })
			wg.Go(func() { io.Copy(c, s); c.Close() })
		}
	})
	return d
}

// drop closes every connection through the proxy.
func (d *dropper) drop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

// TestWebPageReplaysWhatItMissedAfterADroppedConnection drops the page's
// connection while another person makes and edits bots: the page
// reconnects by itself and, from the replay, shows what changed.
func TestWebPageReplaysWhatItMissedAfterADroppedConnection(t *testing.T) {
	b := browser(t)
	d := newDirs(t)
	s := startServer(t, d.args())
	proxy := newDropper(t, s.addr)
	one := newTab(t, b, "http://"+proxy.ln.Addr().String())
	one.signIn(rootToken)
	other := dial(testCtx(t), t, s, rootToken, byQuery)
	other.initialize(t, "other")
	other.makeBot(t, "before", `{"name": "Before"}`)
	one.until("the first bot", `document.querySelector('#bots li[data-id="before"]')`)
	// The WebSocket is the only connection left open: the page's files
	// came over connections the browser has closed or keeps idle.
	proxy.drop()
	one.until("the dropped connection shown", `document.querySelector("#conn").dataset.state !== "open"`)
	other.makeBot(t, "during", `{"name": "During"}`)
	other.editBot(t, "before", `{"name": "Before, edited"}`, "")
	one.until("reconnected", `document.querySelector("#conn").dataset.state === "open"`)
	one.until("the bot made while away", `document.querySelector('#bots li[data-id="during"]')`)
	one.until("the edit made while away", textOf(`#bots li[data-id="before"]`, "Before, edited"))
	if how := eval[string](one, `document.querySelector("#conn").dataset.resumed`); how != "replay" {
		t.Errorf("the page resumed from a %q, want a replay", how)
	}
}

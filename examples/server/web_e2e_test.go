package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/record"
)

// The browser tests: the web page served by the real server, driven in
// headless Chromium as a person would use it. The tests share one
// browser, each in tabs of its own. They skip when no Chromium is
// installed, unless BOTS_REQUIRE_CHROMIUM=1 (CI) makes that a failure.
// BOTS_SCREENSHOTS=<dir> writes screenshots of the main screens there.

// chromium returns the path of a Chromium or Chrome, or "": the headless
// shell first, the same engine without the browser's own windows and UI,
// which ran the browser tests on some 38% less CPU than chromium
// --headless (docs/PERFORMANCE.md).
func chromium() string {
	if p := os.Getenv("BOTS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium-headless-shell", "chrome-headless-shell", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// sharedBrowser is the one headless Chromium the browser tests share,
// each in tabs of its own: started by the first of them, stopped when the
// tests end (stopBrowser). A browser's start and stop cost some three
// seconds of CPU, which each test paid when it had a browser of its own.
var sharedBrowser struct {
	once sync.Once
	ctx  context.Context
	stop func()
	dir  string // its HOME, profile and TMPDIR
	err  error
}

// browser returns a browser context of t's own in the tests' headless
// Chromium, started on the first call; a tab is a chromedp.NewContext of
// it. Without Chromium the test is skipped, or fails under
// BOTS_REQUIRE_CHROMIUM=1.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := chromium()
	if exe == "" {
		if os.Getenv("BOTS_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("no Chromium found and BOTS_REQUIRE_CHROMIUM=1: run scripts/ci-deps.sh")
		}
		t.Skip("no Chromium installed (apt-get install chromium-headless-shell, or scripts/ci-deps.sh): the browser tests are skipped")
	}
	sharedBrowser.once.Do(func() {
		sharedBrowser.ctx, sharedBrowser.stop, sharedBrowser.dir, sharedBrowser.err = startBrowser(exe)
	})
	if sharedBrowser.err != nil {
		t.Fatal(sharedBrowser.err)
	}
	// A browser context of the test's own, as a fresh profile: what one
	// test's page keeps (its token, in local storage by host and port)
	// is not there for another's, on a port the system gave again.
	ctx, cancel := chromedp.NewContext(sharedBrowser.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a browser context: %v", err)
	}
	return ctx
}

// startBrowser starts headless Chromium exe, and returns its context, how
// to stop it and the folder it keeps its HOME, profile and TMPDIR in.
func startBrowser(exe string) (context.Context, func(), string, error) {
	// Chromium's singleton socket goes under TMPDIR, whose path a UNIX
	// socket allows only about 100 bytes: a folder of a short name.
	dir, err := os.MkdirTemp("", "chromium-")
	if err != nil {
		return nil, nil, "", err
	}
	home, profile, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "profile"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, profile, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, nil, "", err
		}
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(profile),
		// Chromium writes crash reports and dconf under HOME whatever its
		// profile folder, and a folder of its own under TMPDIR that it
		// leaves when it is stopped: give it a HOME and a TMPDIR of the
		// tests' own.
		chromedp.Env("HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "XDG_CACHE_HOME="+home+"/.cache",
			"TMPDIR="+tmp),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-background-timer-throttling", true), chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1200, 900),
		// The omnibox's popup is a page of its own, loaded in a renderer
		// of its own that no test sees, which took a fifth of the
		// browser's CPU.
		chromedp.Flag("disable-features", "WebUIOmniboxPopup,WebUIOmniboxAimPopup"),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	stop := func() { cancelB(); cancelA() }
	// Start the browser now, so a browser that cannot start fails here. The
	// first run on a context owns what it starts: it gets no deadline of
	// its own, or the browser would end with it.
	if err := chromedp.Do(bctx); err != nil {
		stop()
		os.RemoveAll(dir)
		return nil, nil, "", fmt.Errorf("start %s: %w", exe, err)
	}
	return bctx, stop, dir, nil
}

// stopBrowser stops the tests' Chromium, if one started, and removes its
// folder.
func stopBrowser() {
	if sharedBrowser.stop != nil {
		sharedBrowser.stop()
	}
	if sharedBrowser.dir != "" {
		os.RemoveAll(sharedBrowser.dir)
	}
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
	if err := retryStale(ctx, func() error { return chromedp.Do(ctx, actions...) }); err != nil {
		b.t.Fatalf("%s: %v\npage: %s", what, err, b.bodyText())
	}
}

// retryStale runs f again while it fails on a page's execution context
// that is gone, until ctx ends. chromedp learns of a navigation's new
// context from an event it handles apart from the navigation's own
// answer, so on a loaded machine a query or poll just after a navigation
// can still name the old page's context, which Chromium no longer knows:
// nothing of the action ran, and running it again on the new context is
// what a person's next look at the page does.
func retryStale(ctx context.Context, f func() error) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil || !strings.Contains(err.Error(), "Cannot find context with specified id") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
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
	poll := chromedp.Poll[bool]("(() => { try { return !!("+expr+") } catch { return false } })()", chromedp.WithPollingTimeout(step), chromedp.WithPollingInterval(25*time.Millisecond))
	if err := retryStale(ctx, func() error { _, err := chromedp.Run(ctx, poll); return err }); err != nil {
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

// tabTo presses Tab until the element sel has the focus, and checks the
// focus is drawn.
func (b *tab) tabTo(sel string) {
	b.t.Helper()
	for range 40 {
		b.do("press Tab", chromedp.KeyEvent(kb.Tab))
		if eval[bool](b, fmt.Sprintf(`document.activeElement && document.activeElement.matches(%q)`, sel)) {
			if eval[string](b, `getComputedStyle(document.activeElement).outlineStyle`) == "none" {
				b.t.Errorf("%s has the focus but shows no outline", sel)
			}
			return
		}
	}
	b.t.Fatalf("Tab never reached %s\npage: %s", sel, b.bodyText())
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
	t.Parallel()
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
	t.Run("ThePageReducersAgreeWithGo", func(t *testing.T) {
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
		if !eval[bool](one, `document.querySelector("#signout").hidden`) {
			t.Error("the wrong-token screen offers Sign out")
		}
		if u := eval[string](one, "location.href"); strings.Contains(u, "not-a-token") {
			t.Errorf("the token is in the page's URL %s", u)
		}
	})
	t.Run("TheAccessibilityCheckFindsAnImageWithNoText", func(t *testing.T) {
		// The check every screen passes (accessible, run by readable) can
		// fail: an image with no alternative text is a critical violation.
		one.t = t
		eval[bool](one, `document.body.insertAdjacentHTML("beforeend", '<img id="no-alt" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">'); true`)
		if !eval[bool](one, `typeof axe !== "undefined"`) {
			eval[bool](one, axeJS+"; true")
		}
		ctx, cancel := context.WithTimeout(one.ctx, step)
		defer cancel()
		found, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](axeRunJS, chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
		eval[bool](one, `document.querySelector("#no-alt").remove(); true`)
		if err != nil || len(found) == 0 || !strings.Contains(strings.Join(found, "\n"), "image-alt") {
			t.Errorf("axe found %q (%v) on a page with an image with no text, want image-alt", found, err)
		}
	})
	t.Run("SignInShowsTheBots", func(t *testing.T) {
		one.t, two.t = t, t
		one.signIn(softToken)
		two.signIn(softToken)
		if u := eval[string](one, "location.href"); strings.Contains(u, softToken) {
			t.Errorf("the token is in the page's URL %s", u)
		}
		// Remembered in the tab alone: not for other tabs, not in a cookie.
		if !eval[bool](one, `sessionStorage.getItem("bots.token") === `+strconv.Quote(softToken)+` && localStorage.length === 0 && document.cookie === ""`) {
			t.Error("the token is not in the tab's sessionStorage alone")
		}
		one.readable("the bot list")
	})
	t.Run("MakeThroughTheFormShowsRefusalsBesideTheirFields", func(t *testing.T) {
		one.t, two.t = t, t
		one.click("#make")
		// Under More, each field has a sentence of help, and the agents
		// this host runs are named.
		one.until("the agents named under Agent", textOf("#f-provider-hint", "Which agent answers for it")+" && "+textOf("#f-provider-hint", "This host has: echo."))
		one.until("help under Owner", textOf("#f-owner-hint", "leave it out for yours"))
		one.fill("#f-slug", "Bad Slug")
		one.fill("#f-name", "Motion")
		one.click("#save")
		one.until("the slug's refusal", textOf(`[data-field="slug"] .error`, "lowercase letters, digits and dashes, starting with a letter"))
		one.fill("#f-slug", "motion")
		one.fill("#f-color", "#12")
		one.click("#save")
		// The server's refusal, beside the colour.
		one.until("the colour's refusal", textOf(`[data-field="color"] .error`, `Colour "#12" is neither one of`))
		one.shot("make-error")
		one.readable("the make form with a refusal")
		one.fill("#f-color", "teal")
		one.fill("#f-description", "Reviews pull requests")
		one.click("#save")
		one.until("the bot's page", textOf("#bot-name", "Motion"))
		// The second tab hears it without a reload.
		two.until("the bot in the second tab", `document.querySelector('#bots li[data-id="motion"]')`)
		two.until("its description", textOf(`#bots li[data-id="motion"]`, "Reviews pull requests"))
		two.until("its colour", textOf(`#bots li[data-id="motion"] .kind`, "teal")+
			` && getComputedStyle(document.querySelector('#bots li[data-id="motion"] .swatch svg.face > :first-child')).fill === "rgb(31, 154, 148)"`)
		// And its body: the one a make picks, named and drawn.
		reader := dial(testCtx(t), t, s, rootToken, byQuery)
		reader.initialize(t, "body-reader")
		body, _ := reader.readBot(t, "motion")["body"].(string)
		two.until("its body", textOf(`#bots li[data-id="motion"] .kind`, body)+
			` && document.querySelector('#bots li[data-id="motion"] .swatch svg.face').dataset.body === "`+body+`"`)
		two.shot("bots")
	})
	t.Run("EachBodyIsDrawnAsItsOwnShapeInTheColourChosen", func(t *testing.T) {
		one.t = t
		one.visit("#/make")
		one.until("the body picker", `document.querySelectorAll("#f-body-picker button.pick svg.face").length === 15`)
		// Each suggested body is its own drawing, made of SVG elements.
		shapes := eval[map[string]string](one, `Object.fromEntries([...document.querySelectorAll("#f-body-picker svg.face")].map(s => [s.dataset.body, s.innerHTML]))`)
		seen := map[string]string{}
		for _, body := range record.Bodies() {
			shape, ok := shapes[body]
			if !ok || shape == "" {
				t.Errorf("the body picker draws no %s", body)
				continue
			}
			if other, dup := seen[shape]; dup {
				t.Errorf("%s is drawn as %s is", body, other)
			}
			seen[shape] = body
		}
		// Choosing a colour draws the bodies in it; the choice is marked.
		one.click(`#f-color-picker button[data-value="purple"]`)
		one.until("the bodies in purple", `document.querySelector("#f-color").value === "purple" && `+
			`[...document.querySelectorAll("#f-body-picker svg.face")].every(s => getComputedStyle(s.firstElementChild).fill === "rgb(130, 80, 200)")`+
			` && document.querySelector('#f-color-picker button[data-value="purple"]').getAttribute("aria-pressed") === "true"`)
		one.click(`#f-body-picker button[data-value="ghost"]`)
		one.until("ghost chosen", `document.querySelector("#f-body").value === "ghost"`)
		// A colour is untrusted: only a named colour or #rrggbb is painted;
		// a body word is never markup.
		ctx, cancel := context.WithTimeout(one.ctx, step)
		defer cancel()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`import("/assets/ui.js").then(m => [
			m.face("robot", "#A0B1C2").getAttribute("fill"),
			m.face("robot", "red;background:url(//x)").getAttribute("fill"),
			m.face("robot", "url(#x)").getAttribute("fill"),
			m.face("<img src=x onerror=alert(1)>", "teal", "<b>").outerHTML])`, chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
		if err != nil {
			t.Fatalf("draw faces: %v", err)
		}
		if len(got) != 4 || got[0] != "#a0b1c2" || got[1] != "#7b8088" || got[2] != "#7b8088" ||
			strings.Contains(got[3], "<img") || strings.Contains(got[3], "<b>") || !strings.Contains(got[3], `data-body="other"`) {
			t.Errorf("faces drawn from untrusted words: %q", got)
		}
		one.visit("#/bots/motion")
	})
	t.Run("OnABundledBotOnlyChatAndMakeACopyAreOffered", func(t *testing.T) {
		// Root on the bundled builder (soft here may not read it), in a tab of its own.
		one := newTab(t, b, base)
		one.signIn(rootToken)
		one.visit("#/bots/bot-builder")
		one.until("the builder's page", `document.querySelector("#bot-name") && document.querySelector("#new-chat")`)
		if !eval[bool](one, `!document.querySelector("#edit") && !document.querySelector("#delete") && !!document.querySelector("#copy")`) {
			t.Errorf("the builder's page offers %q, want Chat and Make a copy alone", eval[string](one, `[...document.querySelectorAll(".bot-card .row button, .bot-card .row a")].map(e => e.textContent).join(", ")`))
		}
		// On echo, the reference server's default agent, the builder
		// cannot call its tools: its card says so, and where to read.
		one.until("the builder's agent problem on its card", textOf("#problems", "runs on echo")+` && document.querySelector("#problems").textContent.includes("Real agents")`)
		name := eval[string](one, `document.querySelector("#bot-name").textContent`)
		one.click("#copy")
		one.until("a make form filled from the builder", `document.querySelector("#make-form") && document.querySelector("#f-name").value === `+strconv.Quote(name)+` && document.querySelector("#f-slug").value === ""`)
		// Its edit form, reached by its address, is not offered either.
		one.visit("#/bots/bot-builder/edit")
		one.until("no edit form", `document.querySelector("#no-edit") && !document.querySelector("#edit-form")`)
		// A refusal says "Permission denied" once.
		ctx, cancel := context.WithTimeout(one.ctx, step)
		defer cancel()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Promise.all([import("/assets/ui.js"), import("/assets/client.js")]).then(([ui, c]) =>
			ui.plain(new c.RPCError(-32009, "Permission denied: bot://builder: you may read this bot but not edit it")))`, chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
		if err != nil || got != "You may not do that: bot://builder: you may read this bot but not edit it" {
			t.Errorf("a refusal reads %q (%v)", got, err)
		}
		// And its chat says so too, above the messages.
		one.visit("#/bots/bot-builder")
		one.until("the builder's page again", `document.querySelector("#new-chat")`)
		one.click("#new-chat")
		one.until("the builder's agent problem in its chat", textOf("#chat-problems", "runs on echo"))
	})
	t.Run("AHandEditRefusedIsShownLiveAndClears", func(t *testing.T) {
		one.t, two.t = t, t
		// one is on Motion's page, two on the list, when a person edits
		// bot.md by hand to change its owner, which a hand edit may not.
		file := filepath.Join(d.config, "bots", "motion", "bot.md")
		good, err := os.ReadFile(file)
		if err != nil || !strings.Contains(string(good), "owner: user:soft") {
			t.Fatalf("bot.md: %v\n%s", err, good)
		}
		one.until("the bot's page", textOf("#bot-name", "Motion"))
		writeAtomic(t, file, strings.Replace(string(good), "owner: user:soft", "owner: user:kim", 1))
		one.until("the problem on the bot's page", textOf("#problems", "the owner may not be changed by hand"))
		two.until("the problem flagged in the list", textOf(`#bots li[data-id="motion"] .flag`, "problem"))
		one.shot("problem")
		one.readable("a bot's page with a problem")
		two.readable("the list with a problem flagged")
		writeAtomic(t, file, string(good))
		one.until("the problem cleared", `!document.querySelector("#problems") && document.querySelector("#bot-name")`)
		two.until("the flag cleared", `document.querySelector('#bots li[data-id="motion"]') && !document.querySelector('#bots li[data-id="motion"] .flag')`)
	})
	t.Run("ChatWithTheEchoAgent", func(t *testing.T) {
		one.t = t
		one.click("#new-chat")
		one.until("the chat", `document.querySelector("#message")`)
		one.say("hello")
		one.until("the reply", textOf(".msg.bot", "Motion heard: hello"))
		one.until("the back session as a step", `document.querySelector("details.step")`)
		// The bot is drawn in the chat's header and beside its reply.
		one.until("the bot beside its reply", `document.querySelector(".reply > .swatch svg.face[data-body]") && document.querySelector(".chat-head svg.face")`)
	})
	t.Run("TheReplyStreamsInAsItComes", func(t *testing.T) {
		one.t = t
		// The back session replies a word at a time (echo's stream); its
		// step, open, shows the reply growing while the turn runs, and the
		// post reaches the chat before the turn ends. Sent by keyboard.
		const words = "one two three four five six seven eight nine ten eleven twelve"
		eval[bool](one, recordJS("__back", `article[data-state="active"] details.step[open] .msg.bot`))
		eval[bool](one, recordJS("__post", `article[data-state="active"] > .reply > .msg.bot`))
		one.until("the composer", `!document.querySelector("#send").disabled`)
		one.fill("#message", "stream "+words)
		one.do("send with Enter", chromedp.KeyEvent(kb.Enter))
		one.until("the back session's step", `document.querySelector('article[data-state="active"] details.step summary')`)
		one.click(`article[data-state="active"] details.step summary`)
		one.until("the whole reply", textOf(".msg.bot", words)+` && !document.querySelector('article[data-state="active"]')`)
		back := eval[[]string](one, `window.__back`)
		if len(back) < 3 || !prefixes(back) || back[len(back)-1] != words {
			t.Errorf("the back session's reply was drawn as %q, want it growing a word at a time to %q", back, words)
		}
		if post := eval[[]string](one, `window.__post`); !slices.Contains(post, words) {
			t.Errorf("the reply was drawn in the running turn as %q, want %q before the turn ended", post, words)
		}
		// Closed again, the step stops following the back session.
		one.click(`article:last-child details.step[open] summary`)
		one.until("the step closed", `!document.querySelector("details.step[open]")`)
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
		one.readable("a question in the chat")
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
		eval[bool](one, `(document.querySelector('article[data-state="active"] details.step').scrollIntoView({block: "end"}), true)`)
		one.shot("chat-mid-turn")
		one.readable("a chat mid-turn")
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
	t.Run("ChatsAreTitledByTheirFirstMessageNewestFirst", func(t *testing.T) {
		one.t = t
		one.click("#new-chat")
		one.say("a second chat")
		one.until("the reply", textOf(".msg.bot", "Motion heard: a second chat"))
		one.click(".chat-head a.button")
		one.until("both chats in the bot's list", `document.querySelectorAll("#chats a").length === 2`)
		type row struct{ Title, When, Turns string }
		got := eval[[]row](one, `[...document.querySelectorAll("#chats li")].map(li => ({
			Title: li.querySelector(".chat-title").textContent, When: li.querySelector(".chat-when").textContent, Turns: li.dataset.turns }))`)
		if len(got) != 2 || got[0].Title != "a second chat" || got[0].When != "just now · 1 turn" || got[0].Turns != "1" ||
			got[1].Title != "hello" || !strings.HasSuffix(got[1].When, " turns") {
			t.Errorf("the chats are listed as %+v, want the new one first, each titled by its first message, with its turns", got)
		}
		one.shot("bot-chats")
		// Back to the first chat, as the tests that follow expect.
		one.click("#chats li:last-child a")
		one.until("the first chat", textOf(".msg.bot", "Motion heard: hello"))
		one.click(".chat-head a.button")
		one.until("the bot's page", `document.querySelectorAll("#chats a").length === 2`)
	})
	t.Run("EditingInstructionsChangesTheRead", func(t *testing.T) {
		one.t = t
		one.click("#edit")
		one.fill("#f-instructions", "Answer in **haiku**.")
		one.click("#save")
		one.until("the new instructions", textOf("#bot-instructions", "Answer in haiku."))
		one.until("the instructions as markdown", textOf("#bot-instructions strong", "haiku"))
	})
	t.Run("ABotsPageIsACardThatKeepsTheHostPathInDetails", func(t *testing.T) {
		one.t = t
		one.until("the bot's card", `document.querySelector(".bot-card svg.face") && document.querySelector("#bot-name")`)
		if got := eval[string](one, `document.querySelector("#bot-owner").textContent`); got != "you" {
			t.Errorf("the owner reads %q, want %q", got, "you")
		}
		if got := eval[string](one, `(a => a.textContent + " " + a.getAttribute("href"))(document.querySelector("#back"))`); got != "Bots #/" {
			t.Errorf("the back link is %q", got)
		}
		if !eval[bool](one, `!document.querySelector("#bot-details").open && document.querySelector("#bot-workspace").textContent.includes("motion")`) {
			t.Error("the work folder is not in a closed details fold")
		}
		if text := one.bodyText(); strings.Contains(text, d.config) || strings.Contains(text, d.root) || strings.Contains(text, "Works in") || strings.Contains(text, "Session work") {
			t.Errorf("the card shows the host path or the session name outside the fold:\n%s", text)
		}
		one.shot("bot-card")
		one.readable("a bot's card")
	})
	t.Run("AStaleEditIsShownAndResolved", func(t *testing.T) {
		one.t = t
		two.t = t
		two.visit("#/bots/motion")
		two.until("the bot's page in the other tab", textOf("#bot-name", "Motion"))
		one.click("#edit")
		one.until("the form", `document.querySelector("#f-instructions").value === "Answer in **haiku**."`)
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
		// Beaten again, the person takes theirs: the form shows it, and
		// nothing of the person's is saved.
		one.click("#edit")
		one.until("the form", `document.querySelector("#f-instructions").value === "Answer in limericks."`)
		c.editBot(t, "motion", `{"instructions":"Answer in sonnets."}`, "")
		one.fill("#f-instructions", "Answer in prose.")
		one.click("#save")
		one.until("the conflict", textOf("#conflict", "Answer in sonnets."))
		one.readable("an edit beaten by another")
		one.click("#take-theirs")
		one.until("theirs in the form", `document.querySelector("#f-instructions").value === "Answer in sonnets." && document.querySelector("#conflict").hidden`)
		if got := c.readBot(t, "motion")["instructions"]; got != "Answer in sonnets." {
			t.Errorf("after taking theirs the bot's instructions read %q", got)
		}
		one.visit("#/bots/motion")
		one.until("the bot's page", textOf("#bot-instructions", "Answer in sonnets."))
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
		// A delete asks first; Cancel keeps the bot.
		one.click("#delete")
		one.until("the question", `document.querySelector("#confirm").open && document.querySelector("#confirm-text").textContent.includes("can never be used again")`)
		one.readable("the delete confirmation")
		one.click(`#confirm button[value="cancel"]`)
		one.until("the dialog closed", `!document.querySelector("#confirm").open`)
		if !eval[bool](one, `!!document.querySelector("#new-chat")`) || !eval[bool](two, `!!document.querySelector('#bots li[data-id="xss"]')`) {
			t.Fatal("a cancelled delete deleted the bot")
		}
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
	t.Run("ReadableInADarkScheme", func(t *testing.T) {
		one.t = t
		one.do("prefer dark", colorScheme("dark"))
		defer one.do("prefer light", colorScheme("light"))
		one.visit("#/")
		one.until("the list", `document.querySelector('#bots li[data-id="motion"]') && getComputedStyle(document.body).backgroundColor === "rgb(18, 18, 18)"`)
		one.readable("the bot list, dark")
		one.click(`#bots li[data-id="motion"] a`)
		one.until("the bot's page", `document.querySelector("#chats a")`)
		one.readable("a bot's page, dark")
		one.click("#chats li:last-child a")
		one.until("the chat", textOf(".msg.bot", "Motion heard: hello"))
		one.readable("a chat, dark")
		one.visit("#/make")
		one.fill("#f-slug", "Bad Slug")
		one.click("#save")
		one.until("the slug's refusal", textOf(`[data-field="slug"] .error`, "lowercase letters, digits and dashes, starting with a letter"))
		one.readable("the make form with a refusal, dark")
	})
	t.Run("ARefusalAfterALongFormIsBroughtIntoViewBelowTheHeader", func(t *testing.T) {
		// A make whose slug is taken, saved from the foot of the form
		// with its More fields open: the refusal is beside the slug, at
		// the top, which the person no longer sees.
		one.t = t
		for _, size := range []struct {
			name string
			w, h int64
		}{{"desktop", 1280, 720}, {"phone", 390, 844}} {
			one.do("a "+size.name+" window", chromedp.EmulateViewport(size.w, size.h))
			one.visit("#/make")
			one.until("the make form", `document.querySelector("#f-slug")`)
			eval[bool](one, `document.querySelectorAll("#make-form details").forEach(d => d.open = true); true`)
			one.fill("#f-slug", "motion")
			one.fill("#f-name", "Another")
			eval[bool](one, `document.querySelector("#save").scrollIntoView({block: "end"}); true`)
			if eval[bool](one, `document.querySelector("#f-slug").getBoundingClientRect().bottom > 0`) {
				t.Fatalf("%s: the slug is still in view at the foot of the form; the form is too short to test this", size.name)
			}
			one.click("#save")
			one.until(size.name+": the slug's refusal", textOf(`[data-field="slug"] .error`, "taken"))
			one.until(size.name+": the refused field in view below the header, with the focus", `(() => {
				const f = document.querySelector("#f-slug"), r = f.getBoundingClientRect(), head = document.querySelector(".top").getBoundingClientRect();
				return document.activeElement === f && r.top >= head.bottom && r.bottom <= innerHeight;
			})()`)
			one.readable(size.name + ": a refusal brought into view")
		}
		one.do("a desktop window again", chromedp.EmulateViewport(1280, 720))
	})
	t.Run("TheListIsAGridAcrossAWideScreenAndACardStaysReadable", func(t *testing.T) {
		one.t = t
		one.do("a wide window", chromedp.EmulateViewport(1920, 1080))
		one.visit("#/")
		one.until("the list", `document.querySelector('#bots li[data-id="motion"]')`)
		if !eval[bool](one, `document.querySelector("#bots").getBoundingClientRect().width >= innerWidth * 0.75 &&
			getComputedStyle(document.querySelector("#bots")).gridTemplateColumns.split(" ").length >= 5`) {
			t.Errorf("the list is %s px wide in %s columns in a 1920 px window, want a grid across most of it",
				eval[string](one, `String(document.querySelector("#bots").getBoundingClientRect().width)`),
				eval[string](one, `String(getComputedStyle(document.querySelector("#bots")).gridTemplateColumns.split(" ").length)`))
		}
		one.readable("the list on a wide screen")
		one.visit("#/bots/motion")
		one.until("the bot's page", textOf("#bot-name", "Motion"))
		if w := eval[float64](one, `document.querySelector("main").getBoundingClientRect().width`); w > 1000 {
			t.Errorf("a bot's card is %.0f px wide on a wide screen, want a readable measure", w)
		}
		one.do("a desktop window again", chromedp.EmulateViewport(1280, 720))
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
		one.click("#chats li:last-child a")
		one.until("the chat", textOf(".msg.bot", "Motion heard: hello"))
		if w := eval[int](one, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("the chat is %dpx wide in a 390px window", w)
		}
		one.readable("a chat at phone width")
		one.shot("phone-chat")
	})
}

// pageSessionActions are the session actions the page's applySession
// follows; a session fixture with any other is left out.
var pageSessionActions = []string{"session/titleChanged", "session/inputNeededSet", "session/inputNeededRemoved"}

// reducersAgree runs the page's reducers (reduce.js) over the fixtures of
// ahp's reducer tests - every chat and root fixture, and the
// session fixtures of the actions the page follows - and checks each
// comes to the state Go's ahp.ApplyChat, ApplyRoot or ApplySession comes
// to, without changing its input.
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
	var fixtures []fixture
	count := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx fixture
		if err := json.Unmarshal(data, &fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if fx.Reducer == "session" {
			for _, raw := range fx.Actions {
				var a struct{ Type string }
				json.Unmarshal(raw, &a)
				if !slices.Contains(pageSessionActions, a.Type) {
					fx.Reducer = ""
				}
			}
		}
		if fx.Reducer == "chat" || fx.Reducer == "root" || fx.Reducer == "session" {
			fx.Name = strings.TrimSuffix(filepath.Base(f), ".json")
			fixtures = append(fixtures, fx)
			count[fx.Reducer]++
		}
	}
	in, err := json.Marshal(fixtures)
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
		const reduce = { chat: m.applyChat, root: m.applyRoot, session: m.applySession }[fx.reducer];
		let s = fx.initial;
		for (const a of fx.actions) s = reduce(s, a);
		return { state: JSON.stringify(s), mutated: JSON.stringify(fx.initial) !== before };
	}))`, chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
	if err != nil {
		t.Fatalf("run the page's reducers: %v", err)
	}
	if len(got) != len(fixtures) {
		t.Fatalf("%d results for %d fixtures", len(got), len(fixtures))
	}
	for i, fx := range fixtures {
		want, err := applyGo(fx.Reducer, fx.Initial, fx.Actions)
		if err != nil {
			t.Fatalf("%s: %v", fx.Name, err)
		}
		if got[i].Mutated {
			t.Errorf("%s: the page's reducer changed its input", fx.Name)
		}
		if diff := cmp.Diff(withoutNulls(t, want), withoutNulls(t, []byte(got[i].State))); diff != "" {
			t.Errorf("%s: the page's %s reducer disagrees with Go's (-Go +page):\n%s", fx.Name, fx.Reducer, diff)
		}
	}
	if count["chat"] == 0 || count["root"] == 0 || count["session"] == 0 {
		t.Errorf("fixtures run: %v, want some of each", count)
	}
	t.Logf("ran %v fixtures", count)
}

// applyGo runs Go's reducer of kind over the actions from initial and
// returns the state it comes to, as JSON.
func applyGo(kind string, initial json.RawMessage, actions []json.RawMessage) ([]byte, error) {
	var as []ahp.Action
	for _, raw := range actions {
		var a ahp.Action
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, err
		}
		as = append(as, a)
	}
	switch kind {
	case "chat":
		var s ahp.ChatState
		if err := json.Unmarshal(initial, &s); err != nil {
			return nil, err
		}
		for _, a := range as {
			s = ahp.ApplyChat(s, a)
		}
		return json.Marshal(s)
	case "root":
		var s ahp.RootState
		if err := json.Unmarshal(initial, &s); err != nil {
			return nil, err
		}
		for _, a := range as {
			s = ahp.ApplyRoot(s, a)
		}
		return json.Marshal(s)
	default:
		var s ahp.SessionState
		if err := json.Unmarshal(initial, &s); err != nil {
			return nil, err
		}
		for _, a := range as {
			s = ahp.ApplySession(s, a)
		}
		return json.Marshal(s)
	}
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

// openDirs are the folders of a server with no users file (no sign-in),
// and a free loopback address for it to listen on again after a restart.
func openDirs(t *testing.T) (dirs, string) {
	t.Helper()
	d := newDirs(t)
	d.users = ""
	return d, restartableAddr(t)
}

// restartableAddr is a free loopback address below the kernel's ephemeral
// ports (32768 and up): a port the kernel hands out for ":0" could be given
// to a server of another test, run at the same time, in the moment between
// a server's stop and its restart, and a page reconnecting would then talk
// to that server.
func restartableAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free loopback port between 20000 and 32000")
	return ""
}

// TestWebPageOlderTurnsEarlierChatsAndARestart opens a server with no
// users file (no sign-in), a chat longer than a snapshot holds, and a turn
// a restart interrupts: older turns load as the person scrolls up, the
// chat is reopened from the bot's list, the page reconnects by itself and
// offers to keep the interrupted turn going.
func TestWebPageOlderTurnsEarlierChatsAndARestart(t *testing.T) {
	t.Parallel()
	b := browser(t)
	d, addr := openDirs(t)
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
	t.Run("ThePrintedAddressOpensThePageAndItsTokenLeavesTheAddressBar", func(t *testing.T) {
		one.t = t
		// Without the token the page gets nothing: it asks for one.
		none := newTab(t, b, base)
		none.do("open the page without the token", chromedp.Navigate(base+"/"))
		none.until("the sign-in form", `document.querySelector("#token")`+" && "+textOf("#signin-error", "This server needs a token (HTTP 401)")+" && "+textOf("#signin-error", "local-token file"))
		if eval[bool](none, `!!document.querySelector("#bots")`) {
			t.Error("the page without the token shows a bot list")
		}
		// The first load, on an empty cache, from the address the server
		// printed: its weight and the time from navigation to the bot list
		// (docs/PERFORMANCE.md).
		if !strings.Contains(s.page(), "/?tkn=") {
			t.Fatalf("the server printed %s, without its local token", s.page())
		}
		start := time.Now()
		one.do("open the printed address", chromedp.Navigate(s.page()))
		one.until("the bot list", `document.querySelector('#bots li[data-id="motion"]')`)
		if u := eval[string](one, "location.href"); u != base+"/" {
			t.Errorf("the address bar shows %s, want %s/ (the token taken off)", u, base)
		}
		if got := eval[string](one, `sessionStorage.getItem("bots.token")`); got != s.token {
			t.Errorf("the tab keeps the token %q, want the local token", got)
		}
		// The view took the focus for screen readers, and draws no ring
		// across the page for it (main is no control).
		if !eval[bool](one, `document.activeElement === document.querySelector("#main") && getComputedStyle(document.querySelector("#main")).outlineStyle === "none"`) {
			t.Error("the page's main, focused at its first view, is outlined, or not focused")
		}
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
		one.until("no sign-in", `!document.querySelector("#token")`)
		// A reload, from the address now shown, stays signed in: the tab
		// keeps the token.
		one.do("reload", chromedp.Reload())
		one.until("the bot list again", `document.querySelector('#bots li[data-id="motion"]') && document.querySelector("#conn").dataset.state === "open"`)
	})
	t.Run("AProblemOfABotLeftOutIsShownAboveTheList", func(t *testing.T) {
		one.t = t
		// A bot.md made by hand that is not a bot record: the bot is left
		// out, so it is not in the list, and its problem stands above it
		// for root (everyone, with no users file) with the file's path.
		folder := filepath.Join(d.config, "bots", "ghost")
		if err := os.MkdirAll(folder, 0o755); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(folder, "bot.md")
		writeAtomic(t, file, "---\nname: [unclosed\n---\n")
		one.until("the problem above the list", textOf("#all-problems", "ghost")+" && "+textOf("#all-problems", file))
		if eval[bool](one, `!!document.querySelector('#bots li[data-id="ghost"]')`) {
			t.Error("a bot left out is in the list")
		}
		one.readable("the list with a problem above it")
		if err := os.RemoveAll(folder); err != nil {
			t.Fatal(err)
		}
		one.until("the problem gone", `!document.querySelector("#all-problems")`)
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
	t.Run("OlderTurnsLoadWhenTheWindowShowsTheChatsTop", func(t *testing.T) {
		// In a window taller than the turns it holds, the top of the chat
		// is in view as soon as it is drawn: the older turns load with no
		// scrolling (there is nothing to scroll).
		tall := newTab(t, b, base)
		tall.do("a tall window", chromedp.EmulateViewport(1200, 12000))
		tall.do("open the printed address", chromedp.Navigate(s.page()))
		tall.until("the bot list", `document.querySelector('#bots li[data-id="motion"]')`)
		tall.do("open the chat", chromedp.Navigate(base+"/#/chats/"+url.PathEscape(session)))
		tall.until("the first turn", textOf(".msg.bot", "Motion heard: m0"))
		if n := eval[int](tall, `document.querySelectorAll("article.turn").length`); n != turns {
			t.Errorf("%d turns drawn, want all %d", n, turns)
		}
	})
	t.Run("ARestartIsReconnectedAndTheTurnKeptGoing", func(t *testing.T) {
		one.t = t
		one.say("sleep 60")
		one.until("the turn running", `!document.querySelector("#stop").hidden`)
		s.stop(t)
		one.until("the connection state", `["reconnecting", "closed"].includes(document.querySelector("#conn").dataset.state)`)
		one.until("a plain sentence saying so", textOf("#notice", "The server cannot be reached; trying again"))
		one.readable("the page while the server is away")
		startServer(t, d.args("-addr", addr))
		one.until("reconnected", `document.querySelector("#conn").dataset.state === "open" && document.querySelector("#notice").hidden`)
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
	t.Parallel()
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

// TestWebPageAnswersWhatWaitsOnTheSession runs the server with -ask-in
// own, where a back session's question and approval wait on the main
// chat's session (inputNeeded) rather than in its chat: the page shows
// them in the chat and answers each in the back chat it names. The person
// uses the keyboard alone: a make, the bot list, a chat, the answers and
// a stop.
func TestWebPageAnswersWhatWaitsOnTheSession(t *testing.T) {
	t.Parallel()
	b := browser(t)
	d := newDirs(t)
	d.users = ""
	s := startServer(t, d.args("-ask-in", "own"))
	base := "http://" + s.addr
	c := dialChat(t, s.addr, "setup")
	c.makeBot("motion", `{"name": "Motion"}`)

	one := newTab(t, b, base)
	one.do("open the page", chromedp.Navigate(s.page()))
	one.until("the list", `document.querySelector('#bots li[data-id="motion"] a')`)
	// A make by keyboard: Make a bot, the slug, Tab, the name, Enter.
	one.tabTo("#make")
	one.do("open the make form with Enter", chromedp.KeyEvent(kb.Enter))
	one.until("the focus in the slug", `document.activeElement && document.activeElement.id === "f-slug"`)
	one.do("type a slug, Tab, a name, Enter", chromedp.KeyEvent("keys"+kb.Tab+"Keys"+kb.Enter))
	one.until("the made bot's page", textOf("#bot-name", "Keys"))
	one.visit("#/")
	one.until("the list again", `document.querySelector('#bots li[data-id="motion"] a')`)
	one.tabTo(`#bots li[data-id="motion"] a`)
	one.do("open the bot with Enter", chromedp.KeyEvent(kb.Enter))
	one.until("the bot's page", textOf("#bot-name", "Motion"))
	one.tabTo("#new-chat")
	one.do("open a chat with Enter", chromedp.KeyEvent(kb.Enter))
	one.until("the focus in the message box", `document.activeElement && document.activeElement.id === "message"`)
	// Typed and sent at once, even before the chat is in, it is sent.
	one.do("ask by keyboard", chromedp.KeyEvent("ask your name?"+kb.Enter))
	one.until("the question", textOf("form.ask[data-waiting]", "your name?"))
	one.readable("a question waiting on the session")
	one.tabTo("form.ask[data-waiting] input")
	one.do("answer with Enter", chromedp.KeyEvent("Ada"+kb.Enter))
	one.until("the answer's reply", textOf(".msg.bot", "you said: Ada"))
	one.until("the question gone", `!document.querySelector("[data-waiting]")`)

	one.tabTo("#message")
	one.do("ask for an approval", chromedp.KeyEvent("approve"+kb.Enter))
	one.until("the approval", textOf("[data-waiting]", "Echo asks to go ahead"))
	one.tabTo("[data-waiting] .approve")
	one.do("approve with Enter", chromedp.KeyEvent(kb.Enter))
	one.until("the approved reply", textOf(".msg.bot", "approved"))
	one.until("the approval gone", `!document.querySelector("[data-waiting]")`)

	// A running turn stopped by keyboard.
	one.tabTo("#message")
	one.do("start a long turn", chromedp.KeyEvent("sleep 60"+kb.Enter))
	one.until("the stop button", `!document.querySelector("#stop").hidden`)
	one.tabTo("#stop")
	one.do("stop with Enter", chromedp.KeyEvent(kb.Enter))
	one.until("the turn stopped", `document.querySelector("#stop").hidden && !document.querySelector("#send").disabled`)

	// A work folder swapped for a link out of root: the bot's page says
	// the read was refused, and the problem beside it; the folder put
	// back, the next visit reads the bot and the problem clears.
	folder := filepath.Join(d.root, "motion")
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), folder); err != nil {
		t.Fatal(err)
	}
	one.visit("#/bots/motion")
	one.until("the refusal and the problem", textOf("#main .error", "You may not do that: the folder")+" && "+textOf("#problems", "out of root"))
	one.readable("a bot whose folder left root")
	if err := os.Remove(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	one.visit("#/")
	one.visit("#/bots/motion")
	one.until("the bot read again, its problem gone", `document.querySelector("#bot-name") && !document.querySelector("#problems")`)
}

// TestWebPageOpensAChatOf1000TurnsInAWindow opens a chat whose log holds
// 1,000 turns and one whose log holds one, each five times: the page draws
// only the window the snapshot holds (bot.KeepTurns turns), so the long
// chat opens in about the time the short one does. The figures are logged
// for docs/PERFORMANCE.md.
func TestWebPageOpensAChatOf1000TurnsInAWindow(t *testing.T) {
	// Serial: it times the page against a short chat, and scrolls a thousand turns, which the tests beside it would slow.
	b := browser(t)
	d, addr := openDirs(t)
	s := startServer(t, d.args("-addr", addr))
	c := dialChat(t, addr, "setup")
	c.makeBot("motion", `{"name": "Motion"}`)
	const turns = 1000
	long, short := "ahp-session:/long", "ahp-session:/short"
	for _, session := range []string{long, short} {
		chat := c.openChat(session, "motion")
		c.dispatch(chat, ahp.TurnStarted("seed", time.Now(), ahp.UserMessage("hello")))
		c.turn(chat, "seed")
	}
	s.stop(t)
	// The long chat's log gets the seed turn's lines again for each more
	// turn, under ids of their own.
	path := filepath.Join(d.config, "bots", "motion", "logs", base64.RawURLEncoding.EncodeToString([]byte(long))+".jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var seed []string
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, `"turnId":"seed"`) {
			seed = append(seed, line)
		}
	}
	ids := regexp.MustCompile(`"(toolCallId|turnId)":"([^"]+)"|"kind":"markdown","id":"([^"]+)"`)
	var more strings.Builder
	for i := 1; i < turns; i++ {
		for _, line := range seed {
			line = ids.ReplaceAllStringFunc(line, func(m string) string { return strings.TrimSuffix(m, `"`) + fmt.Sprintf("-%d\"", i) })
			line = strings.ReplaceAll(line, `hello"`, fmt.Sprintf(`m%d"`, i))
			more.WriteString(line)
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(more.String()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s = startServer(t, d.args("-addr", addr))

	one := newTab(t, b, "http://"+addr)
	// The tab takes the token from the printed address, and keeps it.
	one.do("open the printed address", chromedp.Navigate(s.page()))
	one.until("the bot list", `document.querySelector('#bots li[data-id="motion"]')`)
	last := map[string]string{long: fmt.Sprint("Motion heard: m", turns-1), short: "Motion heard: hello"}
	took := map[string][]time.Duration{}
	for range 5 {
		for _, session := range []string{short, long} {
			start := time.Now()
			one.do("open the chat", chromedp.Navigate("http://"+addr+"/#/chats/"+url.PathEscape(session)))
			one.until("its latest turn", textOf(".msg.bot", last[session]))
			took[session] = append(took[session], time.Since(start))
			if n := eval[int](one, `document.querySelectorAll("article.turn").length`); n > bot.KeepTurns {
				t.Fatalf("%d turns drawn, want at most the window of %d", n, bot.KeepTurns)
			}
			if more := eval[bool](one, `!!document.querySelector("#older")`); more != (session == long) {
				t.Fatalf("%s: older turns to load: %v", session, more)
			}
			one.do("leave", chromedp.Navigate("about:blank"))
		}
	}
	median := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }
	l, sh := median(took[long]), median(took[short])
	t.Logf("navigation to the latest turn, median of %d: a chat of %d turns %v, of one turn %v (%.2fx); %d turns drawn",
		len(took[long]), turns, l.Round(time.Millisecond), sh.Round(time.Millisecond), float64(l)/float64(sh), bot.KeepTurns)
	// Loose, for a shared machine: a long chat drawn whole would take many
	// times as long.
	if l > 4*sh+time.Second {
		t.Errorf("a chat of %d turns took %v to open, one of one turn %v", turns, l, sh)
	}
	// Scrolled all the way up, page after page, the chat draws every turn.
	one.do("open the chat", chromedp.Navigate("http://"+addr+"/#/chats/"+url.PathEscape(long)))
	one.until("its latest turn", textOf(".msg.bot", last[long]))
	ctx, cancel := context.WithTimeout(one.ctx, time.Minute)
	defer cancel()
	ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`new Promise((done) => {
		const start = performance.now(), t = document.querySelector("#transcript");
		const tick = () => { if (!document.querySelector("#older")) return done(performance.now() - start); t.scrollTop = 0; requestAnimationFrame(tick); };
		tick();
	})`, chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
	if err != nil {
		t.Fatalf("scroll to the top: %v", err)
	}
	one.until("the first turn", textOf(".msg.user", "hello"))
	all := time.Duration(ms * float64(time.Millisecond))
	if n := eval[int](one, `document.querySelectorAll("article.turn").length`); n != turns {
		t.Errorf("scrolled to the top, %d turns are drawn, want %d", n, turns)
	}
	t.Logf("scrolled to the top: all %d turns loaded and drawn in %v", turns, all.Round(time.Millisecond))
}

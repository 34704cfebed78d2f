package web_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/bots/web"
)

func get(t *testing.T, h http.Handler, target string, header ...string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestThePageIsServedAtTheRootWithItsSocket(t *testing.T) {
	t.Parallel()
	h := web.Handler(web.Config{Socket: "/ahp"})
	r := get(t, h, "http://example.test:9187/")
	page := body(t, r)
	if r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET / answered %d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
	if !strings.Contains(page, `<meta name="ahp-socket" content="/ahp">`) {
		t.Errorf("the page does not name its socket: %s", page)
	}
	for _, p := range []string{"/assets/app.js", "/assets/style.css", "/assets/vendor/purify.es.mjs"} {
		a := get(t, h, p)
		if a.StatusCode != 200 {
			t.Errorf("GET %s answered %d", p, a.StatusCode)
		}
	}
	for _, p := range []string{"/nothing", "/assets/", "/assets/../web.go", "/assets/vendor/VENDOR", "/assets/index.html"} {
		if a := get(t, h, p); a.StatusCode != 404 {
			t.Errorf("GET %s answered %d, want 404", p, a.StatusCode)
		}
	}
}

func TestEveryAnswerForbidsInlineScriptsAndForeignOrigins(t *testing.T) {
	t.Parallel()
	h := web.Handler(web.Config{})
	for _, p := range []string{"/", "/assets/app.js", "/nothing"} {
		r := get(t, h, "http://127.0.0.1:9187"+p)
		csp := r.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'",
			"connect-src 'self' ws://127.0.0.1:9187 wss://127.0.0.1:9187", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: policy %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") || strings.Contains(csp, "*") {
			t.Errorf("%s: policy %q allows too much", p, csp)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", p, r.Header)
		}
	}
	// A Host header that is not a host names nothing in the policy.
	r := get(t, h, "/", "Host", "evil.test; script-src *")
	if csp := r.Header.Get("Content-Security-Policy"); strings.Contains(csp, "evil") || strings.Contains(csp, "script-src *") {
		t.Errorf("a forged Host reached the policy: %q", csp)
	}
}

func TestThePageHasNoInlineScriptOrStyle(t *testing.T) {
	t.Parallel()
	page := body(t, get(t, web.Handler(web.Config{}), "/"))
	if regexp.MustCompile(`<script(?:[^>]*)>\s*[^<\s]`).MatchString(page) || strings.Contains(page, "<style") ||
		regexp.MustCompile(`\son[a-z]+=`).MatchString(page) || strings.Contains(page, "style=") {
		t.Errorf("the page holds inline script or style:\n%s", page)
	}
}

func TestSplitGivesUpgradesToTheSocketAndTheRestToThePage(t *testing.T) {
	t.Parallel()
	socket := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "socket") })
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page") })
	h := web.Split(socket, page)
	for _, c := range []struct{ upgrade, want string }{
		{"", "page"}, {"websocket", "socket"}, {"WebSocket", "socket"}, {"h2c, websocket", "socket"}, {"h2c", "page"},
	} {
		var hdr []string
		if c.upgrade != "" {
			hdr = []string{"Upgrade", c.upgrade}
		}
		if got := body(t, get(t, h, "/", hdr...)); got != c.want {
			t.Errorf("Upgrade %q went to the %s, want the %s", c.upgrade, got, c.want)
		}
	}
}

func TestOnlyGetIsAnswered(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	web.Handler(web.Config{}).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x")))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST / answered %d", w.Code)
	}
}

// pageWeightGoal is the most the first load may transfer, uncompressed
// (docs/PERFORMANCE.md).
const pageWeightGoal = 300 << 10

func TestTheFirstLoadWeighsAtMostTheGoal(t *testing.T) {
	t.Parallel()
	total := 0
	err := fs.WalkDir(os.DirFS("assets"), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(p) {
		case ".html", ".js", ".mjs", ".css":
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += int(info.Size())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the page's files weigh %d bytes", total)
	if total > pageWeightGoal {
		t.Errorf("the page's files weigh %d bytes, more than the goal of %d", total, pageWeightGoal)
	}
}

// TestVendoredLibrariesAreCurrent fails when web/assets/vendor is not what
// scripts/web-vendor.sh writes: a version pinned there and not vendored,
// or a vendored file changed by hand.
func TestVendoredLibrariesAreCurrent(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile("../scripts/web-vendor.sh")
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(MARKED|DOMPURIFY)_VERSION=(\S+)$`).FindAllStringSubmatch(string(script), -1) {
		pinned[strings.ToLower(m[1])] = m[2]
	}
	if len(pinned) != 2 {
		t.Fatalf("scripts/web-vendor.sh pins %v, want marked and dompurify", pinned)
	}
	versions := maps.Clone(pinned)
	f, err := os.Open("assets/vendor/VENDOR")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0 || strings.HasPrefix(fields[0], "#"):
		case len(fields) == 2 && pinned[fields[0]] != "":
			if pinned[fields[0]] != fields[1] {
				t.Errorf("%s %s is vendored but the script pins %s: run scripts/web-vendor.sh", fields[0], fields[1], pinned[fields[0]])
			}
			delete(pinned, fields[0])
		case len(fields) == 2:
			data, err := os.ReadFile(filepath.Join("assets/vendor", fields[1]))
			if err != nil {
				t.Errorf("VENDOR lists %s: %v", fields[1], err)
				continue
			}
			sum := sha256.Sum256(data)
			if hex.EncodeToString(sum[:]) != fields[0] {
				t.Errorf("assets/vendor/%s is not what scripts/web-vendor.sh wrote: run it again", fields[1])
			}
			sums++
		default:
			t.Errorf("VENDOR line %q", sc.Text())
		}
	}
	if len(pinned) != 0 || sums != 4 {
		t.Errorf("VENDOR lacks %v, or lists %d files, want 4", pinned, sums)
	}
	// And each library says, in its own first lines, that it is the
	// version pinned: VENDOR rewritten by hand over other files fails too.
	for file, head := range map[string]string{
		"marked.esm.js": "marked v" + versions["marked"] + " ",
		"purify.es.mjs": "@license DOMPurify " + versions["dompurify"] + " ",
	} {
		data, err := os.ReadFile(filepath.Join("assets/vendor", file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data[:min(len(data), 400)]), head) {
			t.Errorf("assets/vendor/%s does not start by naming %q: run scripts/web-vendor.sh", file, strings.TrimSpace(head))
		}
	}
}

// Package web is the page people use in a browser: their bots and their
// chats, over AHP to the server that serves it. Its files are embedded, so
// a server that mounts Handler needs no build step and no other files.
//
// The page is an ordinary AHP client: it opens a WebSocket to the same
// host (at Config.Socket, "/" by default), presenting the person's token
// as ?tkn= on the WebSocket's URL. The token is the one the person signs
// in with, or the one the page was opened with (/?tkn=…, as a server with
// no users directory prints its address with its local token): the page
// keeps it in the tab's sessionStorage and takes it off the address bar
// and the tab's history at once (history.replaceState); the page's
// answers carry Referrer-Policy no-referrer. Everything a bot or
// an agent writes is rendered as text, or as markdown through a sanitizer;
// the Content-Security-Policy of every answer allows scripts, styles and
// images from the page's own origin only, and connections to it and to its
// WebSocket.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Config says where the page finds its WebSocket.
type Config struct {
	// Socket is the path of the AHP WebSocket on the page's host; empty
	// means "/".
	Socket string
}

// Handler serves the page: GET / (and GET /index.html) answers the page,
// GET /assets/… its scripts and styles; anything else is 404. Mount it at
// the root of a host; Split shares "/" with the WebSocket.
func Handler(c Config) http.Handler {
	if c.Socket == "" {
		c.Socket = "/"
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		// The embedded tree always holds assets/.
		panic(err)
	}
	var index bytes.Buffer
	// Parsed here, not at init: a program that never calls Handler (an
	// embedder that serves no page) links none of the page's files.
	indexPage := template.Must(template.ParseFS(assets, "assets/index.html"))
	if err := indexPage.Execute(&index, c); err != nil {
		panic(err) // the template and its data are fixed
	}
	return &page{files: sub, index: index.Bytes()}
}

// Split answers WebSocket upgrades with socket and every other request with
// page, so that one path serves both.
func Split(socket, page http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsUpgrade(r) {
			socket.ServeHTTP(w, r)
			return
		}
		page.ServeHTTP(w, r)
	})
}

// IsUpgrade reports whether r asks for a WebSocket.
func IsUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Upgrade") {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "websocket") {
				return true
			}
		}
	}
	return false
}

// page is Handler's value.
type page struct {
	files fs.FS
	index []byte // the page, its socket path filled in
}

// hostPattern is what a Host header must look like to be named in the
// policy: a name or address and an optional port, nothing else.
var hostPattern = regexp.MustCompile(`^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$`)

// policy is the Content-Security-Policy of every answer: nothing inline,
// nothing foreign; connections to the page's origin and its WebSocket.
func policy(host string) string {
	connect := "'self'"
	if hostPattern.MatchString(host) {
		connect += " ws://" + host + " wss://" + host
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
		"connect-src " + connect + "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", policy(r.Host))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "the page answers GET only", http.StatusMethodNotAllowed)
		return
	}
	switch {
	case r.URL.Path == "/" || r.URL.Path == "/index.html":
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(p.index))
	case strings.HasPrefix(r.URL.Path, "/assets/"):
		p.asset(w, r, strings.TrimPrefix(r.URL.Path, "/assets/"))
	default:
		http.NotFound(w, r)
	}
}

// types are the content types of the page's files, by extension.
var types = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".mjs": "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".svg": "image/svg+xml",
	".png": "image/png",
}

func (p *page) asset(w http.ResponseWriter, r *http.Request, name string) {
	ct, ok := types[path.Ext(name)]
	if !ok || name == "" || strings.Contains(name, "..") {
		http.NotFound(w, r)
		return
	}
	data, err := fs.ReadFile(p.files, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(data)
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:8])+`"`)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

package bot_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/agenthost/bots"

// layers places every folder at the top of the module, as
// docs/ARCHITECTURE.md draws them. A package may import only packages of a
// lower layer, or of its own folder (wake/acp imports wake); so nothing
// below the service imports it, and the wire types, the engine, errcode
// and access import nothing above them. "" is the module's own package,
// the embedding value.
var layers = map[string]int{
	"internal": 0, // crash-safe writes, JSON helpers, feeds, tickers: no project imports
	"web":      0, // the page: an AHP client in the browser, imports nothing
	// telemetry: counters, gauges, histograms and spans every layer counts
	// into; its prom subpackage, the one importer of the Prometheus
	// client, is imported by the embedding value alone.
	"telemetry": 0,

	"ahp":     1, // wire types and pure reducers
	"errcode": 1, // the error type of the service boundary
	"access":  1, // who is asking: principals, grants, the users file

	"engine": 2, // the session engine: serverSeq, channels, replay
	"lease":  2, // leases with fencing tokens: imports nothing of the project

	"record":  3, // the record port and its stores
	"persona": 3, // AGENTS.md and CLAUDE.md
	"chatlog": 3, // the chat-log port and its stores

	"connector": 4, // connectors: vaults, adapters, scrubbing
	"catalog":   4, // the catalogue channel and resource watches
	"replica":   4, // the chat machine bot chats and back sessions share: Decide, Log, Follow

	"wake":  5, // back sessions: SessionHost, Harness, the wake
	"route": 5, // chat-network routes: the Network port, connections, routes; adapters below it

	"bot": 6, // the service

	"transport": 3, // WebSocket + JSON-RPC serving the engine; see wireUsers
	"client":    4, // a Go AHP client of the wire: ahp, record and errcode only; see wireUsers

	"":         7, // the embedding value
	"postgres": 8, // the embedding value's Database in PostgreSQL: the stores' pg adapters wired
	"examples": 9, // the reference server: wiring only
	"scripts":  9, // tools run by hand
}

// pgx is the PostgreSQL driver, which the embedding value does not link:
// an embedder that keeps its bots in files links no database driver
// (package postgres brings it).
const pgx = "github.com/jackc/pgx/v5"

// unlinked are the modules the embedding value does not link, and where
// an embedder takes them from: one that keeps its bots in files and runs
// its back sessions on echo links no database driver, no ACP SDK and no
// MCP SDK.
var unlinked = map[string]string{
	pgx:                                      "take it through Server.Database (package postgres)",
	"github.com/coder/acp-go-sdk":            "take the agents through Server.Agents (package wake/acp)",
	"github.com/modelcontextprotocol/go-sdk": "take the agents through Server.Agents (package wake/acp)",
}

// wireUsers are the only folders that may depend on the WebSocket
// library, and (but client and route) import transport: the embedding
// value, its database (postgres, which imports it) and what runs it; the client, which speaks the wire from the other
// end and so never imports the server's transport; and route, whose relay
// is such a client in-process and whose adapters speak the chat networks'
// own wires.
var wireUsers = map[string]bool{"": true, "postgres": true, "transport": true, "client": true, "route": true, "examples": true, "scripts": true}

// wireClients are the wireUsers that speak the wire as clients: they never
// import the server's transport.
var wireClients = map[string]bool{"client": true, "route": true}

// promUsers are the only folders whose packages may depend on the
// Prometheus client, besides telemetry/prom which exports to it: an
// embedder that links the service, the wake or the stores links no
// metrics library.
var promUsers = map[string]bool{"": true, "postgres": true, "examples": true, "scripts": true}

// folder returns the top folder of a package of the module ("" for the
// module's own package) and whether pkg is in the module.
func folder(pkg string) (string, bool) {
	if pkg == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(pkg, module+"/")
	if !ok {
		return "", false
	}
	top, _, _ := strings.Cut(rel, "/")
	return top, true
}

// TestImportGraph keeps the layering of docs/ARCHITECTURE.md: each
// package imports only lower layers; only the embedding value, examples
// and scripts import transport, and nothing but they and the client
// depends on the WebSocket library, even through another package; the
// client never imports transport; nothing imports the reference server;
// production packages never import testing; the embedding value links no
// PostgreSQL driver, ACP SDK or MCP SDK (unlinked).
func TestImportGraph(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, v := range checkImports(strings.Split(strings.TrimSpace(string(out)), "\n")) {
		t.Error(v)
	}
}

// checkImports returns what breaks the layering in lines of go list:
// "pkg|imports|deps", each list separated by spaces.
func checkImports(lines []string) []string {
	var bad []string
	for _, line := range lines {
		parts := strings.Split(line, "|")
		if len(parts) != 3 {
			bad = append(bad, fmt.Sprintf("go list line %q", line))
			continue
		}
		pkg := parts[0]
		from, _ := folder(pkg)
		rank, known := layers[from]
		if !known {
			bad = append(bad, fmt.Sprintf("%s is in no layer: place the folder %q in TestImportGraph and docs/ARCHITECTURE.md", pkg, from))
			continue
		}
		isTestSupport := strings.HasSuffix(pkg, "test")
		for _, imp := range strings.Fields(parts[1]) {
			if imp == "testing" && !isTestSupport {
				bad = append(bad, fmt.Sprintf("production package %s imports testing", pkg))
			}
			to, ours := folder(imp)
			if !ours || to == from {
				continue
			}
			switch {
			case to == "examples" || to == "scripts":
				bad = append(bad, fmt.Sprintf("%s imports %s, which nothing may import", pkg, imp))
			case to == "transport" && !wireUsers[from]:
				bad = append(bad, fmt.Sprintf("%s imports transport: only the embedding value and examples serve the wire", pkg))
			case to == "transport" && wireClients[from]:
				bad = append(bad, fmt.Sprintf("%s imports transport: a client speaks the wire, it does not serve it", pkg))
			case layers[to] >= rank && to != "transport":
				bad = append(bad, fmt.Sprintf("%s (layer %d) imports %s (layer %d): imports go down only", pkg, rank, imp, layers[to]))
			}
		}
		if !promUsers[from] && pkg != module+"/telemetry/prom" {
			for _, dep := range strings.Fields(parts[2]) {
				if dep == "github.com/prometheus/client_golang/prometheus" {
					bad = append(bad, fmt.Sprintf("%s depends on the Prometheus client: count into package telemetry instead", pkg))
				}
			}
		}
		if pkg == module {
			for _, dep := range strings.Fields(parts[2]) {
				for mod, from := range unlinked {
					if dep == mod || strings.HasPrefix(dep, mod+"/") {
						bad = append(bad, fmt.Sprintf("the embedding value depends on %s: every embedder would link it; %s", dep, from))
					}
				}
			}
		}
		if wireUsers[from] {
			continue
		}
		for _, dep := range strings.Fields(parts[2]) {
			if dep == "github.com/coder/websocket" {
				bad = append(bad, fmt.Sprintf("%s depends on the WebSocket library", pkg))
			}
		}
	}
	return bad
}

// TestImportGraphCatchesWhatItForbids feeds the check an import graph with
// one of each fault.
func TestImportGraphCatchesWhatItForbids(t *testing.T) {
	t.Parallel()
	m := module + "/"
	lines := []string{
		m + "engine|" + m + "access " + m + "errcode|",                               // fine
		m + "wake/acp|" + m + "wake " + m + "connector|",                             // fine: own folder, lower layer
		module + "|" + m + "transport " + m + "bot|github.com/coder/websocket",       // fine: the embedding value
		m + "catalog|" + m + "bot|",                                                  // upward
		m + "engine|" + m + "record|",                                                // upward from the bottom
		m + "connector|" + m + "wake|",                                               // upward, connector included
		m + "bot|" + m + "transport|",                                                // the wire from the service
		m + "wake|encoding/json|github.com/coder/websocket",                          // the WebSocket library through a dep
		m + "record|" + m + "examples/server|",                                       // the reference server
		m + "persona|testing|",                                                       // testing in production
		m + "newthing|fmt|",                                                          // no layer
		m + "client|" + m + "transport|github.com/coder/websocket",                   // the client into the server's wire
		m + "client|" + m + "wake|github.com/coder/websocket",                        // the client upward
		m + "wake|" + m + "telemetry|github.com/prometheus/client_golang/prometheus", // a metrics library below the embedding value
		m + "telemetry/prom|github.com/prometheus/client_golang/prometheus|github.com/prometheus/client_golang/prometheus", // fine: the exporter
		module + "|" + m + "bot|" + pgx + "/pgxpool",                               // the driver in every embedder
		module + "|" + m + "wake/acp|github.com/coder/acp-go-sdk",                  // the ACP SDK in every embedder
		m + "postgres|" + module + " " + m + "record/pgrecord|" + pgx + "/pgxpool", // fine: the database's own package
	}
	bad := checkImports(lines)
	wants := []string{
		"catalog (layer 4) imports " + m + "bot",
		"engine (layer 2) imports " + m + "record",
		"connector (layer 4) imports " + m + "wake",
		"bot imports transport",
		"wake depends on the WebSocket library",
		"imports " + m + "examples/server",
		"production package " + m + "persona imports testing",
		m + "newthing is in no layer",
		"a client speaks the wire",
		"client (layer 4) imports " + m + "wake",
		m + "wake depends on the Prometheus client",
		"the embedding value depends on " + pgx + "/pgxpool",
		"the embedding value depends on github.com/coder/acp-go-sdk",
	}
	if len(bad) != len(wants) {
		t.Errorf("got %d faults, want %d:\n%s", len(bad), len(wants), strings.Join(bad, "\n"))
	}
	for _, w := range wants {
		found := false
		for _, b := range bad {
			found = found || strings.Contains(b, w)
		}
		if !found {
			t.Errorf("no fault names %q", w)
		}
	}
}

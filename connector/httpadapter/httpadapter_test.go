package httpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/connector/httpadapter"
)

const secret = "tok-5b7d9f1a3c5e7a9b1d3f"

var ref = connector.Ref{Adapter: "http", ID: "crm"}

// echoServer answers the header it got and the body it got, as a careless
// endpoint would; /fail answers 401 with the same, /big a large body
// ending in the header, /redirect sends elsewhere.
func echoServer(t *testing.T, got chan<- http.Header) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got != nil {
			got <- r.Header.Clone()
		}
		body, _ := io.ReadAll(r.Body)
		key := r.Header.Get("X-Api-Key") + r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":"bad key %s"}`, key)
		case "/big":
			fmt.Fprintf(w, "%s%s", strings.Repeat("a", 90), key)
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			fmt.Fprintf(w, `{"key":%q,"body":%s}`, key, body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newAdapter(t *testing.T, cfg httpadapter.Config, log *bytes.Buffer) *httpadapter.Adapter {
	t.Helper()
	if log != nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	a, err := httpadapter.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func call(url string, args string) connector.Call {
	return connector.Call{
		From: access.Principal{User: "ann"}, Bot: "motion", Alias: "crm", Ref: ref,
		Args: json.RawMessage(args), Credential: connector.NewCredential(secret, "X-Api-Key", url),
	}
}

func TestCredentialArrivesInTheHeader(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	srv := echoServer(t, got)
	var log bytes.Buffer
	a := newAdapter(t, httpadapter.Config{}, &log)
	res, err := a.Call(context.Background(), call(srv.URL+"/echo", `{"q":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	h := <-got
	if h.Get("X-Api-Key") != secret || h.Get("Content-Type") != "application/json" {
		t.Errorf("the endpoint got headers %v", h)
	}
	if !strings.Contains(res.Text, `"body":{"q":"hello"}`) || res.IsError || res.ContentType != "application/json" {
		t.Errorf("result = %+v", res)
	}
	for name, s := range map[string]string{"result": res.Text, "log": log.String()} {
		if strings.Contains(s, secret) {
			t.Errorf("the %s holds the value: %s", name, s)
		}
	}
	if !strings.Contains(res.Text, connector.Redacted) {
		t.Errorf("the result does not say what was taken out: %s", res.Text)
	}
}

func TestDefaultHeaderIsAuthorization(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	srv := echoServer(t, got)
	a := newAdapter(t, httpadapter.Config{}, nil)
	c := call("", `{}`)
	c.Credential = connector.NewCredential("Bearer "+secret, "", srv.URL+"/echo")
	if _, err := a.Call(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h.Get("Authorization") != "Bearer "+secret {
		t.Errorf("Authorization = %q", h.Get("Authorization"))
	}
}

func TestValueNeverInAFailure(t *testing.T) {
	t.Parallel()
	srv := echoServer(t, nil)
	var log bytes.Buffer
	a := newAdapter(t, httpadapter.Config{}, &log)
	res, err := a.Call(context.Background(), call(srv.URL+"/fail", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Text, "401") || strings.Contains(res.Text, secret) {
		t.Errorf("result = %+v", res)
	}
	// A request that cannot complete: the error and the log hold no value.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	_, err = a.Call(context.Background(), call(dead.URL+"/x?k="+secret, `{}`))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("error = %v", err)
	}
	if strings.Contains(log.String(), secret) || !strings.Contains(log.String(), "http connector call failed") {
		t.Errorf("log = %s", log.String())
	}
}

func TestAnswerCutAtTheLimit(t *testing.T) {
	t.Parallel()
	srv := echoServer(t, nil)
	a := newAdapter(t, httpadapter.Config{MaxResponse: 100}, nil)
	res, err := a.Call(context.Background(), call(srv.URL+"/big", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	// The value straddles the limit: it is taken out whole before the cut.
	if !res.Truncated || len(res.Text) != 100 || strings.Contains(res.Text, secret[:10]) {
		t.Errorf("result = %+v (%d bytes)", res, len(res.Text))
	}
}

// TestCallGoesOnlyToTheEntrysURL: whatever the arguments say and wherever
// the endpoint redirects, the credential goes to the vault entry's own url
// and nowhere else; an entry with no url is refused before any request.
func TestCallGoesOnlyToTheEntrysURL(t *testing.T) {
	t.Parallel()
	elsewhere := make(chan http.Header, 4)
	other := echoServer(t, elsewhere)
	got := make(chan http.Header, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	var log bytes.Buffer
	a := newAdapter(t, httpadapter.Config{}, &log)

	res, err := a.Call(context.Background(), call(srv.URL+"/api", `{"url": "`+other.URL+`/steal"}`))
	if !errors.Is(err, connector.ErrDenied) || !strings.Contains(err.Error(), "only to its entry's own url") || res.Text != "" {
		t.Errorf("a redirect elsewhere: %+v, %v; want it refused", res, err)
	}
	if len(got) != 1 || len(elsewhere) != 0 {
		t.Errorf("the entry's url got %d requests and another url %d; want 1 and 0", len(got), len(elsewhere))
	}

	_, err = a.Call(context.Background(), call("", `{"url": "`+other.URL+`"}`))
	if !errors.Is(err, connector.ErrDenied) || !strings.Contains(err.Error(), "no url in its vault entry") {
		t.Errorf("an entry with no url: %v; want it refused", err)
	}
	if len(elsewhere) != 0 {
		t.Error("an entry with no url sent the credential elsewhere")
	}
	if strings.Contains(log.String(), secret) || strings.Contains(fmt.Sprint(err), secret) {
		t.Error("a refusal holds the value")
	}
}

func TestNoEndpointFails(t *testing.T) {
	t.Parallel()
	a := newAdapter(t, httpadapter.Config{}, nil)
	if _, err := a.Call(context.Background(), call("file:///etc/passwd", `{}`)); err == nil {
		t.Error("a file: URL was accepted")
	}
}

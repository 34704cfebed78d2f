// Package httpadapter is the http connector adapter: a call sends the tool's
// arguments as a JSON body to an HTTP or HTTPS endpoint, with the
// connector's credential injected as a header at call time, and answers the
// response body, cut at a size limit. The credential's value is taken out of
// everything the adapter answers or logs.
//
// The endpoint is the URL the vault gives with the credential, or else the
// adapter's configured URL. Redirects are not followed, so a credential is
// never sent on to another endpoint.
package httpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/agenthost/bots/bot/access"
	"github.com/agenthost/bots/connector"
)

// Name is the adapter's usual registry name: connectors://http/<id>.
const Name = "http"

// Defaults of Config's zero values.
const (
	DefaultMaxResponse = 1 << 20
	DefaultHeader      = "Authorization"
	DefaultMethod      = http.MethodPost
	DefaultTimeout     = 60 * time.Second
)

// Config configures an Adapter. The zero value is usable when every vault
// entry names its URL.
type Config struct {
	// URL is the endpoint of a credential whose vault entry names none.
	URL string
	// Method is the request's method; empty means POST.
	Method string
	// Header is the header the credential goes in when its entry names
	// none; empty means Authorization.
	Header string
	// MaxResponse is the most bytes of a response body answered; the rest
	// is cut (Result.Truncated). Zero means DefaultMaxResponse.
	MaxResponse int64
	// Client makes the requests; nil means a client with DefaultTimeout.
	// Its redirect policy is replaced: redirects are never followed.
	Client *http.Client
	// Allow says whether the person who sent the message may use the
	// connector; nil allows everybody.
	Allow func(from access.Principal, ref connector.Ref) bool
	// Logger receives a line per call, credential values taken out. Nil
	// discards.
	Logger *slog.Logger
}

// Adapter is the http adapter. It is safe to use concurrently.
type Adapter struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
}

var (
	_ connector.Adapter   = (*Adapter)(nil)
	_ connector.Describer = (*Adapter)(nil)
)

// New checks cfg, fills its defaults and makes an Adapter.
func New(cfg Config) (*Adapter, error) {
	if cfg.URL != "" {
		if err := checkURL(cfg.URL); err != nil {
			return nil, fmt.Errorf("httpadapter: %w", err)
		}
	}
	if cfg.Method == "" {
		cfg.Method = DefaultMethod
	}
	if cfg.Header == "" {
		cfg.Header = DefaultHeader
	}
	if cfg.MaxResponse <= 0 {
		cfg.MaxResponse = DefaultMaxResponse
	}
	client := &http.Client{Timeout: DefaultTimeout}
	if cfg.Client != nil {
		c := *cfg.Client
		client = &c
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Adapter{cfg: cfg, client: client, log: log}, nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("the endpoint is not an http:// or https:// URL")
	}
	return nil
}

// Describe says what the tool of ref does.
func (a *Adapter) Describe(ref connector.Ref) (string, json.RawMessage) {
	return fmt.Sprintf("Sends the arguments as a JSON body to the HTTP endpoint of %s and answers the response body.", ref),
		json.RawMessage(`{"type":"object","additionalProperties":true}`)
}

// Call sends call.Args to the endpoint with the credential in its header.
// A response of status 400 or more is a Result with IsError set, not an
// error; an error is a refusal (connector.ErrDenied), no endpoint, or a
// request that did not complete. No result, error or log line holds the
// credential's value.
func (a *Adapter) Call(ctx context.Context, call connector.Call) (connector.Result, error) {
	scrub := &connector.Scrubber{}
	scrub.Add(call.Credential.Value())
	log := scrub.Logger(a.log)
	res, err := a.call(ctx, call, scrub, log)
	res.Text = scrub.String(res.Text)
	err = scrub.Error(err)
	if err != nil {
		log.Warn("http connector call failed", "connector", call.Ref.String(), "from", call.From.String(), "err", err)
	}
	return res, err
}

func (a *Adapter) call(ctx context.Context, call connector.Call, scrub *connector.Scrubber, log *slog.Logger) (connector.Result, error) {
	if a.cfg.Allow != nil && !a.cfg.Allow(call.From, call.Ref) {
		return connector.Result{}, fmt.Errorf("%s refuses %s: %w", call.Ref, call.From, connector.ErrDenied)
	}
	endpoint := call.Credential.URL
	if endpoint == "" {
		endpoint = a.cfg.URL
	}
	if endpoint == "" {
		return connector.Result{}, fmt.Errorf("%s has no endpoint: give a url in the vault entry or the adapter's config", call.Ref)
	}
	if err := checkURL(endpoint); err != nil {
		return connector.Result{}, fmt.Errorf("%s: %w", call.Ref, err)
	}
	body := call.Args
	if len(body) == 0 {
		body = json.RawMessage("{}")
	}
	req, err := http.NewRequestWithContext(ctx, a.cfg.Method, endpoint, bytes.NewReader(body))
	if err != nil {
		return connector.Result{}, fmt.Errorf("%s: %w", call.Ref, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/plain;q=0.9, */*;q=0.5")
	if v := call.Credential.Value(); v != "" {
		header := call.Credential.Header
		if header == "" {
			header = a.cfg.Header
		}
		req.Header.Set(header, v)
	}
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		return connector.Result{}, fmt.Errorf("%s: the request failed: %w", call.Ref, err)
	}
	defer resp.Body.Close()
	// Read past the limit by more than a credential's longest form, so that
	// one straddling the limit is scrubbed whole before the cut.
	margin := int64(4*len(call.Credential.Value()) + 64)
	data, err := io.ReadAll(io.LimitReader(resp.Body, a.cfg.MaxResponse+margin))
	if err != nil {
		return connector.Result{}, fmt.Errorf("%s: reading the answer: %w", call.Ref, err)
	}
	res := connector.Result{ContentType: resp.Header.Get("Content-Type")}
	res.Truncated = int64(len(data)) > a.cfg.MaxResponse
	data = scrub.Bytes(data)
	if int64(len(data)) > a.cfg.MaxResponse {
		data = data[:a.cfg.MaxResponse]
	}
	res.Text = string(data)
	if resp.StatusCode >= 400 {
		res.IsError = true
		res.Text = fmt.Sprintf("the endpoint answered %s: %s", resp.Status, res.Text)
	}
	log.Info("http connector call", "connector", call.Ref.String(), "from", call.From.String(), "status", resp.StatusCode, "bytes", len(data), "truncated", res.Truncated, "took", time.Since(start))
	return res, nil
}

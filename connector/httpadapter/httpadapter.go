// Package httpadapter is the http connector adapter: a call sends the tool's
// arguments as a JSON body to an HTTP or HTTPS endpoint, with the
// connector's credential injected as a header at call time, and answers the
// response body, cut at a size limit. The credential's value is taken out of
// everything the adapter answers or logs.
//
// The one destination of a call is the url of the connector's vault entry:
// an entry with none is refused, a redirect is not followed (it is answered
// as a refusal), and the adapter's own client uses no proxy, so the
// credential goes nowhere but to that url. Who may call a connector at all
// is connector.Tools' question (the entry's owners), asked before the
// adapter is.
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

// Config configures an Adapter. The zero value is usable.
type Config struct {
	// Method is the request's method; empty means POST.
	Method string
	// Header is the header the credential goes in when its entry names
	// none; empty means Authorization.
	Header string
	// MaxResponse is the most bytes of a response body answered; the rest
	// is cut (Result.Truncated). Zero means DefaultMaxResponse.
	MaxResponse int64
	// Client makes the requests; nil means a client with DefaultTimeout
	// and no proxy. Its redirect policy is replaced: redirects are never
	// followed. A client given here must not send requests on elsewhere
	// (a proxy would see an http:// credential).
	Client *http.Client
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

// New fills cfg's defaults and makes an Adapter.
func New(cfg Config) (*Adapter, error) {
	if cfg.Method == "" {
		cfg.Method = DefaultMethod
	}
	if cfg.Header == "" {
		cfg.Header = DefaultHeader
	}
	if cfg.MaxResponse <= 0 {
		cfg.MaxResponse = DefaultMaxResponse
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	client := &http.Client{Timeout: DefaultTimeout, Transport: transport}
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

// Call sends call.Args to the entry's url with the credential in its
// header. A response of status 400 or more is a Result with IsError set,
// not an error; an error is a refusal (connector.ErrDenied: an entry with
// no url, or a redirect elsewhere), or a request that did not complete. No
// result, error or log line holds the credential's value.
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
	endpoint := call.Credential.URL
	if endpoint == "" {
		return connector.Result{}, fmt.Errorf("%s has no url in its vault entry, and the http adapter sends a credential only to its entry's own url: %w", call.Ref, connector.ErrDenied)
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
	if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
		log.Warn("http connector redirect refused", "connector", call.Ref.String(), "from", call.From.String(), "status", resp.StatusCode)
		return connector.Result{}, fmt.Errorf("%s: the endpoint answered %s, sending the call to another url; the http adapter sends a credential only to its entry's own url: %w", call.Ref, resp.Status, connector.ErrDenied)
	}
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

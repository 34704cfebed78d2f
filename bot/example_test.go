package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/engine"
)

// exampleHost is the smallest agent host: it keeps what Apply registers.
type exampleHost struct {
	dir       string
	providers map[string]engine.ResourceProvider
	channels  map[string]func(context.Context, engine.Caller, string) (engine.Channel, error)
	meta      map[string]any
}

func (h *exampleHost) BotConfig() bot.Config {
	return bot.Config{ConfigDir: filepath.Join(h.dir, "config"), HostName: "my-host"}
}

func (h *exampleHost) RegisterResourceProvider(scheme string, p engine.ResourceProvider) error {
	h.providers[scheme] = p
	return nil
}

func (h *exampleHost) RegisterChannel(prefix string, open func(context.Context, engine.Caller, string) (engine.Channel, error)) error {
	h.channels[prefix] = open
	return nil
}

func (h *exampleHost) SetMeta(key string, value any) error {
	h.meta[key] = value
	return nil
}

// An embedding host hands Apply its registry; the bot: scheme is then
// served like any other resource.
func ExampleApply() {
	dir, err := os.MkdirTemp("", "bots-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	host := &exampleHost{
		dir:       dir,
		providers: map[string]engine.ResourceProvider{},
		channels:  map[string]func(context.Context, engine.Caller, string) (engine.Channel, error){},
		meta:      map[string]any{},
	}
	svc, err := bot.Apply(ctx, host, bot.Options{Root: filepath.Join(dir, "bots")})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close()

	soft := engine.Caller{Principal: access.Principal{User: "soft", Grants: []string{"bot:put"}}}
	write, _ := json.Marshal(ahp.ResourceWriteParams{
		URI: "bot://motion", Encoding: "utf-8", CreateOnly: true,
		Data: `{"name":"Motion","instructions":"Review pull requests."}`,
	})
	provider := host.providers["bot"]
	if _, err := provider.ServeResource(ctx, engine.Call{Caller: soft, Method: "resourceWrite", Params: write}); err != nil {
		log.Fatal(err)
	}
	read, _ := json.Marshal(ahp.ResourceReadParams{URI: "bot://motion"})
	res, err := provider.ServeResource(ctx, engine.Call{Caller: soft, Method: "resourceRead", Params: read})
	if err != nil {
		log.Fatal(err)
	}
	var b struct{ Name, Owner, Instructions string }
	json.Unmarshal([]byte(res.(ahp.ResourceReadResult).Data), &b)
	fmt.Println(b.Name, "is", b.Owner+"'s:", b.Instructions)
	agents, _ := os.ReadFile(filepath.Join(dir, "bots", "motion", "AGENTS.md"))
	fmt.Println(strings.Contains(string(agents), "Review pull requests."))
	_, hasCatalogue := host.channels["x-ahpd-bots://"]
	fmt.Println(hasCatalogue)
	// Output:
	// Motion is user:soft's: Review pull requests.
	// true
	// true
}

package client_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/client"
	"github.com/agenthost/bots/errcode"
)

// rootToken is the root token of the users file the examples' servers
// read.
const rootToken = "example-root-token"

// server is a bots server in process, on a loopback httptest server.
type server struct {
	URL   string
	Token string
	dir   string
	srv   *bots.Server
	web   *httptest.Server
}

// serve starts a bots server in a temporary folder, with a users file
// whose root token is rootToken; dir reuses a folder (a restart).
func serve(dir string) *server {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "client-example"); err != nil {
			log.Fatal(err)
		}
	}
	users := filepath.Join(dir, "users.json")
	if err := os.WriteFile(users, []byte(`{"root":{"token":"`+rootToken+`"},"users":[]}`), 0o600); err != nil {
		log.Fatal(err)
	}
	srv := &bots.Server{
		ConfigDir: filepath.Join(dir, "config"),
		HostName:  "example",
		Options:   bot.Options{Root: filepath.Join(dir, "bots")},
		UsersFile: users,
	}
	if err := srv.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	return &server{URL: web.URL, Token: rootToken, dir: dir, srv: srv, web: web}
}

// close stops the server; the folder stays for a restart when keep.
func (s *server) close(keep bool) {
	s.web.Close()
	s.srv.Close()
	if !keep {
		os.RemoveAll(s.dir)
	}
}

func (s *server) Close() { s.close(false) }

// dial connects a client to s as root.
func dial(s *server) *client.Client {
	c, err := client.Dial(context.Background(), s.URL, s.Token)
	if err != nil {
		log.Fatal(err)
	}
	return c
}

func ExampleDial() {
	s := serve("")
	defer s.Close()
	ctx := context.Background()
	c, err := client.Dial(ctx, s.URL, s.Token)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	slugs, err := c.List(ctx)
	fmt.Println(slugs, err)
	// Output:
	// [] <nil>
}

func ExampleClient_Initialize() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	r, err := c.Initialize(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.ServerInfo.Name, "speaks", r.ProtocolVersion)
	fmt.Println("you are", r.Meta["ahpd.principal"])
	// Output:
	// agenthost-bots speaks 1.1.0
	// you are root:example
}

func ExampleClient_Make() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	b, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal", Instructions: "Review pull requests."})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(b.ID, b.Name, b.Body, b.Color, b.Owner, b.ETag != "")
	_, err = c.Make(ctx, "motion", client.Fields{Name: "Again"})
	fmt.Println(errcode.Of(err))
	// Output:
	// motion Motion robot teal root:example true
	// already exists
}

func ExampleClient_List() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	for _, slug := range []string{"motion", "helper"} {
		if _, err := c.Make(ctx, slug, client.Fields{Name: slug, Body: "cloud", Color: "red"}); err != nil {
			log.Fatal(err)
		}
	}
	slugs, err := c.List(ctx)
	fmt.Println(slugs, err)
	// Output:
	// [helper motion] <nil>
}

func ExampleClient_Read() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Description: "Reviews pull requests", Body: "robot", Color: "teal"}); err != nil {
		log.Fatal(err)
	}
	b, err := c.Read(ctx, "motion")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s (%s, %s)\n", b.Name, b.Description, b.Body, b.Color)
	_, err = c.Read(ctx, "nobody")
	fmt.Println(errcode.Of(err))
	// Output:
	// Motion: Reviews pull requests (robot, teal)
	// not found
}

func ExampleClient_Edit() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	b, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Description: "Reviews", Body: "robot", Color: "teal"})
	if err != nil {
		log.Fatal(err)
	}
	edited, err := c.Edit(ctx, "motion", client.Fields{Color: "red", Clear: []string{"description"}}, b.ETag)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %q\n", edited.Color, edited.Description)
	// the etag read before the edit is stale now.
	_, err = c.Edit(ctx, "motion", client.Fields{Color: "blue"}, b.ETag)
	fmt.Println(errcode.Of(err) == errcode.Conflict)
	// Output:
	// red ""
	// true
}

func ExampleClient_Delete() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal"}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Delete(ctx, "motion"))
	_, err := c.Read(ctx, "motion")
	fmt.Println(errcode.Of(err))
	// a deleted slug is never made again.
	_, err = c.Make(ctx, "motion", client.Fields{Name: "Motion"})
	fmt.Println(errcode.Of(err))
	// Output:
	// <nil>
	// not found
	// already exists
}

func ExampleClient_Watch() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal"}); err != nil {
		log.Fatal(err)
	}
	w, err := c.Watch(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Make(ctx, "helper", client.Fields{Name: "Helper", Body: "cloud", Color: "red"}); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Edit(ctx, "motion", client.Fields{Color: "blue"}, ""); err != nil {
		log.Fatal(err)
	}
	if err := c.Delete(ctx, "helper"); err != nil {
		log.Fatal(err)
	}
	for range 4 {
		e, err := w.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(strings.TrimSpace(fmt.Sprint(e.Kind, " ", e.ID, " ", e.Bot.Color))) // Bot is zero for BotRemoved
	}
	fmt.Println(len(w.Bots()), "bot")
	// Output:
	// added motion teal
	// added helper red
	// changed motion blue
	// removed helper
	// 1 bot
}

func ExampleClient_OpenChat() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal"}); err != nil {
		log.Fatal(err)
	}
	chat, err := c.OpenChat(ctx, "motion")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(chat.URI() == client.ChatURI(chat.Session()), strings.HasPrefix(chat.URI(), "ahp-chat://default/"))
	fmt.Println(chat.State().Title, len(chat.State().Turns))
	// a chat with a bot that is not there is refused.
	_, err = c.OpenChat(ctx, "nobody")
	fmt.Println(errcode.Of(err))
	// Output:
	// true true
	// Motion 0
	// not found
}

func ExampleChat_Send() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal"}); err != nil {
		log.Fatal(err)
	}
	chat, err := c.OpenChat(ctx, "motion")
	if err != nil {
		log.Fatal(err)
	}
	turn, err := chat.Send(ctx, "twice")
	if err != nil {
		log.Fatal(err)
	}
	for e, err := range turn.Events(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		switch e.Kind {
		case client.EventToolCall:
			if e.Action.Type == ahp.ActionChatToolCallStart {
				fmt.Println("tool call:", e.ToolCall.DisplayName)
			}
		case client.EventPart:
			if e.Part.Markdown != nil {
				fmt.Println("reply:", e.Part.Markdown.Content)
			}
		case client.EventEnd:
			fmt.Println("the turn ended", e.Turn.State)
		}
	}
	// Output:
	// tool call: Motion
	// reply: first
	// reply: second
	// the turn ended complete
}

func ExampleChat_Answer() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal"}); err != nil {
		log.Fatal(err)
	}
	chat, err := c.OpenChat(ctx, "motion")
	if err != nil {
		log.Fatal(err)
	}
	turn, err := chat.Send(ctx, "ask Which colour?")
	if err != nil {
		log.Fatal(err)
	}
	for e, err := range turn.Events(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		switch e.Kind {
		case client.EventQuestion:
			q := e.Question.Questions[0]
			fmt.Println("asked:", q.Message)
			if err := chat.Answer(ctx, e.Question.ID, map[string]string{q.ID: "teal"}); err != nil {
				log.Fatal(err)
			}
		case client.EventEnd:
			fmt.Println(client.Replies(*e.Turn))
		}
	}
	// Output:
	// asked: Which colour?
	// [you said: teal]
}

func ExampleChat_Approve() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal"}); err != nil {
		log.Fatal(err)
	}
	chat, err := c.OpenChat(ctx, "motion")
	if err != nil {
		log.Fatal(err)
	}
	turn, err := chat.Send(ctx, "approve")
	if err != nil {
		log.Fatal(err)
	}
	for e, err := range turn.Events(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		switch e.Kind {
		case client.EventApproval:
			id, _ := turn.ID(ctx)
			if err := chat.Approve(ctx, id, e.ToolCall.ToolCallID, true); err != nil {
				log.Fatal(err)
			}
		case client.EventEnd:
			fmt.Println(client.Replies(*e.Turn))
		}
	}
	// Output:
	// [approved]
}

func ExampleChat_Stop() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal"}); err != nil {
		log.Fatal(err)
	}
	chat, err := c.OpenChat(ctx, "motion")
	if err != nil {
		log.Fatal(err)
	}
	turn, err := chat.Send(ctx, "sleep 600")
	if err != nil {
		log.Fatal(err)
	}
	id, _ := turn.ID(ctx)
	if err := chat.Stop(ctx, id); err != nil {
		log.Fatal(err)
	}
	ended, err := turn.Wait(ctx)
	fmt.Println(ended.State, err)
	// a turn that is not running cannot be stopped.
	err = chat.Stop(ctx, id)
	fmt.Println(errcode.Of(err))
	// Output:
	// cancelled <nil>
	// invalid
}

func ExampleChat_Resume() {
	s := serve("")
	c := dial(s)
	ctx := context.Background()
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal"}); err != nil {
		log.Fatal(err)
	}
	chat, err := c.OpenChat(ctx, "motion")
	if err != nil {
		log.Fatal(err)
	}
	turn, err := chat.Send(ctx, "sleep 2")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := turn.Next(ctx); err != nil { // the turn began
		log.Fatal(err)
	}
	// the server stops mid-turn, and starts again on the same folders.
	c.Close()
	s.close(true)
	s = serve(s.dir)
	defer s.Close()
	c = dial(s)
	defer c.Close()
	chat, err = c.JoinChat(ctx, chat.Session())
	if err != nil {
		log.Fatal(err)
	}
	last := chat.State().Turns[0]
	fmt.Println(last.State, last.ResponseParts[len(last.ResponseParts)-1].Error.Error.ErrorType)
	turn, err = chat.Resume(ctx, last.ID)
	if err != nil {
		log.Fatal(err)
	}
	ended, err := turn.Wait(ctx)
	fmt.Println(ended.State, client.Replies(ended), err)
	// Output:
	// error executionInterrupted
	// complete [awake] <nil>
}

func ExampleChat_History() {
	s := serve("")
	defer s.Close()
	c := dial(s)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal"}); err != nil {
		log.Fatal(err)
	}
	chat, err := c.OpenChat(ctx, "motion")
	if err != nil {
		log.Fatal(err)
	}
	for _, words := range []string{"one", "two", "three"} {
		turn, err := chat.Send(ctx, words)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := turn.Wait(ctx); err != nil {
			log.Fatal(err)
		}
	}
	// another client opens the chat later and reads it all.
	other := dial(s)
	defer other.Close()
	later, err := other.JoinChat(ctx, chat.Session())
	if err != nil {
		log.Fatal(err)
	}
	turns, err := later.History(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range turns {
		fmt.Println(t.Message.Text, "→", strings.Join(client.Replies(t), " "))
	}
	// Output:
	// one → Motion heard: one
	// two → Motion heard: two
	// three → Motion heard: three
}

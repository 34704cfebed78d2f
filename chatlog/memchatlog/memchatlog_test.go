package memchatlog_test

import (
	"testing"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/chatlogtest"
	"github.com/agenthost/bots/chatlog/memchatlog"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	chatlogtest.Run(t, chatlogtest.Harness{Open: func(*testing.T) chatlog.Logs { return &memchatlog.Logs{} }})
}

func TestIsShared(t *testing.T) {
	t.Parallel()
	chatlogtest.RunShared(t, chatlogtest.SharedHarness{Open: func(t *testing.T) (chatlog.Shared, chatlog.Shared) {
		m := &memchatlog.Logs{}
		return m, m
	}})
}

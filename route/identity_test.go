package route_test

import (
	"testing"

	"github.com/agenthost/bots/route"
)

func TestAnIRCIdentityNamesTheConnectionsServerAndOthersTheirNetworkAlone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		conn            route.Connection
		user            string
		identity, broad string
	}{
		{route.Connection{Network: "irc", Settings: map[string]string{"server": "Irc.Example.ORG:6697"}}, "alice", "irc:alice@irc.example.org", "irc:alice"},
		// IRC holds Alice and alice to be one nick.
		{route.Connection{Network: "irc", Settings: map[string]string{"server": "irc.example.org:6697"}}, "Alice", "irc:alice@irc.example.org", "irc:alice"},
		{route.Connection{Network: "irc", Settings: map[string]string{"server": "[::1]:6667"}}, "alice", "irc:alice@::1", "irc:alice"},
		{route.Connection{Network: "irc", Settings: map[string]string{"server": "irc.libera.chat:6697", "accounts": "true"}}, "account:alice", "irc:account:alice@irc.libera.chat", "irc:account:alice"},
		// A connection with no server does not dial, and names no server.
		{route.Connection{Network: "irc"}, "alice", "irc:alice", ""},
		{route.Connection{Network: "xmpp", Settings: map[string]string{"server": "xmpp.example.org:5222"}}, "alice@example.org", "xmpp:alice@example.org", ""},
		{route.Connection{Network: "slack"}, "U123", "slack:U123", ""},
	} {
		identity, broad := c.conn.Identity(c.user)
		if identity != c.identity || broad != c.broad {
			t.Errorf("%s user %s on %q: %q and %q, want %q and %q", c.conn.Network, c.user, c.conn.Settings["server"], identity, broad, c.identity, c.broad)
		}
	}
}

func TestAConnectionMeetsItsNetworksUsersAndOnIRCTheNicksOrAccountsOfItsServer(t *testing.T) {
	t.Parallel()
	libera := route.Connection{Network: "irc", Settings: map[string]string{"server": "irc.libera.chat:6697"}}
	accounts := route.Connection{Network: "irc", Settings: map[string]string{"server": "irc.libera.chat:6697", "accounts": "true"}}
	jabber := route.Connection{Network: "xmpp"}
	for _, c := range []struct {
		conn     route.Connection
		identity string
		meets    bool
	}{
		{libera, "irc:alice", true},
		{libera, "irc:alice@irc.libera.chat", true},
		{libera, "irc:alice@irc.oftc.net", false},
		{libera, "irc:Alice@IRC.Libera.Chat", true},
		{libera, "xmpp:alice@example.org", false},
		// Where its senders are accounts, a connection meets accounts
		// alone; where they are nicks, nicks alone.
		{libera, "irc:account:alice@irc.libera.chat", false},
		{accounts, "irc:account:alice", true},
		{accounts, "irc:account:alice@irc.libera.chat", true},
		{accounts, "irc:Account:Alice@irc.libera.chat", true},
		{accounts, "irc:account:alice@irc.oftc.net", false},
		{accounts, "irc:alice@irc.libera.chat", false},
		{accounts, "irc:alice", false},
		{jabber, "xmpp:alice@example.org", true},
		{jabber, "irc:alice", false},
	} {
		if got := c.conn.Meets(c.identity); got != c.meets {
			t.Errorf("a %s connection meets %s: %v, want %v", c.conn.Network, c.identity, got, c.meets)
		}
	}
}

package postgres_test

import (
	"context"
	"log"
	"os"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/postgres"
)

// Two such programs, on two machines that mount the same bots folder and
// reach the same database, serve one set of bots: a chat started on one
// is followed, and continued, on the other.
func ExampleDatabase() {
	srv := &bots.Server{
		ConfigDir: "/var/lib/bots",                       // this instance's own
		Options:   bot.Options{Root: "/mnt/shared/bots"}, // the folder every instance mounts
		Database:  postgres.Database{URL: os.Getenv("BOTS_DATABASE_URL")},
	}
	defer srv.Close()
	if err := srv.Start(context.Background()); err != nil {
		log.Fatal(err) // say, the root is not the one the database knows
	}
}

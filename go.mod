module github.com/agenthost/bots

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	github.com/goccy/go-yaml v1.19.2
	github.com/google/go-cmp v0.7.0
	github.com/oklog/ulid/v2 v2.1.2
	github.com/rjeczalik/notify v0.9.3
)

require golang.org/x/sys v0.50.0 // indirect

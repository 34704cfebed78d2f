module github.com/agenthost/bots

go 1.26

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/goccy/go-yaml v1.19.2 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/oklog/ulid/v2 v2.1.2 // indirect
)

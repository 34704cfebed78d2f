package relay

import (
	"maps"
	"slices"

	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/telemetry"
)

// The series a relay counts into Config.Telemetry.
const (
	ConnectionsSeries = "bots_route_connections"
	MessagesSeries    = "bots_route_messages_total"
)

// What became of a message from a network: the result label of
// MessagesSeries.
const (
	resultPassed   = "passed"   // passed on to the bot, as its sender's person
	resultStranger = "stranger" // a sender no person maps to: refused, or given a pairing code
	resultUnnamed  = "unnamed"  // the network names no sender
	resultRepeated = "repeated" // passed on before (a redelivery)
	resultFailed   = "failed"   // the bot could not be reached, or took nothing
)

// measure makes the relay's series in h: its connections by network and
// state, read when exported, and the messages it took by network and
// what became of them.
func (r *Relay) measure(h *telemetry.Hub) {
	names := slices.Sorted(maps.Keys(r.networks))
	networks := telemetry.Label{Name: "network", Values: names}
	every := append(slices.Clip(names), telemetry.Other)
	r.messages = h.Counter(MessagesSeries, "Messages the chat-network routes took, by network and what became of them: passed (on to the bot, as its sender's person), stranger (no person maps to the sender: refused, or given a pairing code), unnamed (the network names no sender), repeated (passed on before) or failed (the bot could not be reached).",
		networks, telemetry.Label{Name: "result", Values: []string{resultPassed, resultStranger, resultUnnamed, resultRepeated, resultFailed}})
	states := []string{string(route.Connected), string(route.Connecting), string(route.Failing), string(route.Off), string(route.Elsewhere)}
	h.GaugeRead(ConnectionsSeries, "The chat-network connections this instance knows, by network and state: connected, connecting, failing, off (disabled, or no enabled route uses it) or elsewhere (another instance holds it).",
		func(set func(float64, ...string)) {
			r.mu.Lock()
			n := map[[2]string]int{}
			for id, st := range r.states {
				network := r.nets[id]
				if r.networks[network] == nil {
					network = telemetry.Other // a network this host has no adapter for
				}
				n[[2]string{network, string(st.State)}]++
			}
			r.mu.Unlock()
			for _, network := range every {
				for _, state := range states {
					set(float64(n[[2]string{network, state}]), network, state) // 0 too: a state left is no longer held
				}
			}
		}, networks, telemetry.Label{Name: "state", Values: states})
}

// took counts a message of the worker's network by what became of it.
func (w *worker) took(result string) {
	w.r.messages.Cell(w.conn.Network, result).Inc()
}

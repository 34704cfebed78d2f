package bot

import (
	"github.com/agenthost/bots/bot/internal/diskfull"
	"github.com/agenthost/bots/telemetry"
)

// meters are the series the service counts into besides its chats';
// nil series count nothing.
type meters struct {
	hub      *telemetry.Hub
	diskFull *telemetry.Series // bots_disk_full_refusals_total
}

// newMeters makes the service's series in hub (none when hub is nil).
func newMeters(hub *telemetry.Hub) meters {
	return meters{
		hub:      hub,
		diskFull: hub.Counter("bots_disk_full_refusals_total", "Writes the disk refused (full, over quota or read-only): a bot or chat line not saved."),
	}
}

// countDiskFull counts err when it is a write the disk refused.
func (s *Service) countDiskFull(err error) {
	if _, ok := diskfull.Reason(err); ok {
		s.meters.diskFull.Inc()
	}
}

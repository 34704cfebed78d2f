package ahp

import (
	"encoding/json"
	"maps"
	"slices"
)

// ApplyRoot applies a to the root state and returns the new state. It never
// modifies s; an action it does not know returns s unchanged.
func ApplyRoot(s RootState, a Action) RootState {
	switch b := a.body().(type) {
	case *RootAgentsChangedAction:
		s.Agents = slices.Clone(b.Agents)
		if s.Agents == nil {
			s.Agents = List[AgentInfo]{}
		}
	case *RootActiveSessionsChangedAction:
		n := b.ActiveSessions
		s.ActiveSessions = &n
	case *RootTerminalsChangedAction:
		s.Terminals = slices.Clone([]json.RawMessage(b.Terminals))
		if s.Terminals == nil {
			s.Terminals = []json.RawMessage{}
		}
	case *RootConfigChangedAction:
		s.Config = configChanged(s.Config, b.Config, b.Replace)
	}
	return s
}

// ApplySession applies a to a session's state and returns the new state. It
// never modifies s; an action it does not know, or one naming a chat, client
// or entry that is not there, returns s unchanged.
func ApplySession(s SessionState, a Action) SessionState {
	switch b := a.body().(type) {
	case *SessionReadyAction:
		s.Lifecycle = LifecycleReady
	case *SessionCreationFailedAction:
		s.Lifecycle = LifecycleFailed
		e := b.Error
		s.CreationError = &e
	case *SessionTitleChangedAction:
		s.Title = b.Title
	case *SessionIsReadChangedAction:
		s.Status = withFlag(s.Status, StatusIsRead, b.IsRead)
	case *SessionIsArchivedChangedAction:
		s.Status = withFlag(s.Status, StatusIsArchived, b.IsArchived)
	case *SessionActivityChangedAction:
		s.Activity = b.Activity
	case *SessionChangesetsChangedAction:
		s.Changesets = slices.Clone(b.Changesets)
	case *SessionCustomizationsChangedAction:
		s.Customizations = slices.Clone([]json.RawMessage(b.Customizations))
		if s.Customizations == nil {
			s.Customizations = []json.RawMessage{}
		}
	case *SessionConfigChangedAction:
		s.Config = configChanged(s.Config, b.Config, b.Replace)
	case *SessionMetaChangedAction:
		s.Meta = b.Meta
	case *SessionServerToolsChangedAction:
		s.ServerTools = slices.Clone([]ToolDefinition(b.Tools))
		if s.ServerTools == nil {
			s.ServerTools = []ToolDefinition{}
		}
	case *SessionActiveClientSetAction:
		i := slices.IndexFunc(s.ActiveClients, func(c SessionActiveClient) bool {
			return c.ClientID == b.ActiveClient.ClientID
		})
		if i < 0 {
			s.ActiveClients = appendTo(s.ActiveClients, b.ActiveClient)
		} else {
			s.ActiveClients = slices.Clone(s.ActiveClients)
			s.ActiveClients[i] = b.ActiveClient
		}
	case *SessionActiveClientRemovedAction:
		i := slices.IndexFunc(s.ActiveClients, func(c SessionActiveClient) bool { return c.ClientID == b.ClientID })
		if i >= 0 {
			s.ActiveClients = slices.Delete(slices.Clone(s.ActiveClients), i, i+1)
		}
	case *SessionWorkingDirectorySetAction:
		if !slices.Contains(s.WorkingDirectories, b.Directory) {
			s.WorkingDirectories = appendTo(s.WorkingDirectories, b.Directory)
		}
	case *SessionWorkingDirectoryRemovedAction:
		if i := slices.Index(s.WorkingDirectories, b.Directory); i >= 0 {
			s.WorkingDirectories = slices.Delete(slices.Clone(s.WorkingDirectories), i, i+1)
		}
	case *SessionWorkingDirectoryReplacedAction:
		s.WorkingDirectories = replaceDirectory(s.WorkingDirectories, b.Directory, b.Replacement)
	case *SessionInputNeededSetAction:
		i := slices.IndexFunc(s.InputNeeded, func(r SessionInputRequest) bool { return r.ID == b.Request.ID })
		if i < 0 {
			s.InputNeeded = appendTo(s.InputNeeded, b.Request)
		} else {
			s.InputNeeded = slices.Clone(s.InputNeeded)
			s.InputNeeded[i] = b.Request
		}
		s.Status = inputNeededStatus(s.Status, s.InputNeeded)
	case *SessionInputNeededRemovedAction:
		i := slices.IndexFunc(s.InputNeeded, func(r SessionInputRequest) bool { return r.ID == b.ID })
		if i < 0 {
			return s
		}
		s.InputNeeded = slices.Delete(slices.Clone(s.InputNeeded), i, i+1)
		s.Status = inputNeededStatus(s.Status, s.InputNeeded)
		if len(s.InputNeeded) == 0 {
			s.InputNeeded = nil
		}
	case *SessionChatAddedAction:
		i := slices.IndexFunc(s.Chats, func(c ChatSummary) bool { return c.Resource == b.Summary.Resource })
		if i < 0 {
			s.Chats = appendTo(s.Chats, b.Summary)
		} else {
			s.Chats = slices.Clone(s.Chats)
			s.Chats[i] = b.Summary
		}
	case *SessionChatRemovedAction:
		i := slices.IndexFunc(s.Chats, func(c ChatSummary) bool { return c.Resource == b.Chat })
		if i < 0 {
			return s
		}
		s.Chats = slices.Delete(slices.Clone(s.Chats), i, i+1)
		if s.DefaultChat == b.Chat {
			s.DefaultChat = ""
		}
	case *SessionChatUpdatedAction:
		i := slices.IndexFunc(s.Chats, func(c ChatSummary) bool { return c.Resource == b.Chat })
		if i < 0 {
			return s
		}
		s.Chats = slices.Clone(s.Chats)
		s.Chats[i] = mergeChatSummary(s.Chats[i], b.Changes)
	case *SessionDefaultChatChangedAction:
		s.DefaultChat = b.DefaultChat
	}
	return s
}

// ApplyResourceWatch applies a to a resource watch's state. The state only
// describes the watch; resourceWatch/changed batches pass through without
// changing it, and so does every other action.
func ApplyResourceWatch(s ResourceWatchState, a Action) ResourceWatchState {
	return s
}

// configChanged merges values into (or, with replace, replaces) the values
// of cfg; a missing configuration stays missing.
func configChanged(cfg *ConfigState, values map[string]any, replace bool) *ConfigState {
	if cfg == nil {
		return nil
	}
	next := *cfg
	if replace || cfg.Values == nil {
		next.Values = make(map[string]any, len(values))
	} else {
		next.Values = maps.Clone(cfg.Values)
	}
	maps.Copy(next.Values, values)
	return &next
}

// inputNeededStatus reflects the input-needed list into the activity bits:
// an entry waiting on the user makes the activity InputNeeded; with none
// left the InputNeeded-only bit is cleared, so a running turn is InProgress
// again and an idle session stays idle.
func inputNeededStatus(status SessionStatus, list []SessionInputRequest) SessionStatus {
	if slices.ContainsFunc(list, SessionInputRequest.awaitsUser) {
		return status.WithActivity(StatusInputNeeded)
	}
	return status &^ (StatusInputNeeded &^ StatusInProgress)
}

func mergeChatSummary(c ChatSummary, ch PartialChatSummary) ChatSummary {
	if ch.Title != nil {
		c.Title = *ch.Title
	}
	if ch.Status != nil {
		c.Status = *ch.Status
	}
	if ch.Activity != nil {
		c.Activity = *ch.Activity
	}
	if ch.ModifiedAt != nil {
		c.ModifiedAt = *ch.ModifiedAt
	}
	if ch.Changes != nil {
		c.Changes = ch.Changes
	}
	if ch.Origin != nil {
		c.Origin = ch.Origin
	}
	if ch.Movable != nil {
		c.Movable = ch.Movable
	}
	if ch.Interactivity != nil {
		c.Interactivity = *ch.Interactivity
	}
	if ch.WorkingDirectories != nil {
		c.WorkingDirectories = ch.WorkingDirectories
	}
	return c
}

// replaceDirectory replaces dir by with in dirs, keeping its position and
// dropping other copies of with (or dropping dir when with already comes
// before it). Absent dirs or dir leave dirs unchanged.
func replaceDirectory(dirs []string, dir, with string) []string {
	i := slices.Index(dirs, dir)
	if i < 0 {
		return dirs
	}
	if j := slices.Index(dirs, with); j >= 0 && j < i {
		return slices.Delete(slices.Clone(dirs), i, i+1)
	}
	next := make([]string, 0, len(dirs))
	for k, d := range dirs {
		switch {
		case k == i:
			next = append(next, with)
		case d != with:
			next = append(next, d)
		}
	}
	return next
}

package bot

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/record"
)

// problemKeeper is a store that keeps problems found outside it, as
// filerecord.Store does, so that a client sees them with the store's own.
type problemKeeper interface {
	ReportProblem(id, path, reason string)
	ClearProblem(path string)
}

// unmigrated reports whether r, a record of a service that keeps personas
// in AGENTS.md, still carries its persona: a record made before AGENTS.md
// was the one copy. A read answers such a bot's persona from its record
// until a load moves it.
func (s *Service) unmigrated(r record.Record) bool {
	return s.personaInFile(r) && r.Name != ""
}

// migratePersonas moves the persona parts that records made before
// AGENTS.md was the one copy still carry into each bot's AGENTS.md, and
// writes each record back without them once a read of the file gives them
// back. The record's name and description are written into the file's
// frontmatter; its instructions go into the file unless the file's
// Instructions section already holds text, which is kept, and the record's
// copy is dropped (an empty section, or none, takes the record's: it was
// made from the template before the record's instructions were edited).
//
// A bot whose file cannot be read, or written, or does not read back as
// written, is left alone: its persona stays in its record, where a read
// finds it, and it is reported - a Warn line naming the file and, when the
// store keeps problems, a problem - until a later load moves it. Only ctx
// ending is an error.
func (s *Service) migratePersonas(ctx context.Context) error {
	if !s.inFiles {
		return nil
	}
	list, err := record.ListFunc(ctx, s.raw, func(r record.Record) bool {
		return r.Computer == "" && (r.Name != "" || r.Description != "" || r.Instructions != "")
	})
	if err != nil {
		return fmt.Errorf("list records to move personas from: %w", err)
	}
	keeper, _ := s.raw.(problemKeeper)
	moved := 0
	for _, e := range list {
		path := filepath.Join(e.Record.Workspace, persona.AgentsFile)
		err := s.migratePersona(ctx, e)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			reason := "the persona stays in the record: " + err.Error()
			s.log.Warn("bot: persona not moved into AGENTS.md", "bot", e.Record.ID, "path", path, "reason", reason)
			if keeper != nil {
				keeper.ReportProblem(e.Record.ID, path, reason)
			}
			continue
		}
		if keeper != nil {
			keeper.ClearProblem(path)
		}
		moved++
	}
	if moved > 0 {
		s.log.Info("bot: moved personas from records into AGENTS.md", "bots", moved)
	}
	return nil
}

// migratePersona moves one record's persona into its AGENTS.md.
func (s *Service) migratePersona(ctx context.Context, e record.Entry) error {
	r := e.Record
	unlock := s.lock(r.ID)
	defer unlock()
	if r.Workspace == "" {
		return errors.New("the bot names no workspace to keep its AGENTS.md in")
	}
	if err := s.confine(r.Workspace); err != nil {
		return err
	}
	cur, err := s.personas.Read(ctx, r.Workspace)
	if err != nil {
		return fmt.Errorf("the file cannot be read: %w", err)
	}
	want := cur
	if r.Name != "" {
		want.Name = r.Name
	}
	if r.Description != "" {
		want.Description = r.Description
	}
	if cur.Instructions == "" {
		want.Instructions = r.Instructions
	}
	if err := s.writePersona(ctx, r, want); err != nil {
		return err
	}
	back, err := s.personas.Read(ctx, r.Workspace)
	if err != nil {
		return fmt.Errorf("the file cannot be read after the move: %w", err)
	}
	if back != persona.Normalize(want) {
		return errors.New("the file does not give the persona back after the move")
	}
	stored := r
	stored.Name, stored.Description, stored.Instructions = "", "", ""
	if _, err := s.raw.Update(ctx, stored, e.ETag); err != nil {
		return fmt.Errorf("the record cannot be written back without its persona: %w", err)
	}
	s.partsSeen.forget(r.ID)
	return nil
}

// startPersonaSweep starts clearPersonaTemps in the background, once the
// service is made: those temp files are litter no read looks at (a write's
// own temp file is younger than atomicfile.StaleAfter, so the sweep never
// takes one in use), and listing every work folder at start would cost one
// folder read a bot before the first answer (issue 15: 3.0 s of a start
// over 100,000 bots). Close stops it and waits for it.
func (s *Service) startPersonaSweep() {
	ctx, cancel := context.WithCancel(context.Background())
	s.sweep.goUntil(cancel, func() {
		if err := s.clearPersonaTemps(ctx, time.Now, time.After); err != nil && ctx.Err() == nil {
			s.log.Warn("bot: the sweep of persona temp files stopped", "reason", err.Error())
		}
	})
}

// clearPersonaTemps removes, from the work folder of every bot on this
// host, the temp files of AGENTS.md and CLAUDE.md writes that a crash left
// (persona.Files.RemoveStaleTemps); the bot's own temp files stay. A folder
// that has left root is not looked into. Only ctx ending, or a listing
// that fails, is an error.
//
// A temp file younger than atomicfile.StaleAfter may be a write in
// progress - of another instance on a shared root - and is left; but a
// crash just before a quick restart leaves only such files, so the
// folders that held any are looked at again, once, when they are
// StaleAfter older (after says when: time.After, or a test's clock; now
// reads the time), and what is still there then is taken. That look
// reads those few folders, not every bot's again.
func (s *Service) clearPersonaTemps(ctx context.Context, now func() time.Time, after func(time.Duration) <-chan time.Time) error {
	list, err := record.ListFunc(ctx, s.raw, func(r record.Record) bool {
		return r.Computer == "" && r.Workspace != ""
	})
	if err != nil {
		return fmt.Errorf("list the bots to clear temp files of: %w", err)
	}
	// One folder at a time: the sweep runs beside the start and the first
	// answers, and is in no hurry.
	began := now()
	var again []record.Record // bots whose folders held temp files too young to take
	for _, e := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.sweepPersonaTemps(e.Record, began.Add(-atomicfile.StaleAfter)) {
			again = append(again, e.Record)
		}
	}
	if len(again) == 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-after(atomicfile.StaleAfter):
	}
	cutoff := now().Add(-atomicfile.StaleAfter)
	for _, r := range again {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.sweepPersonaTemps(r, cutoff)
	}
	return nil
}

// sweepPersonaTemps removes from r's work folder the persona temp files
// last modified before cutoff, logging what it removed and what it could
// not, and reports whether younger ones are left. A folder that has left
// root is not looked into.
func (s *Service) sweepPersonaTemps(r record.Record, cutoff time.Time) (young bool) {
	dir := r.Workspace
	if reason, err := s.folderEscape(dir); err != nil || reason != "" {
		return false
	}
	removed, young, err := s.personas.RemoveStaleTemps(dir, cutoff)
	if len(removed) > 0 {
		s.log.Info("bot: removed temp files a crash left", "bot", r.ID, "files", removed)
	}
	if err != nil {
		s.log.Warn("bot: cannot remove temp files a crash left", "bot", r.ID, "path", dir, "reason", err.Error())
	}
	return young
}

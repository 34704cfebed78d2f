package bot

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/atomicfile"
)

// A chat's log is <configDir>/bots/<slug>/logs/<chat id>.jsonl, where the
// chat id is the base64url of its session URI (the id in its default chat
// URI). Each line is one JSON object: the first opens the chat, each other
// is one action applied to the chat or its session. Every line carries the
// bot's mark in _meta["ahpd.bot"].

// Log line kinds.
const (
	lineOpen    = "open"    // the chat was made
	lineChat    = "chat"    // an action applied to the chat
	lineSession = "session" // an action applied to the session
)

// logLine is one line of a chat log.
type logLine struct {
	// Kind is open, chat or session.
	Kind string `json:"kind"`
	// At is when the line was written (ISO 8601).
	At string `json:"at"`
	// Session, Chat, Owner, Bot, Title, Dir and CreatedAt are the open
	// line's: the chat's URIs, whose it is, which bot it is with, its
	// title, the folder it works in and when it was made.
	Session   string `json:"session,omitempty"`
	Chat      string `json:"chat,omitempty"`
	Owner     string `json:"owner,omitempty"`
	Bot       string `json:"bot,omitempty"`
	Title     string `json:"title,omitempty"`
	Dir       string `json:"workingDirectory,omitempty"`
	CreatedAt string `json:"createdAt,omitempty"`
	// Action is the action of a chat or session line.
	Action *ahp.Action `json:"action,omitempty"`
	// Meta carries the bot's mark.
	Meta map[string]any `json:"_meta"`
}

// maxSessionURI bounds a bot chat's session URI: its base64url is a file
// name.
const maxSessionURI = 180

// chatID is the id of a session's chat: the base64url of its URI, the
// name of its log.
func chatID(session string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(session))
}

// logPath is the log of the chat of session, with bot.
func logPath(botsDir, bot, session string) string {
	return filepath.Join(botsDir, bot, "logs", chatID(session)+".jsonl")
}

// appendLine appends one line to the log at path with one write; with
// sync, or when the file is new, durably: fsynced, and the folder fsynced
// when the file is new. A write that fails leaves none of the line behind.
// It never makes the folder, so a bot whose folder was removed (deleted)
// gets no new one. Appends to one log are serialised by its caller.
func appendLine(path string, line logLine, sync bool) error {
	data, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("encode log line: %w", err)
	}
	data = append(data, '\n')
	created := false
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		created = true
	}
	if err != nil {
		return fmt.Errorf("open chat log: %w", err)
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return fmt.Errorf("append to chat log %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		// A full disk may take part of the line: cut it off, or the next
		// line would be glued to it and both lost when the log is read.
		if terr := f.Truncate(end); terr != nil {
			err = errors.Join(err, fmt.Errorf("cut off the part written: %w", terr))
		}
		f.Close()
		return fmt.Errorf("append to chat log %s: %w", path, err)
	}
	if sync || created {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("sync chat log %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close chat log %s: %w", path, err)
	}
	if created {
		return atomicfile.SyncDir(filepath.Dir(path))
	}
	return nil
}

// createLog makes the log's folder and writes its open line.
func createLog(path string, open logLine) error {
	if err := atomicfile.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("make chat log folder: %w", err)
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("chat log %s: %w", path, fs.ErrExist)
	}
	return appendLine(path, open, true)
}

// readLog reads a chat log. A last line cut short by a crash mid-append is
// ignored and cut off the file, so the next append starts a whole line;
// any other line that does not decode is skipped and reported in bad.
func readLog(path string) (lines []logLine, bad []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
		if err := os.Truncate(path, int64(i+1)); err != nil {
			bad = append(bad, fmt.Sprintf("the torn last line could not be cut off: %v", err))
		} else {
			bad = append(bad, "a torn last line was cut off")
		}
		data = data[:i+1]
	}
	r := bufio.NewReader(bytes.NewReader(data))
	for n := 1; ; n++ {
		raw, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 {
			var l logLine
			if jerr := json.Unmarshal(raw, &l); jerr != nil {
				bad = append(bad, fmt.Sprintf("line %d: %v", n, jerr))
			} else {
				lines = append(lines, l)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return lines, bad, nil
}

// logFiles lists every chat log under botsDir: bots/<slug>/logs/*.jsonl.
func logFiles(botsDir string) ([]string, error) {
	bots, err := os.ReadDir(botsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list bots: %w", err)
	}
	var out []string
	for _, b := range bots {
		if !b.IsDir() || strings.HasPrefix(b.Name(), ".") {
			continue
		}
		dir := filepath.Join(botsDir, b.Name(), "logs")
		logs, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, l := range logs {
			if !l.IsDir() && strings.HasSuffix(l.Name(), ".jsonl") && !atomicfile.IsTemp(l.Name()) {
				out = append(out, filepath.Join(dir, l.Name()))
			}
		}
	}
	return out, nil
}

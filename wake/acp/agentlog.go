package acp

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// Claude Code says nothing on stderr while it retries a model API it
// cannot reach: it writes each attempt's error to a debug log in its
// HOME, .claude/debug/<session>.txt. A failure of a Claude Code child
// reads the error lines of that log written since the turn (or the start)
// began, after its stderr, as the agent's own words (see said).

// debugLogTail bounds what is read of a debug log: its last bytes.
const debugLogTail = 64 << 10

// debugLogPoll is how often a running turn looks at the debug log for an
// API it cannot reach (see agent.Turn).
const debugLogPoll = 2 * time.Second

// debugLogDir is the folder of the debug log the agent keeps in home, ""
// for an agent known to keep none.
func debugLogDir(ai *sdk.Implementation, home string) string {
	if !promptInMeta(ai) || home == "" { // Claude Code's adapter
		return ""
	}
	return filepath.Join(home, ".claude", "debug")
}

// debugLogLines returns the error lines that tell a known cause (see
// causes.go) of the newest log in dir written since since, oldest first, at most tailLines, each one clean line with
// every secret taken out. The log is the agent's: a symbolic link, or a
// file that changes under the read, is not followed.
func debugLogLines(dir string, since time.Time, sc scrubbers) []string {
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	// A file's time is the kernel's coarse clock, some milliseconds behind
	// the one since was read from: a log written just after since can seem
	// older. The lines' own times say which are since.
	after := since.Add(-time.Second)
	var newest os.FileInfo
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".txt") {
			continue
		}
		if fi, err := e.Info(); err == nil && !fi.ModTime().Before(after) && (newest == nil || fi.ModTime().After(newest.ModTime())) {
			newest = fi
		}
	}
	if newest == nil {
		return nil
	}
	f, err := os.Open(filepath.Join(dir, newest.Name()))
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, newest) {
		return nil
	}
	skip := newest.Size() > debugLogTail
	if skip {
		if _, err := f.Seek(-debugLogTail, io.SeekEnd); err != nil {
			return nil
		}
	}
	data, _ := io.ReadAll(io.LimitReader(f, debugLogTail))
	var t tail
	sc2 := bufio.NewScanner(bytes.NewReader(data))
	sc2.Buffer(make([]byte, 0, 4096), debugLogTail)
	for sc2.Scan() {
		if skip { // the first line read is the end of one
			skip = false
			continue
		}
		line := sc2.Text()
		at, rest, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(rest, "[ERROR] ") {
			continue
		}
		if when, err := time.Parse(time.RFC3339Nano, at); err != nil || when.Before(since) {
			continue
		}
		// The log is full of errors that do not matter (a settings file
		// it does not have): only those that tell a cause count.
		if msg := sc.line(logMessage(strings.TrimPrefix(rest, "[ERROR] "))); kindOf(msg) != causeNone {
			t.add(msg)
		}
	}
	return t.since(outMark{})
}

// logMessage is the message of a debug log's error line without its stack
// and its wrapping: `"Error: Error: {\"stack\":\"Error: Failed to export
// (…)\\n    at …` is "Failed to export (…)".
func logMessage(msg string) string {
	msg, _, _ = strings.Cut(msg, `\n`) // its stack, JSON-escaped
	msg = strings.TrimRight(strings.ReplaceAll(msg, `\"`, `"`), `\"`)
	for {
		t := strings.TrimPrefix(strings.TrimPrefix(strings.TrimLeft(msg, `" `), "Error: "), `{"stack":`)
		if t == msg {
			return msg
		}
		msg = t
	}
}

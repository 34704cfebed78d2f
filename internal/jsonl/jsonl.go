// Package jsonl keeps append-only logs of JSON lines that survive a crash:
// each line is appended with one write, so a killed process leaves whole
// lines; a line cut short by a power loss is cut off when the log is read
// again, so the next append starts a whole line.
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agenthost/bots/internal/atomicfile"
)

// Create makes the log at path (mode 0600) with first as its first line,
// durably: the file and its folder are fsynced. The folder must exist; a
// file already at path is an error wrapping fs.ErrExist.
func Create(path string, first any) error {
	data, err := line(first)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create log: %w", err)
	}
	if err := finish(f, data, true); err != nil {
		os.Remove(path)
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

// Append appends v as one line to the log at path, with one write; with
// sync, the file is then fsynced. It never makes the file: a log removed
// (its session disposed, its bot deleted) gets no new one, and the error
// wraps fs.ErrNotExist.
func Append(path string, v any, sync bool) error {
	data, err := line(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	return finish(f, data, sync)
}

func line(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode log line: %w", err)
	}
	return append(data, '\n'), nil
}

// finish writes data to f, fsyncs it when sync is set, and closes it.
func finish(f *os.File, data []byte, sync bool) error {
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("append to log %s: %w", f.Name(), err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("sync log %s: %w", f.Name(), err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close log %s: %w", f.Name(), err)
	}
	return nil
}

// Read calls fn with each line of the log at path, in order. A last line
// cut short is cut off the file and reported in bad; a line fn returns an
// error for is skipped and reported in bad with the line's number. err is
// the error of reading the file.
func Read(path string, fn func(line []byte) error) (bad []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
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
			if ferr := fn(raw); ferr != nil {
				bad = append(bad, fmt.Sprintf("line %d: %v", n, ferr))
			}
		}
		if errors.Is(err, io.EOF) {
			return bad, nil
		}
		if err != nil {
			return bad, err
		}
	}
}

// Remove removes the log at path; one already gone is no error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove log: %w", err)
	}
	return nil
}

// Package jsonl keeps append-only logs of JSON lines in files that survive
// a crash: each line is appended with one write, so a killed process
// leaves whole lines; a write that fails part way (a full disk) is cut
// back off; a line cut short by a power loss is cut off when the log is
// read again, so the next append starts a whole line. It is the file
// implementation's storage under filechatlog.Logs.
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agenthost/bots/internal/atomicfile"
)

// Create makes the log at path (mode 0600) with line as its first line,
// durably: the file and its folder are fsynced. The folder must exist; a
// file already at path is an error wrapping fs.ErrExist. line holds no
// line break; Create adds one.
func Create(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create log: %w", err)
	}
	if err := finish(f, 0, line, true); err != nil {
		os.Remove(path)
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

// Append appends line and a line break to the log at path, with one
// write; with sync, the file is then fsynced. A write that fails leaves
// none of the line behind. It never makes the file: a log removed (its
// session disposed, its bot deleted) gets no new one, and the error wraps
// fs.ErrNotExist.
func Append(path string, line []byte, sync bool) error {
	f, err := openAppend(path)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return fmt.Errorf("append to log %s: %w", path, err)
	}
	return finish(f, end, line, sync)
}

// finish writes line and a line break to f at its end (end bytes), fsyncs
// it when sync is set, and closes it. A write that fails is cut back off:
// a full disk may take part of the line, and the next line would be glued
// to it and both lost when the log is read.
func finish(f *os.File, end int64, line []byte, sync bool) error {
	data := make([]byte, 0, len(line)+1)
	data = append(append(data, line...), '\n')
	if _, err := f.Write(data); err != nil {
		if terr := f.Truncate(end); terr != nil {
			err = errors.Join(err, fmt.Errorf("cut off the part written: %w", terr))
		}
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

// Read returns the lines of the log at path, in order, without their line
// breaks; blank lines are skipped. A last line cut short is cut off the
// file and reported in bad. err is the error of reading the file.
func Read(path string) (lines [][]byte, bad []string, err error) {
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
	for {
		raw, err := r.ReadBytes('\n')
		if line := bytes.TrimSpace(raw); len(line) > 0 {
			lines = append(lines, line)
		}
		if errors.Is(err, io.EOF) {
			return lines, bad, nil
		}
		if err != nil {
			return nil, bad, err
		}
	}
}

// Remove removes the log at path; one already gone is no error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove log: %w", err)
	}
	return nil
}

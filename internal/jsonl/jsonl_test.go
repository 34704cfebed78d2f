package jsonl

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCreateWritesTheFirstLineAndRefusesALogThatExists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := Create(path, map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := Create(path, map[string]int{"n": 2}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second Create = %v, want fs.ErrExist", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "{\"n\":1}\n" {
		t.Errorf("the log holds %q", data)
	}
}

func TestAppendNeverMakesTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone.jsonl")
	if err := Append(path, 1, true); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append to no log = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Error("Append made the log")
	}
}

func TestReadCutsATornLastLineAndSkipsABadOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := Create(path, 1); err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{2, 3} {
		if err := Append(path, v, false); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("{\"torn")
	f.Close()
	var got []string
	bad, err := Read(path, func(line []byte) error {
		if string(line) == "2\n" {
			return errors.New("refused")
		}
		got = append(got, string(line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"1\n", "3\n"}) || len(bad) != 2 {
		t.Errorf("read %q, bad %q", got, bad)
	}
	if err := Append(path, 4, false); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "1\n2\n3\n4\n" {
		t.Errorf("after the cut the log holds %q", data)
	}
}

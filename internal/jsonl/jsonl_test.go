package jsonl

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestCreateWritesTheFirstLineAndRefusesALogThatExists(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := Create(path, []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := Create(path, []byte(`{"n":2}`)); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second Create = %v, want fs.ErrExist", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "{\"n\":1}\n" {
		t.Errorf("the log holds %q", data)
	}
}

func TestAppendNeverMakesTheLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gone.jsonl")
	if err := Append(path, []byte("1"), true); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append to no log = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Error("Append made the log")
	}
}

func TestReadCutsATornLastLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := Create(path, []byte("1")); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"2", "3"} {
		if err := Append(path, []byte(v), false); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("{\"torn")
	f.Close()
	lines, bad, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, string(l))
	}
	if len(got) != 3 || got[0] != "1" || got[2] != "3" || len(bad) != 1 {
		t.Errorf("read %q, bad %q", got, bad)
	}
	if err := Append(path, []byte("4"), false); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "1\n2\n3\n4\n" {
		t.Errorf("after the cut the log holds %q", data)
	}
}

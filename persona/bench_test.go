package persona

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/bots/internal/frontmatter"
)

// BenchmarkReadPersona reads the AGENTS.md the default template makes for a
// bot, with a tools key of the bot's own: floor is what any read of it costs
// (os.ReadFile and frontmatter.Split), files is Files.Read, and yaml is the
// same file with a nested value, which the quick scanner leaves to the YAML
// decoder.
func BenchmarkReadPersona(b *testing.B) {
	f, err := New(Config{ConfigDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := f.Write(b.Context(), dir, motion, ""); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, AgentsFile)
	// A key of the bot's own, as VS Code agent files carry.
	src, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	src = append([]byte("---\ntools: ['search', 'fetch']\n"), src[len("---\n"):]...)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			src, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := frontmatter.Split(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("files", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.Read(b.Context(), dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	yamlDir := b.TempDir()
	// A nested value sends the frontmatter to the YAML decoder.
	src = append([]byte("---\nhandoffs:\n  - label: Fix\n    agent: fixer\n"), src[len("---\n"):]...)
	if err := os.WriteFile(filepath.Join(yamlDir, AgentsFile), src, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("yaml", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.Read(b.Context(), yamlDir); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package filerecord

import (
	"fmt"
	"reflect"

	"github.com/agenthost/bots/internal/frontmatter"
)

// FastPathAgrees checks a file's frontmatter against both decoders: it
// fails when the fast path does not read it, or reads it otherwise than the
// YAML decoder.
func FastPathAgrees(file []byte) error {
	doc, err := frontmatter.Split(file)
	if err != nil {
		return err
	}
	fast, ok := decodeFast(doc.Front)
	if !ok {
		return fmt.Errorf("the fast path does not read it")
	}
	slow, err := frontmatter.Decode(doc.Front)
	if err != nil {
		return fmt.Errorf("the YAML decoder refuses it: %w", err)
	}
	if !reflect.DeepEqual(fast, slow) {
		return fmt.Errorf("fast %#v, yaml %#v", fast, slow)
	}
	return nil
}

package frontmatter

import (
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// Decode decodes YAML into a map of its top-level keys, refusing input over
// MaxSize and any anchor, alias or merge key: a record has no use for them,
// and an alias is how a few bytes expand into gigabytes. A document of only
// whitespace and comments decodes to an empty map. The error is one sentence
// without the offending bytes.
func Decode(front []byte) (map[string]any, error) {
	if len(front) > MaxSize {
		return nil, ErrTooLarge
	}
	for _, t := range lexer.Tokenize(string(front)) {
		switch t.Type {
		case token.AnchorType, token.AliasType:
			return nil, fmt.Errorf("YAML anchors and aliases are not allowed (line %d)", t.Position.Line)
		case token.MergeKeyType:
			return nil, fmt.Errorf("YAML merge keys are not allowed (line %d)", t.Position.Line)
		case token.InvalidType:
			return nil, fmt.Errorf("invalid YAML at line %d", t.Position.Line)
		}
	}
	var m map[string]any
	if err := yaml.Unmarshal(front, &m); err != nil {
		return nil, fmt.Errorf("invalid YAML: %s", firstLine(err.Error()))
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

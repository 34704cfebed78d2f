package filerecord

func decodeFast(front []byte) (map[string]any, bool) { return nil, false }

//go:build !linux

package sandbox

import (
	"fmt"
	"os/exec"
	"runtime"
)

func available() (int, error) {
	return 0, fmt.Errorf("%w: %s has no Landlock", ErrUnavailable, runtime.GOOS)
}

func start(cmd *exec.Cmd, p Policy) error {
	_, err := available()
	return err
}

//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// File-system rights, as Landlock numbers them.
const (
	rightExecute   = unix.LANDLOCK_ACCESS_FS_EXECUTE
	rightWriteFile = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	rightReadFile  = unix.LANDLOCK_ACCESS_FS_READ_FILE
	rightReadDir   = unix.LANDLOCK_ACCESS_FS_READ_DIR
	rightMakeChar  = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR
	rightMakeBlock = unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	rightTruncate  = unix.LANDLOCK_ACCESS_FS_TRUNCATE
	rightIoctlDev  = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

	// fileRights are the rights that apply to a file (not a folder).
	fileRights = rightExecute | rightWriteFile | rightReadFile | rightTruncate | rightIoctlDev
	// readRights read and execute.
	readRights = rightExecute | rightReadFile | rightReadDir
	// deviceRights read and write a device.
	deviceRights = rightReadFile | rightWriteFile | rightTruncate | rightIoctlDev
)

// handledFS returns the file-system rights Landlock ABI abi handles: every
// right it knows, so that anything not granted is refused.
func handledFS(abi int) uint64 {
	switch {
	case abi >= 9:
		return 1<<17 - 1 // resolving UNIX sockets
	case abi >= 5:
		return 1<<16 - 1 // ioctl on devices
	case abi >= 3:
		return 1<<15 - 1 // truncate
	case abi == 2:
		return 1<<14 - 1 // refer
	}
	return 1<<13 - 1
}

// scoped returns the scopes ABI abi offers: signals and abstract UNIX
// sockets stay inside the sandbox.
func scoped(abi int) uint64 {
	if abi >= 6 {
		return unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	return 0
}

func available() (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		why := errno.Error()
		switch errno {
		case unix.ENOSYS:
			why = "the kernel has no Landlock"
		case unix.EOPNOTSUPP:
			why = "Landlock is turned off (add landlock to the lsm= boot parameter)"
		}
		return 0, fmt.Errorf("%w: %s", ErrUnavailable, why)
	}
	abi := int(r)
	if abi < MinABI {
		return abi, fmt.Errorf("%w: the kernel offers Landlock ABI %d, the sandbox needs %d (Linux 6.2)", ErrUnavailable, abi, MinABI)
	}
	return abi, nil
}

// start makes the ruleset of p, then starts cmd from a goroutine locked to
// an OS thread that restricts itself with it: the forked child inherits
// the thread's Landlock domain. The goroutine never unlocks its thread, so
// the thread ends with it and nothing else of this process ever runs
// restricted (the Go runtime starts new threads from a clean template
// thread while a locked one asks).
func start(cmd *exec.Cmd, p Policy) error {
	abi, err := available()
	if err != nil {
		return err
	}
	rs, err := ruleset(abi, p)
	if err != nil {
		return err
	}
	defer unix.Close(rs)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- fmt.Errorf("sandbox: no_new_privs: %w", err)
			return
		}
		if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rs), 0, 0); errno != 0 {
			done <- fmt.Errorf("sandbox: landlock_restrict_self: %w", errno)
			return
		}
		done <- cmd.Start()
	}()
	return <-done
}

// ruleset makes the Landlock ruleset of p for ABI abi and returns its
// descriptor.
func ruleset(abi int, p Policy) (int, error) {
	handled := handledFS(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled, Scoped: scoped(abi)}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, fmt.Errorf("sandbox: landlock_create_ruleset: %w", errno)
	}
	rs := int(r)
	write := handled &^ (rightMakeChar | rightMakeBlock)
	var errs []error
	for _, path := range System() {
		errs = append(errs, allow(rs, path, readRights&handled))
	}
	for _, path := range devices {
		if _, err := os.Stat(path); err == nil {
			errs = append(errs, allow(rs, path, deviceRights&handled))
		}
	}
	for _, path := range p.Read {
		errs = append(errs, allow(rs, path, readRights&handled))
	}
	for _, path := range p.Write {
		errs = append(errs, allow(rs, path, write))
	}
	if err := errors.Join(errs...); err != nil {
		unix.Close(rs)
		return -1, err
	}
	return rs, nil
}

// allow adds a rule granting rights beneath path (only the file rights
// when path is a file).
func allow(rs int, path string, rights uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox: granting %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("sandbox: granting %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= fileRights
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("sandbox: granting %s: %w", path, errno)
	}
	return nil
}

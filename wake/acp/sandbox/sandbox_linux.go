//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
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
// an OS thread that restricts itself with it (and then with the network
// ruleset of p.RefuseConnect, where the kernel has network rules): the
// forked child inherits the thread's Landlock domain. The goroutine never
// unlocks its thread, so the thread ends with it and nothing else of this
// process ever runs restricted (the Go runtime starts new threads from a
// clean template thread while a locked one asks).
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
	rulesets := []int{rs}
	if len(p.RefuseConnect) > 0 && abi >= NetworkABI {
		nrs, err := netRulesets.get(p.RefuseConnect)
		if err != nil {
			return err
		}
		defer unix.Close(nrs)
		// The network ruleset last: each layer is a copy of the layers
		// below and its own rules, so its 65,536 rules are copied once.
		rulesets = append(rulesets, nrs)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- fmt.Errorf("sandbox: no_new_privs: %w", err)
			return
		}
		for _, rs := range rulesets {
			if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rs), 0, 0); errno != 0 {
				done <- fmt.Errorf("sandbox: landlock_restrict_self: %w", errno)
				return
			}
		}
		done <- cmd.Start()
	}()
	return <-done
}

// landlockRuleNetPort is LANDLOCK_RULE_NET_PORT, and netPortAttr the kernel's
// struct landlock_net_port_attr, which golang.org/x/sys does not have.
const landlockRuleNetPort = 2

type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

// netRulesets keeps the network ruleset of the last set of refused ports:
// Landlock network rules allow, port by port, so refusing a few ports is
// allowing the 65,536 others, 65,536 rules that take about 0.1 s to make,
// made once. It belongs to the process, as the kernel's rulesets do.
var netRulesets netCache

// netCache is a network ruleset by the ports it refuses.
type netCache struct {
	mu  sync.Mutex
	key string // the refused ports, sorted, as text
	fd  int    // its ruleset; valid when key is not ""
}

// get returns a descriptor of the ruleset refusing TCP connects to ports,
// for the caller to close.
func (c *netCache) get(ports []uint16) (int, error) {
	sorted := slices.Sorted(slices.Values(ports))
	sorted = slices.Compact(sorted)
	key := fmt.Sprint(sorted)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key != key {
		fd, err := netRuleset(sorted)
		if err != nil {
			return -1, err
		}
		if c.key != "" {
			unix.Close(c.fd) // the descriptors handed out keep theirs open
		}
		c.key, c.fd = key, fd
	}
	fd, err := unix.FcntlInt(uintptr(c.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("sandbox: network ruleset: %w", err)
	}
	return fd, nil
}

// netRuleset makes a ruleset that handles TCP connects and allows them to
// every port but refused (sorted).
func netRuleset(refused []uint16) (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_net: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, fmt.Errorf("sandbox: landlock_create_ruleset (network): %w", errno)
	}
	rs := int(r)
	rule := netPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP}
	for port := 0; port <= 65535; port++ {
		if _, found := slices.BinarySearch(refused, uint16(port)); found {
			continue
		}
		rule.port = uint64(port)
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs), landlockRuleNetPort, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			unix.Close(rs)
			return -1, fmt.Errorf("sandbox: allowing connects to port %d: %w", port, errno)
		}
	}
	return rs, nil
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

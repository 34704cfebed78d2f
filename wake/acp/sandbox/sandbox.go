// Package sandbox starts a process inside an OS sandbox that lets it read
// the system and reach only the paths a Policy grants: on Linux, a
// Landlock domain (ABI MinABI or later) that the child inherits from the
// thread that starts it.
//
// What a sandboxed process may reach:
//
//   - read and execute: the system folders of System (/usr, /bin, /sbin,
//     /lib*), a chosen set of files and folders in /etc (certificates,
//     name resolution, users and groups, the dynamic linker's cache, shell
//     start-up files; never /etc/shadow, /etc/sudoers or /etc/ssh's host
//     keys), a few whole-system files of /proc (cpuinfo, meminfo, stat,
//     loadavg, uptime, version, filesystems) and /sys (the CPUs, the
//     cgroup tree), and Policy.Read;
//   - read, write and create: Policy.Write (no device nodes);
//   - read and write: /dev/null, /dev/zero, /dev/full, /dev/random and
//     /dev/urandom; no terminal device;
//   - nothing else of the file system: no other /proc entry (not even its
//     own), no /tmp, no home folder;
//   - no signal to, and no ptrace of, a process outside its sandbox, and
//     (with ABI 6) no abstract UNIX socket outside it.
//
// The network stays open, but for the TCP ports of Policy.RefuseConnect,
// which the process cannot connect to where the kernel offers Landlock
// network rules (ABI NetworkABI or later). Before ABI 9 Landlock cannot
// refuse connecting to a UNIX socket by its path.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// MinABI is the oldest Landlock ABI the sandbox runs on: ABI 3 (Linux 6.2)
// is the first that refuses truncating files outside the grants, and ABI 2
// the first that allows moving files between folders inside them.
const MinABI = 3

// NetworkABI is the first Landlock ABI with network rules (Linux 6.7):
// from it on, Policy.RefuseConnect is refused.
const NetworkABI = 4

// ErrUnavailable is the error of a start where the kernel offers no
// sandbox.
var ErrUnavailable = errors.New("sandbox: the kernel offers no sandbox")

// ErrReaches is the error of a policy whose grants reach a protected path.
var ErrReaches = errors.New("sandbox: a grant reaches a protected path")

// Policy is what a sandboxed process may reach besides the system.
type Policy struct {
	// Read are files and folders (with everything beneath) the process may
	// read and execute. They must exist.
	Read []string
	// Write are folders (with everything beneath) the process may read,
	// write, execute, create in and remove from. They must exist.
	Write []string
	// Protect are paths no grant may reach: Start fails when one of them
	// is, or lies inside, a Read or Write path.
	Protect []string
	// RefuseConnect are TCP ports the process may not connect to, on any
	// address (connect fails with EACCES), where the kernel offers
	// NetworkABI or later; under an older ABI the process starts with
	// them open. Landlock's network rules allow port by port, so refusing
	// ports is allowing every other one: the ruleset of the last set of
	// ports is made once per process (about 0.1 s), and each start with
	// it costs 15 to 60 ms more, by the machine's load, and about 4.5 MB
	// of kernel memory while the process (and what it starts) runs
	// (docs/PERFORMANCE.md).
	RefuseConnect []uint16
}

// Available returns the Landlock ABI the kernel offers, or an error
// wrapping ErrUnavailable that says why there is no sandbox.
func Available() (int, error) {
	return available()
}

// Start starts cmd inside the sandbox of p: the process and everything
// it starts may reach the system and the grants of p, and nothing else.
// Where the kernel offers no sandbox it returns an error wrapping
// ErrUnavailable and starts nothing.
func Start(cmd *exec.Cmd, p Policy) error {
	if err := p.check(); err != nil {
		return err
	}
	return start(cmd, p)
}

// check refuses a policy whose grants reach a protected path.
func (p Policy) check() error {
	for _, prot := range p.Protect {
		pr := resolve(prot)
		for _, g := range append(append([]string{}, p.Read...), p.Write...) {
			if within(resolve(g), pr) {
				return fmt.Errorf("%w: %s holds %s", ErrReaches, g, prot)
			}
		}
	}
	return nil
}

// resolve returns p absolute, with symbolic links resolved where it
// exists.
func resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// within reports whether p is dir or lies inside it.
func within(dir, p string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r)
}

// systemRead are the system paths a sandboxed process may read and
// execute, where they exist.
var systemRead = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	// /etc: certificates, name resolution, users and groups, the dynamic
	// linker, time zone, MIME types, shell start-up files, ssh client
	// settings. Not shadow, gshadow, sudoers or ssh host keys.
	"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki", "/etc/crypto-policies",
	"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf",
	"/etc/services", "/etc/protocols", "/etc/networks", "/etc/hostname",
	"/etc/passwd", "/etc/group", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/localtime", "/etc/timezone", "/etc/os-release", "/etc/debian_version", "/etc/lsb-release",
	"/etc/mime.types", "/etc/magic", "/etc/alternatives", "/etc/terminfo",
	"/etc/bash.bashrc", "/etc/profile", "/etc/profile.d", "/etc/inputrc", "/etc/environment",
	"/etc/gitconfig", "/etc/ssh/ssh_config", "/etc/ssh/ssh_config.d", "/etc/ssh/ssh_known_hosts",
	// Whole-system facts; no process's own entries.
	"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/uptime", "/proc/version",
	"/proc/filesystems", "/sys/devices/system/cpu", "/sys/fs/cgroup",
}

// devices are the device files a sandboxed process may read and write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// System returns the system paths a sandboxed process may read and
// execute that exist on this machine; Start grants them on top of a
// Policy.
func System() []string {
	var out []string
	for _, p := range systemRead {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// CommandPaths returns what running the program at path needs read and
// executed besides the system: the folder holding path, the folder
// holding the file it links to, and, when that file lies in a
// node_modules tree, the outermost node_modules folder (the package and
// its dependencies).
func CommandPaths(path string) []string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	out := []string{filepath.Dir(abs)}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return out
	}
	if d := filepath.Dir(resolved); d != out[0] {
		out = append(out, d)
	}
	sep := string(filepath.Separator)
	if i := strings.Index(resolved, sep+"node_modules"+sep); i >= 0 {
		nm := resolved[:i+len(sep+"node_modules")]
		if nm != out[len(out)-1] {
			out = append(out, nm)
		}
	}
	return out
}

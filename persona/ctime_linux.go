//go:build linux

package persona

import "syscall"

func ctimeOf(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }

func mtimeOf(st *syscall.Stat_t) int64 { return st.Mtim.Nano() }

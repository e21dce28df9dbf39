package atomicfile

import "syscall"

func setUmask(m int) int { return syscall.Umask(m) }

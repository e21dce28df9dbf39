package journal

import (
	"sync"

	"modernc.org/libc"
)

// SQLite here is modernc.org/sqlite, whose malloc is modernc.org/memory:
// small blocks come from 64 KiB pages shared by one size class, and a page
// is unmapped the moment its last block is freed. A B-tree page split
// (balance_nonroot) takes a scratch block of several KiB and frees it at
// once; with no other block of that class alive, each split cost an mmap
// and a munmap, about a fifth of the writer's CPU under load (pprof of
// BenchmarkAckedThroughput). Holding one block of every class for the life
// of the process keeps each class's page mapped.

const (
	pinMinLog = 4  // 16 B, the allocator's smallest class
	pinMaxLog = 14 // 16 KiB, its largest shared class (larger blocks get their own mapping)
)

var pinOnce sync.Once

// pinAllocatorPages allocates, once per process, one never-freed block in
// each shared size class of the C allocator SQLite uses.
func pinAllocatorPages() {
	pinOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		for k := pinMinLog; k <= pinMaxLog; k++ {
			libc.Xmalloc(tls, 1<<k) // kept: the point is never to free it
		}
	})
}

/* SPDX-License-Identifier: MIT */
#ifndef ARF_MALLOC_H
#define ARF_MALLOC_H

#include <malloc.h>

/*
 * The daemons' malloc (arfd, arf-fuse; never libarf's host process):
 * blocks up to 4 MiB come from the heap, and up to 32 MiB of freed heap
 * stays with the process.  glibc's defaults mmap a block from 128 KiB
 * (raised only as far as the largest one freed) and trim the heap past
 * 128 KiB free, so a 1 MiB write's buffers, a listing's batch (~300 KB of
 * entries a side) and its arrays (~4 MB for 10,000 entries) were mapped,
 * faulted in page by page, cleared by the kernel and unmapped, request
 * after request: a 1 MiB write through the mount cost arf-fuse 790-800
 * us of CPU and arfd 890-900, 470-490 and 660-680 with these; a 10,000
 * entry listing arf-fuse 7.9-8.1 ms, 5.0-5.1 (interleaved runs on a 2-core
 * VM, bench/README.md).  Call first thing in main.
 */
static inline void arf_daemon_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 32 << 20);
}

#endif /* ARF_MALLOC_H */

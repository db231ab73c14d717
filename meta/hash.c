/* SPDX-License-Identifier: MIT */
/*
 * meta/ hashing: the directory's name hash and bucket mapping, the data
 * block checksum, and the DT_* type of a mode.  These are shared by arfd,
 * clients and mobile code, so they must give the same answer everywhere:
 * XXH3-64 with fixed seeds, folded where 32 bits are stored.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <xxhash.h>
#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<xxh_x86dispatch.h>)
/* libxxhash's run-time dispatch (AVX2, AVX-512 where the CPU has them):
 * the same values, 3-4x faster than its SSE2 default, which a 1 MiB read
 * would spend more time in than in the kernel's copy of the bytes. */
#define ARF_XXH3_DISPATCH 1
#include <xxh_x86dispatch.h>
#endif
#endif

#include "arf_meta.h"

uint32_t arf_meta_name_hash(uint64_t parent, const char *name, size_t len)
{
	uint64_t h = XXH3_64bits_withSeed(name, len, parent);

	return (uint32_t)(h ^ (h >> 32));
}

uint32_t arf_meta_bucket(const struct arf_meta_super *sb, uint32_t hash)
{
	uint32_t h = sb->hash_mask ? hash & sb->hash_mask : hash;

	return sb->n_buckets ? h % sb->n_buckets : 0;
}

uint64_t arf_meta_block_csum(const void *block)
{
#ifdef ARF_XXH3_DISPATCH
	return XXH3_64bits_dispatch(block, ARF_BLOCK_SIZE);
#else
	return XXH3_64bits(block, ARF_BLOCK_SIZE);
#endif
}

uint8_t arf_meta_dtype(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return DT_REG;
	case S_IFDIR: return DT_DIR;
	case S_IFLNK: return DT_LNK;
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	case S_IFIFO: return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	default: return DT_UNKNOWN;
	}
}

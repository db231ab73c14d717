/* SPDX-License-Identifier: MIT */
/*
 * meta/ internals shared by the server-side files (fs.c, txn.c, alloc.c,
 * dir.c, extent.c): bitmap helpers for the allocators and the clock.
 * Nothing here is exported to clients or to other modules.
 */
#ifndef ARF_META_INT_H
#define ARF_META_INT_H

#include <stdint.h>
#include <time.h>

#include "arf_meta_fs.h"

static inline int meta_bit_test(const uint64_t *m, uint64_t i)
{
	return (int)((m[i >> 6] >> (i & 63)) & 1u);
}

static inline void meta_bit_set(uint64_t *m, uint64_t i)
{
	m[i >> 6] |= 1ull << (i & 63);
}

static inline void meta_bit_clear(uint64_t *m, uint64_t i)
{
	m[i >> 6] &= ~(1ull << (i & 63));
}

/* Words needed for a bitmap of n bits (at least one, so calloc never gets 0). */
static inline size_t meta_bit_words(uint64_t n)
{
	return n ? (size_t)((n + 63) / 64) : 1;
}

/* First clear bit in [from, n), or n if none. */
uint64_t meta_bit_find_zero(const uint64_t *m, uint64_t n, uint64_t from);

/* Wall-clock time in ns since the epoch. */
static inline int64_t meta_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* True if idx is a valid chain link (an overflow entry); anything else ends a chain. */
static inline int meta_link_ok(const struct arf_meta_super *sb, uint32_t idx)
{
	return idx >= sb->n_buckets && idx < sb->n_entries;
}

/* Allocate the four bitmaps for sb's geometry, all clear. 0 or -ENOMEM. */
int meta_maps_alloc(struct arf_meta_fs *fs, const struct arf_meta_super *sb);

#endif /* ARF_META_INT_H */

/* SPDX-License-Identifier: MIT */
/*
 * meta/ transactions: the record of every object one mutation changed.
 *
 * arf_meta_touch() makes an object's version odd (so one-sided readers
 * reject it until it is sealed again) and appends (region, off, len) to
 * fs->dirty once, deduplicated through fs->dirty_set, an open-addressing
 * set of keys.  arfd persists the list and then seals (or lets txn_end seal).
 *
 * Callers reserve room for what they will touch (arf_meta_txn_reserve)
 * before their first change, so that running out of memory is an error
 * they return while nothing has changed.  A touch past the reservation
 * grows the list itself; if that fails the change cannot be recorded, and
 * the caller -- which returns nothing -- goes on to make it: the object is
 * still made odd, and the transaction is marked broken (fs->txn_err), so
 * that txn_end seals nothing of it and the embedder, asking
 * arf_meta_txn_error, knows that the regions hold a change the list lacks
 * (arfd stops serving the export).  Never a silent loss, never an abort.
 *
 * The set is cleared at txn_begin by zeroing only the clusters the previous
 * transaction used, and a huge set is given back once transactions are
 * small again, so a huge transaction (format) does not make every later
 * one pay for clearing, or missing the cache in, a huge table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta_int.h"

/* Key of an object in the dedupe set; never 0 (0 marks an empty slot). */
static uint64_t dkey(int region, uint64_t off)
{
	return (((uint64_t)(region & 1) << 63) | off) + 1;
}

static size_t dslot(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static void set_put(uint64_t *set, size_t cap, uint64_t key)
{
	size_t i = dslot(key, cap);

	while (set[i] && set[i] != key)
		i = (i + 1) & (cap - 1);
	set[i] = key;
}

/* Make room for n more records: list and set.  0 or -ENOMEM. */
static int grow(struct arf_meta_fs *fs, size_t n)
{
	size_t need = fs->ndirty + n;

	if (need > fs->dirty_cap) {
		size_t cap = fs->dirty_cap ? fs->dirty_cap : 64;
		while (cap < need)
			cap *= 2;
		struct arf_meta_dirty *d = realloc(fs->dirty, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		fs->dirty = d;
		fs->dirty_cap = cap;
	}
	if (need * 2 > fs->dirty_set_cap) {
		size_t cap = fs->dirty_set_cap ? fs->dirty_set_cap : 128;
		while (cap < need * 2)
			cap *= 2;
		uint64_t *set = calloc(cap, sizeof(*set));
		if (!set)
			return -ENOMEM;
		for (size_t i = 0; i < fs->ndirty; i++)
			set_put(set, cap, dkey(fs->dirty[i].region, fs->dirty[i].off));
		free(fs->dirty_set);
		fs->dirty_set = set;
		fs->dirty_set_cap = cap;
	}
	return 0;
}

int arf_meta_txn_reserve(struct arf_meta_fs *fs, size_t n)
{
	return grow(fs, n);
}

/* A set this many slots or more (1 MiB) is given back after a transaction
 * that used a sixteenth of it or less: the format's transaction (262,146
 * objects) left a set of 8 MiB, and a touch of it was a cache and TLB miss
 * every time -- 10% of arfd's CPU for a 1 MiB write, perf). */
#define SET_SHRINK_SLOTS (128u * 1024u)

void arf_meta_txn_begin(struct arf_meta_fs *fs)
{
	size_t cap = fs->dirty_set_cap;

	if (cap >= SET_SHRINK_SLOTS && fs->ndirty * 16 <= cap) {
		size_t ncap = 128;
		uint64_t *set;
		while (ncap < fs->ndirty * 4)
			ncap *= 2;
		if ((set = calloc(ncap, sizeof(*set)))) {
			free(fs->dirty_set);
			fs->dirty_set = set;
			fs->dirty_set_cap = cap = ncap;
			fs->ndirty = 0; /* the new set is clear */
		}
	}
	if (fs->dirty_set && fs->ndirty * 8 >= cap) {
		memset(fs->dirty_set, 0, cap * sizeof(*fs->dirty_set));
	} else if (fs->dirty_set) {
		/* zero each used key's cluster from its home slot on */
		for (size_t k = 0; k < fs->ndirty; k++) {
			size_t i = dslot(dkey(fs->dirty[k].region, fs->dirty[k].off), cap);
			while (fs->dirty_set[i]) {
				fs->dirty_set[i] = 0;
				i = (i + 1) & (cap - 1);
			}
		}
	}
	fs->ndirty = 0;
	fs->txn_err = 0;
	fs->in_txn = 1;
}

void *arf_meta_touch(struct arf_meta_fs *fs, int region, uint64_t off, uint32_t len)
{
	uint8_t *base = region == ARF_REGION_DATA ? fs->data : fs->meta;
	uint64_t key = dkey(region, off);

	if (fs->dirty_set_cap) {
		size_t i = dslot(key, fs->dirty_set_cap);
		while (fs->dirty_set[i]) {
			if (fs->dirty_set[i] == key)
				goto found;
			i = (i + 1) & (fs->dirty_set_cap - 1);
		}
	}
	/* Callers reserve (arf_meta_txn_reserve) before their first touch; a
	 * list that cannot grow here cannot record the change: say so. */
	if (grow(fs, 1)) {
		fs->txn_err = -ENOMEM;
		goto found;
	}
	set_put(fs->dirty_set, fs->dirty_set_cap, key);
	fs->dirty[fs->ndirty++] = (struct arf_meta_dirty){
		.region = (uint8_t)region, .len = len, .off = off };
found:
	if (region == ARF_REGION_META)
		arf_meta_obj_begin(base + off, len);
	return base + off;
}

int arf_meta_txn_error(const struct arf_meta_fs *fs)
{
	return fs->txn_err;
}

size_t arf_meta_txn_end(struct arf_meta_fs *fs, const struct arf_meta_dirty **list)
{
	if (!fs->defer_seal && !fs->txn_err) /* a broken one stays unseen */
		for (size_t i = 0; i < fs->ndirty; i++)
			if (fs->dirty[i].region == ARF_REGION_META)
				arf_meta_obj_seal(fs->meta + fs->dirty[i].off, fs->dirty[i].len);
	fs->in_txn = 0;
	if (list)
		*list = fs->dirty;
	return fs->ndirty;
}

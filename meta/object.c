/* SPDX-License-Identifier: MIT */
/*
 * meta/ self-verifying objects: the version/checksum protocol that makes
 * one-sided reads safe against a concurrent writer (DESIGN §2).
 *
 * A writer makes the version odd (arf_meta_obj_begin), changes the body, and
 * seals (arf_meta_obj_seal): the checksum is computed for the next even
 * version, stored, and only then is the even version published, with release
 * ordering, so a reader that sees the even version sees the matching body.
 * A reader validates its private copy: even version and matching checksum.
 */
#include <string.h>
#include <xxhash.h>

#include "arf_meta.h"

#define HDR sizeof(struct arf_meta_hdr)

static uint64_t body_csum(const void *obj, size_t len, uint64_t ver)
{
	return XXH3_64bits_withSeed((const uint8_t *)obj + HDR, len - HDR, ver);
}

/* True if the body after the header is all zero bytes. */
static int body_zero(const void *obj, size_t len)
{
	const uint8_t *p = (const uint8_t *)obj + HDR;

	for (size_t i = 0; i < len - HDR; i++)
		if (p[i])
			return 0;
	return 1;
}

int arf_meta_obj_validate(const void *obj, size_t len)
{
	const struct arf_meta_hdr *h = obj;

	if (len < HDR)
		return ARF_ECSUM;
	if (h->ver & 1)
		return ARF_ETORN;
	if (body_csum(obj, len, h->ver) == h->csum)
		return 0;
	if (h->ver == 0 && h->csum == 0 && body_zero(obj, len))
		return 0; /* never written */
	return ARF_ECSUM;
}

void arf_meta_obj_begin(void *obj, size_t len)
{
	struct arf_meta_hdr *h = obj;
	uint64_t v = __atomic_load_n(&h->ver, __ATOMIC_RELAXED);

	(void)len;
	if (!(v & 1)) {
		/* Readers must see the odd version before any change to the body:
		 * a sequentially consistent exchange is a full barrier (xchg on
		 * x86), and ThreadSanitizer understands it, unlike a fence. */
		__atomic_exchange_n(&h->ver, v + 1, __ATOMIC_SEQ_CST);
	}
}

void arf_meta_obj_seal(void *obj, size_t len)
{
	struct arf_meta_hdr *h = obj;
	uint64_t v;

	if (len < HDR)
		return;
	/* Sealing a stable object re-publishes it under a new version, so a
	 * reader never sees its checksum change under an unchanged version. */
	arf_meta_obj_begin(obj, len);
	v = __atomic_load_n(&h->ver, __ATOMIC_RELAXED) + 1;
	__atomic_store_n(&h->csum, body_csum(obj, len, v), __ATOMIC_RELAXED);
	__atomic_store_n(&h->ver, v, __ATOMIC_RELEASE);
}

int arf_meta_tag_check(const struct arf_meta_tag *tag, uint64_t ino, uint32_t gen,
		       uint64_t fblk, const void *block)
{
	if (tag->ino != ino || tag->gen != gen || tag->fblk != fblk)
		return ARF_ETAG;
	if (arf_meta_block_csum(block) != tag->data_csum)
		return ARF_ECSUM;
	return 0;
}

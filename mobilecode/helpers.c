/* SPDX-License-Identifier: MIT */
/*
 * The helper table: the functions a program may call with `call id`.  The
 * embedder registers its own (arfd: name hashing, consistent reads of
 * self-verifying objects, the ops/ hooks); the engine provides a few that
 * every embedder wants: emitting output, comparing and searching memory, and
 * the conformance suite's unwind.  The table is indexed by id, so the
 * interpreter finds a helper with one load.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mc_int.h"

int arf_mc_helpers_create(struct arf_mc_helpers **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void arf_mc_helpers_destroy(struct arf_mc_helpers *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < ARF_MC_MAX_HELPERS; i++)
		free(h->tab[i].name);
	free(h);
}

int arf_mc_helpers_add(struct arf_mc_helpers *h, const struct arf_mc_helper_def *def,
		       char *err, size_t errlen)
{
	struct mc_helper *t;
	unsigned nargs = 0, has_ptr = 0, want_size = 0;
	uint8_t size_of[5] = { 0 };

	if (!h || !def || !def->fn || !def->name || !def->name[0])
		return mc_errf(err, errlen, -EINVAL, "helper without a function or a name");
	if (def->id >= ARF_MC_MAX_HELPERS)
		return mc_errf(err, errlen, -EINVAL, "helper %s: id %u out of range (0..%u)",
			       def->name, def->id, ARF_MC_MAX_HELPERS - 1);
	t = &h->tab[def->id];
	if (t->fn)
		return mc_errf(err, errlen, -EEXIST, "helper %s: id %u already taken by %s",
			       def->name, def->id, t->name);
	for (; nargs < 5 && def->args[nargs] != ARF_MC_ARG_NONE; nargs++) {
		switch (def->args[nargs]) {
		case ARF_MC_ARG_ANY:
			break;
		case ARF_MC_ARG_PTR_RO:
		case ARF_MC_ARG_PTR_RW:
			has_ptr = 1;
			want_size = 1;
			break;
		case ARF_MC_ARG_SIZE:
			for (unsigned i = 0; i < nargs; i++)
				if ((def->args[i] == ARF_MC_ARG_PTR_RO ||
				     def->args[i] == ARF_MC_ARG_PTR_RW) && !size_of[i])
					size_of[i] = (uint8_t)nargs;
			want_size = 0;
			break;
		default:
			return mc_errf(err, errlen, -EINVAL, "helper %s: argument %u of unknown kind",
				       def->name, nargs + 1);
		}
	}
	for (unsigned i = nargs; i < 5; i++)
		if (def->args[i] != ARF_MC_ARG_NONE)
			return mc_errf(err, errlen, -EINVAL,
				       "helper %s: argument %u follows the end of the list",
				       def->name, i + 1);
	if (want_size)
		return mc_errf(err, errlen, -EINVAL, "helper %s: pointer argument without a size",
			       def->name);
	t->name = strdup(def->name);
	if (!t->name)
		return mc_errf(err, errlen, -ENOMEM, "out of memory");
	memcpy(t->args, def->args, sizeof(t->args));
	t->nargs = (uint8_t)nargs;
	t->has_ptr = (uint8_t)has_ptr;
	memcpy(t->size_of, size_of, sizeof(t->size_of));
	t->ctx = def->ctx;
	t->fn = def->fn;
	return 0;
}

const char *arf_mc_helper_name(const struct arf_mc_helpers *h, uint32_t id)
{
	if (!h || id >= ARF_MC_MAX_HELPERS || !h->tab[id].fn)
		return NULL;
	return h->tab[id].name;
}

/* ---- the engine's own helpers ------------------------------------------ */

/*
 * The engine's helpers charge the bytes they touch (arf_mc_call_charge):
 * emit what it copies, memcmp and memmem what they compare, a piece of
 * ARF_MC_CHUNK bytes at a time, so that a compare or a search across a
 * whole exported region stops within a piece of the deadline.
 */
static int h_emit(struct arf_mc_call *c, uint64_t *ret)
{
	int rc = arf_mc_call_charge_bytes(c, c->arg[1]);

	*ret = 0;
	return rc ? rc : arf_mc_vm_emit(c->vm, c->ptr[0], c->arg[1]);
}

static int h_memcmp(struct arf_mc_call *c, uint64_t *ret)
{
	const uint8_t *a = c->ptr[0], *b = c->ptr[1];
	uint64_t len = c->arg[2], off = 0;
	int d = 0, rc;

	while (off < len && !d) {
		size_t n = len - off < ARF_MC_CHUNK ? (size_t)(len - off) : ARF_MC_CHUNK;

		d = memcmp(a + off, b + off, n);
		off += n;
		if ((rc = arf_mc_call_charge_bytes(c, n)))
			return rc;
	}
	*ret = (uint64_t)(int64_t)(d < 0 ? -1 : d > 0);
	return 0;
}

/* The first match in windows of ARF_MC_CHUNK starting positions each
 * (a window reads nlen - 1 bytes past its last start): the same answer
 * as one memmem(3) over the whole haystack. */
static int h_memmem(struct arf_mc_call *c, uint64_t *ret)
{
	const uint8_t *hay = c->ptr[0], *needle = c->ptr[2];
	uint64_t hlen = c->arg[1], nlen = c->arg[3], pos = 0;
	int rc;

	*ret = (uint64_t)-1;
	if (nlen > ARF_MC_MEMMEM_MAX) {
		c->why = "needle longer than ARF_MC_MEMMEM_MAX (1 MiB)";
		return -EINVAL;
	}
	if (nlen == 0) {
		*ret = 0; /* as memmem(3): the empty needle is at the start */
		return 0;
	}
	while (nlen <= hlen && pos <= hlen - nlen) {
		uint64_t starts = hlen - nlen - pos + 1;
		size_t span = (size_t)((starts < ARF_MC_CHUNK ? starts : ARF_MC_CHUNK) + nlen - 1);
		const uint8_t *m = memmem(hay + pos, span, needle, (size_t)nlen);

		if ((rc = arf_mc_call_charge_bytes(c, m ? (uint64_t)(m - (hay + pos)) + nlen : span)))
			return rc;
		if (m) {
			*ret = (uint64_t)(m - hay);
			break;
		}
		pos += ARF_MC_CHUNK;
	}
	return 0;
}

static int h_unwind(struct arf_mc_call *c, uint64_t *ret)
{
	*ret = c->arg[0];
	if (c->arg[0] == 0)
		c->unwind = 1;
	return 0;
}

int arf_mc_helpers_add_std(struct arf_mc_helpers *h)
{
	static const struct arf_mc_helper_def std[] = {
		{ ARF_MC_HELPER_EMIT, "emit", { ARF_MC_ARG_PTR_RO, ARF_MC_ARG_SIZE }, h_emit, NULL },
		{ ARF_MC_HELPER_MEMCMP, "memcmp",
		  { ARF_MC_ARG_PTR_RO, ARF_MC_ARG_PTR_RO, ARF_MC_ARG_SIZE }, h_memcmp, NULL },
		{ ARF_MC_HELPER_MEMMEM, "memmem",
		  { ARF_MC_ARG_PTR_RO, ARF_MC_ARG_SIZE, ARF_MC_ARG_PTR_RO, ARF_MC_ARG_SIZE },
		  h_memmem, NULL },
		{ ARF_MC_HELPER_UNWIND, "unwind", { ARF_MC_ARG_ANY }, h_unwind, NULL },
	};
	int rc;

	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++) {
		rc = arf_mc_helpers_add(h, &std[i], NULL, 0);
		if (rc)
			return rc;
	}
	return 0;
}

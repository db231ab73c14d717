/* SPDX-License-Identifier: MIT */
/*
 * Programs: verified code plus its read-only data, immutable once made, so
 * that arfd's program cache can hand one to any number of workers.  Raw
 * bytecode comes in here; ELF objects go through elf.c first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mc_int.h"

/* Takes ownership of insns and rodata (freed on failure too). */
static int make_prog(const struct arf_mc_helpers *h, struct arf_mc_insn *insns, size_t n,
		     size_t entry, uint8_t *rodata, size_t rodata_len, struct arf_mc_prog **out,
		     char *err, size_t errlen)
{
	struct arf_mc_prog *p = NULL;
	int rc;

	rc = arf_mc_verify(h, insns, n, entry, err, errlen);
	if (rc)
		goto fail;
	p = calloc(1, sizeof(*p));
	if (!p) {
		rc = mc_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	p->helpers = h;
	p->insns = insns;
	p->n = n;
	p->entry = entry;
	p->rodata = rodata;
	p->rodata_len = rodata_len;
	*out = p;
	return 0;
fail:
	free(rodata);
	free(insns);
	return rc;
}

int arf_mc_prog_load(const struct arf_mc_helpers *h, const void *code, size_t code_len,
		     const void *rodata, size_t rodata_len, struct arf_mc_prog **out,
		     char *err, size_t errlen)
{
	struct arf_mc_insn *insns = NULL;
	uint8_t *ro = NULL;
	size_t n = code_len / sizeof(*insns);

	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return mc_errf(err, errlen, -EINVAL, "no place for the program");
	*out = NULL;
	if (code_len % sizeof(*insns))
		return mc_errf(err, errlen, -EINVAL,
			       "code of %zu bytes is not a whole number of instructions", code_len);
	if ((!code && code_len) || (!rodata && rodata_len) || rodata_len > ARF_MC_OFF_MASK)
		return mc_errf(err, errlen, -EINVAL, "bad code or read-only data buffer");
	if (n > ARF_MC_MAX_INSNS)
		return mc_errf(err, errlen, ARF_EVERIFY, "program of %zu instructions (limit %u)",
			       n, ARF_MC_MAX_INSNS);
	insns = malloc(n ? code_len : 1);
	ro = rodata_len ? malloc(rodata_len) : NULL;
	if (!insns || (rodata_len && !ro)) {
		free(insns);
		free(ro);
		return mc_errf(err, errlen, -ENOMEM, "out of memory");
	}
	if (n)
		memcpy(insns, code, code_len);
	if (rodata_len)
		memcpy(ro, rodata, rodata_len);
	return make_prog(h, insns, n, 0, ro, rodata_len, out, err, errlen);
}

int arf_mc_prog_load_elf(const struct arf_mc_helpers *h, const void *elf, size_t len,
			 const char *entry, struct arf_mc_prog **out, char *err, size_t errlen)
{
	struct arf_mc_image img;
	int rc;

	if (!out)
		return mc_errf(err, errlen, -EINVAL, "no place for the program");
	*out = NULL;
	rc = arf_mc_elf_read(elf, len, entry, &img, err, errlen);
	if (rc)
		return rc;
	return make_prog(h, img.insns, img.n, img.entry, img.rodata, img.rodata_len, out, err,
			 errlen);
}

void arf_mc_prog_destroy(struct arf_mc_prog *p)
{
	if (!p)
		return;
	mc_jit_free(p->jit);
	free(p->insns);
	free(p->rodata);
	free(p);
}

const struct arf_mc_insn *arf_mc_prog_insns(const struct arf_mc_prog *p, size_t *n)
{
	if (n)
		*n = p->n;
	return p->insns;
}

size_t arf_mc_prog_entry(const struct arf_mc_prog *p)
{
	return p->entry;
}

const void *arf_mc_prog_rodata(const struct arf_mc_prog *p, size_t *len)
{
	if (len)
		*len = p->rodata_len;
	return p->rodata;
}

/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the ELF loader (arf_mc_elf_read, arf_mc_prog_load_elf)
 * over arbitrary objects, as arf-asm takes them from users.  The object
 * goes through the loader twice, with the entry named "entry" (the seed's
 * function, tests/mc/elf_prog.c) or the default one: the image must lie in
 * range, and the program must then load (or fail verification only) and,
 * when accepted, run with a small budget to a documented outcome.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arf_mc.h"

static struct arf_mc_helpers *helpers;
static struct arf_mc_vm *vm;
static uint8_t out[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (arf_mc_helpers_create(&helpers) || arf_mc_helpers_add_std(helpers) ||
	    arf_mc_vm_create(helpers, &vm))
		abort();
	arf_mc_vm_set_output(vm, out, sizeof(out));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *obj = malloc(size ? size : 1);
	char err[256] = "";
	if (!obj)
		return 0;
	memcpy(obj, data, size);
	/* the seed's function by name, or the loader's default entry */
	const char *entry = size % 2 ? "entry" : NULL;

	struct arf_mc_image img;
	memset(&img, 0, sizeof(img));
	int rc = arf_mc_elf_read(obj, size, entry, &img, err, sizeof(err));
	if (rc == 0) {
		if (!img.insns || !img.n || img.n > ARF_MC_MAX_INSNS || img.entry >= img.n ||
		    (img.rodata_len && !img.rodata))
			abort();
		/* touch both ends, so that ASan checks the sizes (a .bss may make
		 * the data up to 1 GiB of zeros: no need to read all of it) */
		volatile uint8_t sum = img.insns[0].opcode ^ img.insns[img.n - 1].opcode;
		if (img.rodata_len)
			sum ^= img.rodata[0] ^ img.rodata[img.rodata_len - 1];
		(void)sum;
	} else if (rc != -EINVAL && rc != -ENOMEM && rc != ARF_EVERIFY) {
		abort(); /* (ARF_EVERIFY: more code than a program may have) */
	} else if (!err[0]) {
		abort(); /* a refusal says why */
	}
	size_t rodata_len = img.rodata_len;
	arf_mc_image_release(&img);

	/* The same object as a program: verified, then run.  (Skipped for
	 * objects with more than 16 MiB of data: copying it on every input
	 * would only slow the fuzzer down.) */
	struct arf_mc_prog *p = NULL;
	if (rc == 0 && rodata_len <= (16u << 20)) {
		rc = arf_mc_prog_load_elf(helpers, obj, size, entry, &p, err, sizeof(err));
		if (rc == 0) {
			struct arf_mc_result res;
			uint8_t ctx[16] = { 1, 'o', 'o' };
			rc = arf_mc_run(vm, p, ctx, sizeof(ctx), 4096, &res);
			if (rc != 0 && rc != ARF_EBUDGET && rc != ARF_EFAULT && rc != ARF_EOUTPUT &&
			    rc != -ENOSYS)
				abort();
			arf_mc_prog_destroy(p);
		} else if (rc != ARF_EVERIFY && rc != -ENOMEM) {
			abort(); /* the loader read it a moment ago: only the verifier may refuse */
		}
	}
	free(obj);
	return 0;
}

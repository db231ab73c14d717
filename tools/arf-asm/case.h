/* SPDX-License-Identifier: MIT */
/*
 * Conformance cases for arf-asm test: the `.data` format of the eBPF
 * conformance suite (sections `-- asm`, `-- raw`, `-- mem`, `-- result`,
 * `-- error`) parsed into a struct, and one case run through the same
 * assembler, verifier and interpreter that arfd uses.
 */
#ifndef ARF_ASM_CASE_H
#define ARF_ASM_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "arf_mc.h"

struct asm_case {
	char *name;               /* file base name without .data */
	char *asm_text;           /* `-- asm`, padded so line numbers are the file's; or NULL */
	struct arf_mc_insn *raw;  /* `-- raw` instructions */
	size_t nraw;
	int has_raw;
	uint8_t *mem;             /* `-- mem` bytes */
	size_t mem_len;
	int has_result;
	uint64_t result;          /* `-- result` */
	int has_error;            /* `-- error`: the case must be rejected */
};

/* Reads path into c.  0, or -errno / -EINVAL with the reason in err. */
int asm_case_parse(const char *path, struct asm_case *c, char *err, size_t errlen);
void asm_case_free(struct asm_case *c);

/*
 * Runs c with helper table h, in the interpreter, or (jit) as native code
 * from arf_mc_prog_jit -- a case the JIT cannot compile fails.  Returns 1
 * if it passes (negative: by the rule of conformance/bpf/negative), 0 if
 * not; why says what happened either way.
 */
int asm_case_run(const struct asm_case *c, int negative, int jit, const struct arf_mc_helpers *h,
		 char *why, size_t whylen);

#endif /* ARF_ASM_CASE_H */

/* SPDX-License-Identifier: MIT */
/*
 * What the mobilecode unit tests share: assembling a snippet and loading it
 * in one call, with failures reported through cmocka.
 */
#ifndef MC_TEST_H
#define MC_TEST_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arf_mc.h"

/* Assembles text; fails the test if the assembler refuses it. */
static inline struct arf_mc_insn *mc_test_asm(const char *text, size_t *n)
{
	struct arf_mc_insn *code = NULL;
	char err[256] = "";

	if (arf_mc_asm(text, &code, n, err, sizeof(err)))
		fail_msg("assembler: %s\n--\n%s", err, text);
	return code;
}

/*
 * Assembles and loads text with helper table h; returns the load's code and
 * its message in err.
 */
static inline int mc_test_load(const struct arf_mc_helpers *h, const char *text,
			       struct arf_mc_prog **p, char *err, size_t errlen)
{
	size_t n = 0;
	struct arf_mc_insn *code = mc_test_asm(text, &n);
	int rc = arf_mc_prog_load(h, code, n * sizeof(*code), NULL, 0, p, err, errlen);

	free(code);
	return rc;
}

#endif /* MC_TEST_H */

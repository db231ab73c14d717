/* SPDX-License-Identifier: MIT */
/*
 * The input format of the mobile-code fuzz targets (fuzz_mc.c, fuzz_jit.c),
 * so that they share one corpus: u8 ctx_len, u8 rodata_len, the context's
 * bytes, the read-only data's bytes, then the code (cut down to a whole
 * number of 8-byte instructions).  Lengths past the input are cut to what
 * is there.
 */
#ifndef ARF_FUZZ_MC_INPUT_H
#define ARF_FUZZ_MC_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct mc_input {
	const uint8_t *ctx, *ro, *code;
	size_t ctx_len, ro_len, code_len;
};

/* Splits data; 0, or -1 when it is too short to hold the two lengths. */
static inline int mc_input_split(const uint8_t *data, size_t size, struct mc_input *in)
{
	if (size < 2)
		return -1;
	in->ctx_len = data[0];
	in->ro_len = data[1];
	data += 2;
	size -= 2;
	if (in->ctx_len > size)
		in->ctx_len = size;
	if (in->ro_len > size - in->ctx_len)
		in->ro_len = size - in->ctx_len;
	in->ctx = data;
	in->ro = data + in->ctx_len;
	in->code = data + in->ctx_len + in->ro_len;
	in->code_len = (size - in->ctx_len - in->ro_len) & ~(size_t)7;
	return 0;
}

#endif /* ARF_FUZZ_MC_INPUT_H */

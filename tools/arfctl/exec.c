/* SPDX-License-Identifier: MIT */
/*
 * arfctl exec: read a program (libarf's standard programs, an ELF object,
 * arf-asm text assembled here, or raw bytecode), build its context from the
 * typed ARGs (u8:N ... hex:, zero:, align:, ino, gen), run it once on the
 * server and print r0, the instructions executed and the output.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf_mc.h"
#include "arf_progs.h"
#include "arfctl_int.h"

/* The program's bytes: a standard program, an ELF object, arf-asm text
 * (assembled here) or raw bytecode.  *bytes is malloc'd.  0, or 1/2 with a
 * message printed. */
static int load_program(const char *spec, uint8_t **bytes, size_t *len)
{
	if (spec[0] == '@') {
		for (int i = 0; i < ARF_STD_PROG_COUNT; i++)
			if (!strcmp(spec + 1, arf_std_progs[i].name)) {
				*len = arf_std_progs[i].len;
				*bytes = malloc(*len);
				if (!*bytes)
					return 1;
				memcpy(*bytes, arf_std_progs[i].elf, *len);
				return 0;
			}
		fprintf(stderr, "arfctl: exec: no standard program '%s' (@lookup, @resolve, @readdir, "
				"@mkdirp, @find, @du, @sum)\n",
			spec);
		return 2;
	}
	FILE *f = fopen(spec, "rb");
	if (!f) {
		fprintf(stderr, "arfctl: exec: %s: %s\n", spec, strerror(errno));
		return 1;
	}
	size_t cap = 1 << 16, n = 0, got;
	uint8_t *buf = malloc(cap + 1);
	while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			uint8_t *nb = realloc(buf, (cap *= 2) + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	fclose(f);
	if (!buf)
		return 1;
	size_t sl = strlen(spec);
	if (sl > 2 && !strcmp(spec + sl - 2, ".s")) {
		struct arf_mc_insn *insns;
		size_t ni;
		char err[256];
		buf[n] = 0;
		if (arf_mc_asm((const char *)buf, &insns, &ni, err, sizeof(err))) {
			fprintf(stderr, "arfctl: exec: %s: %s\n", spec, err);
			free(buf);
			return 1;
		}
		free(buf);
		*bytes = (uint8_t *)insns;
		*len = ni * sizeof(*insns);
		return 0;
	}
	*bytes = buf;
	*len = n;
	return 0;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Append one ARG's bytes to the context. */
static int put_arg(uint8_t **ctx, size_t *len, const char *a, const struct arf_stat *st)
{
	uint8_t tmp[8];
	const uint8_t *src = tmp;
	size_t n = 0, grow;
	char *end;

	if (!strcmp(a, "ino")) {
		memcpy(tmp, &st->ino, 8);
		n = 8;
	} else if (!strcmp(a, "gen")) {
		memcpy(tmp, &st->gen, 4);
		n = 4;
	} else if (!strncmp(a, "u8:", 3) || !strncmp(a, "u16:", 4) || !strncmp(a, "u32:", 4) ||
		   !strncmp(a, "u64:", 4)) {
		const char *v = strchr(a, ':') + 1;
		errno = 0;
		uint64_t x = *v == '-' ? (uint64_t)strtoll(v, &end, 0) : strtoull(v, &end, 0);
		if (errno || end == v || *end)
			goto bad;
		n = a[1] == '8' ? 1 : a[1] == '1' ? 2 : a[1] == '3' ? 4 : 8;
		memcpy(tmp, &x, n);
	} else if (!strncmp(a, "str:", 4) || !strncmp(a, "strz:", 5)) {
		src = (const uint8_t *)strchr(a, ':') + 1;
		n = strlen((const char *)src) + (a[3] == 'z');
	} else if (!strncmp(a, "zero:", 5) || !strncmp(a, "align:", 6)) {
		const char *v = strchr(a, ':') + 1;
		unsigned long long k = strtoull(v, &end, 0);
		if (end == v || *end || k > (1u << 20) || (a[0] == 'a' && k == 0))
			goto bad;
		n = a[0] == 'z' ? (size_t)k : (size_t)((k - *len % k) % k);
		grow = *len + n;
		uint8_t *nb = realloc(*ctx, grow ? grow : 1);
		if (!nb)
			return 1;
		memset(nb + *len, 0, n);
		*ctx = nb;
		*len = grow;
		return 0;
	} else if (!strncmp(a, "hex:", 4)) {
		const char *h = a + 4;
		size_t hl = strlen(h);
		if (hl % 2)
			goto bad;
		uint8_t *nb = realloc(*ctx, *len + hl / 2 + 1);
		if (!nb)
			return 1;
		*ctx = nb;
		for (size_t i = 0; i < hl; i += 2) {
			int hi = hexval(h[i]), lo = hexval(h[i + 1]);
			if (hi < 0 || lo < 0)
				goto bad;
			nb[(*len)++] = (uint8_t)(hi << 4 | lo);
		}
		return 0;
	} else {
		goto bad;
	}
	uint8_t *nb = realloc(*ctx, *len + n + 1);
	if (!nb)
		return 1;
	memcpy(nb + *len, src, n);
	*ctx = nb;
	*len += n;
	return 0;
bad:
	fprintf(stderr, "arfctl: exec: bad argument '%s' (see arfctl --help)\n", a);
	return 2;
}

int arfctl_cmd_exec(arf_client *c, const struct arf_url *u, const char *spec, int nargs,
		    char **args)
{
	uint8_t *prog = NULL, *ctx = NULL, *out = NULL;
	size_t plen = 0, clen = 0;
	struct arf_exec_result res;
	struct arf_stat st = { 0 };
	int rc, need_st = 0;

	for (int i = 0; i < nargs; i++)
		need_st |= !strcmp(args[i], "ino") || !strcmp(args[i], "gen");
	if (need_st && (rc = arf_resolve(c, u->path, &st)))
		return arfctl_fail("exec", u->path, rc);
	if ((rc = load_program(spec, &prog, &plen)))
		return rc;
	for (int i = 0; i < nargs; i++)
		if ((rc = put_arg(&ctx, &clen, args[i], &st)))
			goto out;
	out = malloc(arfctl_opt.out_max ? arfctl_opt.out_max : 1);
	if (!out) {
		rc = 1;
		goto out;
	}
	rc = arf_exec(c, prog, plen, ctx, clen, out, arfctl_opt.out_max, &res);
	if (rc) {
		fprintf(stderr, "arfctl: exec %s: %s (%s)\n", spec, res.msg, arf_strerror(rc));
		if (arfctl_opt.json) {
			printf("{\"error\":");
			arfctl_json_str(stdout, res.msg);
			printf(",\"code\":");
			arfctl_json_str(stdout, arf_strerror(rc));
			printf(",\"pc\":%u,\"insns\":%" PRIu64, res.pc, res.insns);
			arfctl_json_end(c);
		}
		rc = 1;
		goto out;
	}
	if (arfctl_opt.json) {
		printf("{\"r0\":%" PRId64 ",\"insns\":%" PRIu64 ",\"output_len\":%zu,\"output_hex\":\"",
		       res.r0, res.insns, res.out_len);
		for (size_t i = 0; i < res.out_len; i++)
			printf("%02x", out[i]);
		printf("\"");
		arfctl_json_end(c);
	} else if (arfctl_opt.raw) {
		fwrite(out, 1, res.out_len, stdout);
	} else {
		printf("r0 %" PRId64 "\ninsns %" PRIu64 "\noutput %zu bytes\n", res.r0, res.insns,
		       res.out_len);
		for (size_t i = 0; i < res.out_len; i += 16) {
			printf("%08zx ", i);
			for (size_t k = i; k < i + 16 && k < res.out_len; k++)
				printf(" %02x", out[k]);
			printf("\n");
		}
		arfctl_text_end(c);
	}
	rc = 0;
out:
	free(prog);
	free(ctx);
	free(out);
	return rc;
}


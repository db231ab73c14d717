/* SPDX-License-Identifier: MIT */
/*
 * Conformance cases: parsing the `.data` format and judging one case.
 * A positive case passes when its program assembles to its `-- raw`
 * encoding (if given), survives a disassemble/assemble round trip, passes
 * the verifier and returns `-- result`; one with `-- error` passes when it is
 * rejected.  A negative case passes when it is rejected by the assembler or
 * the verifier, fails at run time, or returns something other than its
 * `-- result`.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case.h"

#define CASE_BUDGET  (1u << 20) /* instructions per case: far above any of them */
#define CASE_OUTPUT  4096u

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, k;

	if (!f)
		return NULL;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			char *p = realloc(buf, cap = (cap ? cap * 2 : 8192));

			if (!p) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = p;
		}
		k = fread(buf + n, 1, 4096, f);
		n += k;
		if (k < 4096)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		errno = EIO;
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Appends the hex bytes of line ("aa bb ...") to *buf. */
static int add_bytes(uint8_t **buf, size_t *len, const char *line, char *err, size_t errlen,
		     unsigned lineno)
{
	const char *s = line;

	while (*s) {
		uint8_t *p;
		int hi, lo;

		if (isspace((unsigned char)*s)) {
			s++;
			continue;
		}
		if (*s == '#')
			break;
		hi = hexval((unsigned char)s[0]);
		lo = hi < 0 ? -1 : hexval((unsigned char)s[1]);
		if (lo < 0 || (s[2] && !isspace((unsigned char)s[2]))) {
			snprintf(err, errlen, "line %u: bad hex byte in '%s'", lineno, line);
			return -EINVAL;
		}
		p = realloc(*buf, *len + 1);
		if (!p)
			return -ENOMEM;
		*buf = p;
		(*buf)[(*len)++] = (uint8_t)(hi << 4 | lo);
		s += 2;
	}
	return 0;
}

static int add_raw(struct asm_case *c, char *line, char *err, size_t errlen, unsigned lineno)
{
	uint8_t *bytes = NULL;
	size_t n = 0;
	struct arf_mc_insn *p;
	int rc;

	if (line[0] == '0' && (line[1] == 'x' || line[1] == 'X')) {
		char *end;
		uint64_t v;

		errno = 0;
		v = strtoull(line, &end, 16);
		while (isspace((unsigned char)*end))
			end++;
		if (errno || *end) {
			snprintf(err, errlen, "line %u: bad raw instruction '%s'", lineno, line);
			return -EINVAL;
		}
		bytes = malloc(8);
		if (!bytes)
			return -ENOMEM;
		memcpy(bytes, &v, 8); /* the value's bytes, least significant first */
		n = 8;
	} else {
		rc = add_bytes(&bytes, &n, line, err, errlen, lineno);
		if (rc) {
			free(bytes);
			return rc;
		}
		if (n != 8) {
			free(bytes);
			snprintf(err, errlen, "line %u: a raw instruction is 8 bytes, got %zu", lineno,
				 n);
			return -EINVAL;
		}
	}
	p = realloc(c->raw, (c->nraw + 1) * sizeof(*p));
	if (!p) {
		free(bytes);
		return -ENOMEM;
	}
	c->raw = p;
	memcpy(&c->raw[c->nraw++], bytes, 8);
	free(bytes);
	return 0;
}

static char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t len;
	char *name;

	b = b ? b + 1 : path;
	len = strlen(b);
	if (len > 5 && !strcmp(b + len - 5, ".data"))
		len -= 5;
	name = malloc(len + 1);
	if (name) {
		memcpy(name, b, len);
		name[len] = '\0';
	}
	return name;
}

int asm_case_parse(const char *path, struct asm_case *c, char *err, size_t errlen)
{
	enum { S_NONE, S_ASM, S_RAW, S_MEM, S_RESULT, S_ERROR, S_OTHER } sec = S_NONE;
	size_t len = 0, asm_len = 0;
	char *text, *p, *line;
	unsigned lineno = 0;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	c->name = base_name(path);
	text = read_file(path, &len);
	if (!c->name || !text) {
		rc = -errno;
		snprintf(err, errlen, "%s", strerror(errno));
		free(text);
		return rc ? rc : -ENOMEM;
	}
	if (strlen(text) != len) {
		snprintf(err, errlen, "NUL byte in the file");
		free(text);
		return -EINVAL;
	}
	p = text;
	while (!rc && (line = strsep(&p, "\n"))) {
		size_t l = strlen(line);

		lineno++;
		if (l && line[l - 1] == '\r')
			line[--l] = '\0';
		if (!strncmp(line, "-- ", 3)) {
			const char *name = line + 3;

			if (!strcmp(name, "asm")) {
				sec = S_ASM;
				if (!c->asm_text) {
					/* Pad so the assembler's line numbers are the file's. */
					c->asm_text = malloc(lineno + 1);
					if (!c->asm_text) {
						rc = -ENOMEM;
						break;
					}
					memset(c->asm_text, '\n', lineno);
					asm_len = lineno;
					c->asm_text[asm_len] = '\0';
				}
			} else if (!strcmp(name, "raw")) {
				sec = S_RAW;
				c->has_raw = 1;
			} else if (!strcmp(name, "mem")) {
				sec = S_MEM;
			} else if (!strcmp(name, "result")) {
				sec = S_RESULT;
			} else if (!strcmp(name, "error")) {
				sec = S_ERROR;
				c->has_error = 1;
			} else {
				sec = S_OTHER; /* -- c, -- no register offset, ...: notes */
			}
			continue;
		}
		switch (sec) {
		case S_ASM: {
			char *q = realloc(c->asm_text, asm_len + l + 2);

			if (!q) {
				rc = -ENOMEM;
				break;
			}
			c->asm_text = q;
			memcpy(q + asm_len, line, l);
			asm_len += l;
			q[asm_len++] = '\n';
			q[asm_len] = '\0';
			break;
		}
		case S_RAW: {
			char *s = line, *hash = strchr(line, '#');

			if (hash)
				*hash = '\0';
			while (isspace((unsigned char)*s))
				s++;
			if (*s)
				rc = add_raw(c, s, err, errlen, lineno);
			break;
		}
		case S_MEM:
			rc = add_bytes(&c->mem, &c->mem_len, line, err, errlen, lineno);
			break;
		case S_RESULT: {
			char *s = line, *end;

			while (isspace((unsigned char)*s))
				s++;
			if (!*s || *s == '#')
				break;
			if (c->has_result) {
				snprintf(err, errlen, "line %u: second result", lineno);
				rc = -EINVAL;
				break;
			}
			errno = 0;
			c->result = strtoull(s, &end, 0);
			while (isspace((unsigned char)*end))
				end++;
			if (errno || *end) {
				snprintf(err, errlen, "line %u: bad result '%s'", lineno, s);
				rc = -EINVAL;
			}
			c->has_result = 1;
			break;
		}
		default:
			break;
		}
	}
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	free(text);
	if (rc)
		asm_case_free(c);
	return rc;
}

void asm_case_free(struct asm_case *c)
{
	free(c->name);
	free(c->asm_text);
	free(c->raw);
	free(c->mem);
	memset(c, 0, sizeof(*c));
}

/* disassemble(code) assembles back to code? */
static int round_trip(const struct arf_mc_insn *code, size_t n, char *why, size_t whylen)
{
	struct arf_mc_insn *again = NULL;
	char *text = NULL, err[160];
	size_t m = 0;
	int ok = 0;

	if (arf_mc_disasm(code, n, &text, err, sizeof(err))) {
		snprintf(why, whylen, "disassembler: %s", err);
		return 0;
	}
	if (arf_mc_asm(text, &again, &m, err, sizeof(err)))
		snprintf(why, whylen, "disassembly does not assemble: %s", err);
	else if (m != n || memcmp(again, code, n * sizeof(*code)))
		snprintf(why, whylen, "disassembly assembles to different bytes");
	else
		ok = 1;
	free(again);
	free(text);
	return ok;
}

int asm_case_run(const struct asm_case *c, int negative, int jit, const struct arf_mc_helpers *h,
		 char *why, size_t whylen)
{
	struct arf_mc_insn *code = NULL;
	struct arf_mc_prog *prog = NULL;
	struct arf_mc_vm *vm = NULL;
	struct arf_mc_result res;
	uint8_t *mem = NULL, out[CASE_OUTPUT];
	size_t n = 0;
	char err[160];
	int rc, pass = 0;

	why[0] = '\0';
	/* 1. the program: assembled, checked against -- raw; or raw alone */
	if (c->asm_text) {
		rc = arf_mc_asm(c->asm_text, &code, &n, err, sizeof(err));
		if (rc) {
			snprintf(why, whylen, "rejected by the assembler: %s", err);
			pass = negative || c->has_error;
			goto out;
		}
		if (c->has_raw) {
			size_t k = 0;

			while (k < n && k < c->nraw && !memcmp(&code[k], &c->raw[k], sizeof(*code)))
				k++;
			if (k < n || k < c->nraw) {
				snprintf(why, whylen, "assembles to other bytes than -- raw (instruction %zu)", k);
				goto out;
			}
		}
	} else if (c->has_raw) {
		n = c->nraw;
		code = malloc(n ? n * sizeof(*code) : 1);
		if (!code) {
			snprintf(why, whylen, "out of memory");
			goto out;
		}
		if (n)
			memcpy(code, c->raw, n * sizeof(*code));
	}

	/* 2. the verifier */
	rc = arf_mc_prog_load(h, code, n * sizeof(*code), NULL, 0, &prog, err, sizeof(err));
	if (rc) {
		snprintf(why, whylen, "rejected by the verifier: %s", err);
		pass = negative || c->has_error;
		goto out;
	}
	if (!negative && !round_trip(code, n, why, whylen))
		goto out;
	if (jit && (rc = arf_mc_prog_jit(prog, err, sizeof(err)))) {
		snprintf(why, whylen, "the JIT cannot compile it: %s", err);
		goto out;
	}

	/* 3. the run, on a private copy of -- mem */
	if (c->mem_len) {
		mem = malloc(c->mem_len);
		if (!mem) {
			snprintf(why, whylen, "out of memory");
			goto out;
		}
		memcpy(mem, c->mem, c->mem_len);
	}
	if (arf_mc_vm_create(h, &vm)) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	arf_mc_vm_set_output(vm, out, sizeof(out));
	if (jit)
		rc = arf_mc_run(vm, prog, mem, c->mem_len, CASE_BUDGET, &res);
	else
		rc = arf_mc_run_interp(vm, prog, mem, c->mem_len, CASE_BUDGET, &res);
	if (rc) {
		snprintf(why, whylen, "run failed (%s): %s",
			 arf_err_text(rc) ? arf_err_text(rc) : strerror(-rc), res.msg);
		pass = negative || c->has_error;
		goto out;
	}
	if (negative) {
		pass = c->has_result && res.r0 != c->result;
		snprintf(why, whylen, "accepted and returned 0x%" PRIx64 "%s", res.r0,
			 pass ? ", not its -- result" : c->has_result ? ", its -- result" : "");
	} else if (c->has_error) {
		snprintf(why, whylen, "accepted and returned 0x%" PRIx64 ", but the case expects an error",
			 res.r0);
	} else if (!c->has_result) {
		snprintf(why, whylen, "ran (r0 = 0x%" PRIx64 ") but the case has no -- result", res.r0);
	} else if (res.r0 != c->result) {
		snprintf(why, whylen, "returned 0x%" PRIx64 ", expected 0x%" PRIx64, res.r0, c->result);
	} else {
		snprintf(why, whylen, "returned 0x%" PRIx64, res.r0);
		pass = 1;
	}
out:
	arf_mc_vm_destroy(vm);
	arf_mc_prog_destroy(prog);
	free(mem);
	free(code);
	return pass;
}

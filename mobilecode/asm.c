/* SPDX-License-Identifier: MIT */
/*
 * The assembler for the conformance suite's syntax:
 *
 *   label:                       # comment
 *   mov32 %r0, 0                 ALU: op[32] dst, src|imm (sdiv, smod,
 *   movsx1632 %r1, %r2                movsx{8,16}{32,64}, movsx3264, neg)
 *   be16 %r0 / le32 %r0 / bswap64 %r0 (also swap64)
 *   ldxw %r0, [%r1+4]            loads (ldxs{b,h,w}: sign-extending)
 *   stw [%r10-4], 7 / stxdw [%r10-8], %r1
 *   lock fetch add32 [%r10-4], %r1 / lock xchg / lock cmpxchg
 *   lddw %r0, 0x123456789abcdef0
 *   jeq %r1, 0, +2 / jne32 %r1, %r2, label / ja label / ja32 label
 *   call 5 / call local name / call %r2 / exit
 *
 * Two passes: the first turns each line into an instruction and notes the
 * labels, the second resolves jump and call targets.  `ja exit` with no
 * label `exit` goes to the first exit instruction.  Immediates must fit their
 * field: 32-bit ones are -2147483648..2147483647 in decimal or up to
 * 0xffffffff in hex, offsets are 16-bit signed.  Every error names its line.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mc_int.h"

#define MAXOPS 4

struct label {
	char *name;
	size_t pc;
};

struct fixup {
	size_t pc;      /* instruction to patch */
	unsigned line;
	int in_imm;     /* target goes to imm (ja32, call local) instead of off */
	char *name;     /* label */
};

struct asmst {
	struct arf_mc_insn *insns;
	size_t n, cap;
	struct label *labels;
	size_t nlabels, caplabels;
	struct fixup *fix;
	size_t nfix, capfix;
	unsigned line;
	char *err;
	size_t errlen;
};

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t nc;
	void *p;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 64;
	while (nc < need)
		nc *= 2;
	p = realloc(*arr, nc * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

#define ERR(a, fmt, ...) \
	mc_errf((a)->err, (a)->errlen, -EINVAL, "line %u: " fmt, (a)->line, ##__VA_ARGS__)

static int emit(struct asmst *a, struct arf_mc_insn in)
{
	if (a->n >= ARF_MC_MAX_INSNS)
		return ERR(a, "more than %u instructions", ARF_MC_MAX_INSNS);
	if (grow((void **)&a->insns, &a->cap, a->n + 1, sizeof(in)))
		return mc_errf(a->err, a->errlen, -ENOMEM, "out of memory");
	a->insns[a->n++] = in;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int is_ident(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_' || *s == '.'))
		return 0;
	for (s++; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.'))
			return 0;
	return 1;
}

/* %rN with N in 0..10. */
static int parse_reg(struct asmst *a, const char *s, uint8_t *r)
{
	char *end;
	long v;

	if (s[0] != '%' || s[1] != 'r' || !isdigit((unsigned char)s[2]))
		return ERR(a, "expected a register, got '%s'", s);
	errno = 0;
	v = strtol(s + 2, &end, 10);
	if (*end || errno || v < 0 || v > MC_FP)
		return ERR(a, "invalid register '%s'", s);
	*r = (uint8_t)v;
	return 0;
}

static int is_reg(const char *s)
{
	return s[0] == '%';
}

/*
 * A number: decimal or 0x hex, with an optional sign.  *neg and *mag give
 * sign and magnitude, *hex the base; -EINVAL if it is not a number.
 */
static int parse_num(const char *s, int *neg, uint64_t *mag, int *hex)
{
	char *end;

	*neg = 0;
	if (*s == '+' || *s == '-')
		*neg = *s++ == '-';
	*hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	if (!(*hex ? isxdigit((unsigned char)s[2]) : isdigit((unsigned char)s[0])))
		return -EINVAL;
	errno = 0;
	*mag = strtoull(s, &end, *hex ? 16 : 10);
	if (*end || errno)
		return -EINVAL;
	return 0;
}

/* A number (what: "immediate", "offset") of a bits-wide field: its
 * magnitude at most neg_max when negative, else dec_max (hex_max when
 * written in hex); *v its 64-bit two's complement. */
static int parse_ranged(struct asmst *a, const char *s, const char *what, int bits,
			uint64_t neg_max, uint64_t dec_max, uint64_t hex_max, uint64_t *v)
{
	int neg, hex;
	uint64_t m;

	if (parse_num(s, &neg, &m, &hex))
		return ERR(a, "invalid %s '%s'", what, s);
	if (m > (neg ? neg_max : hex ? hex_max : dec_max))
		return ERR(a, "%s %s out of %d-bit range", what, s, bits);
	*v = neg ? 0 - m : m;
	return 0;
}

/* A 32-bit immediate: decimal as int32, hex as its 32 bits. */
static int parse_imm32(struct asmst *a, const char *s, int32_t *v)
{
	uint64_t u = 0;
	int rc = parse_ranged(a, s, "immediate", 32, UINT64_C(0x80000000), INT32_MAX,
			      UINT64_C(0xffffffff), &u);

	if (!rc)
		*v = (int32_t)(uint32_t)u;
	return rc;
}

static int parse_imm64(struct asmst *a, const char *s, uint64_t *v)
{
	return parse_ranged(a, s, "immediate", 64, UINT64_C(0x8000000000000000), UINT64_MAX,
			    UINT64_MAX, v);
}

static int parse_off16(struct asmst *a, const char *s, int16_t *v)
{
	uint64_t u = 0;
	int rc = parse_ranged(a, s, "offset", 16, 32768, 32767, 32767, &u);

	if (!rc)
		*v = (int16_t)(int64_t)u;
	return rc;
}

/* [%rN], [%rN+off], [%rN-off] */
static int parse_mem(struct asmst *a, char *s, uint8_t *r, int16_t *off)
{
	size_t len = strlen(s);
	char *sign, *inner;
	int rc;

	if (len < 2 || s[0] != '[' || s[len - 1] != ']')
		return ERR(a, "expected a memory operand [%%rN+offset], got '%s'", s);
	s[len - 1] = '\0';
	inner = trim(s + 1);
	sign = strpbrk(inner, "+-");
	*off = 0;
	if (sign) {
		char num[64];
		char *t = trim(sign + 1);

		if (strlen(t) + 2 > sizeof(num))
			return ERR(a, "offset '%s' too long", t);
		num[0] = *sign;
		strcpy(num + 1, t);
		*sign = '\0';
		rc = parse_off16(a, num, off);
		if (rc)
			return rc;
	}
	return parse_reg(a, trim(inner), r);
}

static int reg_dst(struct asmst *a, const char *s, struct arf_mc_insn *in)
{
	uint8_t r = 0;
	int rc = parse_reg(a, s, &r);

	in->dst = r & 0xf;
	return rc;
}

static int mem_dst(struct asmst *a, char *s, struct arf_mc_insn *in)
{
	uint8_t r = 0;
	int rc = parse_mem(a, s, &r, &in->off);

	in->dst = r & 0xf;
	return rc;
}

/* A jump or call target: +N / -N (relative), or a label to fix up later. */
static int parse_target(struct asmst *a, const char *s, int in_imm, struct arf_mc_insn *in)
{
	if (*s == '+' || *s == '-' || isdigit((unsigned char)*s)) {
		if (in_imm)
			return parse_imm32(a, s, &in->imm);
		return parse_off16(a, s, &in->off);
	}
	if (!is_ident(s))
		return ERR(a, "invalid jump target '%s'", s);
	if (grow((void **)&a->fix, &a->capfix, a->nfix + 1, sizeof(*a->fix)))
		return mc_errf(a->err, a->errlen, -ENOMEM, "out of memory");
	a->fix[a->nfix] = (struct fixup){ .pc = a->n, .line = a->line, .in_imm = in_imm,
					  .name = strdup(s) };
	if (!a->fix[a->nfix].name)
		return mc_errf(a->err, a->errlen, -ENOMEM, "out of memory");
	a->nfix++;
	return 0;
}

static int want(struct asmst *a, const char *mn, int nops, int expected)
{
	if (nops != expected)
		return ERR(a, "%s expects %d operand%s, got %d", mn, expected,
			   expected == 1 ? "" : "s", nops);
	return 0;
}

/* Size suffix b/h/w/dw to MC_B.. */
static int size_of(const char *s)
{
	if (!strcmp(s, "b"))
		return MC_B;
	if (!strcmp(s, "h"))
		return MC_H;
	if (!strcmp(s, "w"))
		return MC_W;
	if (!strcmp(s, "dw"))
		return MC_DW;
	return -1;
}

static int find_name(const char *const *tab, const char *s, size_t len)
{
	for (int i = 0; i < 16; i++)
		if (tab[i] && strlen(tab[i]) == len && !strncmp(tab[i], s, len))
			return i;
	return -1;
}

/* ops[0] the destination register, ops[1] the source: a register (the
 * BPF_X form) or a 32-bit immediate; reg_only (the mnemonic) when only a
 * register will do. */
static int dst_src(struct asmst *a, char **ops, struct arf_mc_insn *in, const char *reg_only)
{
	int rc = reg_dst(a, ops[0], in);

	if (rc)
		return rc;
	if (is_reg(ops[1])) {
		uint8_t src;

		rc = parse_reg(a, ops[1], &src);
		in->src = src & 0xf;
		in->opcode |= MC_X;
		return rc;
	}
	if (reg_only)
		return ERR(a, "%s needs a register source", reg_only);
	return parse_imm32(a, ops[1], &in->imm);
}

static int asm_alu(struct asmst *a, const char *mn, char **ops, int nops, int op, int is32,
		   int16_t off)
{
	struct arf_mc_insn in = { 0 };
	int rc;

	in.opcode = (uint8_t)((is32 ? MC_ALU : MC_ALU64) | op);
	in.off = off;
	if (op == MC_NEG) {
		rc = want(a, mn, nops, 1);
		if (!rc)
			rc = reg_dst(a, ops[0], &in);
		return rc ? rc : emit(a, in);
	}
	rc = want(a, mn, nops, 2);
	if (!rc)
		rc = dst_src(a, ops, &in, op == MC_MOV && off ? mn : NULL);
	return rc ? rc : emit(a, in);
}

static int asm_jmp(struct asmst *a, const char *mn, char **ops, int nops, int op, int is32)
{
	struct arf_mc_insn in = { 0 };
	int rc;

	in.opcode = (uint8_t)((is32 ? MC_JMP32 : MC_JMP) | op);
	rc = want(a, mn, nops, 3);
	if (!rc)
		rc = dst_src(a, ops, &in, NULL);
	if (!rc)
		rc = parse_target(a, ops[2], 0, &in);
	return rc ? rc : emit(a, in);
}

static int asm_end(struct asmst *a, const char *mn, char **ops, int nops, uint8_t opcode,
		   const char *width)
{
	struct arf_mc_insn in = { .opcode = opcode };
	int rc;

	if (strcmp(width, "16") && strcmp(width, "32") && strcmp(width, "64"))
		return ERR(a, "unknown mnemonic '%s'", mn);
	in.imm = atoi(width);
	rc = want(a, mn, nops, 1);
	if (!rc)
		rc = reg_dst(a, ops[0], &in);
	return rc ? rc : emit(a, in);
}

static int asm_lock(struct asmst *a, char *rest)
{
	struct arf_mc_insn in = { 0 };
	char *ops[MAXOPS], *p = rest, *name;
	int nops = 0, fetch = 0, aop = -1, is32 = 0, rc;
	size_t len;

	/* lock [fetch] op[32] [dst+off], src */
	name = strsep(&p, " \t");
	if (name && !strcmp(name, "fetch")) {
		fetch = 1;
		while (p && isspace((unsigned char)*p))
			p++;
		name = strsep(&p, " \t");
	}
	if (!name || !*name)
		return ERR(a, "lock without an operation");
	len = strlen(name);
	if (len > 2 && !strcmp(name + len - 2, "32")) {
		is32 = 1;
		len -= 2;
	}
	if (len == 3 && !strncmp(name, "add", 3))
		aop = MC_ADD;
	else if (len == 2 && !strncmp(name, "or", 2))
		aop = MC_OR;
	else if (len == 3 && !strncmp(name, "and", 3))
		aop = MC_AND;
	else if (len == 3 && !strncmp(name, "xor", 3))
		aop = MC_XOR;
	else if (len == 4 && !strncmp(name, "xchg", 4) && !fetch)
		aop = MC_XCHG;
	else if (len == 7 && !strncmp(name, "cmpxchg", 7) && !fetch)
		aop = MC_CMPXCHG;
	if (aop < 0)
		return ERR(a, "unknown atomic operation '%s%s'", fetch ? "fetch " : "", name);
	while (p && *p && nops < MAXOPS) {
		char *op = strsep(&p, ",");

		ops[nops++] = trim(op);
	}
	if (p && *p)
		return ERR(a, "too many operands");
	if (nops == 1 && !*ops[0])
		nops = 0;
	if (nops != 2)
		return ERR(a, "invalid number of operands for lock (expected 2, got %d)", nops);
	in.opcode = (uint8_t)(MC_STX | MC_ATOMIC | (is32 ? MC_W : MC_DW));
	in.imm = aop | (fetch ? MC_FETCH : 0);
	rc = mem_dst(a, ops[0], &in);
	if (!rc) {
		uint8_t src;

		rc = parse_reg(a, ops[1], &src);
		in.src = src & 0xf;
	}
	return rc ? rc : emit(a, in);
}

/* One instruction: mnemonic mn with operands rest (already trimmed). */
static int asm_insn(struct asmst *a, char *mn, char *rest)
{
	char *ops[MAXOPS], *p = rest;
	int nops = 0, k, sz, rc;
	size_t len = strlen(mn);
	int is32 = len > 2 && !strcmp(mn + len - 2, "32");
	struct arf_mc_insn in = { 0 };

	if (!strcmp(mn, "lock"))
		return asm_lock(a, rest);
	while (p && *p) {
		if (nops == MAXOPS)
			return ERR(a, "too many operands");
		ops[nops++] = trim(strsep(&p, ","));
	}
	for (k = 0; k < nops; k++)
		if (!*ops[k])
			return ERR(a, "empty operand");

	/* ALU, with the 32 suffix or without */
	k = find_name(mc_alu_names, mn, is32 ? len - 2 : len);
	if (k >= 0)
		return asm_alu(a, mn, ops, nops, k << 4, is32, 0);
	if (!strcmp(mn, "sdiv") || !strcmp(mn, "sdiv32"))
		return asm_alu(a, mn, ops, nops, MC_DIV, is32, 1);
	if (!strcmp(mn, "smod") || !strcmp(mn, "smod32"))
		return asm_alu(a, mn, ops, nops, MC_MOD, is32, 1);
	if (!strncmp(mn, "movsx", 5)) {
		static const struct { const char *n; int is32, off; } sx[] = {
			{ "movsx832", 1, 8 }, { "movsx1632", 1, 16 }, { "movsx864", 0, 8 },
			{ "movsx1664", 0, 16 }, { "movsx3264", 0, 32 },
		};
		for (size_t i = 0; i < sizeof(sx) / sizeof(sx[0]); i++)
			if (!strcmp(mn, sx[i].n)) {
				if (nops == 2 && !is_reg(ops[1]))
					return ERR(a, "%s needs a register source", mn);
				return asm_alu(a, mn, ops, nops, MC_MOV, sx[i].is32,
					       (int16_t)sx[i].off);
			}
		return ERR(a, "unknown mnemonic '%s'", mn);
	}
	if (!strncmp(mn, "le", 2) && len == 4)
		return asm_end(a, mn, ops, nops, MC_ALU | MC_END | MC_K, mn + 2);
	if (!strncmp(mn, "be", 2) && len == 4)
		return asm_end(a, mn, ops, nops, MC_ALU | MC_END | MC_X, mn + 2);
	if (!strncmp(mn, "bswap", 5) && len == 7)
		return asm_end(a, mn, ops, nops, MC_ALU64 | MC_END, mn + 5);
	if (!strncmp(mn, "swap", 4) && len == 6)
		return asm_end(a, mn, ops, nops, MC_ALU64 | MC_END, mn + 4);

	/* jumps */
	k = find_name(mc_jmp_names, mn, is32 ? len - 2 : len);
	if (k >= 0)
		return asm_jmp(a, mn, ops, nops, k << 4, is32);
	if (!strcmp(mn, "ja") || !strcmp(mn, "ja32")) {
		in.opcode = is32 ? MC_OP_JA32 : MC_OP_JA;
		rc = want(a, mn, nops, 1);
		if (!rc)
			rc = parse_target(a, ops[0], is32, &in);
		return rc ? rc : emit(a, in);
	}
	if (!strcmp(mn, "exit")) {
		in.opcode = MC_OP_EXIT;
		rc = want(a, mn, nops, 0);
		return rc ? rc : emit(a, in);
	}
	if (!strcmp(mn, "call")) {
		rc = want(a, mn, nops, 1);
		if (rc)
			return rc;
		if (!strncmp(ops[0], "local", 5) && isspace((unsigned char)ops[0][5])) {
			in.opcode = MC_OP_CALL;
			in.src = MC_CALL_LOCAL;
			rc = parse_target(a, trim(ops[0] + 5), 1, &in);
		} else if (is_reg(ops[0])) {
			in.opcode = MC_OP_CALLX;
			rc = reg_dst(a, ops[0], &in);
		} else {
			in.opcode = MC_OP_CALL;
			rc = parse_imm32(a, ops[0], &in.imm);
		}
		return rc ? rc : emit(a, in);
	}

	/* memory */
	if (!strcmp(mn, "lddw")) {
		uint64_t v = 0;
		struct arf_mc_insn hi = { 0 };

		in.opcode = MC_OP_LDDW;
		rc = want(a, mn, nops, 2);
		if (!rc)
			rc = reg_dst(a, ops[0], &in);
		if (!rc)
			rc = parse_imm64(a, ops[1], &v);
		if (rc)
			return rc;
		in.imm = (int32_t)(uint32_t)v;
		hi.imm = (int32_t)(uint32_t)(v >> 32);
		rc = emit(a, in);
		return rc ? rc : emit(a, hi);
	}
	if (!strncmp(mn, "ldxs", 4) && (sz = size_of(mn + 4)) >= 0 && sz != MC_DW) {
		in.opcode = (uint8_t)(MC_LDX | MC_MEMSX | sz);
		goto load;
	}
	if (!strncmp(mn, "ldx", 3) && (sz = size_of(mn + 3)) >= 0) {
		in.opcode = (uint8_t)(MC_LDX | MC_MEM | sz);
load:
		rc = want(a, mn, nops, 2);
		if (!rc)
			rc = reg_dst(a, ops[0], &in);
		if (!rc) {
			uint8_t src;

			rc = parse_mem(a, ops[1], &src, &in.off);
			in.src = src & 0xf;
		}
		return rc ? rc : emit(a, in);
	}
	if (!strncmp(mn, "stx", 3) && (sz = size_of(mn + 3)) >= 0) {
		in.opcode = (uint8_t)(MC_STX | MC_MEM | sz);
		rc = want(a, mn, nops, 2);
		if (!rc)
			rc = mem_dst(a, ops[0], &in);
		if (!rc) {
			uint8_t src;

			rc = parse_reg(a, ops[1], &src);
			in.src = src & 0xf;
		}
		return rc ? rc : emit(a, in);
	}
	if (!strncmp(mn, "st", 2) && (sz = size_of(mn + 2)) >= 0) {
		in.opcode = (uint8_t)(MC_ST | MC_MEM | sz);
		rc = want(a, mn, nops, 2);
		if (!rc)
			rc = mem_dst(a, ops[0], &in);
		if (!rc)
			rc = parse_imm32(a, ops[1], &in.imm);
		return rc ? rc : emit(a, in);
	}
	return ERR(a, "unknown mnemonic '%s'", mn);
}

static int add_label(struct asmst *a, const char *name)
{
	for (size_t i = 0; i < a->nlabels; i++)
		if (!strcmp(a->labels[i].name, name))
			return ERR(a, "label '%s' defined twice", name);
	if (grow((void **)&a->labels, &a->caplabels, a->nlabels + 1, sizeof(*a->labels)))
		return mc_errf(a->err, a->errlen, -ENOMEM, "out of memory");
	a->labels[a->nlabels].name = strdup(name);
	if (!a->labels[a->nlabels].name)
		return mc_errf(a->err, a->errlen, -ENOMEM, "out of memory");
	a->labels[a->nlabels++].pc = a->n;
	return 0;
}

static int asm_line(struct asmst *a, char *line)
{
	char *s, *colon, *mn;
	int rc;

	s = strchr(line, '#');
	if (s)
		*s = '\0';
	s = trim(line);
	/* label: (an instruction may follow on the same line) */
	colon = strchr(s, ':');
	if (colon) {
		*colon = '\0';
		if (!is_ident(trim(s)))
			return ERR(a, "invalid label '%s'", trim(s));
		rc = add_label(a, trim(s));
		if (rc)
			return rc;
		s = trim(colon + 1);
	}
	if (!*s)
		return 0;
	mn = s;
	while (*s && !isspace((unsigned char)*s))
		s++;
	if (*s)
		*s++ = '\0';
	return asm_insn(a, mn, trim(s));
}

static int resolve(struct asmst *a)
{
	for (size_t i = 0; i < a->nfix; i++) {
		struct fixup *f = &a->fix[i];
		int64_t target = -1, rel;

		for (size_t k = 0; k < a->nlabels; k++)
			if (!strcmp(a->labels[k].name, f->name)) {
				target = (int64_t)a->labels[k].pc;
				break;
			}
		if (target < 0 && !strcmp(f->name, "exit")) {
			for (size_t k = 0; k < a->n; k++)
				if (a->insns[k].opcode == MC_OP_EXIT) {
					target = (int64_t)k;
					break;
				}
		}
		if (target < 0)
			return mc_errf(a->err, a->errlen, -EINVAL, "line %u: undefined label '%s'",
				       f->line, f->name);
		rel = target - (int64_t)f->pc - 1;
		if (f->in_imm) {
			a->insns[f->pc].imm = (int32_t)rel;
		} else {
			if (rel < INT16_MIN || rel > INT16_MAX)
				return mc_errf(a->err, a->errlen, -EINVAL,
					       "line %u: jump to '%s' out of 16-bit range", f->line,
					       f->name);
			a->insns[f->pc].off = (int16_t)rel;
		}
	}
	return 0;
}

int arf_mc_asm(const char *text, struct arf_mc_insn **insns, size_t *n, char *err,
	       size_t errlen)
{
	struct asmst a = { .err = err, .errlen = errlen };
	char *copy, *p, *line;
	int rc = 0;

	*insns = NULL;
	*n = 0;
	if (err && errlen)
		err[0] = '\0';
	copy = strdup(text ? text : "");
	if (!copy)
		return mc_errf(err, errlen, -ENOMEM, "out of memory");
	p = copy;
	while (!rc && (line = strsep(&p, "\n"))) {
		a.line++;
		rc = asm_line(&a, line);
	}
	if (!rc)
		rc = resolve(&a);
	if (!rc) {
		*insns = a.insns;
		*n = a.n;
		a.insns = NULL;
	}
	for (size_t i = 0; i < a.nlabels; i++)
		free(a.labels[i].name);
	for (size_t i = 0; i < a.nfix; i++)
		free(a.fix[i].name);
	free(a.labels);
	free(a.fix);
	free(a.insns);
	free(copy);
	return rc;
}

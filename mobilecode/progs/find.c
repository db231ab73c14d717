/* SPDX-License-Identifier: MIT */
/*
 * The find walker: lists a batch of directories with ARF_PH_DIR_READ (the
 * run's credentials, so it never reads the regions itself), evaluates the
 * client's filter on each entry next to the data, and emits only the
 * entries that may be printed and the directories to descend into.  The
 * layouts and the division of work with the client: arf_prog_find.h.
 *
 * Each run is bounded twice over: by max_ents entries looked at (the
 * client halves it when arfd's instruction budget stops a run) and by
 * max_out output bytes, checked before each dir_read batch, whose records
 * are at most BUF_SIZE bytes; an item left early gets a DIR record with the
 * cookie to resume at.
 */
#include "prog.h"
#include "arf_prog_find.h"

static long (*arf_dir_read)(void *rd, uint64_t rd_len, void *buf, uint64_t buf_len) =
	(void *)ARF_PH_DIR_READ;

#define RD      ((struct arf_prog_dir_read *)(ARF_PROG_SCRATCH + 0))
#define RD2     ((struct arf_prog_dir_read *)(ARF_PROG_SCRATCH + 64))
#define REC     ((struct arf_find_rec *)(ARF_PROG_SCRATCH + 128))
#define BUF2    ((uint8_t *)(ARF_PROG_SCRATCH + 256))
#define BUF2_SIZE 768u              /* one record without attributes: 24 + 256 */
#define BUF     ((uint8_t *)(ARF_PROG_SCRATCH + 1024))
#define BUF_SIZE (ARF_PROG_SCRATCH_SIZE - 1024u)

/* What a filter step looks at (in the scratch region: calls take five
 * arguments at most). */
struct ectx {
	const struct arf_prog_dirent *d;
	const struct arf_prog_attr *at; /* 0: withheld */
	const uint8_t *name;
	const uint8_t *str;
	uint64_t str_len;
	int64_t empty;
};
#define EX      ((struct ectx *)(ARF_PROG_SCRATCH + 160))
#define DCOPY   ((struct arf_prog_dirent *)(ARF_PROG_SCRATCH + 224))

#define V_F 0u
#define V_T 1u
#define V_U 2u

HOT uint8_t lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c;
}

/* [...] at p[*pi] against c: 1 matches, 0 not, 2 undecided (malformed). */
static __attribute__((noinline)) uint32_t bracket(const uint8_t *p, uint64_t plen, uint64_t *pi,
						  uint8_t c)
{
	uint64_t i = *pi + 1;
	uint32_t neg = 0, hit = 0, first = 1;

	if (i < plen && (p[i] == '!' || p[i] == '^')) {
		neg = 1;
		i++;
	}
	for (; i < plen; i++) {
		uint8_t lo = p[i], hi;

		if (lo == ']' && !first)
			break;
		first = 0;
		if (lo == '[' || lo == '\\')
			return 2; /* classes, escapes: the client's business */
		hi = lo;
		if (i + 2 < plen && p[i + 1] == '-' && p[i + 2] != ']') {
			hi = p[i + 2];
			if (hi == '[' || hi == '\\')
				return 2;
			i += 2;
		}
		if (lo <= c && c <= hi)
			hit = 1;
	}
	if (i >= plen)
		return 2;
	*pi = i + 1;
	return hit != neg;
}

/* fnmatch(p, s, 0) in the C locale: 0, 1, or 2 (undecided: a byte over
 * 0x7f, which another locale may read as part of a character). */
static __attribute__((noinline)) uint32_t glob(const uint8_t *p, uint64_t plen, const uint8_t *s,
					       uint64_t slen, uint32_t icase)
{
	uint64_t pi = 0, si = 0, star = 0, ss = 0;
	uint32_t have_star = 0;

	while (si < slen) {
		uint8_t c = s[si];

		if (c >= 0x80)
			return 2;
		if (pi < plen) {
			uint8_t pc = p[pi];

			if (pc == '*') {
				pi++;
				star = pi;
				ss = si;
				have_star = 1;
				continue;
			}
			if (pc == '?') {
				pi++;
				si++;
				continue;
			}
			if (pc == '[') {
				uint64_t q = pi;
				uint32_t r = bracket(p, plen, &q, icase ? lower(c) : c);

				if (r == 2)
					return 2;
				if (r == 1) {
					pi = q;
					si++;
					continue;
				}
			} else {
				uint64_t adv = 1;

				if (pc == '\\' && pi + 1 < plen) {
					pc = p[pi + 1];
					adv = 2;
				}
				if (pc == c || (icase && lower(pc) == lower(c))) {
					pi += adv;
					si++;
					continue;
				}
			}
		}
		if (!have_star)
			return 0;
		pi = star;
		ss++;
		si = ss;
	}
	while (pi < plen && p[pi] == '*')
		pi++;
	return pi == plen;
}

HOT uint32_t cmp_u64(uint64_t v, uint8_t cmp, uint64_t x)
{
	if (cmp == ARF_FIND_LT)
		return v < x;
	if (cmp == ARF_FIND_GT)
		return v > x;
	return v == x;
}

/* One test or operator over the stack st (2 bits a level, top at the low
 * end); returns the new stack, or ~0 when the program is malformed. */
static __attribute__((noinline)) uint64_t step(const struct arf_find_node *n, uint64_t st,
					       uint32_t *sp, const struct ectx *ex)
{
	const struct arf_prog_dirent *d = ex->d;
	const struct arf_prog_attr *at = ex->at;
	const uint8_t *str = ex->str;
	uint64_t str_len = ex->str_len;
	int64_t empty = ex->empty;
	uint32_t v = V_U, a, b;
	uint32_t mode = at ? at->mode : (uint32_t)d->type << 12;

	switch (n->op) {
	case ARF_FIND_AND:
	case ARF_FIND_OR:
		if (*sp < 2)
			return ~0ull;
		a = st & 3;
		b = (st >> 2) & 3;
		st >>= 4;
		*sp -= 2;
		if (n->op == ARF_FIND_AND)
			v = a == V_F || b == V_F ? V_F : a == V_T && b == V_T ? V_T : V_U;
		else
			v = a == V_T || b == V_T ? V_T : a == V_F && b == V_F ? V_F : V_U;
		break;
	case ARF_FIND_NOT:
		if (*sp < 1)
			return ~0ull;
		a = st & 3;
		st >>= 2;
		*sp -= 1;
		v = a == V_U ? V_U : a == V_T ? V_F : V_T;
		break;
	case ARF_FIND_TRUE:
		v = V_T;
		break;
	case ARF_FIND_FALSE:
		v = V_F;
		break;
	case ARF_FIND_NAME:
		if (n->a > str_len || n->y > str_len - n->a)
			return ~0ull;
		v = glob(str + n->a, n->y, ex->name, d->namelen, n->cmp);
		break;
	case ARF_FIND_TYPE:
		if (mode & 0170000u)
			v = (n->a >> ((mode >> 12) & 15)) & 1;
		break;
	case ARF_FIND_EMPTY:
		if (!at)
			break;
		if ((mode & 0170000u) == 0100000u)
			v = at->size == 0;
		else if ((mode & 0170000u) == 0040000u)
			v = empty == ARF_FIND_EMPTY_YES ? V_T
			    : empty == ARF_FIND_EMPTY_NO ? V_F : V_U;
		else
			v = V_F;
		break;
	default:
		if (!at)
			break; /* attributes withheld: the client says why */
		if (n->op == ARF_FIND_SIZE)
			v = n->y ? cmp_u64((at->size + n->y - 1) / n->y, n->cmp, n->x) : V_U;
		else if (n->op == ARF_FIND_TIME) {
			int64_t t = n->a == 0 ? at->atime_ns : n->a == 1 ? at->ctime_ns : at->mtime_ns;

			v = (int64_t)n->x < t && t <= (int64_t)n->y;
		} else if (n->op == ARF_FIND_UID)
			v = cmp_u64(at->uid, n->cmp, n->x);
		else if (n->op == ARF_FIND_GID)
			v = cmp_u64(at->gid, n->cmp, n->x);
		else if (n->op == ARF_FIND_LINKS)
			v = cmp_u64(at->nlink, n->cmp, n->x);
		else if (n->op == ARF_FIND_INUM)
			v = cmp_u64(at->ino, n->cmp, n->x);
		else if (n->op == ARF_FIND_PERM) {
			uint64_t m = at->mode & 07777u;

			v = n->cmp == 0 ? m == n->x : n->cmp == 1 ? (m & n->x) == n->x
			    : n->x == 0 || (m & n->x) != 0;
		}
		break;
	}
	if (*sp >= ARF_FIND_STACK)
		return ~0ull;
	*sp += 1;
	return (st << 2) | v;
}

/* The filter's value for one entry: V_F, V_T or V_U. */
static __attribute__((noinline)) uint32_t filter(const struct arf_find_node *nodes, uint32_t nn,
						 const struct ectx *ex)
{
	uint64_t st = 0;
	uint32_t sp = 0;

	if (nn == 0)
		return V_U;
	for (uint32_t i = 0; i < nn; i++) {
		st = step(&nodes[i], st, &sp, ex);
		if (st == ~0ull)
			return V_U;
	}
	return sp == 1 ? (uint32_t)(st & 3) : V_U;
}

/* Whether directory (ino, gen) has an entry: ARF_FIND_EMPTY_* or -errno. */
static __attribute__((noinline)) int32_t dir_empty(uint64_t ino, uint32_t gen)
{
	struct arf_prog_dir_read *rd = RD2;
	long n;

	rd->dir = ino;
	rd->dgen = gen;
	rd->flags = 0;
	rd->cookie = 0;
	rd->max = 1;
	rd->n = 0;
	rd->eof = 0;
	rd->pad0 = 0;
	n = arf_dir_read(rd, sizeof(*rd), BUF2, BUF2_SIZE);
	if (n < 0)
		return (int32_t)n;
	if (rd->n)
		return ARF_FIND_EMPTY_NO;
	return rd->eof ? ARF_FIND_EMPTY_YES : ARF_FIND_EMPTY_UNKNOWN;
}

static __attribute__((noinline)) void emit_dir(uint32_t id, long err, uint64_t cookie,
					       uint32_t eof)
{
	struct arf_find_rec *r = REC;

	r->kind = ARF_FIND_REC_DIR;
	r->id = id;
	r->err = (int32_t)err;
	r->len = eof;
	r->cookie = cookie;
	arf_emit(r, sizeof(*r));
}

long arf_prog_find(const struct arf_find_arg *a, uint64_t len)
{
	const struct arf_find_item *items;
	const struct arf_find_node *nodes;
	const uint8_t *str;
	uint64_t need, out = 0;
	uint32_t ents = 0, dr_flags = ARF_PROG_DR_ATTRS;

	if (len < sizeof(*a) || a->nitems > 4096 || a->nnodes > ARF_FIND_MAX_NODES)
		return -EINVAL_;
	need = sizeof(*a) + (uint64_t)a->nitems * sizeof(*items) +
	       (uint64_t)a->nnodes * sizeof(*nodes) + a->str_len;
	if (need > len)
		return -EINVAL_;
	items = (const struct arf_find_item *)(a + 1);
	nodes = (const struct arf_find_node *)(items + a->nitems);
	str = (const uint8_t *)(nodes + a->nnodes);
	if (a->flags & ARF_FIND_F_LINKS)
		dr_flags |= ARF_PROG_DR_LINKS;

	for (uint32_t i = 0; i < a->nitems; i++) {
		const struct arf_find_item *it = &items[i];
		uint64_t cookie = it->cookie;
		uint32_t depth = it->depth + 1;

		for (;;) {
			struct arf_prog_dir_read *rd = RD;
			uint64_t at = 0, got;
			uint32_t want = a->max_ents > ents ? a->max_ents - ents : 0;
			long n;

			if (out >= a->max_out || want == 0) {
				emit_dir(it->id, 0, cookie, 0);
				return 0;
			}
			rd->dir = it->ino;
			rd->dgen = it->gen;
			rd->flags = dr_flags;
			rd->cookie = cookie;
			rd->max = want < ARF_PROG_DR_BATCH ? want : ARF_PROG_DR_BATCH;
			rd->n = 0;
			rd->eof = 0;
			rd->pad0 = 0;
			n = arf_dir_read(rd, sizeof(*rd), BUF, BUF_SIZE);
			if (n < 0) {
				emit_dir(it->id, n, cookie, 1);
				break;
			}
			got = (uint64_t)n;
			if (got > BUF_SIZE)
				return -EINVAL_;
			for (uint32_t k = 0; k < rd->n; k++) {
				const struct arf_prog_dirent *d;
				const struct arf_prog_attr *attr = 0;
				const uint8_t *name;
				uint64_t rlen = sizeof(*d);
				uint32_t isdir, v, mp;
				int32_t empty = ARF_FIND_EMPTY_UNKNOWN;

				if (at + sizeof(*d) > got)
					return -EINVAL_;
				d = (const struct arf_prog_dirent *)(BUF + at);
				if (d->has_attr) {
					attr = (const struct arf_prog_attr *)(BUF + at + rlen);
					rlen += sizeof(*attr);
				}
				name = BUF + at + rlen;
				rlen += ((uint64_t)d->namelen + 7) & ~7ull;
				if (d->has_link) {
					if (at + rlen + 8 > got)
						return -EINVAL_;
					rlen += 8 + ((*(const uint32_t *)(BUF + at + rlen) + 7ull) & ~7ull);
				}
				if (at + rlen > got)
					return -EINVAL_;
				ents++;
				cookie = d->cookie;
				isdir = attr ? (attr->mode & 0170000u) == 0040000u : d->type == DT_DIR_;
				/* a symbolic link not of mode 0777 may be a volume's
				 * mount point (arfclient/volumes.c): sent whole, always,
				 * for the client to cross; so is a link whose mode is
				 * withheld (a directory we may not search) */
				mp = attr ? (attr->mode & S_IFMT_) == S_IFLNK_ &&
					    (attr->mode & 0777u) != 0777u
					  : d->type == DT_LNK_;
				if (isdir && attr && (a->flags & ARF_FIND_F_EMPTY))
					empty = dir_empty(d->ino, d->gen);
				EX->d = d;
				EX->at = attr;
				EX->name = name;
				EX->str = str;
				EX->str_len = a->str_len;
				EX->empty = empty;
				v = depth < a->mindepth ? V_F : filter(nodes, a->nnodes, EX);
				/* a directory -empty could not list is sent too: the
				 * client reports it, as GNU find does wherever the
				 * test is evaluated */
				if ((isdir && depth < a->maxdepth) || v != V_F || empty < 0 || mp) {
					struct arf_find_rec *r = REC;
					uint64_t nlen = ((uint64_t)d->namelen + 7) & ~7ull;

					r->kind = ARF_FIND_REC_ENT;
					r->id = it->id;
					r->err = empty;
					r->len = (uint32_t)rlen;
					r->cookie = 0;
					if (attr && !mp && (a->flags & ARF_FIND_F_NOATTR)) {
						struct arf_prog_dirent *c = DCOPY;

						*c = *d;
						c->has_attr = 0;
						c->has_link = 0;
						r->len = (uint32_t)(sizeof(*c) + nlen);
						r->cookie = 1;
						arf_emit(r, sizeof(*r));
						arf_emit(c, sizeof(*c));
						arf_emit(name, nlen);
					} else {
						arf_emit(r, sizeof(*r));
						arf_emit(BUF + at, rlen);
					}
					out += sizeof(*r) + r->len;
				}
				at += rlen;
			}
			if (rd->eof) {
				emit_dir(it->id, 0, cookie, 1);
				break;
			}
		}
	}
	return 0;
}

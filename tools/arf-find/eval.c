/* SPDX-License-Identifier: MIT */
/*
 * The expression on one entry, as GNU find 4.9 evaluates it: operators
 * short-circuit, actions print and return true, -prune marks the entry's
 * directory as not to be entered.  The entries come from arfd's find
 * walker with their attributes as arfd keeps them (the same numbers
 * arf-fuse gives the kernel), so -printf's fields match GNU find's on the
 * mount.  Errors are worded as GNU find words them in the C locale
 * ("'PATH': Permission denied"), with arf-find's name in front.
 */
#include <errno.h>
#include <fnmatch.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arf.h"
#include "arf_tool.h"
#include "find_int.h"

void find_err(struct find_run *run, const char *path, int err)
{
	fflush(stdout);
	fprintf(stderr, "%s: ", run->prog);
	arf_tool_quote_locale(stderr, path);
	fprintf(stderr, ": %s\n", err < 0 && err > -1000 ? strerror(-err) : arf_strerror(err));
	run->status = 1;
}

static unsigned ftype(const struct find_ent *e)
{
	return e->has_attr ? (e->at.mode >> 12) & 15 : e->type;
}

/* ---- names of ids, cached ---------------------------------------------- */

#define NCACHE 64
static struct { int used; uint32_t id; char name[64]; } ucache[NCACHE], gcache[NCACHE];

static const char *id_name(int user, uint32_t id, char *buf, size_t len)
{
	typeof(ucache[0]) *c = &(user ? ucache : gcache)[id % NCACHE];

	if (!c->used || c->id != id) {
		const char *n = NULL;

		if (user) {
			struct passwd *pw = getpwuid(id);
			n = pw ? pw->pw_name : NULL;
		} else {
			struct group *gr = getgrgid(id);
			n = gr ? gr->gr_name : NULL;
		}
		if (n && strlen(n) < sizeof(c->name))
			snprintf(c->name, sizeof(c->name), "%s", n);
		else
			snprintf(c->name, sizeof(c->name), "%u", id);
		c->used = 1;
		c->id = id;
	}
	snprintf(buf, len, "%s", c->name);
	return buf;
}

/* ---- -printf --------------------------------------------------------------- */

static void mode_string(uint32_t mode, char out[11])
{
	static const char types[16] = "?pc?d?b?-?l?s???";
	static const char rwx[] = "rwxrwxrwx";

	out[0] = types[(mode >> 12) & 15];
	for (int i = 0; i < 9; i++)
		out[1 + i] = mode & (0400u >> i) ? rwx[i] : '-';
	if (mode & 04000)
		out[3] = mode & 0100 ? 's' : 'S';
	if (mode & 02000)
		out[6] = mode & 010 ? 's' : 'S';
	if (mode & 01000)
		out[9] = mode & 01 ? 't' : 'T';
	out[10] = 0;
}

static char type_letter(unsigned t)
{
	switch (t) {
	case 1: return 'p';
	case 2: return 'c';
	case 4: return 'd';
	case 6: return 'b';
	case 8: return 'f';
	case 10: return 'l';
	case 12: return 's';
	default: return 'U';
	}
}

static void printf_action(const char *fmt, const struct find_ent *e)
{
	char spec[64], val[512];

	for (const char *c = fmt; *c; c++) {
		if (*c == '\\' && c[1]) {
			c++;
			switch (*c) {
			case 'a': putchar('\a'); break;
			case 'b': putchar('\b'); break;
			case 'c': fflush(stdout); return;
			case 'f': putchar('\f'); break;
			case 'n': putchar('\n'); break;
			case 'r': putchar('\r'); break;
			case 't': putchar('\t'); break;
			case 'v': putchar('\v'); break;
			case '\\': putchar('\\'); break;
			default:
				if (*c >= '0' && *c <= '7') {
					int v = 0, k = 0;

					while (k < 3 && *c >= '0' && *c <= '7') {
						v = v * 8 + (*c++ - '0');
						k++;
					}
					c--;
					putchar(v);
				} else {
					putchar('\\');
					putchar(*c);
				}
			}
			continue;
		}
		if (*c != '%' || !c[1]) {
			putchar(*c);
			continue;
		}
		/* %[flags][width][.precision]directive */
		size_t k = 0;

		spec[k++] = '%';
		c++;
		while (*c && strchr("-+ #0", *c) && k < 40)
			spec[k++] = *c++;
		while (*c && (strchr("0123456789.", *c)) && k < 60)
			spec[k++] = *c++;
		const char *s = val;
		int as_num = 0;
		long long num = 0;

		val[0] = 0;
		switch (*c) {
		case '%': putchar('%'); continue;
		case 'p': s = e->path; break;
		case 'f': s = e->name; break;
		case 'h': {
			/* GNU find 4.9: the part before the last component,
			 * trailing slashes taken off; a starting point of one
			 * component with trailing slashes keeps all but one */
			const char *p = e->path, *end = p + strlen(p), *b;

			while (end > p + 1 && end[-1] == '/')
				end--;
			b = end;
			while (b > p && b[-1] != '/')
				b--;
			if (b == p) {
				const char *sl = strrchr(p, '/');

				if (!sl)
					s = ".";
				else
					snprintf(val, sizeof(val), "%.*s", (int)(sl - p), p);
			} else {
				while (b > p && b[-1] == '/')
					b--;
				snprintf(val, sizeof(val), "%.*s", (int)(b - p), p);
			}
			break;
		}
		case 'P': {
			const char *p = e->path + e->start_len;

			s = *p == '/' ? p + 1 : p;
			break;
		}
		case 's': snprintf(val, sizeof(val), "%llu", (unsigned long long)e->at.size); break;
		case 'k':
			snprintf(val, sizeof(val), "%llu", (unsigned long long)(e->at.blocks + 1) / 2);
			break;
		case 'm': as_num = 'o'; num = e->at.mode & 07777; break;
		case 'M': mode_string(e->at.mode, val); break;
		case 'u': id_name(1, e->at.uid, val, sizeof(val)); break;
		case 'g': id_name(0, e->at.gid, val, sizeof(val)); break;
		case 'U': snprintf(val, sizeof(val), "%u", e->at.uid); break;
		case 'G': snprintf(val, sizeof(val), "%u", e->at.gid); break;
		case 'n': snprintf(val, sizeof(val), "%u", e->at.nlink); break;
		case 'i': snprintf(val, sizeof(val), "%llu", (unsigned long long)e->at.ino); break;
		case 'l': s = e->link ? e->link : ""; break;
		case 'd': as_num = 'd'; num = e->depth; break;
		case 'y': val[0] = type_letter(ftype(e)); val[1] = 0; break;
		case 't': {
			time_t t = (time_t)(e->at.mtime_ns / 1000000000);
			long ns = (long)(e->at.mtime_ns % 1000000000);
			struct tm tm;
			char a[64], b[16];

			if (ns < 0) {
				ns += 1000000000;
				t--;
			}
			localtime_r(&t, &tm);
			strftime(a, sizeof(a), "%a %b %e %H:%M:%S", &tm);
			strftime(b, sizeof(b), "%Y", &tm);
			snprintf(val, sizeof(val), "%s.%09ld0 %s", a, ns, b);
			break;
		}
		case 'T': {
			/* only %T@ (the parser lets no other through) */
			int64_t t = e->at.mtime_ns / 1000000000, ns = e->at.mtime_ns % 1000000000;

			if (ns < 0) {
				ns += 1000000000;
				t--;
			}
			c++;
			snprintf(val, sizeof(val), "%lld.%09lld0", (long long)t, (long long)ns);
			break;
		}
		default: putchar('%'); putchar(*c); continue;
		}
		spec[k++] = as_num ? (char)as_num : 's';
		spec[k] = 0;
		if (as_num == 'o')
			printf(spec, (unsigned)num);
		else if (as_num == 'd')
			printf(spec, (int)num);
		else
			printf(spec, s);
	}
}

/* ---- evaluation -------------------------------------------------------------- */

static int cmp_u64(uint64_t v, int cmp, uint64_t x)
{
	return cmp == ARF_FIND_LT ? v < x : cmp == ARF_FIND_GT ? v > x : v == x;
}

/* The name -name looks at: GNU find's base_name with trailing slashes
 * stripped ("/" stays "/"). */
static int name_match(const struct find_node *n, const struct find_ent *e)
{
	char buf[4096];
	const char *s = e->name;
	size_t l = strlen(s);

	if (l > 1 && s[l - 1] == '/' && l < sizeof(buf)) {
		while (l > 1 && s[l - 1] == '/')
			l--;
		memcpy(buf, s, l);
		buf[l] = 0;
		s = buf;
	}
	return fnmatch(n->str, s, n->icase ? FNM_CASEFOLD : 0) == 0;
}

int find_needs_type(const struct find_node *n)
{
	if (!n)
		return 0;
	if (n->kind == FK_PRINTF)
		for (const char *c = n->str; *c; c++)
			if (*c == '%' && c[1]) {
				c++;
				while (*c && strchr("-+ #0123456789.", *c))
					c++;
				if (*c == 'y')
					return 1;
				if (!*c)
					break;
			}
	return find_needs_type(n->l) || find_needs_type(n->r);
}

int find_needs_stat(const struct find_node *n)
{
	if (!n)
		return 0;
	switch (n->kind) {
	case FK_SIZE: case FK_TIME: case FK_UID: case FK_GID: case FK_PERM: case FK_EMPTY:
	case FK_LINKS: case FK_INUM:
		return 1;
	case FK_PRINTF:
		for (const char *c = n->str; *c; c++) {
			if (*c == '\\' && c[1]) {
				c++;
				continue;
			}
			if (*c != '%' || !c[1])
				continue;
			c++;
			while (*c && strchr("-+ #0123456789.", *c))
				c++;
			if (*c && !strchr("pfhPdy%", *c))
				return 1;
			if (!*c)
				break;
		}
		return 0;
	default:
		return find_needs_stat(n->l) || find_needs_stat(n->r);
	}
}

/* A test that needs what an entry without attributes lacks: GNU find
 * reports the failed stat once and the test is false. */
static int no_stat(struct find_run *run, const struct find_ent *e)
{
	if (!run->nostat_said) {
		find_err(run, e->path, -EACCES);
		run->nostat_said = 1;
	}
	return 0;
}

int find_eval(struct find_run *run, const struct find_node *n, const struct find_ent *e)
{
	const struct arf_prog_attr *a = &e->at;

	if (!e->has_attr) {
		switch (n->kind) {
		case FK_SIZE: case FK_TIME: case FK_UID: case FK_GID: case FK_PERM: case FK_EMPTY:
		case FK_LINKS: case FK_INUM:
			return no_stat(run, e);
		case FK_TYPE:
			if (!e->type)
				return no_stat(run, e);
			break;
		case FK_PRUNE: /* it looks at the type, except under -depth */
			if (!e->type && !run->o.depth_first)
				return no_stat(run, e);
			break;
		case FK_PRINTF:
			if (find_needs_stat(n) || (!e->type && find_needs_type(n)))
				return no_stat(run, e);
			break;
		default:
			break;
		}
	}
	switch (n->kind) {
	case FK_AND: return find_eval(run, n->l, e) && find_eval(run, n->r, e);
	case FK_OR: return find_eval(run, n->l, e) || find_eval(run, n->r, e);
	case FK_NOT: return !find_eval(run, n->l, e);
	case FK_COMMA: find_eval(run, n->l, e); return find_eval(run, n->r, e);
	case FK_TRUE: return 1;
	case FK_FALSE: return 0;
	case FK_NAME: return name_match(n, e);
	case FK_PATH: return fnmatch(n->str, e->path, n->icase ? FNM_CASEFOLD : 0) == 0;
	case FK_REGEX: {
		int len = (int)strlen(e->path);

		return re_match(n->re, e->path, len, 0, NULL) == len;
	}
	case FK_TYPE: return (n->which >> ftype(e)) & 1;
	case FK_SIZE: return cmp_u64((a->size + n->y - 1) / n->y, n->cmp, n->x);
	case FK_TIME: {
		int64_t t = n->which == 0 ? a->atime_ns : n->which == 1 ? a->ctime_ns : a->mtime_ns;

		return (int64_t)n->x < t && t <= (int64_t)n->y;
	}
	case FK_UID: return cmp_u64(a->uid, n->cmp, n->x);
	case FK_GID: return cmp_u64(a->gid, n->cmp, n->x);
	case FK_LINKS: return cmp_u64(a->nlink, n->cmp, n->x);
	case FK_INUM: return cmp_u64(a->ino, n->cmp, n->x);
	case FK_PERM: {
		uint64_t m = a->mode & 07777;

		return n->cmp == 0 ? m == n->x : n->cmp == 1 ? (m & n->x) == n->x
		       : n->x == 0 || (m & n->x);
	}
	case FK_EMPTY:
		if (ftype(e) == 8)
			return a->size == 0;
		if (ftype(e) != 4)
			return 0;
		if (e->empty < 0) {
			find_err(run, e->path, e->empty);
			return 0;
		}
		return e->empty == ARF_FIND_EMPTY_YES;
	case FK_PRINT:
		fputs(e->path, stdout);
		putchar('\n');
		return 1;
	case FK_PRINT0:
		fputs(e->path, stdout);
		putchar(0);
		return 1;
	case FK_PRINTF:
		printf_action(n->str, e);
		return 1;
	case FK_PRUNE:
		if (!run->o.depth_first)
			run->pruned = 1;
		return 1;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * arf-mctest — mobile-code workloads for tests/integration/test_mc.py,
 * driven by libarf against a real arfd:
 *
 *   arf-mctest chain URL NFILES     a directory with long hash chains (the
 *                                   server runs with a small dir_hash_mask):
 *                                   with max_hops 4 a lookup deep in a chain
 *                                   costs 1 execution and 0 requests, no round
 *                                   after the execution, and agrees with the
 *                                   one-sided walk and the LOOKUP request;
 *                                   instructions grow with chain length
 *   arf-mctest deep URL DEPTH       with resolve_exec_depth 8, a path DEPTH
 *                                   directories deep resolves in one
 *                                   execution from a cold client
 *   arf-mctest readdir URL NFILES   with readdir_exec_min 256, a large
 *                                   directory lists through the readdir
 *                                   program, the same as the LOOKUP-free
 *                                   request listing, attributes included
 *   arf-mctest policy URL NFILES DIR
 *                                   libarf's automatic thresholds on this
 *                                   URL's transport, applied to a deep chain
 *                                   position, a 32-deep path and DIR's
 *                                   listing: prints one JSON object with the
 *                                   policy and each operation's counters
 *                                   (test_mc.py says what each transport
 *                                   must show); fails only on wrong answers
 *   arf-mctest runaway URL          a program looping forever is stopped at its
 *                                   budget while another client reads and writes
 *   arf-mctest reload URL           a program evicted from the server's cache
 *                                   (cache_size = 1) is reloaded transparently
 *
 * Each prints what it measured and exits 0, or prints "FAIL: reason" and
 * exits 1.  A threshold passed as ARF_OPT_AUTO is left to libarf.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arf.h"
#include "arf_common.h"
#include "arf_prog_abi.h"
#include "arf_progs.h"

#define FAIL(...)                                   \
	do {                                        \
		fprintf(stdout, "FAIL: " __VA_ARGS__); \
		fprintf(stdout, "\n");              \
		exit(1);                            \
	} while (0)

#define AUTO ARF_OPT_AUTO

static arf_client *conn_opts(const char *url, struct arf_client_opts *o)
{
	char err[512];
	arf_client *c;

	o->spin_us = 0;
	if (arf_connect(url, o, &c, err, sizeof(err)))
		FAIL("connect %s: %s", url, err);
	return c;
}

static arf_client *conn(const char *url, int one_sided, uint32_t max_hops, int shipped)
{
	struct arf_client_opts o;

	arf_client_opts_init(&o);
	o.one_sided = one_sided;
	o.max_hops = max_hops;
	o.shipped_lookup = shipped;
	return conn_opts(url, &o);
}

/* Counters of one operation: after minus before. */
struct delta {
	uint64_t rounds, reads, requests, execs, fallbacks;
	uint64_t exec_hops, exec_path, exec_readdir, fb_hops, fb_policy, req_readdir, req_lookup;
};

static int kind_index(const char *name)
{
	for (int i = 0; i < ARF_NKINDS; i++)
		if (!strcmp(arf_request_kind_name(i), name))
			return i;
	FAIL("no request kind %s", name);
}

static struct delta diff(const struct arf_client_stats *a, const struct arf_client_stats *b)
{
	struct delta d;

	d.rounds = b->rounds - a->rounds;
	d.reads = b->one_sided_reads - a->one_sided_reads;
	d.requests = b->requests - a->requests;
	d.execs = b->execs - a->execs;
	d.fallbacks = b->fallbacks - a->fallbacks;
	d.exec_hops = b->execs_by_reason[ARF_EXEC_HOPS] - a->execs_by_reason[ARF_EXEC_HOPS];
	d.exec_path = b->execs_by_reason[ARF_EXEC_PATH] - a->execs_by_reason[ARF_EXEC_PATH];
	d.exec_readdir = b->execs_by_reason[ARF_EXEC_READDIR] - a->execs_by_reason[ARF_EXEC_READDIR];
	d.fb_hops = b->fallbacks_by_reason[ARF_FALLBACK_HOPS] - a->fallbacks_by_reason[ARF_FALLBACK_HOPS];
	d.fb_policy =
		b->fallbacks_by_reason[ARF_FALLBACK_POLICY] - a->fallbacks_by_reason[ARF_FALLBACK_POLICY];
	int kr = kind_index("readdir"), kl = kind_index("lookup");
	d.req_readdir = b->requests_by_kind[kr] - a->requests_by_kind[kr];
	d.req_lookup = b->requests_by_kind[kl] - a->requests_by_kind[kl];
	return d;
}

static void print_delta(const char *name, const struct delta *d, int comma)
{
	printf("\"%s\": {\"rounds\": %" PRIu64 ", \"reads\": %" PRIu64 ", \"requests\": %" PRIu64
	       ", \"execs\": %" PRIu64 ", \"fallbacks\": %" PRIu64 ", \"execs_hops\": %" PRIu64
	       ", \"execs_path\": %" PRIu64 ", \"execs_readdir\": %" PRIu64
	       ", \"fallbacks_hops\": %" PRIu64 ", \"fallbacks_policy\": %" PRIu64
	       ", \"requests_readdir\": %" PRIu64 ", \"requests_lookup\": %" PRIu64 "}%s\n",
	       name, d->rounds, d->reads, d->requests, d->execs, d->fallbacks, d->exec_hops,
	       d->exec_path, d->exec_readdir, d->fb_hops, d->fb_policy, d->req_readdir,
	       d->req_lookup, comma ? "," : "");
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The shipped chain lookup run directly: hops and instructions. */
static int probe(arf_client *c, uint64_t dir, const char *name, uint32_t *hops, uint64_t *insns)
{
	const struct arf_std_prog_image *im = &arf_std_progs[ARF_STD_PROG_LOOKUP];
	struct arf_prog_lookup_arg a;
	struct arf_prog_lookup_out o;
	struct arf_exec_result res;

	memset(&a, 0, sizeof(a));
	a.dir = dir;
	a.namelen = (uint32_t)strlen(name);
	memcpy(a.name, name, a.namelen);
	int rc = arf_exec(c, im->elf, im->len, &a, sizeof(a), &o, sizeof(o), &res);
	if (rc)
		FAIL("exec lookup %s: %s (%s)", name, res.msg, arf_strerror(rc));
	if (res.r0)
		FAIL("lookup program on %s returned %" PRId64, name, res.r0);
	*hops = o.hops;
	*insns = res.insns;
	return 0;
}

static int cmd_chain(const char *url, int nfiles)
{
	arf_client *w = conn(url, 1, AUTO, 1);
	struct arf_stat root, dir, st;
	char name[64];
	int rc;

	if ((rc = arf_root(w, &root)) || (rc = arf_mkdir(w, root.ino, root.gen, "chain", 0755, &dir)))
		FAIL("mkdir chain: %s", arf_strerror(rc));
	for (int i = 0; i < nfiles; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		if ((rc = arf_create(w, dir.ino, dir.gen, name, 0644, 1, &st)))
			FAIL("create %s: %s", name, arf_strerror(rc));
	}
	/* chain positions and the program's instructions, name by name */
	uint32_t *hops = calloc((size_t)nfiles, sizeof(*hops));
	uint64_t *insns = calloc((size_t)nfiles, sizeof(*insns));
	uint32_t maxh = 0;
	int deep = -1, deep2 = -1;
	for (int i = 0; i < nfiles; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		probe(w, dir.ino, name, &hops[i], &insns[i]);
		if (hops[i] >= maxh) {
			deep2 = deep;
			maxh = hops[i];
			deep = i;
		}
	}
	if (maxh < 20)
		FAIL("longest chain is %u entries: dir_hash_mask did not make long chains", maxh);
	/* instructions grow with the chain: the walking is the program's */
	uint64_t sum[4096] = { 0 }, cnt[4096] = { 0 };
	for (int i = 0; i < nfiles; i++)
		if (hops[i] < 4096) {
			sum[hops[i]] += insns[i];
			cnt[hops[i]]++;
		}
	printf("hops insns (mean over names at that depth)\n");
	double prev = 0;
	int points = 0;
	uint32_t hmin = 0; /* the shortest position seen (1 may be taken by other names) */
	for (uint32_t h = 1; h <= maxh; h++) {
		if (!cnt[h])
			continue;
		if (!hmin)
			hmin = h;
		double mean = (double)sum[h] / (double)cnt[h];
		if (h <= 4 || h % 10 == 0 || h == maxh)
			printf("%4u %8.1f\n", h, mean);
		if (points && mean <= prev)
			FAIL("instructions did not grow with chain length at %u hops (%.1f <= %.1f)", h,
			     mean, prev);
		prev = mean;
		points++;
	}
	if (maxh - hmin < 10)
		FAIL("positions %u to %u: too few to measure instructions per hop", hmin, maxh);
	double per_hop =
		((double)sum[maxh] / (double)cnt[maxh] - (double)sum[hmin] / (double)cnt[hmin]) /
		(double)(maxh - hmin);
	printf("about %.1f instructions per hop\n", per_hop);
	if (per_hop < 10)
		FAIL("%.1f instructions per hop: is a helper walking the chain?", per_hop);

	/* a cold client (programs already loaded on the server by w) */
	snprintf(name, sizeof(name), "f%05d", deep);
	arf_client *c = conn(url, 1, 4, 1);
	struct arf_client_stats s0, s1;
	struct arf_stat a, b, r;
	char warm[64];
	snprintf(warm, sizeof(warm), "f%05d", deep2); /* warms up the load of the program */
	if ((rc = arf_lookup(c, dir.ino, dir.gen, warm, &a)))
		FAIL("lookup %s: %s", warm, arf_strerror(rc));
	arf_stats(c, &s0);
	if ((rc = arf_lookup(c, dir.ino, dir.gen, name, &a)))
		FAIL("lookup %s: %s", name, arf_strerror(rc));
	arf_stats(c, &s1);
	uint64_t execs = s1.execs - s0.execs, reqs = s1.requests - s0.requests;
	uint64_t rounds = s1.rounds - s0.rounds;
	printf("lookup of %s (%u hops) with max_hops 4: %" PRIu64 " execution(s), %" PRIu64
	       " request(s), %" PRIu64 " one-sided reads in %" PRIu64 " rounds\n", name, maxh, execs,
	       reqs, s1.one_sided_reads - s0.one_sided_reads, rounds);
	if (execs != 1 || reqs != 0)
		FAIL("expected 1 execution and 0 requests, got %" PRIu64 " and %" PRIu64, execs, reqs);
	/* the walk reads the bucket and 4 more entries; the execution brings the
	 * child's attributes, so no round follows it */
	if (rounds != 5)
		FAIL("expected the 5 rounds of the walk and none after the execution, got %" PRIu64,
		     rounds);
	if (s1.execs_by_reason[ARF_EXEC_HOPS] - s0.execs_by_reason[ARF_EXEC_HOPS] != 1)
		FAIL("execution not counted under reason 'hops'");
	if (s1.fallbacks_by_reason[ARF_FALLBACK_HOPS] == s0.fallbacks_by_reason[ARF_FALLBACK_HOPS])
		FAIL("fallback for 'hops' not counted");
	/* the same answer as the one-sided walk, and as the server's LOOKUP */
	arf_client *os = conn(url, 1, 100000, 0), *rq = conn(url, 0, AUTO, 1);
	if ((rc = arf_lookup(os, dir.ino, dir.gen, name, &b)))
		FAIL("one-sided lookup %s: %s", name, arf_strerror(rc));
	if ((rc = arf_lookup(rq, dir.ino, dir.gen, name, &r)))
		FAIL("request lookup %s: %s", name, arf_strerror(rc));
	struct arf_client_stats so;
	arf_stats(os, &so);
	if (so.execs || so.requests)
		FAIL("the one-sided walk used %" PRIu64 " executions and %" PRIu64 " requests",
		     so.execs, so.requests);
	if (a.ino != b.ino || a.gen != b.gen || a.mode != b.mode || a.ino != r.ino || a.gen != r.gen)
		FAIL("answers differ: shipped %" PRIu64 "/%u, one-sided %" PRIu64 "/%u, request %" PRIu64
		     "/%u", a.ino, a.gen, b.ino, b.gen, r.ino, r.gen);
	if (a.uid != b.uid || a.size != b.size || a.nlink != b.nlink || a.mtime_ns != b.mtime_ns)
		FAIL("the shipped lookup's attributes differ from the inode's");
	/* a name that is not there: ENOENT from the program too */
	if ((rc = arf_lookup(c, dir.ino, dir.gen, "no-such-name", &a)) != -ENOENT)
		FAIL("lookup of a missing name: %s", arf_strerror(rc));
	/* round trips per lookup when shipping at once (max_hops 0): the bucket,
	 * then the execution, as many as the bucket and a LOOKUP request */
	arf_client *s0c = conn(url, 1, 0, 1), *r0c = conn(url, 1, 0, 0);
	struct arf_stat x;
	arf_stats(s0c, &s0);
	if ((rc = arf_lookup(s0c, dir.ino, dir.gen, name, &x)) || x.ino != b.ino)
		FAIL("shipped-at-once lookup %s: %s", name, arf_strerror(rc));
	arf_stats(s0c, &s1);
	struct delta ds = diff(&s0, &s1);
	arf_stats(r0c, &s0);
	if ((rc = arf_lookup(r0c, dir.ino, dir.gen, name, &x)) || x.ino != b.ino)
		FAIL("bucket-then-LOOKUP lookup %s: %s", name, arf_strerror(rc));
	arf_stats(r0c, &s1);
	struct delta dr = diff(&s0, &s1);
	printf("max_hops 0: shipped %" PRIu64 " round(s) + %" PRIu64 " execution(s); LOOKUP %" PRIu64
	       " round(s) + %" PRIu64 " request(s)\n", ds.rounds, ds.execs, dr.rounds, dr.requests);
	if (ds.rounds != 1 || ds.execs != 1 || ds.requests != 0)
		FAIL("shipped at once: expected 1 round and 1 execution");
	if (dr.rounds != 1 || dr.requests != 1 || dr.req_lookup != 1)
		FAIL("bucket then LOOKUP: expected 1 round and 1 LOOKUP request");
	arf_close(s0c);
	arf_close(r0c);
	printf("same answer from the shipped lookup, the one-sided walk and LOOKUP: ino %" PRIu64
	       " gen %u\n", b.ino, b.gen);
	arf_close(c);
	arf_close(os);
	arf_close(rq);
	arf_close(w);
	free(hops);
	free(insns);
	return 0;
}

/* depth directories d00, d01, ... under *d and a file "leaf" in the last,
 * their names appended to path (cap bytes); *d becomes the last directory. */
static void make_deep(arf_client *w, struct arf_stat *d, int depth, char *path, size_t cap,
		      struct arf_stat *leaf)
{
	char name[32];
	int rc;

	for (int i = 0; i < depth; i++) {
		snprintf(name, sizeof(name), "d%02d", i);
		if ((rc = arf_mkdir(w, d->ino, d->gen, name, 0755, d)))
			FAIL("mkdir %s: %s", name, arf_strerror(rc));
		strncat(path, "/", cap - strlen(path) - 1);
		strncat(path, name, cap - strlen(path) - 1);
	}
	if ((rc = arf_create(w, d->ino, d->gen, "leaf", 0640, 1, leaf)))
		FAIL("create leaf: %s", arf_strerror(rc));
	strncat(path, "/leaf", cap - strlen(path) - 1);
}

static int cmd_deep(const char *url, int depth)
{
	arf_client *w = conn(url, 1, AUTO, 1);
	struct arf_stat d, f, got;
	char path[4096] = "";
	int rc;

	if ((rc = arf_root(w, &d)))
		FAIL("root: %s", arf_strerror(rc));
	make_deep(w, &d, depth, path, sizeof(path), &f);

	/* the threshold is explicit: it must hold on every transport */
	struct arf_client_opts o;
	arf_client_opts_init(&o);
	o.resolve_exec_depth = 8;
	arf_client *c = conn_opts(url, &o);
	struct arf_client_stats s0, s1;
	arf_stats(c, &s0);
	if ((rc = arf_resolve(c, path, &got)))
		FAIL("resolve %s: %s", path, arf_strerror(rc));
	arf_stats(c, &s1);
	uint64_t execs = s1.execs - s0.execs, reqs = s1.requests - s0.requests;
	printf("resolve of a path %d directories deep: %" PRIu64 " execution(s), %" PRIu64
	       " request(s), %" PRIu64 " one-sided reads, %" PRIu64 " instructions\n", depth, execs,
	       reqs, s1.one_sided_reads - s0.one_sided_reads, s1.exec_insns - s0.exec_insns);
	if (execs != 1 || reqs != 0)
		FAIL("expected 1 execution and 0 requests, got %" PRIu64 " and %" PRIu64, execs, reqs);
	if (s1.execs_by_reason[ARF_EXEC_PATH] != 1)
		FAIL("execution not counted under reason 'path'");
	if (got.ino != f.ino || got.gen != f.gen || got.mode != f.mode || got.uid != f.uid)
		FAIL("resolve gave ino %" PRIu64 " mode %o, expected %" PRIu64 " mode %o", got.ino,
		     got.mode, f.ino, f.mode);
	/* again: what the entry cache holds is not asked for twice, and never
	 * by a request */
	arf_stats(c, &s0);
	if ((rc = arf_resolve(c, path, &got)) || got.ino != f.ino)
		FAIL("second resolve: %s", arf_strerror(rc));
	arf_stats(c, &s1);
	if (s1.execs - s0.execs > 1 || s1.requests != s0.requests)
		FAIL("second resolve ran %" PRIu64 " program(s) and %" PRIu64 " request(s)",
		     s1.execs - s0.execs, s1.requests - s0.requests);
	/* missing leaf: ENOENT */
	strcat(path, "x");
	arf_client_opts_init(&o);
	o.resolve_exec_depth = 8;
	arf_client *c2 = conn_opts(url, &o);
	if ((rc = arf_resolve(c2, path, &got)) != -ENOENT)
		FAIL("resolve of a missing name: %s", arf_strerror(rc));
	printf("attributes match; second walk took no request; missing leaf: ENOENT\n");
	arf_close(c2);
	arf_close(c);
	arf_close(w);
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct arf_dirent *)a)->name, ((const struct arf_dirent *)b)->name);
}

static size_t list(arf_client *c, uint64_t ino, uint32_t gen, struct arf_dirent *all,
		   struct arf_stat *st, size_t cap)
{
	uint64_t cookie = 0;
	size_t n = 0;
	int eof = 0;

	while (!eof && n < cap) {
		size_t got = 0;
		size_t want = cap - n < 100 ? cap - n : 100; /* several batches */
		int rc = st ? arf_readdirplus(c, ino, gen, cookie, all + n, st + n, want, &got, &eof)
			    : arf_readdir(c, ino, gen, cookie, all + n, want, &got, &eof);
		if (rc)
			FAIL("readdir: %s", arf_strerror(rc));
		if (!got)
			break;
		n += got;
		cookie = all[n - 1].cookie;
	}
	return n;
}

static int cmd_readdir(const char *url, int nfiles)
{
	arf_client *w = conn(url, 1, AUTO, 1);
	struct arf_stat root, dir, st;
	char name[64];
	int rc;

	if ((rc = arf_root(w, &root)) || (rc = arf_mkdir(w, root.ino, root.gen, "big", 0755, &dir)))
		FAIL("mkdir big: %s", arf_strerror(rc));
	for (int i = 0; i < nfiles; i++) {
		snprintf(name, sizeof(name), "entry-%05d", i);
		if ((rc = arf_create(w, dir.ino, dir.gen, name, 0600 | (i & 7) << 6, 1, &st)))
			FAIL("create %s: %s", name, arf_strerror(rc));
	}
	size_t cap = (size_t)nfiles + 10;
	struct arf_dirent *a = calloc(cap, sizeof(*a)), *b = calloc(cap, sizeof(*b));
	struct arf_stat *sa = calloc(cap, sizeof(*sa));
	/* the threshold is explicit: it must hold on every transport */
	struct arf_client_opts o;
	arf_client_opts_init(&o);
	o.readdir_exec_min = 256;
	arf_client *c = conn_opts(url, &o), *rq = conn(url, 0, AUTO, 1);
	struct arf_client_stats s;
	size_t na = list(c, dir.ino, dir.gen, a, sa, cap);
	arf_stats(c, &s);
	size_t nb = list(rq, dir.ino, dir.gen, b, NULL, cap);
	printf("readdirplus of %d entries: %" PRIu64 " execution(s), %" PRIu64
	       " request(s), %" PRIu64 " one-sided reads, %" PRIu64 " instructions\n", nfiles,
	       s.execs, s.requests, s.one_sided_reads, s.exec_insns);
	if (na != (size_t)nfiles || nb != (size_t)nfiles)
		FAIL("listed %zu (program) and %zu (requests) of %d", na, nb, nfiles);
	if (s.execs_by_reason[ARF_EXEC_READDIR] == 0 || s.requests)
		FAIL("the listing did not go through the readdir program alone");
	for (size_t i = 0; i < na; i++) {
		struct arf_stat g;
		if (!sa[i].ino)
			FAIL("no attributes for %s", a[i].name);
		if ((rc = arf_getattr(rq, a[i].ino, a[i].gen, &g)) || g.mode != sa[i].mode ||
		    g.ino != sa[i].ino || g.uid != sa[i].uid || g.size != sa[i].size)
			FAIL("attributes of %s differ from GETATTR's", a[i].name);
	}
	qsort(a, na, sizeof(*a), cmp_name);
	qsort(b, nb, sizeof(*b), cmp_name);
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i].name, b[i].name) || a[i].ino != b[i].ino || a[i].type != b[i].type)
			FAIL("entry %zu differs: %s / %s", i, a[i].name, b[i].name);
	printf("same entries as READDIR requests, attributes as GETATTR\n");
	arf_close(c);
	arf_close(rq);
	arf_close(w);
	free(a);
	free(b);
	free(sa);
	return 0;
}

/* ---- the automatic policy of one transport ---- */

/* List dir in batches of 128 (as arf-fuse asks); every entry must be in
 * ref (sorted by name) with the same inode, and the count must match. */
static void list_check(arf_client *c, uint64_t ino, uint32_t gen, int plus,
		       const struct arf_dirent *ref, size_t nref, arf_client *rq)
{
	struct arf_dirent *all = calloc(nref + 1, sizeof(*all));
	struct arf_stat *st = calloc(nref + 1, sizeof(*st));
	uint64_t cookie = 0;
	size_t n = 0;
	int eof = 0;

	if (!all || !st)
		FAIL("out of memory");
	while (!eof && n <= nref) {
		size_t got = 0, want = nref + 1 - n < 128 ? nref + 1 - n : 128;
		int rc = plus ? arf_readdirplus(c, ino, gen, cookie, all + n, st + n, want, &got, &eof)
			      : arf_readdir(c, ino, gen, cookie, all + n, want, &got, &eof);
		if (rc)
			FAIL("%s: %s", plus ? "readdirplus" : "readdir", arf_strerror(rc));
		if (!got)
			break;
		n += got;
		cookie = all[n - 1].cookie;
	}
	if (n != nref)
		FAIL("%s listed %zu entries, READDIR requests %zu", plus ? "readdirplus" : "readdir", n,
		     nref);
	for (size_t i = 0; i < n; i++) {
		const struct arf_dirent *r = bsearch(&all[i], ref, nref, sizeof(*ref), cmp_name);
		if (!r || r->ino != all[i].ino || r->gen != all[i].gen)
			FAIL("entry %s is not the one READDIR requests list", all[i].name);
		if (plus && i % 16 == 0) { /* a sample: each check is a GETATTR request */
			struct arf_stat g;
			int rc = arf_getattr(rq, all[i].ino, all[i].gen, &g);
			if (rc || !st[i].ino || g.ino != st[i].ino || g.mode != st[i].mode ||
			    g.size != st[i].size)
				FAIL("attributes of %s differ from GETATTR's", all[i].name);
		}
	}
	free(all);
	free(st);
}

static int cmd_policy(const char *url, int nfiles, const char *dirname)
{
	arf_client *w = conn(url, 1, AUTO, 1), *rq = conn(url, 0, AUTO, 1);
	struct arf_stat root, dir, d, leaf, st, got, want;
	struct arf_client_stats s0, s1;
	char name[64], path[1024];
	uint32_t maxh = 0, h;
	uint64_t insns;
	int rc, deep = 0;
	const int depth = 32;

	if ((rc = arf_root(w, &root)) || (rc = arf_mkdir(w, root.ino, root.gen, dirname, 0755, &dir)))
		FAIL("mkdir %s: %s", dirname, arf_strerror(rc));
	for (int i = 0; i < nfiles; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		if ((rc = arf_create(w, dir.ino, dir.gen, name, 0644, 1, &st)))
			FAIL("create %s: %s", name, arf_strerror(rc));
	}
	/* a path depth directories deep inside dir: dir/p/d00/.../leaf */
	snprintf(path, sizeof(path), "/%s/p", dirname);
	if ((rc = arf_mkdir(w, dir.ino, dir.gen, "p", 0755, &d)))
		FAIL("mkdir p: %s", arf_strerror(rc));
	make_deep(w, &d, depth, path, sizeof(path), &leaf);
	/* the deepest chain position among dir's files */
	for (int i = 0; i < nfiles; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		probe(w, dir.ino, name, &h, &insns);
		if (h > maxh) {
			maxh = h;
			deep = i;
		}
	}
	snprintf(name, sizeof(name), "f%05d", deep);
	/* what READDIR requests list, the reference */
	size_t cap = (size_t)nfiles + 2, nref = 0;
	struct arf_dirent *ref = calloc(cap, sizeof(*ref));
	if (!ref)
		FAIL("out of memory");
	nref = list(rq, dir.ino, dir.gen, ref, NULL, cap);
	qsort(ref, nref, sizeof(*ref), cmp_name);

	/* a cold client with every threshold left to libarf */
	struct arf_client_opts o;
	struct arf_client_policy pol;
	arf_client_opts_init(&o);
	arf_client *c = conn_opts(url, &o);
	arf_client_policy(c, &pol);
	if (pol.from_transport != (ARF_POLICY_MAX_HOPS | ARF_POLICY_RESOLVE_EXEC |
				   ARF_POLICY_READDIR_EXEC | ARF_POLICY_READDIR_REQ))
		FAIL("policy says not every threshold came from the transport (0x%x)",
		     pol.from_transport);

	arf_stats(c, &s0);
	if ((rc = arf_lookup(c, dir.ino, dir.gen, name, &got)))
		FAIL("lookup %s: %s", name, arf_strerror(rc));
	arf_stats(c, &s1);
	struct delta dl = diff(&s0, &s1);
	if ((rc = arf_lookup(rq, dir.ino, dir.gen, name, &want)) || got.ino != want.ino ||
	    got.gen != want.gen || got.mode != want.mode || got.size != want.size)
		FAIL("lookup of %s differs from LOOKUP's (%s)", name, arf_strerror(rc));

	arf_stats(c, &s0);
	if ((rc = arf_resolve(c, path, &got)))
		FAIL("resolve %s: %s", path, arf_strerror(rc));
	arf_stats(c, &s1);
	struct delta dr = diff(&s0, &s1);
	if (got.ino != leaf.ino || got.gen != leaf.gen || got.mode != leaf.mode)
		FAIL("resolve of %s gave ino %" PRIu64 ", expected %" PRIu64, path, got.ino, leaf.ino);

	arf_stats(c, &s0);
	list_check(c, dir.ino, dir.gen, 0, ref, nref, rq);
	arf_stats(c, &s1);
	struct delta dd = diff(&s0, &s1);
	arf_stats(c, &s0);
	list_check(c, dir.ino, dir.gen, 1, ref, nref, rq);
	arf_stats(c, &s1);
	struct delta dp = diff(&s0, &s1);
	/* a client given no regions (not root): requests alone */
	arf_stats(rq, &s0);
	list_check(rq, dir.ino, dir.gen, 1, ref, nref, rq);
	arf_stats(rq, &s1);
	struct delta dq = diff(&s0, &s1);

	printf("{\"transport\": \"%s\",\n\"policy\": {\"max_hops\": %u, \"resolve_exec_depth\": %u, "
	       "\"readdir_exec_min\": %u, \"readdirplus_exec_min\": %u, \"readdir_req_min\": %u},\n"
	       "\"chain_position\": %u, \"components\": %d, \"entries\": %zu,\n", arf_transport(c),
	       pol.max_hops, pol.resolve_exec_depth, pol.readdir_exec_min, pol.readdirplus_exec_min,
	       pol.readdir_req_min, maxh, depth + 3, nref);
	print_delta("lookup", &dl, 1);
	print_delta("resolve", &dr, 1);
	print_delta("readdir", &dd, 1);
	print_delta("readdirplus", &dp, 1);
	print_delta("readdirplus_requests_only", &dq, 0);
	printf("}\n");
	arf_close(c);
	arf_close(rq);
	arf_close(w);
	free(ref);
	return 0;
}

/* ---- runaway ---- */

struct other {
	const char *url;
	volatile int stop;
	uint64_t ops, max_ms;
	int failed;
	char why[256];
};

static void *other_client(void *arg)
{
	struct other *o = arg;
	arf_client *c = conn(o->url, 1, AUTO, 1);
	struct arf_stat root, f, st;
	char buf[64], name[32];
	int rc;

	if ((rc = arf_root(c, &root)))
		goto fail;
	for (uint64_t i = 0; !o->stop; i++) {
		uint64_t t0 = now_ms();
		snprintf(name, sizeof(name), "other-%d-%" PRIu64, (int)getpid(), i);
		if ((rc = arf_create(c, root.ino, root.gen, name, 0644, 1, &f)))
			goto fail;
		if (arf_write(c, f.ino, f.gen, 0, name, strlen(name)) != (ssize_t)strlen(name)) {
			rc = -EIO;
			goto fail;
		}
		ssize_t n = arf_read(c, f.ino, f.gen, 0, buf, sizeof(buf));
		if (n != (ssize_t)strlen(name) || memcmp(buf, name, (size_t)n)) {
			rc = -EIO;
			goto fail;
		}
		if ((rc = arf_getattr(c, f.ino, f.gen, &st)))
			goto fail;
		uint64_t dt = now_ms() - t0;
		if (dt > o->max_ms)
			o->max_ms = dt;
		o->ops++;
	}
	arf_close(c);
	return NULL;
fail:
	o->failed = 1;
	snprintf(o->why, sizeof(o->why), "%s", arf_strerror(rc));
	arf_close(c);
	return NULL;
}

static int cmd_runaway(const char *url)
{
	/* mov r0, 0; loop: add r0, 1; ja loop */
	static const uint8_t loop[] = {
		0xb7, 0x00, 0, 0, 0, 0, 0, 0,
		0x07, 0x00, 0, 0, 1, 0, 0, 0,
		0x05, 0x00, 0xfe, 0xff, 0, 0, 0, 0,
	};
	struct other o = { .url = url };
	struct arf_exec_result res;
	pthread_t t;
	arf_client *c = conn(url, 1, AUTO, 1);

	pthread_create(&t, NULL, other_client, &o);
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	nanosleep(&ts, NULL); /* the other client is going */
	uint64_t before = o.ops, t0 = now_ms();
	int rc = arf_exec(c, loop, sizeof(loop), NULL, 0, NULL, 0, &res);
	uint64_t ran = now_ms() - t0, during = o.ops - before;
	o.stop = 1;
	pthread_join(t, NULL);
	printf("runaway: %s after %" PRIu64 " ms, %" PRIu64 " instructions: \"%s\"\n",
	       arf_strerror(rc), ran, res.insns, res.msg);
	printf("meanwhile the other client did %" PRIu64 " create+write+read+getattr rounds, "
	       "slowest %" PRIu64 " ms\n", during, o.max_ms);
	if (rc != ARF_EBUDGET)
		FAIL("expected ARF_EBUDGET, got %s", arf_strerror(rc));
	if (!strstr(res.msg, "instruction ") ||
	    (!strstr(res.msg, "budget") && !strstr(res.msg, "wall-clock")))
		FAIL("unclear message: %s", res.msg);
	if (o.failed)
		FAIL("the other client failed: %s", o.why);
	if (during < 10)
		FAIL("the other client made only %" PRIu64 " rounds while the program ran", during);
	if (o.max_ms * 2 > ran)
		FAIL("the other client waited %" PRIu64 " ms of the %" PRIu64 " ms run", o.max_ms, ran);
	/* the server still serves programs afterwards */
	struct arf_stat root;
	if ((rc = arf_root(c, &root)))
		FAIL("after the runaway: %s", arf_strerror(rc));
	arf_close(c);
	return 0;
}

static int cmd_reload(const char *url)
{
	arf_client *c = conn(url, 1, AUTO, 1);
	struct arf_client_stats s;
	struct arf_exec_result res;
	static const uint8_t ret7[] = { 0xb7, 0, 0, 0, 7, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t ret9[] = { 0xb7, 0, 0, 0, 9, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0 };
	int rc;

	for (int round = 0; round < 3; round++) {
		if ((rc = arf_exec(c, ret7, sizeof(ret7), NULL, 0, NULL, 0, &res)) || res.r0 != 7)
			FAIL("ret7 round %d: %s %s", round, arf_strerror(rc), res.msg);
		/* evicts ret7 from a one-program cache */
		if ((rc = arf_exec(c, ret9, sizeof(ret9), NULL, 0, NULL, 0, &res)) || res.r0 != 9)
			FAIL("ret9 round %d: %s %s", round, arf_strerror(rc), res.msg);
	}
	arf_stats(c, &s);
	printf("6 runs of 2 programs through a 1-program cache: %" PRIu64 " loads, %" PRIu64
	       " executions\n", s.prog_loads, s.execs);
	if (s.execs != 6 || s.prog_loads != 6)
		FAIL("expected 6 executions and 6 loads");
	arf_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: arf-mctest chain|deep|readdir|runaway|reload URL [N]\n"
				"       arf-mctest policy URL NFILES DIR\n");
		return 2;
	}
	const char *cmd = argv[1], *url = argv[2];
	if (!strcmp(cmd, "chain") && argc == 4)
		return cmd_chain(url, atoi(argv[3]));
	if (!strcmp(cmd, "deep") && argc == 4)
		return cmd_deep(url, atoi(argv[3]));
	if (!strcmp(cmd, "readdir") && argc == 4)
		return cmd_readdir(url, atoi(argv[3]));
	if (!strcmp(cmd, "policy") && argc == 5)
		return cmd_policy(url, atoi(argv[3]), argv[4]);
	if (!strcmp(cmd, "runaway") && argc == 3)
		return cmd_runaway(url);
	if (!strcmp(cmd, "reload") && argc == 3)
		return cmd_reload(url);
	fprintf(stderr, "arf-mctest: bad arguments\n");
	return 2;
}

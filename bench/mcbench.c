/* SPDX-License-Identifier: MIT */
/*
 * mcbench — mobile-code benchmarks for bench/bench.py, two parts:
 *
 *   mcbench kernels KERNELS.o [--secs S]
 *       The kernels of bench/mckernels.c (a byte scan, a hash-chain walk, a
 *       DFA table loop, the loop-free checksum and header parse, and an
 *       empty program that shows what a run costs before any work), run
 *       as eBPF in ARF's interpreter (mobilecode/, arf_mc_run_interp), in
 *       ARF's JIT (arf_mc_prog_jit: native code that keeps the bounds checks
 *       and the budget), and as the same C compiled natively, and — when
 *       built with -DMCB_HAVE_DPDK —
 *       the loop-free ones in DPDK's librte_bpf interpreter (rte_bpf_exec)
 *       and JIT (rte_bpf_get_jit).  DPDK's validator takes only loop-free
 *       programs without local calls, so the loops are not offered to it.
 *       Every engine must give the native result, or the run fails.
 *
 *   mcbench chain [--secs S] [--files N] [--hops LIST] URL...
 *       Against an arfd started with a small regions.dir_hash_mask (long
 *       hash chains): makes /mcchain with N files on the first URL, finds a
 *       name at each chain position in LIST (the shipped chain lookup says
 *       where each name sits), then times arf_lookup of that name, with
 *       libarf's caches off, per URL (transport) and strategy:
 *         onesided  one-sided reads only (no hop limit, no programs)
 *         shipped   ship the chain lookup at once (max_hops 0: one read of
 *                   the bucket, then one execution)
 *         request   plain LOOKUP requests only
 *         hybrid    libarf's defaults (one-sided up to max_hops, then ship)
 *       with the client's counters (arf_stats) per lookup.
 *
 *   mcbench listing [--secs S] [--sizes LIST] URL...
 *       Makes /mclist/dN with N files for each N in LIST (on the first URL),
 *       then times listing each whole directory with arf_readdir and with
 *       arf_readdirplus (attributes), caches off, per URL (transport) and
 *       strategy: onesided (the listing pages, each child's inode), request
 *       (READDIR requests; a child's inode still one-sided), shipped (the
 *       readdir program, one execution a batch) and auto (libarf's
 *       defaults for the transport), with the counters of one listing.
 *
 * Output: one JSON object per line and measurement, for bench.py; a line
 * {"kind": "note", ...} says what could not be measured and why.  Each
 * figure is the best of several batches (the machine is shared): kernels,
 * 5 batches of about S/5 seconds; chain lookups, 9 of about S/9 seconds
 * per strategy, the four strategies' batches interleaved at each position.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arf.h"
#include "arf_mc.h"
#include "arf_prog_abi.h"
#include "arf_progs.h"
#include "mckernels.h"

#ifdef MCB_HAVE_DPDK
#include <rte_bpf.h>
#include <rte_errno.h>
#endif

#define BATCHES 5        /* kernels: best of 5 batches */
#define CHAIN_BATCHES 9  /* chain lookups: best of 9, the strategies interleaved */

static double secs = 1.0;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "mcbench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void note(const char *what, const char *why)
{
	printf("{\"kind\": \"note\", \"what\": \"%s\", \"why\": \"", what);
	for (const char *p = why; *p; p++)
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if ((unsigned char)*p >= 0x20)
			putchar(*p);
	printf("\"}\n");
	fflush(stdout);
}

/* ---- timing ---------------------------------------------------------------- */

/* One way of running a kernel: returns its result. */
typedef uint64_t (*runner_fn)(void *state, void *ctx);

/* Seconds that iters calls of fn take. */
static double time_batch(runner_fn fn, void *state, void *ctx, uint64_t iters)
{
	double t = now_s();
	for (uint64_t i = 0; i < iters; i++)
		fn(state, ctx);
	return now_s() - t;
}

/* Calls of fn that take about batch_s seconds (doubling until a trial
 * takes a quarter of that, then scaling). */
static uint64_t calibrate(runner_fn fn, void *state, void *ctx, double batch_s)
{
	uint64_t iters = 1;
	double t;
	for (;;) {
		t = time_batch(fn, state, ctx, iters);
		if (t > batch_s / 4 || iters > (1ull << 34))
			break;
		iters *= 2;
	}
	return (uint64_t)((double)iters * batch_s / (t > 0 ? t : 1e-9)) + 1;
}

/* Best-of-BATCHES nanoseconds per call of fn, batches of about secs/BATCHES. */
static double time_ns(runner_fn fn, void *state, void *ctx)
{
	uint64_t iters = calibrate(fn, state, ctx, secs / BATCHES);
	double best = 1e300;
	for (int b = 0; b < BATCHES; b++) {
		double t = time_batch(fn, state, ctx, iters);
		if (t < best)
			best = t;
	}
	return best * 1e9 / (double)iters;
}

/*
 * Nanoseconds per call of fn for each of n states (elements of size bytes
 * at states), best of CHAIN_BATCHES batches of about secs/CHAIN_BATCHES
 * each, the states' batches interleaved so that all of them see the same
 * moments of a shared, noisy machine.  Each state runs once untimed first
 * (a program loaded, a connection warm).
 */
static void time_interleaved(runner_fn fn, void *states, size_t size, int n, double *ns_op)
{
	uint64_t iters[8];
	double best[8];

	if (n > 8)
		die("time_interleaved: %d states (at most 8)", n);
	for (int s = 0; s < n; s++) {
		void *st = (char *)states + (size_t)s * size;

		fn(st, NULL);
		iters[s] = calibrate(fn, st, NULL, secs / CHAIN_BATCHES);
		best[s] = 1e300;
	}
	for (int b = 0; b < CHAIN_BATCHES; b++)
		for (int s = 0; s < n; s++) {
			double t = time_batch(fn, (char *)states + (size_t)s * size, NULL, iters[s]);
			if (t < best[s])
				best[s] = t;
		}
	for (int s = 0; s < n; s++)
		ns_op[s] = best[s] * 1e9 / (double)iters[s];
}

/* ---- the kernels: contexts --------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

struct kernel {
	const char *name;          /* function name in mckernels.c / the ELF */
	const char *what;          /* for the output */
	uint64_t (*native)(void *ctx);
	int loop_free;             /* offered to DPDK */
	void *ctx;
	size_t ctx_len;
};

static void *make_scan(size_t *len)
{
	struct mck_scan_ctx *c = calloc(1, sizeof(*c));
	c->len = MCK_SCAN_MAX;
	c->needle = '\n';
	for (uint32_t i = 0; i < MCK_SCAN_MAX; i++)
		c->buf[i] = rnd() % 64 == 0 ? '\n' : (uint8_t)('a' + rnd() % 26);
	*len = sizeof(*c);
	return c;
}

static void *make_chain(size_t *len)
{
	struct mck_chain_ctx *c = calloc(1, sizeof(*c));
	uint32_t perm[MCK_CHAIN_NODES];
	for (uint32_t i = 0; i < MCK_CHAIN_NODES; i++)
		perm[i] = i;
	for (uint32_t i = MCK_CHAIN_NODES - 1; i > 0; i--) {
		uint32_t j = rnd() % (i + 1), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	/* a chain through the nodes in random order; the key at hop 32 */
	for (uint32_t i = 0; i < MCK_CHAIN_NODES; i++) {
		c->nodes[perm[i]].key = ((uint64_t)rnd() << 32 | rnd()) | 1;
		c->nodes[perm[i]].value = i;
		c->nodes[perm[i]].next = i + 1 < MCK_CHAIN_NODES ? perm[i + 1] : MCK_CHAIN_NODES;
	}
	c->head = perm[0];
	c->key = c->nodes[perm[MCK_CHAIN_HOPS - 1]].key;
	*len = sizeof(*c);
	return c;
}

static void *make_dfa(size_t *len)
{
	struct mck_dfa_ctx *c = calloc(1, sizeof(*c));
	/* a DFA that accepts when it has seen "needle" (states 0..6, 7 = accept) */
	static const char pat[] = "needle";
	for (uint32_t s = 0; s < MCK_DFA_STATES; s++)
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t st = s == MCK_DFA_STATES - 1 ? 0 : s;
			c->table[s][b] = (uint8_t)(b == (uint8_t)pat[st] ? (st + 1 == 6 ? 7 : st + 1)
								   : b == 'n' ? 1 : 0);
		}
	c->len = MCK_DFA_INPUT;
	for (uint32_t i = 0; i < MCK_DFA_INPUT; i++)
		c->input[i] = (uint8_t)("needle in a haystack of text "[rnd() % 29]);
	*len = sizeof(*c);
	return c;
}

static void *make_csum(size_t *len)
{
	uint8_t *p = calloc(1, MCK_CSUM_LEN);
	for (int i = 0; i < MCK_CSUM_LEN; i++)
		p[i] = (uint8_t)rnd();
	*len = MCK_CSUM_LEN;
	return p;
}

static void *make_parse(size_t *len)
{
	uint8_t *p = calloc(1, MCK_PARSE_LEN);
	for (int i = 0; i < 12; i++)
		p[i] = (uint8_t)rnd();
	p[12] = 0x08;                 /* IPv4 */
	uint8_t *ip = p + 14;
	ip[0] = 0x46;                 /* version 4, 24-byte header (one option word) */
	ip[8] = 64;                   /* TTL */
	ip[9] = 6;                    /* TCP */
	uint8_t *tcp = ip + 24;
	tcp[0] = 0xc3;                /* 50000 */
	tcp[1] = 0x50;
	tcp[2] = 0x4f;                /* 20491 */
	tcp[3] = 0x8b;
	tcp[13] = 0x18;               /* PSH|ACK */
	*len = MCK_PARSE_LEN;
	return p;
}

/* ---- engines ----------------------------------------------------------------- */

static uint64_t run_native(void *state, void *ctx)
{
	uint64_t (*fn)(void *) = (uint64_t (*)(void *))state;
	return fn(ctx);
}

struct arf_engine {
	struct arf_mc_vm *vm;
	struct arf_mc_prog *prog;
	size_t ctx_len;
	int jit;          /* run the JIT's code (else the interpreter) */
	uint64_t insns;
};

static uint64_t run_arf(void *state, void *ctx)
{
	struct arf_engine *e = state;
	struct arf_mc_result res;
	int rc = e->jit ? arf_mc_run(e->vm, e->prog, ctx, e->ctx_len, 1u << 24, &res)
			: arf_mc_run_interp(e->vm, e->prog, ctx, e->ctx_len, 1u << 24, &res);
	if (rc)
		die("arf_mc_run: %s", res.msg);
	e->insns = res.insns;
	return res.r0;
}

#ifdef MCB_HAVE_DPDK
static uint64_t run_dpdk(void *state, void *ctx)
{
	return rte_bpf_exec(state, ctx);
}

static uint64_t run_dpdk_jit(void *state, void *ctx)
{
	uint64_t (*fn)(void *) = (uint64_t (*)(void *))state;
	return fn(ctx);
}

#endif

static void print_kernel(const struct kernel *k, const char *engine, double ns, double native_ns,
			 uint64_t insns)
{
	printf("{\"kind\": \"kernel\", \"kernel\": \"%s\", \"what\": \"%s\", \"engine\": \"%s\", "
	       "\"ns_op\": %.3f, \"ratio_native\": %.3f, \"insns\": %" PRIu64 ", "
	       "\"loop_free\": %d}\n",
	       k->name, k->what, engine, ns, ns / native_ns, insns, k->loop_free);
	fflush(stdout);
}

static int cmd_kernels(const char *path)
{
	struct kernel ks[] = {
		{ "mck_scan", "byte scan, 4 KiB", mck_scan, 0, NULL, 0 },
		{ "mck_chain", "hash-chain walk, 32 hops", mck_chain, 0, NULL, 0 },
		{ "mck_dfa", "DFA table loop, 1 KiB", mck_dfa, 0, NULL, 0 },
		{ "mck_csum", "checksum of 64 bytes, unrolled", mck_csum, 1, NULL, 0 },
		{ "mck_parse", "Ethernet/IPv4/TCP header parse", mck_parse, 1, NULL, 0 },
		{ "mck_null", "empty program (the cost of a run)", mck_null, 1, NULL, 0 },
	};
	void *(*make[])(size_t *) = { make_scan, make_chain, make_dfa, make_csum, make_parse,
				      make_parse };
	size_t nk = sizeof(ks) / sizeof(ks[0]);
	char err[512];
	int rc;

	FILE *f = fopen(path, "rb");
	if (!f)
		die("%s: %s", path, strerror(errno));
	static uint8_t elf[1 << 20];
	size_t elflen = fread(elf, 1, sizeof(elf), f);
	fclose(f);

	struct arf_mc_helpers *h;
	struct arf_mc_vm *vm;
	if ((rc = arf_mc_helpers_create(&h)) || (rc = arf_mc_vm_create(h, &vm)))
		die("engine: %d", rc);

	/* where each function starts in the image, to cut out one for DPDK */
	size_t entry[8], n_all = 0;
	(void)entry;
	(void)n_all;
	for (size_t i = 0; i < nk; i++) {
		struct arf_mc_image im;
		if ((rc = arf_mc_elf_read(elf, elflen, ks[i].name, &im, err, sizeof(err))))
			die("%s: %s: %s", path, ks[i].name, err);
		entry[i] = im.entry;
		n_all = im.n;
		arf_mc_image_release(&im);
	}

#ifdef MCB_HAVE_DPDK
	/* librte_bpf needs no EAL: it maps its own memory, and logs to stderr */
#else
	note("dpdk", "mcbench was built without DPDK (libdpdk-dev not found by pkg-config): "
		     "no rte_bpf rows");
#endif

	for (size_t i = 0; i < nk; i++) {
		struct kernel *k = &ks[i];
		k->ctx = make[i](&k->ctx_len);
		uint64_t want = k->native(k->ctx);
		double native = time_ns(run_native, (void *)k->native, k->ctx);
		print_kernel(k, "native C (cc -O2)", native, native, 0);

		struct arf_engine e = { .vm = vm, .ctx_len = k->ctx_len };
		if ((rc = arf_mc_prog_load_elf(h, elf, elflen, k->name, &e.prog, err, sizeof(err))))
			die("load %s: %s", k->name, err);
		if (run_arf(&e, k->ctx) != want)
			die("%s: the interpreter gives %" PRIx64 ", native %" PRIx64, k->name,
			    run_arf(&e, k->ctx), want);
		double arf = time_ns(run_arf, &e, k->ctx);
		print_kernel(k, "ARF interpreter", arf, native, e.insns);
		if ((rc = arf_mc_prog_jit(e.prog, err, sizeof(err))))
			die("JIT %s: %s", k->name, err);
		e.jit = 1;
		if (run_arf(&e, k->ctx) != want)
			die("%s: the JIT gives %" PRIx64 ", native %" PRIx64, k->name,
			    run_arf(&e, k->ctx), want);
		arf = time_ns(run_arf, &e, k->ctx);
		print_kernel(k, "ARF JIT", arf, native, e.insns);
		arf_mc_prog_destroy(e.prog);

		if (!k->loop_free)
			continue;
#ifdef MCB_HAVE_DPDK
		/* this function's instructions: from its entry to the next one's */
		size_t end = n_all;
		for (size_t j = 0; j < nk; j++)
			if (entry[j] > entry[i] && entry[j] < end)
				end = entry[j];
		struct arf_mc_image im;
		if ((rc = arf_mc_elf_read(elf, elflen, k->name, &im, err, sizeof(err))))
			die("%s: %s", k->name, err);
		struct rte_bpf_prm prm;
		memset(&prm, 0, sizeof(prm));
		prm.ins = (const struct ebpf_insn *)(im.insns + im.entry);
		prm.nb_ins = (uint32_t)(end - im.entry);
		prm.prog_arg.type = RTE_BPF_ARG_PTR;
		prm.prog_arg.size = k->ctx_len;
		struct rte_bpf *bpf = rte_bpf_load(&prm);
		if (!bpf) {
			char w[256];
			snprintf(w, sizeof(w), "rte_bpf_load refused %s: %s", k->name,
				 rte_strerror(rte_errno));
			note("dpdk", w);
			arf_mc_image_release(&im);
			continue;
		}
		if (rte_bpf_exec(bpf, k->ctx) != want)
			die("%s: rte_bpf_exec gives %" PRIx64 ", native %" PRIx64, k->name,
			    rte_bpf_exec(bpf, k->ctx), want);
		double d = time_ns(run_dpdk, bpf, k->ctx);
		print_kernel(k, "DPDK rte_bpf interpreter", d, native, prm.nb_ins);
		struct rte_bpf_jit jit;
		memset(&jit, 0, sizeof(jit));
		if (rte_bpf_get_jit(bpf, &jit) || !jit.func) {
			note("dpdk jit", "rte_bpf_get_jit gave no function on this machine");
		} else {
			if (jit.func(k->ctx) != want)
				die("%s: the DPDK JIT gives %" PRIx64 ", native %" PRIx64, k->name,
				    jit.func(k->ctx), want);
			d = time_ns(run_dpdk_jit, (void *)jit.func, k->ctx);
			print_kernel(k, "DPDK rte_bpf JIT", d, native, prm.nb_ins);
		}
		rte_bpf_destroy(bpf);
		arf_mc_image_release(&im);
#endif
	}
	for (size_t i = 0; i < nk; i++)
		free(ks[i].ctx);
	arf_mc_vm_destroy(vm);
	arf_mc_helpers_destroy(h);
	return 0;
}

/* ---- chain lookups against arfd ----------------------------------------------- */

enum strategy { S_ONESIDED, S_SHIPPED, S_REQUEST, S_HYBRID, S_N };
static const char *const strategy_names[S_N] = { "onesided", "shipped", "request", "hybrid" };

/* libarf's defaults with its caches off: every lookup walks, every listing
 * reads the inodes again. */
static void opts_uncached(struct arf_client_opts *o)
{
	arf_client_opts_init(o);
	o->attr_timeout_ms = 0;
	o->entry_timeout_ms = 0;
}

static arf_client *connect_or_die(const char *url, const struct arf_client_opts *o)
{
	char err[512];
	arf_client *c;

	if (arf_connect(url, o, &c, err, sizeof(err)))
		die("connect %s: %s", url, err);
	return c;
}

static arf_client *conn(const char *url, enum strategy s)
{
	struct arf_client_opts o;

	opts_uncached(&o);
	switch (s) {
	case S_ONESIDED:
		o.max_hops = 1u << 20;
		o.shipped_lookup = 0;
		break;
	case S_SHIPPED:
		o.max_hops = 0;
		break;
	case S_REQUEST:
		o.one_sided = 0;
		o.shipped_lookup = 0;
		break;
	default:
		break;
	}
	return connect_or_die(url, &o);
}

/* Chain position of name in dir: the shipped lookup's own count. */
static uint32_t chain_pos(arf_client *c, uint64_t dir, const char *name)
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
	if (rc || res.r0)
		die("exec lookup %s: %s (%s)", name, res.msg, arf_strerror(rc));
	return o.hops;
}

struct lk {
	arf_client *c;
	uint64_t dir;
	uint32_t gen;
	const char *name;
};

static uint64_t run_lookup(void *state, void *ctx)
{
	struct lk *l = state;
	struct arf_stat st;
	(void)ctx;
	int rc = arf_lookup(l->c, l->dir, l->gen, l->name, &st);
	if (rc)
		die("lookup %s: %s", l->name, arf_strerror(rc));
	return st.ino;
}

static int cmd_chain(int nurl, char **urls, int nfiles, const char *hoplist)
{
	uint32_t hops[64];
	int nh = 0;
	for (char *s = strdup(hoplist), *t = strtok(s, ","); t && nh < 64; t = strtok(NULL, ","))
		hops[nh++] = (uint32_t)atoi(t);

	/* the directory, on the first URL (all name the same arfd) */
	arf_client *w = conn(urls[0], S_HYBRID);
	struct arf_stat root, dir, st;
	char name[64];
	int rc;
	if ((rc = arf_root(w, &root)))
		die("root: %s", arf_strerror(rc));
	rc = arf_mkdir(w, root.ino, root.gen, "mcchain", 0755, &dir);
	if (rc == -EEXIST)
		rc = arf_lookup(w, root.ino, root.gen, "mcchain", &dir);
	if (rc)
		die("mkdir /mcchain: %s", arf_strerror(rc));
	for (int i = 0; i < nfiles; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		rc = arf_create(w, dir.ino, dir.gen, name, 0644, 1, &st);
		if (rc && rc != -EEXIST)
			die("create %s: %s", name, arf_strerror(rc));
	}
	/* a name at each wanted chain position */
	char (*pick)[64] = calloc((size_t)nh, 64);
	uint32_t maxpos = 0;
	for (int i = 0; i < nfiles; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		uint32_t p = chain_pos(w, dir.ino, name);
		if (p > maxpos)
			maxpos = p;
		for (int j = 0; j < nh; j++)
			if (p == hops[j] && !pick[j][0])
				snprintf(pick[j], 64, "%s", name);
	}
	for (int j = 0; j < nh; j++)
		if (!pick[j][0])
			die("no name at chain position %u (longest chain %u): more files or a smaller "
			    "dir_hash_mask", hops[j], maxpos);
	arf_close(w);

	for (int u = 0; u < nurl; u++) {
		struct arf_url pu;
		char err[256];
		if (arf_url_parse(urls[u], &pu, err, sizeof(err)))
			die("%s: %s", urls[u], err);
		/* the strategies' batches interleaved, position by position, so
		 * that all four see the same moments of a shared, noisy machine */
		arf_client *c[S_N];
		for (int s = 0; s < S_N; s++)
			c[s] = conn(urls[u], (enum strategy)s);
		for (int j = 0; j < nh; j++) {
			struct lk l[S_N];
			double nsop[S_N];
			for (int s = 0; s < S_N; s++)
				l[s] = (struct lk){ c[s], dir.ino, dir.gen, pick[j] };
			time_interleaved(run_lookup, l, sizeof(l[0]), S_N, nsop);
			for (int s = 0; s < S_N; s++) {
				double ns = nsop[s];
				struct arf_client_stats s0, s1;
				struct arf_client_policy pol[S_N];

				arf_client_policy(c[s], &pol[s]); /* the hop limit in force */
				/* the counters of one more lookup: the path is deterministic */
				arf_stats(c[s], &s0);
				run_lookup(&l[s], NULL);
				arf_stats(c[s], &s1);
				printf("{\"kind\": \"chain\", \"transport\": \"%s\", \"strategy\": \"%s\", "
				       "\"hops\": %u, \"name\": \"%s\", \"mean_us\": %.3f, \"ops_per_s\": %.1f, "
				       "\"one_sided_reads\": %" PRIu64 ", \"rounds\": %" PRIu64 ", "
				       "\"requests\": %" PRIu64 ", \"execs\": %" PRIu64 ", "
				       "\"max_hops\": %u}\n",
				       pu.transport, strategy_names[s], hops[j], pick[j], ns / 1000.0,
				       1e9 / ns, s1.one_sided_reads - s0.one_sided_reads,
				       s1.rounds - s0.rounds, s1.requests - s0.requests,
				       s1.execs - s0.execs, pol[s].max_hops);
				fflush(stdout);
			}
		}
		for (int s = 0; s < S_N; s++)
			arf_close(c[s]);
	}
	free(pick);
	return 0;
}

/* ---- directory listings against arfd --------------------------------------- */

/*
 * How libarf lists a directory, as the listing mode compares them: every
 * entry one-sided (the listing pages, then each child's inode for
 * readdirplus); READDIR requests (each child's inode still one-sided);
 * the readdir program, one execution per batch (with the attributes for
 * readdirplus); and libarf's own choice for the transport.
 */
enum lstrategy { L_ONESIDED, L_REQUEST, L_SHIPPED, L_AUTO, L_N };
static const char *const lstrategy_names[L_N] = { "onesided", "request", "shipped", "auto" };

static arf_client *lconn(const char *url, enum lstrategy s)
{
	struct arf_client_opts o;

	opts_uncached(&o);
	switch (s) {
	case L_ONESIDED:
		o.readdir_exec_min = 0;
		o.readdir_req_min = 0;
		break;
	case L_REQUEST:
		o.readdir_exec_min = 0;
		o.readdir_req_min = 1;
		break;
	case L_SHIPPED:
		o.readdir_exec_min = 1;
		break;
	default:
		break;
	}
	return connect_or_die(url, &o);
}

struct ls {
	arf_client *c;
	uint64_t dir;
	uint32_t gen;
	int plus;             /* arf_readdirplus */
	size_t want;          /* entries the directory holds */
	struct arf_dirent *ents;
	struct arf_stat *st;
};

/* The whole directory, 1024 entries a call (as metabench lists). */
static uint64_t run_listing(void *state, void *ctx)
{
	struct ls *l = state;
	uint64_t cookie = 0, got = 0;
	int eof = 0;
	(void)ctx;
	while (!eof) {
		size_t n = 0;
		int rc = l->plus ? arf_readdirplus(l->c, l->dir, l->gen, cookie, l->ents, l->st, 1024,
						   &n, &eof)
				 : arf_readdir(l->c, l->dir, l->gen, cookie, l->ents, 1024, &n, &eof);
		if (rc)
			die("%s: %s", l->plus ? "readdirplus" : "readdir", arf_strerror(rc));
		if (n)
			cookie = l->ents[n - 1].cookie;
		got += n;
		if (!n && !eof)
			die("listing made no progress");
	}
	if (got != l->want)
		die("listed %llu entries, want %zu", (unsigned long long)got, l->want);
	return got;
}

static int cmd_listing(int nurl, char **urls, const char *sizelist)
{
	size_t sizes[32];
	int ns = 0;
	for (char *s = strdup(sizelist), *t = strtok(s, ","); t && ns < 32; t = strtok(NULL, ","))
		sizes[ns++] = (size_t)atol(t);

	/* /mclist/dN with N files each, on the first URL (all name the same arfd) */
	arf_client *w = lconn(urls[0], L_AUTO);
	struct arf_stat root, top, d[32], st;
	char name[64];
	int rc;
	if ((rc = arf_root(w, &root)))
		die("root: %s", arf_strerror(rc));
	rc = arf_mkdir(w, root.ino, root.gen, "mclist", 0755, &top);
	if (rc == -EEXIST)
		rc = arf_lookup(w, root.ino, root.gen, "mclist", &top);
	if (rc)
		die("mkdir /mclist: %s", arf_strerror(rc));
	for (int i = 0; i < ns; i++) {
		snprintf(name, sizeof(name), "d%zu", sizes[i]);
		rc = arf_mkdir(w, top.ino, top.gen, name, 0755, &d[i]);
		if (rc == -EEXIST)
			rc = arf_lookup(w, top.ino, top.gen, name, &d[i]);
		if (rc)
			die("mkdir %s: %s", name, arf_strerror(rc));
		for (size_t k = 0; k < sizes[i]; k++) {
			snprintf(name, sizeof(name), "entry-%06zu", k);
			rc = arf_create(w, d[i].ino, d[i].gen, name, 0644, 1, &st);
			if (rc && rc != -EEXIST)
				die("create %s: %s", name, arf_strerror(rc));
		}
	}
	arf_close(w);

	struct arf_dirent *ents = malloc(1024 * sizeof(*ents));
	struct arf_stat *sts = malloc(1024 * sizeof(*sts));
	if (!ents || !sts)
		die("out of memory");
	for (int u = 0; u < nurl; u++) {
		struct arf_url pu;
		char err[256];
		if (arf_url_parse(urls[u], &pu, err, sizeof(err)))
			die("%s: %s", urls[u], err);
		arf_client *c[L_N];
		for (int s = 0; s < L_N; s++)
			c[s] = lconn(urls[u], (enum lstrategy)s);
		for (int plus = 0; plus < 2; plus++)
			for (int i = 0; i < ns; i++) {
				struct ls l[L_N];
				double nsop[L_N];
				for (int s = 0; s < L_N; s++)
					l[s] = (struct ls){ c[s], d[i].ino, d[i].gen, plus, sizes[i], ents, sts };
				time_interleaved(run_listing, l, sizeof(l[0]), L_N, nsop);
				for (int s = 0; s < L_N; s++) {
					double ns_op = nsop[s];
					struct arf_client_stats s0, s1;
					struct arf_client_policy pol;

					arf_client_policy(c[s], &pol);
					arf_stats(c[s], &s0);
					run_listing(&l[s], NULL);
					arf_stats(c[s], &s1);
					printf("{\"kind\": \"listing\", \"transport\": \"%s\", \"call\": \"%s\", "
					       "\"entries\": %zu, \"strategy\": \"%s\", \"mean_us\": %.3f, "
					       "\"one_sided_reads\": %" PRIu64 ", \"rounds\": %" PRIu64 ", "
					       "\"requests\": %" PRIu64 ", \"execs\": %" PRIu64 ", "
					       "\"exec_min\": %u, \"req_min\": %u}\n",
					       pu.transport, plus ? "readdirplus" : "readdir", sizes[i],
					       lstrategy_names[s], ns_op / 1000.0,
					       s1.one_sided_reads - s0.one_sided_reads, s1.rounds - s0.rounds,
					       s1.requests - s0.requests, s1.execs - s0.execs,
					       plus ? pol.readdirplus_exec_min : pol.readdir_exec_min,
					       pol.readdir_req_min);
					fflush(stdout);
				}
			}
		for (int s = 0; s < L_N; s++)
			arf_close(c[s]);
	}
	free(ents);
	free(sts);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: mcbench kernels KERNELS.o [--secs S]\n"
			"       mcbench chain [--secs S] [--files N] [--hops 1,2,4,...] URL...\n"
			"       mcbench listing [--secs S] [--sizes 4,16,64,...] URL...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int nfiles = 200;
	const char *hops = "1,2,4,6,8,12,16,24,32";
	const char *sizes = "4,8,16,32,64,128,256,512,1024,4096";
	char *pos[16];
	int npos = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--secs") && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (!strcmp(argv[i], "--files") && i + 1 < argc)
			nfiles = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--hops") && i + 1 < argc)
			hops = argv[++i];
		else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
			sizes = argv[++i];
		else if (npos < 16)
			pos[npos++] = argv[i];
		else
			usage();
	}
	if (npos < 2 || secs <= 0)
		usage();
	if (!strcmp(pos[0], "kernels") && npos == 2)
		return cmd_kernels(pos[1]);
	if (!strcmp(pos[0], "chain"))
		return cmd_chain(npos - 1, pos + 1, nfiles, hops);
	if (!strcmp(pos[0], "listing"))
		return cmd_listing(npos - 1, pos + 1, sizes);
	usage();
}

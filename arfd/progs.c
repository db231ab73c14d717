/* SPDX-License-Identifier: MIT */
/*
 * arfd/progs — mobile code in the server: the program cache and the two
 * requests that use it.
 *
 * PROG_LOAD verifies a program once (raw bytecode, or an ELF object from
 * clang -target bpf) against arfd's helper table, compiles it to native
 * code when [programs] jit is on (mobilecode/jit.c: the same checks as the
 * interpreter; a program the JIT cannot compile is interpreted, with a
 * warning), and keeps it under the
 * BLAKE2b-256 hash of its bytes; a load of bytes already cached is a hit
 * only when the bytes compare equal, not merely their hashes.  The cache
 * holds [programs] cache_size programs, each charged to the identity that
 * loaded it, within per-identity quotas (below, "quotas"); an evicted (or
 * never loaded, or lost at a restart) hash answers ARF_ENOPROG and the
 * client loads it again.
 *
 * Both run on the program workers (lanes.c), never on the workers that
 * serve plain requests.  PROG_EXEC runs a cached program in the worker's
 * own vm, *without* the filesystem lock: a program reads the exported
 * regions the way one-sided readers do (through the obj_read helper, which
 * validates what it copies), so a long or runaway run holds up nobody but
 * its own worker; the ops/ hooks it calls take the lock one at a time
 * (helpers.c).  Each run has an instruction budget (helpers' work counted
 * in it), an output limit and a wall-clock limit from [programs], and stops
 * at once when arfd stops (d->prog_abort).  A run for anyone but root
 * proven on a connection with region keys sees empty META and DATA
 * regions: programs give no more access than the run's user has.
 *
 * On failure the reply body says what happened (struct
 * arf_proto_prog_error: instruction, instructions executed, message).  A
 * run whose hooks changed the filesystem is answered once the group
 * commit has made those changes durable, as a request's would be.
 *
 * The control socket (control.c) lists the cache, shows one program with
 * its counters or its disassembly, and unloads one (arfctl progs): those
 * take the cache lock like the requests do, and disassemble outside it
 * while holding a reference, as a run does.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "arf_mc.h"
#include "arf_ops.h"
#include "arf_prog_abi.h"
#include "arf_proto.h"
#include "arfd.h"
#include "helpers.h"
#include "log.h"

/* One cached program; shared by the cache and the runs using it. */
struct centry {
	uint8_t hash[ARF_PROTO_PROG_HASH];
	uint8_t *bytes;              /* the bytes as loaded, for the byte-for-byte check */
	size_t len;
	struct arf_mc_prog *prog;    /* verified, immutable */
	int elf;                     /* loaded from an ELF object (else raw bytecode) */
	uint32_t owner;              /* the uid its first load acted as: its quota pays */
	int owner_root;              /* that load was root proven (the larger quota) */
	uint64_t native;             /* bytes of native code (0 when interpreted) */
	uint64_t last_used;          /* cache clock, for LRU eviction */
	unsigned refs;               /* the cache's own + one per run or disassembly (under lock) */
	/* for arfctl progs (under lock) */
	uint64_t loads;              /* PROG_LOADs of these bytes, the first included */
	uint64_t runs;               /* runs of it, failed ones included */
	uint64_t failures;           /* runs that failed */
	uint64_t insns_run;          /* instructions its runs executed */
	int64_t loaded_at, used_at;  /* CLOCK_REALTIME seconds: first load, last load or run */
};

_Static_assert(sizeof(((struct arfd_prog_info *)0)->hash) == ARF_PROTO_PROG_HASH,
	       "arfd_prog_info holds a program hash");

static int64_t wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec;
}

struct arfd_progs {
	pthread_mutex_t lock;        /* the table, refs, clock */
	struct arf_mc_helpers *helpers;
	struct centry **tab;         /* cap slots, NULL = free */
	size_t cap;
	uint64_t clock;
};

/* A worker's execution context, made on its first run. */
struct wvm {
	struct arf_mc_vm *vm;
	uint8_t *scratch;            /* ARF_PROG_SCRATCH_SIZE, zeroed before each run */
	uint8_t *out;                /* [programs] max_output bytes */
	size_t out_cap;
};
static __thread struct wvm *tls_wvm;

static void centry_put(struct centry *e)
{
	if (!e || --e->refs)
		return;
	arf_mc_prog_destroy(e->prog);
	free(e->bytes);
	free(e);
}

int arfd_progs_start(struct arfd *d, char *err, size_t errlen)
{
	struct arfd_progs *p = calloc(1, sizeof(*p));
	int rc;

	if (!p || sodium_init() < 0) {
		free(p);
		snprintf(err, errlen, "program cache: out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	p->cap = (size_t)d->cfg.prog_cache_size;
	p->tab = calloc(p->cap, sizeof(*p->tab));
	if (!p->tab || arf_mc_helpers_create(&p->helpers) || arf_mc_helpers_add_std(p->helpers)) {
		snprintf(err, errlen, "program cache: out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = arfd_helpers_register(p->helpers, err, errlen)))
		goto fail;
	d->progs = p;
	return 0;
fail:
	arf_mc_helpers_destroy(p->helpers);
	free(p->tab);
	free(p);
	return rc;
}

void arfd_progs_stop(struct arfd *d)
{
	struct arfd_progs *p = d->progs;

	if (!p)
		return;
	for (size_t i = 0; i < p->cap; i++)
		centry_put(p->tab[i]);
	free(p->tab);
	arf_mc_helpers_destroy(p->helpers);
	pthread_mutex_destroy(&p->lock);
	free(p);
	d->progs = NULL;
}

void arfd_prog_thread_exit(void)
{
	struct wvm *w = tls_wvm;

	if (!w)
		return;
	arf_mc_vm_destroy(w->vm);
	free(w->scratch);
	free(w->out);
	free(w);
	tls_wvm = NULL;
}

static struct wvm *worker_vm(struct arfd *d)
{
	struct wvm *w = tls_wvm;

	if (w)
		return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->out_cap = (size_t)d->cfg.prog_max_output;
	w->scratch = malloc(ARF_PROG_SCRATCH_SIZE);
	w->out = malloc(w->out_cap);
	if (!w->scratch || !w->out || arf_mc_vm_create(d->progs->helpers, &w->vm)) {
		free(w->scratch);
		free(w->out);
		free(w);
		return NULL;
	}
	arf_mc_vm_set_abort(w->vm, &d->prog_abort); /* arfd_stop: runs end at once */
	tls_wvm = w;
	return w;
}

/* Under p->lock: the entry for hash, or NULL. */
static struct centry **find(struct arfd_progs *p, const uint8_t *hash)
{
	for (size_t i = 0; i < p->cap; i++)
		if (p->tab[i] && !memcmp(p->tab[i]->hash, hash, ARF_PROTO_PROG_HASH))
			return &p->tab[i];
	return NULL;
}

static void errmsg(struct arf_proto_prog_error *pe, uint32_t pc, uint64_t insns, const char *fmt,
		   ...) __attribute__((format(printf, 4, 5)));
static void errmsg(struct arf_proto_prog_error *pe, uint32_t pc, uint64_t insns, const char *fmt,
		   ...)
{
	va_list ap;

	pe->pc = pc;
	pe->insns = insns;
	va_start(ap, fmt);
	vsnprintf(pe->msg, sizeof(pe->msg), fmt, ap);
	va_end(ap);
}

/* ---- quotas ---------------------------------------------------------------
 *
 * Each cached program is charged to the identity whose load put it there
 * (the uid the request acted as, arfd_identity_cred): an identity holds at
 * most quota_count programs and quota_mib of native code (root proven:
 * root_quota_mib), all together at most cache_mib and cache_size programs.
 * A load past its identity's quota evicts that identity's own least
 * recently used programs; past the whole cache's, the least recently used
 * program of whoever holds the most; one program larger than a quota is
 * refused.  So one client cannot push the others' programs out, and what
 * it pinned is bounded even after it disconnects.
 */

/* What an identity holds, under p->lock. */
static void held_by(const struct arfd_progs *p, uint32_t uid, size_t *count, uint64_t *bytes)
{
	*count = 0;
	*bytes = 0;
	for (size_t i = 0; i < p->cap; i++)
		if (p->tab[i] && p->tab[i]->owner == uid) {
			(*count)++;
			*bytes += p->tab[i]->native;
		}
}

/* Under p->lock: the slot of the least recently used program of uid
 * (any owner when all is set), or NULL. */
static struct centry **lru_of(struct arfd_progs *p, uint32_t uid, int all)
{
	struct centry **v = NULL;

	for (size_t i = 0; i < p->cap; i++)
		if (p->tab[i] && (all || p->tab[i]->owner == uid) &&
		    (!v || p->tab[i]->last_used < (*v)->last_used))
			v = &p->tab[i];
	return v;
}

struct holding {
	uint32_t uid;
	uint64_t native;
};

static int by_uid(const void *a, const void *b)
{
	const struct holding *x = a, *y = b;
	return x->uid < y->uid ? -1 : x->uid > y->uid;
}

/*
 * Under p->lock: the least recently used program of the identity holding
 * the most -- native bytes, then programs; programs first when by_count --
 * whose programs go first when the whole cache is full.  (Sorted by owner
 * to add up each identity's share: the cache may hold thousands.)  Out of
 * memory: the least recently used of all.
 */
static struct centry **largest_holders_lru(struct arfd_progs *p, int by_count)
{
	struct holding *h = malloc(p->cap * sizeof(*h));
	size_t n = 0;
	uint32_t best = 0;
	uint64_t best_n = 0, best_b = 0;

	if (!h)
		return lru_of(p, 0, 1);
	for (size_t i = 0; i < p->cap; i++)
		if (p->tab[i])
			h[n++] = (struct holding){ p->tab[i]->owner, p->tab[i]->native };
	qsort(h, n, sizeof(*h), by_uid);
	for (size_t i = 0; i < n;) {
		uint64_t cnt = 0, b = 0;
		size_t k = i;

		for (; k < n && h[k].uid == h[i].uid; k++) {
			cnt++;
			b += h[k].native;
		}
		int more = by_count ? cnt > best_n || (cnt == best_n && b > best_b)
				    : b > best_b || (b == best_b && cnt > best_n);
		if (more) {
			best = h[i].uid;
			best_n = cnt;
			best_b = b;
		}
		i = k;
	}
	free(h);
	return n ? lru_of(p, best, 0) : NULL;
}

static void evict(struct centry **slot, int *evicted)
{
	centry_put(*slot); /* a run still holding it keeps it alive */
	*slot = NULL;
	(*evicted)++;
}

/*
 * Under p->lock: room for e (owned, native bytes known) -- evictions as
 * above -- and the free slot it goes in; or NULL with the refusal in pe.
 */
static struct centry **make_room(struct arfd *d, struct centry *e,
				 struct arf_proto_prog_error *pe, int *evicted)
{
	struct arfd_progs *p = d->progs;
	uint64_t mib = 1u << 20;
	uint64_t quota = (uint64_t)(e->owner_root ? d->cfg.prog_root_quota_mib
				    : d->cfg.prog_quota_mib) * mib;
	uint64_t total_cap = (uint64_t)d->cfg.prog_cache_mib * mib;
	size_t count, all_count = 0;
	uint64_t bytes, total = 0;
	struct centry **v;

	if (e->native > quota || e->native > total_cap) {
		errmsg(pe, 0, 0, "the program's native code (%.1f MiB) is larger than %s of %lld MiB "
		       "([programs] %s): not cached", (double)e->native / (double)mib,
		       e->native > quota ? "this identity's quota" : "the whole cache's",
		       (long long)(e->native > quota ? quota / mib : total_cap / mib),
		       e->native > quota ? (e->owner_root ? "root_quota_mib" : "quota_mib")
					 : "cache_mib");
		return NULL;
	}
	/* its identity's quota: its own least recently used go */
	for (;;) {
		held_by(p, e->owner, &count, &bytes);
		if (count + 1 <= (size_t)d->cfg.prog_quota_count && bytes + e->native <= quota)
			break;
		if (!(v = lru_of(p, e->owner, 0)))
			break; /* not reached: it holds what is over its quota */
		evict(v, evicted);
	}
	/* the whole cache's: whoever holds the most gives way */
	for (;;) {
		all_count = 0;
		total = 0;
		for (size_t i = 0; i < p->cap; i++)
			if (p->tab[i]) {
				all_count++;
				total += p->tab[i]->native;
			}
		if (all_count < p->cap && total + e->native <= total_cap)
			break;
		v = largest_holders_lru(p, all_count >= p->cap);
		if (!v)
			break; /* empty, and e alone fits (checked above) */
		evict(v, evicted);
	}
	for (size_t i = 0; i < p->cap; i++)
		if (!p->tab[i])
			return &p->tab[i];
	return NULL; /* not reached: the loop above made room */
}

/* PROG_LOAD: 0 with the hash and instruction count in w, or an error
 * with its message in pe.  ac and pc: whose load it is (for its quota). */
static int do_load(struct arfd *d, struct arfd_conn *ac, const struct arf_proto_cred *pc,
		   struct arf_proto_rd *r, struct arf_proto_wr *w,
		   struct arf_proto_prog_error *pe, int *hit, int *evicted)
{
	struct arfd_progs *p = d->progs;
	struct centry *e = NULL, **slot;
	struct arf_mc_prog *prog = NULL;
	uint8_t hash[ARF_PROTO_PROG_HASH];
	uint32_t len = 0;
	char err[ARF_PROTO_MAX_PROG_MSG];
	size_t n = 0;
	int rc;

	const uint8_t *bytes = arf_proto_get_bytes(r, ARF_PROTO_MAX_PROG, &len);
	if (!arf_proto_rd_done(r)) {
		errmsg(pe, 0, 0, "malformed PROG_LOAD (at most %u bytes of program)",
		       ARF_PROTO_MAX_PROG);
		return ARF_EPROTO;
	}
	crypto_generichash(hash, sizeof(hash), bytes, len, NULL, 0);

	pthread_mutex_lock(&p->lock);
	slot = find(p, hash);
	if (slot) {
		e = *slot;
		if (e->len != len || memcmp(e->bytes, bytes, len)) {
			pthread_mutex_unlock(&p->lock);
			errmsg(pe, 0, 0, "a different program with the same BLAKE2b hash is cached");
			return -EEXIST;
		}
		e->last_used = ++p->clock;
		e->loads++;
		e->used_at = wall_now();
		pthread_mutex_unlock(&p->lock);
		*hit = 1;
		arf_mc_prog_insns(e->prog, &n); /* immutable: no lock needed */
		goto reply;
	}
	pthread_mutex_unlock(&p->lock);

	/* Verify outside the lock: other runs and loads go on meanwhile. */
	err[0] = 0;
	int elf = len >= 4 && !memcmp(bytes, "\177ELF", 4);
	if (elf)
		rc = arf_mc_prog_load_elf(p->helpers, bytes, len, NULL, &prog, err, sizeof(err));
	else
		rc = arf_mc_prog_load(p->helpers, bytes, len, NULL, 0, &prog, err, sizeof(err));
	if (rc) {
		errmsg(pe, 0, 0, "%s", err[0] ? err : arf_err_text(rc) ? arf_err_text(rc) : strerror(-rc));
		return rc == -ENOMEM ? rc : rc == ARF_EVERIFY ? ARF_EVERIFY : -EINVAL;
	}
	int jit_failed = 0;
	if (d->cfg.prog_jit && (rc = arf_mc_prog_jit(prog, err, sizeof(err)))) {
		/* still a verified program: the interpreter runs it */
		arfd_log(ARFD_LOG_WARN, "program of %u bytes: not compiled (%s); it will be interpreted",
			 len, err);
		jit_failed = 1;
	}
	e = calloc(1, sizeof(*e));
	if (!e || !(e->bytes = malloc(len ? len : 1))) {
		free(e);
		arf_mc_prog_destroy(prog);
		errmsg(pe, 0, 0, "out of memory");
		return -ENOMEM;
	}
	memcpy(e->hash, hash, sizeof(hash));
	memcpy(e->bytes, bytes, len);
	e->len = len;
	e->prog = prog;
	e->elf = elf;
	e->refs = 1;
	e->loads = 1;
	e->loaded_at = e->used_at = wall_now();
	arf_mc_prog_insns(prog, &n);
	size_t native = 0;
	arf_mc_prog_jit_code(prog, &native);
	e->native = native;
	struct arf_cred cr;
	int proven_root = 0;

	arfd_fs_lock(d);
	d->ctr.prog_jitted += (uint64_t)arf_mc_prog_jitted(prog);
	d->ctr.prog_jit_failed += (uint64_t)jit_failed;
	arfd_identity_cred(d, ac, pc, &cr, &proven_root); /* whose quota pays */
	arfd_fs_unlock(d);
	e->owner = cr.uid;
	e->owner_root = proven_root;

	pthread_mutex_lock(&p->lock);
	if ((slot = find(p, hash))) {
		/* another worker loaded it meanwhile: keep that one */
		(*slot)->last_used = ++p->clock;
		(*slot)->loads++;
		(*slot)->used_at = wall_now();
		pthread_mutex_unlock(&p->lock);
		centry_put(e);
		*hit = 1;
		goto reply;
	}
	slot = make_room(d, e, pe, evicted);
	if (!slot) {
		pthread_mutex_unlock(&p->lock);
		arfd_log(ARFD_LOG_DEBUG, "program load by uid %u refused: %s", e->owner, pe->msg);
		centry_put(e);
		return -EDQUOT;
	}
	if (*evicted)
		arfd_log(ARFD_LOG_DEBUG, "program cache: %d evicted to make room for uid %u's",
			 *evicted, e->owner);
	e->last_used = ++p->clock;
	*slot = e;
	pthread_mutex_unlock(&p->lock);
reply:
	arf_proto_put(w, hash, sizeof(hash));
	arf_proto_put_u32(w, (uint32_t)n);
	return 0;
}

/* PROG_EXEC: 0 with the result in w, or an error with its message in pe.
 * *seq: the last transaction a hook applied (0: none). */
static int do_exec(struct arfd *d, struct arf_net_sconn *c, const struct arf_proto_cred *pc,
		   struct arf_proto_rd *r, struct arf_proto_wr *w, struct arf_proto_prog_error *pe,
		   uint64_t *seq, uint64_t *insns)
{
	struct arfd_progs *p = d->progs;
	struct arfd_conn *ac = arf_net_sconn_udata(c);
	struct arfd_exec ex;
	struct arf_mc_result res;
	struct centry **slot, *e;
	uint8_t hash[ARF_PROTO_PROG_HASH];
	uint32_t arg_len = 0;
	uint8_t *arg = NULL;
	int rc;

	arf_proto_get(r, hash, sizeof(hash));
	uint32_t out_max = arf_proto_get_u32(r);
	const uint8_t *argp = arf_proto_get_bytes(r, ARF_PROTO_MAX_PROG_ARG, &arg_len);
	if (!arf_proto_rd_done(r)) {
		errmsg(pe, 0, 0, "malformed PROG_EXEC (argument at most %u bytes)",
		       ARF_PROTO_MAX_PROG_ARG);
		return ARF_EPROTO;
	}
	struct wvm *wv = worker_vm(d);
	if (!wv || (arg_len && !(arg = malloc(arg_len)))) {
		errmsg(pe, 0, 0, "out of memory");
		return -ENOMEM;
	}
	if (arg_len)
		memcpy(arg, argp, arg_len); /* the program's context: read-write */

	pthread_mutex_lock(&p->lock);
	slot = find(p, hash);
	e = slot ? *slot : NULL;
	if (e) {
		e->refs++;
		e->last_used = ++p->clock;
		e->used_at = wall_now();
	}
	pthread_mutex_unlock(&p->lock);
	if (!e) {
		free(arg);
		errmsg(pe, 0, 0, "unknown program (never loaded, evicted, or the server restarted): "
			   "load it again");
		return ARF_ENOPROG;
	}

	memset(&ex, 0, sizeof(ex));
	ex.d = d;
	int proven_root = 0;
	arfd_fs_lock(d); /* the export's squashing may change on SIGHUP */
	arfd_identity_cred(d, ac, pc, &ex.cr, &proven_root);
	arfd_fs_unlock(d);

	/* regions: META and DATA read-only (empty unless the run is for root
	 * proven on a connection that holds the region keys), scratch */
	int grant = arfd_identity_sees_regions(ac, proven_root);
	arf_mc_vm_clear_regions(wv->vm);
	memset(wv->scratch, 0, ARF_PROG_SCRATCH_SIZE);
	arf_mc_vm_add_region(wv->vm, grant ? d->meta : NULL, grant ? d->meta_size : 0, 0, NULL);
	arf_mc_vm_add_region(wv->vm, grant ? d->data : NULL, grant ? d->data_size : 0, 0, NULL);
	arf_mc_vm_add_region(wv->vm, wv->scratch, ARF_PROG_SCRATCH_SIZE, ARF_MC_REGION_WRITE, NULL);
	arf_mc_vm_name_region(wv->vm, ARF_PROG_META, grant ? "exported META region"
			      : "META region (empty: only root proven on a connection with "
				"region keys reads it; use the helpers)");
	arf_mc_vm_name_region(wv->vm, ARF_PROG_DATA, grant ? "exported DATA region"
			      : "DATA region (empty: only root proven on a connection with "
				"region keys reads it; use the helpers)");
	arf_mc_vm_name_region(wv->vm, ARF_PROG_SCRATCH, "scratch region");
	arf_mc_vm_set_output(wv->vm, wv->out, out_max && out_max < wv->out_cap ? out_max : wv->out_cap);
	arf_mc_vm_set_user(wv->vm, &ex);
	uint64_t deadline = 0;
	if (d->cfg.prog_max_wall_ms) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		deadline = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
			   (uint64_t)d->cfg.prog_max_wall_ms * 1000000u;
	}
	arf_mc_vm_set_deadline(wv->vm, deadline);
	rc = arf_mc_run(wv->vm, e->prog, arg, arg_len, (uint64_t)d->cfg.prog_max_insns, &res);
	arf_mc_vm_set_user(wv->vm, NULL);

	pthread_mutex_lock(&p->lock);
	e->runs++;
	e->insns_run += res.insns;
	if (rc)
		e->failures++;
	centry_put(e);
	pthread_mutex_unlock(&p->lock);
	free(arg);
	*seq = ex.seq;
	*insns = res.insns;
	if (rc) {
		errmsg(pe, res.pc, res.insns, "%s", res.msg[0] ? res.msg
			   : arf_err_text(rc) ? arf_err_text(rc) : strerror(-rc));
		return rc;
	}
	struct arf_proto_prog_result pr = { .r0 = res.r0, .insns = res.insns, .out = wv->out,
					    .out_len = (uint32_t)res.out_len };
	arf_proto_put_prog_result(w, &pr);
	return 0;
}

void arfd_prog_request(struct arfd *d, struct arf_net_sconn *c, uint64_t id, uint16_t op,
		       const uint8_t *body, size_t len)
{
	struct arf_proto_rd r;
	struct arf_proto_cred pc;
	struct arf_proto_wr w;
	struct arf_proto_prog_error pe;
	uint64_t seq = 0, insns = 0;
	int rc, hit = 0, evicted = 0, deferred = 0;

	memset(&pe, 0, sizeof(pe));
	arf_proto_wr_init(&w);
	arf_proto_rd_init(&r, body, len);
	arf_proto_get_cred(&r, &pc);
	if (r.err) {
		errmsg(&pe, 0, 0, "malformed credentials");
		rc = ARF_EPROTO;
	} else if (arfd_failed(d)) { /* helpers look again under fs_lock */
		errmsg(&pe, 0, 0, "this export has failed (arfctl status says why)");
		rc = -EIO;
	} else if (!d->cfg.prog_enable) {
		errmsg(&pe, 0, 0, "mobile code is disabled on this server ([programs] enable)");
		rc = -ENOSYS;
	} else if (op == ARF_OP_PROG_LOAD) {
		rc = do_load(d, arf_net_sconn_udata(c), &pc, &r, &w, &pe, &hit, &evicted);
	} else {
		rc = do_exec(d, c, &pc, &r, &w, &pe, &seq, &insns);
	}
	if (rc) {
		arf_proto_wr_free(&w);
		arf_proto_wr_init(&w);
		arf_proto_put_prog_error(&w, &pe);
		arfd_log(ARFD_LOG_DEBUG, "%s from %s: %s", arf_proto_op_name(op),
			 arf_net_sconn_peer(c)->addr, pe.msg);
	}

	arfd_fs_lock(d);
	d->ctr.requests[arf_proto_op_index(op)]++;
	if (rc)
		d->ctr.errors++;
	if (rc == ARF_EPROTO)
		d->ctr.bad_requests++;
	d->ctr.prog_evictions += (uint64_t)evicted;
	if (op == ARF_OP_PROG_LOAD) {
		if (!rc && hit)
			d->ctr.prog_load_hits++;
		else if (!rc)
			d->ctr.prog_loads++;
		else
			d->ctr.prog_rejected++;
	} else if (rc != ARF_ENOPROG && rc != ARF_EPROTO && rc != -ENOSYS) {
		d->ctr.prog_execs++;
		d->ctr.prog_insns += insns;
		if (rc)
			d->ctr.prog_failures++;
		if (rc == ARF_EBUDGET)
			d->ctr.prog_budget_stops++;
	}
	if (seq && d->durable_seq < seq) {
		/* the program's changes are not durable yet: reply after the group commit */
		arfd_pending_add_reply(d->pending, seq, c, id, op, arf_net_status_from_err(rc), w.buf,
				       w.len);
		w.buf = NULL;
		if (d->sync_wanted < seq)
			d->sync_wanted = seq;
		pthread_cond_signal(&d->commit_cond);
		deferred = 1;
	}
	arfd_fs_unlock(d);

	if (!deferred) {
		struct iovec iov = { w.buf, w.len };
		arf_net_reply(c, id, op, arf_net_status_from_err(rc), &iov, w.len ? 1 : 0);
	}
	arf_proto_wr_free(&w);
}

/* ---- the control socket's view (arfctl progs) ---------------------------- */

/* Under p->lock: e's counters and shape. */
static void info_of(const struct centry *e, struct arfd_prog_info *pi)
{
	size_t n = 0, ro = 0;

	memset(pi, 0, sizeof(*pi));
	memcpy(pi->hash, e->hash, sizeof(pi->hash));
	arf_mc_prog_insns(e->prog, &n);
	arf_mc_prog_rodata(e->prog, &ro);
	pi->bytes = e->len;
	pi->insns = n;
	pi->entry = arf_mc_prog_entry(e->prog);
	pi->rodata = ro;
	pi->elf = e->elf;
	pi->native = arf_mc_prog_jitted(e->prog);
	arf_mc_prog_jit_code(e->prog, &ro);
	pi->native_bytes = ro;
	pi->loads = e->loads;
	pi->runs = e->runs;
	pi->failures = e->failures;
	pi->insns_run = e->insns_run;
	pi->running = e->refs - 1;
	pi->loaded_at = e->loaded_at;
	pi->last_used = e->used_at;
	pi->lru = e->last_used;
	pi->owner_uid = e->owner;
}

static int by_recent_use(const void *a, const void *b)
{
	const struct arfd_prog_info *x = a, *y = b;
	return x->lru < y->lru ? 1 : x->lru > y->lru ? -1 : 0;
}

int arfd_progs_list(struct arfd *d, struct arfd_prog_info **out, size_t *n, size_t *cap)
{
	struct arfd_progs *p = d->progs;
	struct arfd_prog_info *v;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	*cap = p->cap;
	/* at most cap entries: allocate before locking, fill under the lock */
	v = calloc(p->cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->cap; i++)
		if (p->tab[i])
			info_of(p->tab[i], &v[k++]);
	pthread_mutex_unlock(&p->lock);
	qsort(v, k, sizeof(*v), by_recent_use);
	if (!k) {
		free(v);
		v = NULL;
	}
	*out = v;
	*n = k;
	return 0;
}

/* Under p->lock: the one slot whose hash starts with the hex digits of
 * prefix, or NULL with the reason in err and *rc. */
static struct centry **match(struct arfd_progs *p, const char *prefix, int *rc, char *err,
			     size_t errlen)
{
	struct centry **found = NULL;
	size_t len = strlen(prefix), nfound = 0;
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < p->cap; i++) {
		struct centry *e = p->tab[i];
		size_t k = 0;
		if (!e)
			continue;
		for (; k < len; k++) {
			unsigned b = e->hash[k / 2];
			char want = digits[k % 2 ? b & 15 : b >> 4];
			if ((prefix[k] | 0x20) != want) /* hex digits in either case */
				break;
		}
		if (k == len) {
			found = &p->tab[i];
			nfound++;
		}
	}
	if (nfound == 1)
		return found;
	if (nfound)
		snprintf(err, errlen, "hash prefix '%s' is ambiguous: %zu cached programs match "
			 "(give more digits)", prefix, nfound);
	else
		snprintf(err, errlen, "no cached program has a hash starting with '%s' "
			 "(see arfctl progs list)", prefix);
	*rc = nfound ? -ENOTUNIQ : -ENOENT;
	return NULL;
}

static int prefix_ok(const char *prefix, char *err, size_t errlen)
{
	size_t len = strlen(prefix);

	if (len && len <= 2 * ARF_PROTO_PROG_HASH && strspn(prefix, "0123456789abcdefABCDEF") == len)
		return 0;
	snprintf(err, errlen, "a program hash (or a prefix of one) is 1 to %u hex digits",
		 2 * ARF_PROTO_PROG_HASH);
	return -EINVAL;
}

int arfd_progs_show(struct arfd *d, const char *prefix, struct arfd_prog_info *info, char **text,
		    char *err, size_t errlen)
{
	struct arfd_progs *p = d->progs;
	struct centry **slot, *e;
	int rc = 0;

	if (text)
		*text = NULL;
	if ((rc = prefix_ok(prefix, err, errlen)))
		return rc;
	pthread_mutex_lock(&p->lock);
	slot = match(p, prefix, &rc, err, errlen);
	e = slot ? *slot : NULL;
	if (e) {
		info_of(e, info);
		e->refs++; /* the disassembly reads it outside the lock, as a run does */
	}
	pthread_mutex_unlock(&p->lock);
	if (!e)
		return rc;
	if (text) {
		size_t n = 0;
		const struct arf_mc_insn *insns = arf_mc_prog_insns(e->prog, &n); /* immutable */
		rc = arf_mc_disasm(insns, n, text, err, errlen);
	}
	pthread_mutex_lock(&p->lock);
	centry_put(e);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int arfd_progs_unload(struct arfd *d, const char *prefix, struct arfd_prog_info *info, char *err,
		      size_t errlen)
{
	struct arfd_progs *p = d->progs;
	struct centry **slot;
	int rc = 0;

	if ((rc = prefix_ok(prefix, err, errlen)))
		return rc;
	pthread_mutex_lock(&p->lock);
	slot = match(p, prefix, &rc, err, errlen);
	if (slot) {
		info_of(*slot, info);
		centry_put(*slot); /* a run still holding it keeps it alive */
		*slot = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	return slot ? 0 : rc;
}

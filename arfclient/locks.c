/* SPDX-License-Identifier: MIT */
/*
 * libarf locks: advisory locks held by arfd (arfd/locks.c), the client's
 * part of them.
 *
 * Each client is one lock client to arfd, named by a random id.  The
 * client keeps a copy of what it holds -- for every (file, kind, owner),
 * the ranges the server's last answer listed, newest answer winning by the
 * server's sequence number -- because after a restart of arfd it must
 * reclaim exactly that, in the grace period (NFSv4's reclaim), before
 * anything else it asks about locks.  While it holds or waits for any lock
 * a thread renews its lease every third of the lease (a waiting request is
 * no renewal: it may wait for long); an answer that names another
 * lease than the one the client holds, on the same server incarnation,
 * means the lease ran out (the client was cut off or stopped for longer)
 * and its locks were released: the files concerned are marked lost, and
 * arf_v_lock_lost() says so until arf_v_lock_forget_lost(), so that the caller
 * can fail I/O with EIO as the NFS client does.
 *
 * A waiting lock is held by arfd, not polled: the request stays
 * unanswered until the lock is granted, or until the server gives it back
 * (ARF_LOCK_R_WAIT) after half the client's reply timeout, upon which it
 * is asked again.  arf_lock_cancel() from another thread ends the wait
 * with -EINTR unless the lock was granted first.
 *
 * One mutex covers the table, the lease and the waiters; it is held over
 * the requests that must not cross a reclaim (UNLOCK, RENEW, the reclaims
 * themselves), never over a LOCK, which may wait.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "client_int.h"

#define NBUCKETS 256u
#define POLL_MS 100u     /* back-off when the server gave a wait back at once */

struct lkrange {
	uint32_t type;
	uint64_t start, end;
};

/* What this client holds of one (file, kind, owner). */
struct lkent {
	struct lkent *next;
	uint64_t ino;
	uint32_t gen, kind;
	uint64_t owner;
	uint32_t pid;
	uint64_t seq;            /* the server's sequence number of the answer it copies */
	uint32_t n;
	struct lkrange *r;
};

struct lklost {
	struct lklost *next;
	uint64_t ino;
	uint32_t gen;
};

struct lkwaiter {
	struct lkwaiter *next;
	uint64_t wait_id;
	int cancelled;
};

struct arf_lockstate {
	pthread_mutex_t mu;
	pthread_cond_t cond;     /* wakes the renewer (stop, a first lock) */
	uint64_t client;         /* our id at arfd */
	uint64_t lease;          /* the lease we hold (0: none) */
	uint64_t lease_inc;      /* the server incarnation it belongs to */
	uint32_t lease_ms;
	uint64_t valid_until;    /* monotonic ms: the lease holds at least until then */
	uint64_t nheld;          /* entries in the table (read without mu: a hint) */
	uint64_t nlost;          /* entries in lost (likewise) */
	uint64_t next_wait;
	struct lkent *tab[NBUCKETS];
	struct lklost *lost;
	struct lkwaiter *waiters;
	uint64_t precancel[16];  /* cancelled before their arf_lock began */
	unsigned nprecancel;
	pthread_t renewer;
	int renewing, stop;
};

static size_t bucket(uint64_t ino, uint64_t owner)
{
	return (size_t)(((ino ^ owner * 0xff51afd7ed558ccdull) * 0x9e3779b97f4a7c15ull) >> 56);
}

static struct lkent **ent_find(struct arf_lockstate *ls, uint64_t ino, uint32_t gen, uint32_t kind,
			       uint64_t owner)
{
	struct lkent **pp = &ls->tab[bucket(ino, owner)];
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->ino == ino && (*pp)->gen == gen && (*pp)->kind == kind &&
		    (*pp)->owner == owner)
			return pp;
	return NULL;
}

static void ent_drop(struct arf_lockstate *ls, struct lkent **pp)
{
	struct lkent *e = *pp;
	*pp = e->next;
	free(e->r);
	free(e);
	__atomic_sub_fetch(&ls->nheld, 1, __ATOMIC_RELAXED);
}

static void lost_add(struct arf_lockstate *ls, uint64_t ino, uint32_t gen)
{
	for (struct lklost *l = ls->lost; l; l = l->next)
		if (l->ino == ino && l->gen == gen)
			return;
	struct lklost *l = malloc(sizeof(*l));
	if (!l)
		return; /* the lock is gone all the same; only the EIO is missed */
	l->ino = ino;
	l->gen = gen;
	l->next = ls->lost;
	ls->lost = l;
	__atomic_add_fetch(&ls->nlost, 1, __ATOMIC_RELAXED);
}

/* Everything held is gone (the lease ran out). */
static void all_lost(struct arf_lockstate *ls)
{
	unsigned n = 0;
	for (size_t b = 0; b < NBUCKETS; b++)
		while (ls->tab[b]) {
			lost_add(ls, ls->tab[b]->ino, ls->tab[b]->gen);
			ent_drop(ls, &ls->tab[b]);
			n++;
		}
	if (n)
		arf_log_msg(0, "lock lease lost (the server released this client's locks): "
			    "%u lock owners' locks are gone", n);
}

static uint64_t incarnation(arf_client *c)
{
	return __atomic_load_n(&c->info.incarnation, __ATOMIC_RELAXED);
}

/* Did the server this client talks to now give this answer (not one that
 * went away since)?  Its incarnation is in the high bits of seq. */
static int current(arf_client *c, const struct arf_proto_lock_hdr *h)
{
	return (h->seq >> 40) == (incarnation(c) & 0xffffffu);
}

/* An answer's header, under mu: the lease it names. */
static void note_lease(arf_client *c, const struct arf_proto_lock_hdr *h)
{
	struct arf_lockstate *ls = c->locks;
	uint64_t inc = incarnation(c);

	if (ls->lease && ls->lease_inc == inc && h->lease != ls->lease)
		all_lost(ls); /* same server, another lease: ours ran out */
	if (h->lease) {
		ls->lease = h->lease;
		ls->lease_inc = inc;
		ls->lease_ms = h->lease_ms ? h->lease_ms : 1000;
		ls->valid_until = arf_now_ms() + ls->lease_ms;
	}
}

/* An answer's list of the owner's ranges, under mu: the copy follows it
 * unless a newer answer was copied already. */
static int apply_ranges(struct arf_lockstate *ls, struct arf_proto_rd *r, uint64_t ino, uint32_t gen,
			uint32_t kind, uint64_t owner, uint32_t pid, uint64_t seq)
{
	uint32_t n = arf_proto_get_u32(r);
	if (r->err || n > ARF_LOCK_MAX_RANGES)
		return ARF_EPROTO;
	struct lkrange *v = n ? malloc(n * sizeof(*v)) : NULL;
	if (n && !v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		v[i].type = arf_proto_get_u32(r);
		v[i].start = arf_proto_get_u64(r);
		v[i].end = arf_proto_get_u64(r);
	}
	if (r->err) {
		free(v);
		return ARF_EPROTO;
	}
	struct lkent **pp = ent_find(ls, ino, gen, kind, owner);
	if (pp && (*pp)->seq >= seq) {
		free(v);
		return 0; /* an answer given after this one is in the copy */
	}
	if (!n) {
		free(v);
		if (pp)
			ent_drop(ls, pp);
		return 0;
	}
	struct lkent *e = pp ? *pp : calloc(1, sizeof(*e));
	if (!e) {
		free(v);
		return -ENOMEM;
	}
	if (!pp) {
		e->ino = ino;
		e->gen = gen;
		e->kind = kind;
		e->owner = owner;
		size_t b = bucket(ino, owner);
		e->next = ls->tab[b];
		ls->tab[b] = e;
		__atomic_add_fetch(&ls->nheld, 1, __ATOMIC_RELAXED);
	}
	free(e->r);
	e->r = v;
	e->n = n;
	e->seq = seq;
	if (pid)
		e->pid = pid;
	return 0;
}

/* One request about locks; the reply's header in *h and the rest in r
 * (over *resp, which the caller frees). */
static int lock_call(arf_client *c, uint16_t op, struct arf_proto_wr *w, struct arf_net_buf *resp,
		     struct arf_proto_rd *r, struct arf_proto_lock_hdr *h)
{
	int rc = arf_req(c, op, w, resp);
	arf_proto_wr_free(w);
	if (rc)
		return rc;
	arf_proto_rd_init(r, resp->data, resp->len);
	arf_proto_get_lock_hdr(r, h);
	return r->err ? ARF_EPROTO : 0;
}

static void put_fh(struct arf_proto_wr *w, uint64_t ino, uint32_t gen)
{
	struct arf_proto_fh fh = { ino, gen };
	arf_proto_put_fh(w, &fh);
}

/* Under mu: after a restart of the server, reclaim everything held (in its
 * grace period) before anything else is asked; what cannot be reclaimed is
 * lost.  Then say we are done. */
static void reclaim(arf_client *c)
{
	struct arf_lockstate *ls = c->locks;
	uint64_t inc;

	/* a client that held a lease but no locks still says it is done, so
	 * that the grace period need not wait for it */
	while ((ls->nheld || ls->lease) && ls->lease_inc != (inc = incarnation(c))) {
		unsigned kept = 0, gone = 0;
		ls->lease = 0; /* the new server has none of ours until the first reclaim */
		ls->lease_inc = inc;
		for (size_t b = 0; b < NBUCKETS; b++)
			for (struct lkent **pp = &ls->tab[b]; *pp;) {
				struct lkent *e = *pp;
				int rc = 0;
				for (uint32_t i = 0; i < e->n && !rc; i++) {
					struct arf_proto_wr w;
					struct arf_net_buf resp;
					struct arf_proto_rd r;
					struct arf_proto_lock_hdr h;
					struct arf_proto_lock_req rq = {
						ls->client, ls->lease, e->owner, e->pid, e->kind,
						e->r[i].type, ARF_LOCK_F_RECLAIM, e->r[i].start,
						e->r[i].end, 0, 0 };
					arf_proto_wr_init(&w);
					put_fh(&w, e->ino, e->gen);
					arf_proto_put_lock_req(&w, &rq);
					rc = lock_call(c, ARF_OP_LOCK, &w, &resp, &r, &h);
					if (!rc && h.result != ARF_LOCK_R_DONE)
						rc = -ENOLCK;
					if (!rc) {
						note_lease(c, &h);
						e->seq = h.seq;
					}
					arf_net_buf_free(&resp);
				}
				if (rc) {
					lost_add(ls, e->ino, e->gen);
					ent_drop(ls, pp);
					gone++;
				} else {
					pp = &e->next;
					kept++;
				}
			}
		struct arf_proto_wr w;
		struct arf_net_buf resp;
		struct arf_proto_rd r;
		struct arf_proto_lock_hdr h;
		arf_proto_wr_init(&w);
		arf_proto_put_u64(&w, ls->client);
		arf_proto_put_u64(&w, ls->lease);
		arf_proto_put_u32(&w, ARF_LOCK_RENEW_RECLAIMED);
		if (!lock_call(c, ARF_OP_LOCK_RENEW, &w, &resp, &r, &h) && current(c, &h))
			note_lease(c, &h);
		arf_net_buf_free(&resp);
		arf_log_msg(gone ? 0 : 1, "server restarted: reclaimed the locks of %u owners%s", kept,
			    gone ? ", some could not be (lost)" : "");
	}
}

/* Under mu: renew the lease now. */
static void renew(arf_client *c)
{
	struct arf_lockstate *ls = c->locks;
	struct arf_proto_wr w;
	struct arf_net_buf resp;
	struct arf_proto_rd r;
	struct arf_proto_lock_hdr h;

	reclaim(c);
	if (!ls->nheld && !ls->waiters)
		return;
	arf_proto_wr_init(&w);
	arf_proto_put_u64(&w, ls->client);
	arf_proto_put_u64(&w, ls->lease);
	arf_proto_put_u32(&w, 0);
	int rc = lock_call(c, ARF_OP_LOCK_RENEW, &w, &resp, &r, &h);
	arf_net_buf_free(&resp);
	if (rc)
		return; /* the server is away: the next turn tries again */
	if (ls->lease && ls->lease_inc != incarnation(c)) {
		reclaim(c); /* the call met a restarted server */
		return;
	}
	if (!current(c, &h))
		return;
	if (!h.lease && ls->lease)
		all_lost(ls); /* the server forgot us: our lease ran out */
	else
		note_lease(c, &h);
}

static void *renewer_main(void *arg)
{
	arf_client *c = arg;
	struct arf_lockstate *ls = c->locks;

	pthread_mutex_lock(&ls->mu);
	while (!ls->stop) {
		struct timespec ts;
		uint32_t period = ls->lease_ms ? ls->lease_ms / 3 : 1000;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += period / 1000;
		ts.tv_nsec += (long)(period % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&ls->cond, &ls->mu, &ts);
		if (!ls->stop && (ls->nheld || ls->waiters))
			renew(c); /* a waiting request is not a renewal: it may wait long */
	}
	pthread_mutex_unlock(&ls->mu);
	return NULL;
}

/* Under mu: the renewer runs once something is held or waited for. */
static void renewer_start(arf_client *c)
{
	struct arf_lockstate *ls = c->locks;
	if (ls->renewing || (!ls->nheld && !ls->waiters))
		return;
	if (!pthread_create(&ls->renewer, NULL, renewer_main, c))
		ls->renewing = 1;
}

int arf_locks_init(arf_client *c)
{
	struct arf_lockstate *ls = calloc(1, sizeof(*ls));
	pthread_condattr_t ca;

	if (!ls)
		return -ENOMEM;
	while (!ls->client)
		if (getrandom(&ls->client, sizeof(ls->client), 0) != (ssize_t)sizeof(ls->client))
			ls->client = arf_now_ms() * 0x9e3779b97f4a7c15ull ^ (uintptr_t)ls;
	pthread_mutex_init(&ls->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ls->cond, &ca);
	pthread_condattr_destroy(&ca);
	ls->next_wait = 1;
	c->locks = ls;
	return 0;
}

void arf_locks_free(arf_client *c)
{
	struct arf_lockstate *ls = c->locks;

	if (!ls)
		return;
	pthread_mutex_lock(&ls->mu);
	ls->stop = 1;
	pthread_cond_signal(&ls->cond);
	pthread_mutex_unlock(&ls->mu);
	if (ls->renewing)
		pthread_join(ls->renewer, NULL);
	for (size_t b = 0; b < NBUCKETS; b++)
		while (ls->tab[b])
			ent_drop(ls, &ls->tab[b]);
	while (ls->lost) {
		struct lklost *l = ls->lost;
		ls->lost = l->next;
		free(l);
	}
	pthread_mutex_destroy(&ls->mu);
	pthread_cond_destroy(&ls->cond);
	free(ls);
	c->locks = NULL;
}

/* ---- the API ---- */

static int lock_args_ok(const struct arf_lock *lk)
{
	return (lk->kind == ARF_LK_FCNTL || lk->kind == ARF_LK_FLOCK) && lk->start <= lk->end;
}

uint64_t arf_lock_wait_id(arf_client *c)
{
	return __atomic_fetch_add(&c->locks->next_wait, 1, __ATOMIC_RELAXED);
}

int arf_v_lock(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_lock *lk, int wait,
	     uint64_t wait_id)
{
	struct arf_lockstate *ls = c->locks;
	struct lkwaiter me = { NULL, wait_id, 0 };
	uint32_t wait_ms = c->opts.timeout_ms ? c->opts.timeout_ms / 2 : 15000;
	int rc;

	if (!lock_args_ok(lk) || (lk->type != ARF_LK_RD && lk->type != ARF_LK_WR))
		return -EINVAL;
	if (wait_ms < 1000)
		wait_ms = 1000;
	if (wait_ms > ARF_LOCK_MAX_WAIT_MS)
		wait_ms = ARF_LOCK_MAX_WAIT_MS;
	pthread_mutex_lock(&ls->mu);
	if (!me.wait_id)
		me.wait_id = arf_lock_wait_id(c);
	for (unsigned i = 0; i < ls->nprecancel; i++)
		if (ls->precancel[i] == me.wait_id) {
			ls->precancel[i] = ls->precancel[--ls->nprecancel];
			me.cancelled = 1;
			break;
		}
	me.next = ls->waiters;
	ls->waiters = &me;
	renewer_start(c); /* even a request that does not wait may, in a grace period */
	pthread_mutex_unlock(&ls->mu);
	for (;;) {
		struct arf_proto_wr w;
		struct arf_net_buf resp;
		struct arf_proto_rd r;
		struct arf_proto_lock_hdr h;

		pthread_mutex_lock(&ls->mu);
		reclaim(c);
		struct arf_proto_lock_req rq = {
			ls->client, ls->lease, lk->owner, lk->pid,
			lk->kind == ARF_LK_FLOCK ? ARF_LOCK_FLOCK : ARF_LOCK_POSIX,
			lk->type == ARF_LK_WR ? ARF_LOCK_WR : ARF_LOCK_RD, wait ? ARF_LOCK_F_WAIT : 0,
			lk->start, lk->end, me.wait_id, wait_ms };
		int cancelled = me.cancelled;
		pthread_mutex_unlock(&ls->mu);
		if (cancelled) {
			rc = -EINTR;
			break;
		}
		uint64_t t0 = arf_now_ms();
		arf_proto_wr_init(&w);
		put_fh(&w, ino, gen);
		arf_proto_put_lock_req(&w, &rq);
		rc = lock_call(c, ARF_OP_LOCK, &w, &resp, &r, &h);
		pthread_mutex_lock(&ls->mu);
		if (!rc && (ls->nheld || ls->lease) && ls->lease_inc != incarnation(c))
			reclaim(c); /* the server restarted meanwhile: what we held first */
		if (!rc && current(c, &h)) {
			note_lease(c, &h);
			rc = apply_ranges(ls, &r, ino, gen, rq.kind, lk->owner, lk->pid, h.seq);
			renewer_start(c);
		}
		pthread_mutex_unlock(&ls->mu);
		arf_net_buf_free(&resp);
		if (rc || h.result != ARF_LOCK_R_WAIT)
			break;
		if (arf_now_ms() - t0 < wait_ms / 2) { /* given back at once: poll */
			struct timespec ts = { 0, POLL_MS * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	pthread_mutex_lock(&ls->mu);
	for (struct lkwaiter **pp = &ls->waiters; *pp; pp = &(*pp)->next)
		if (*pp == &me) {
			*pp = me.next;
			break;
		}
	pthread_mutex_unlock(&ls->mu);
	return rc;
}

int arf_v_lock_cancel(arf_client *c, uint64_t wait_id)
{
	struct arf_lockstate *ls = c->locks;
	struct arf_proto_wr w;
	struct arf_net_buf resp;
	int found = 0;

	pthread_mutex_lock(&ls->mu);
	for (struct lkwaiter *wt = ls->waiters; wt; wt = wt->next)
		if (wt->wait_id == wait_id) {
			wt->cancelled = 1;
			found = 1;
		}
	if (!found) { /* not begun yet (or over): a later arf_lock with it ends at once */
		if (ls->nprecancel == sizeof(ls->precancel) / sizeof(ls->precancel[0]))
			memmove(ls->precancel, ls->precancel + 1,
				sizeof(ls->precancel) - sizeof(ls->precancel[0])), ls->nprecancel--;
		ls->precancel[ls->nprecancel++] = wait_id;
	}
	pthread_mutex_unlock(&ls->mu);
	if (!found)
		return 0;
	arf_proto_wr_init(&w);
	arf_proto_put_u64(&w, ls->client);
	arf_proto_put_u64(&w, wait_id);
	int rc = arf_req(c, ARF_OP_LOCK_CANCEL, &w, &resp);
	arf_proto_wr_free(&w);
	arf_net_buf_free(&resp);
	return rc;
}

int arf_v_unlock(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_lock *lk)
{
	struct arf_lockstate *ls = c->locks;
	uint32_t kind = lk->kind == ARF_LK_FLOCK ? ARF_LOCK_FLOCK : ARF_LOCK_POSIX;
	int rc = 0;

	if (!lock_args_ok(lk))
		return -EINVAL;
	pthread_mutex_lock(&ls->mu);
	reclaim(c);
	if (ent_find(ls, ino, gen, kind, lk->owner)) { /* nothing held: nothing to ask */
		struct arf_proto_wr w;
		struct arf_net_buf resp;
		struct arf_proto_rd r;
		struct arf_proto_lock_hdr h;
		arf_proto_wr_init(&w);
		put_fh(&w, ino, gen);
		arf_proto_put_u64(&w, ls->client);
		arf_proto_put_u64(&w, ls->lease);
		arf_proto_put_u64(&w, lk->owner);
		arf_proto_put_u32(&w, kind);
		arf_proto_put_u64(&w, lk->start);
		arf_proto_put_u64(&w, lk->end);
		rc = lock_call(c, ARF_OP_UNLOCK, &w, &resp, &r, &h);
		if (!rc && ls->lease_inc == incarnation(c) && current(c, &h)) {
			note_lease(c, &h);
			rc = apply_ranges(ls, &r, ino, gen, kind, lk->owner, 0, h.seq);
		} else if (!rc) {
			/* the unlock met a restarted server, which holds nothing of
			 * ours yet: let go of it in the copy too, then reclaim the rest */
			struct lkent **pp = ent_find(ls, ino, gen, kind, lk->owner);
			if (pp && kind == ARF_LOCK_FLOCK)
				ent_drop(ls, pp);
			else if (pp && lk->start == 0 && lk->end == ARF_LOCK_EOF)
				ent_drop(ls, pp);
			reclaim(c);
		}
		arf_net_buf_free(&resp);
	}
	pthread_mutex_unlock(&ls->mu);
	return rc;
}

int arf_v_getlk(arf_client *c, uint64_t ino, uint32_t gen, struct arf_lock *lk)
{
	struct arf_lockstate *ls = c->locks;
	int rc;

	if (!lock_args_ok(lk) || (lk->type != ARF_LK_RD && lk->type != ARF_LK_WR))
		return -EINVAL;
	for (;;) {
		struct arf_proto_wr w;
		struct arf_net_buf resp;
		struct arf_proto_rd r;
		struct arf_proto_lock_hdr h;

		pthread_mutex_lock(&ls->mu);
		reclaim(c);
		struct arf_proto_lock_req rq = {
			ls->client, ls->lease, lk->owner, lk->pid,
			lk->kind == ARF_LK_FLOCK ? ARF_LOCK_FLOCK : ARF_LOCK_POSIX,
			lk->type == ARF_LK_WR ? ARF_LOCK_WR : ARF_LOCK_RD, ARF_LOCK_F_TEST, lk->start,
			lk->end, 0, 0 };
		pthread_mutex_unlock(&ls->mu);
		arf_proto_wr_init(&w);
		put_fh(&w, ino, gen);
		arf_proto_put_lock_req(&w, &rq);
		rc = lock_call(c, ARF_OP_LOCK, &w, &resp, &r, &h);
		if (!rc && h.result == ARF_LOCK_R_CONFLICT) {
			uint32_t type = arf_proto_get_u32(&r);
			lk->start = arf_proto_get_u64(&r);
			lk->end = arf_proto_get_u64(&r);
			lk->pid = arf_proto_get_u32(&r);
			lk->type = type == ARF_LOCK_WR ? ARF_LK_WR : ARF_LK_RD;
			rc = r.err ? ARF_EPROTO : 0;
		} else if (!rc && h.result == ARF_LOCK_R_DONE) {
			lk->type = ARF_LK_UN;
		}
		arf_net_buf_free(&resp);
		if (rc || h.result != ARF_LOCK_R_WAIT)
			return rc;
		struct timespec ts = { 0, POLL_MS * 1000000L }; /* the grace period: ask again */
		nanosleep(&ts, NULL);
	}
}

int arf_v_lock_lost(arf_client *c, uint64_t ino, uint32_t gen)
{
	struct arf_lockstate *ls = c->locks;
	int lost = 0;

	if (!__atomic_load_n(&ls->nlost, __ATOMIC_RELAXED) &&
	    (!__atomic_load_n(&ls->nheld, __ATOMIC_RELAXED) ||
	     arf_now_ms() < __atomic_load_n(&ls->valid_until, __ATOMIC_RELAXED)))
		return 0;
	pthread_mutex_lock(&ls->mu);
	if (ls->nheld && arf_now_ms() >= ls->valid_until)
		renew(c); /* past the lease: ask before trusting it */
	for (struct lklost *l = ls->lost; l && !lost; l = l->next)
		lost = l->ino == ino && l->gen == gen;
	pthread_mutex_unlock(&ls->mu);
	return lost;
}

void arf_v_lock_forget_lost(arf_client *c, uint64_t ino, uint32_t gen)
{
	struct arf_lockstate *ls = c->locks;

	if (!__atomic_load_n(&ls->nlost, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&ls->mu);
	for (struct lklost **pp = &ls->lost; *pp; pp = &(*pp)->next)
		if ((*pp)->ino == ino && (*pp)->gen == gen) {
			struct lklost *l = *pp;
			*pp = l->next;
			free(l);
			__atomic_sub_fetch(&ls->nlost, 1, __ATOMIC_RELAXED);
			break;
		}
	pthread_mutex_unlock(&ls->mu);
}

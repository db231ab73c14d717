/* SPDX-License-Identifier: MIT */
/*
 * libarf's connection layer: dialling the server (the net transport's
 * connect, then the handshake's server info and superblock checked), and
 * the two ways every other file talks to it -- a batch of one-sided reads
 * (arf_cl_read) and a request/response exchange (arf_cl_call).  When the
 * connection breaks they dial again, with backoff, for up to
 * opts.reconnect_ms (for ever with ARF_WAIT_FOREVER: a hard mount), one
 * thread dialling while the others wait for it; the new connection is
 * swapped in under conn_lock's write side while operations hold its read
 * side; a server that restarted (a new incarnation) has its caches
 * dropped, and before the new connection serves anything else, the writes
 * its restart lost are re-sent (wlog.c), so that nothing this client sends
 * later is overtaken by an older write.  A call keeps one request id
 * however often it is sent, so arfd answers a mutation it applied before
 * the connection broke from its reply cache instead of applying it again.
 * Every wait answers to the thread's cancel hook.  Counters of the
 * connections replaced are kept in
 * c->base so arf_stats() never goes backwards.
 *
 * Below this file are only the net transport, the caches, the write log
 * and util.c: nothing here calls back up into requests, programs or the
 * API.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client_int.h"

/* Open a connection to c->url with c's hello and key, and read what the
 * handshake says.  On success *conn, *info, *sb and *have are filled. */
/*
 * A server that says the volume is another server's (EREMOTE, issue 18:
 * NFSv4's MOVED) names that server's URL in its message: the client goes
 * there, over tcp, and stays there for its reconnections (its location
 * corrected).  At most MAX_MOVED times in one dial, against loops.
 */
#define MAX_MOVED 4
/* A server that is taking the volume over (EAGAIN: arfctl vol move) is
 * asked again every DELAY_MS, for up to the call's timeout. */
#define DELAY_MS 20

static int redirect(arf_client *c, const char *msg)
{
	const char *p = strstr(msg, "arf://");
	struct arf_url u;
	char url[320], why[256];

	if (!p)
		return -1;
	size_t n = strcspn(p, " \t\n");
	if (n >= sizeof(url))
		return -1;
	memcpy(url, p, n);
	url[n] = 0;
	if (arf_url_parse(url, &u, why, sizeof(why)) || strcmp(u.transport, "tcp"))
		return -1;
	arf_log_msg(2, "moved: %s", msg);
	pthread_mutex_lock(&c->url_lock); /* volumes.c copies it meanwhile */
	snprintf(c->url.transport, sizeof(c->url.transport), "tcp");
	snprintf(c->url.host, sizeof(c->url.host), "%s", u.host);
	c->url.port = u.port;
	pthread_mutex_unlock(&c->url_lock);
	__atomic_add_fetch(&c->moved, 1, __ATOMIC_RELAXED);
	return 0;
}

static int dial(arf_client *c, struct arf_net_conn **conn, struct arf_proto_info *info,
		struct arf_meta_super *sb, int *have, char *err, size_t errlen)
{
	struct arf_net_client_opts no;
	int rc;

	memset(&no, 0, sizeof(no));
	no.transport = c->url.transport;
	no.host = c->url.host;
	no.port = c->url.port;
	no.sock_path = c->url.socket;
	no.spin_us = c->opts.spin_us;
	no.timeout_ms = c->opts.timeout_ms;
	no.auth_key = c->has_auth_key ? c->auth_key : NULL;
	no.resvport = c->opts.resvport;
	no.hello = c->hello;
	no.hello_len = c->hello_len;
	uint32_t delayed_ms = 0, bound_ms = c->opts.timeout_ms ? c->opts.timeout_ms : 30000;
	for (int hop = 0;; hop++) {
		rc = arf_net_connect(&no, conn, err, errlen);
		if (rc == -EAGAIN && delayed_ms < bound_ms) {
			/* the volume is being moved to that server (NFSv4's
			 * NFS4ERR_DELAY): it serves it in a moment */
			struct timespec ts = { 0, DELAY_MS * 1000 * 1000 };
			nanosleep(&ts, NULL);
			delayed_ms += DELAY_MS;
			hop = -1;
			continue;
		}
		/* a server's credential token is for the server that minted
		 * it: never carried to another one on a server's word; a
		 * cell's is good on every server of the cell */
		if (rc != -EREMOTE || hop == MAX_MOVED || (c->has_token && !arf_cl_cell_token(c)) ||
		    redirect(c, err))
			break;
		no.transport = c->url.transport; /* where the volume is: tcp */
		no.host = c->url.host;
		no.port = c->url.port;
	}
	if (rc)
		return rc;
	size_t ilen = 0;
	const void *ib = arf_net_server_info(*conn, &ilen);
	struct arf_proto_rd r;
	arf_proto_rd_init(&r, ib, ilen);
	arf_proto_get_info(&r, info);
	if (r.err || info->version != ARF_PROTO_INFO_VERSION) {
		snprintf(err, errlen, "server info version %u not understood (libarf speaks %u)",
			 info->version, ARF_PROTO_INFO_VERSION);
		rc = ARF_EVERSION;
		goto fail;
	}
	memcpy(sb, info->super, sizeof(*sb));
	if ((rc = arf_meta_super_check(sb, err, errlen)))
		goto fail;
	size_t nreg = 0;
	const struct arf_net_region_info *regs = arf_net_regions(*conn, &nreg);
	*have = 0;
	for (size_t i = 0; i < nreg; i++)
		if (regs[i].id == ARF_REGION_META)
			*have = 1;
	return 0;
fail:
	arf_net_close(*conn);
	*conn = NULL;
	return rc;
}

/* Errors that mean the connection, not the operation, failed. */
static int conn_broken(int rc)
{
	return rc == -ECONNRESET || rc == -EPIPE || rc == -ENOTCONN || rc == -ETIMEDOUT ||
	       rc == -ECONNABORTED || rc == -EBADF;
}

static void add_counters(struct arf_net_counters *to, const struct arf_net_counters *from)
{
	to->one_sided_reads += from->one_sided_reads;
	to->one_sided_bytes += from->one_sided_bytes;
	to->one_sided_writes += from->one_sided_writes;
	to->rounds += from->rounds;
	to->calls += from->calls;
	to->bytes_sent += from->bytes_sent;
	to->bytes_received += from->bytes_received;
	to->futile_wakes += from->futile_wakes;
}

/*
 * Waiting.  A call waits for its reply, and after a broken connection for
 * a new one; net/ takes every wait of this thread in slices and asks
 * wait_abort between them whether to give up: when the embedder's cancel
 * hook says so (arf_set_thread_cancel: arf-fuse's "the caller got a fatal
 * signal"), the call ends with -EINTR; when the bound after the first
 * failure (reconnect_ms; none with ARF_WAIT_FOREVER, a hard mount) has
 * passed, with -EIO.
 */
static __thread arf_cancel_func tls_cancel;
static __thread void *tls_cancel_arg;

void arf_set_thread_cancel(arf_cancel_func fn, void *arg)
{
	tls_cancel = fn;
	tls_cancel_arg = arg;
}

enum { WHY_NONE, WHY_CANCEL, WHY_DEADLINE };

struct wait_ctx {
	uint64_t deadline_ms;   /* 0: none (yet) */
	int why;                /* WHY_*: what made it give up */
};

static int wait_abort(void *arg)
{
	struct wait_ctx *w = arg;

	if (tls_cancel && tls_cancel(tls_cancel_arg)) {
		w->why = WHY_CANCEL;
		return 1;
	}
	if (w->deadline_ms && arf_now_ms() >= w->deadline_ms) {
		w->why = WHY_DEADLINE;
		return 1;
	}
	return 0;
}

static int given_up(const struct wait_ctx *w)
{
	return w->why == WHY_CANCEL ? -EINTR : -EIO;
}

/* The bound starts at the first failure of a call (never for a hard wait). */
static void start_deadline(arf_client *c, struct wait_ctx *w)
{
	if (!w->deadline_ms && c->opts.reconnect_ms != ARF_WAIT_FOREVER)
		w->deadline_ms = arf_now_ms() + c->opts.reconnect_ms;
}

static void abs_in(struct timespec *ts, uint32_t ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000u;
	ts->tv_nsec += (long)(ms % 1000u) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Sleep ms, or less when the wait is given up: 0 or given_up's error. */
static int sleep_abortable(struct wait_ctx *w, uint32_t ms)
{
	while (ms) {
		uint32_t slice = ms > ARF_NET_ABORT_POLL_MS ? ARF_NET_ABORT_POLL_MS : ms;
		struct timespec ts = { 0, (long)slice * 1000000L };
		nanosleep(&ts, NULL);
		ms -= slice;
		if (wait_abort(w))
			return given_up(w);
	}
	return 0;
}

/* conn_lock's write side, taken in slices: 0 or given_up's error. */
static int wrlock_abortable(arf_client *c, struct wait_ctx *w)
{
	for (;;) {
		struct timespec ts;
		abs_in(&ts, ARF_NET_ABORT_POLL_MS);
		if (pthread_rwlock_timedwrlock(&c->conn_lock, &ts) == 0)
			return 0;
		if (wait_abort(w))
			return given_up(w);
	}
}

/* Dial until a connection is up (0), the wait is given up, or the bound
 * passes (-EIO).  The old connection, generation gen, is closed first. */
static int dial_until_up(arf_client *c, uint64_t gen, struct wait_ctx *w)
{
	const char *where = c->url.host[0] ? c->url.host : c->url.socket;
	uint64_t since = arf_now_ms();
	uint32_t wait_ms = 20;
	char err[256];
	int rc;

	if ((rc = wrlock_abortable(c, w)))
		return rc;
	if (c->conn_gen != gen) { /* replaced meanwhile */
		pthread_rwlock_unlock(&c->conn_lock);
		return 0;
	}
	if (c->conn) {
		struct arf_net_counters nc;
		arf_net_counters(c->conn, &nc);
		add_counters(&c->base, &nc);
		arf_net_abandon(c->conn); /* what it never sent goes nowhere later */
		c->conn = NULL; /* callers meanwhile wait for us (ENOTCONN) */
		if (!c->down_ms)
			__atomic_store_n(&c->down_ms, arf_now_ms(), __ATOMIC_RELAXED);
	}
	pthread_rwlock_unlock(&c->conn_lock);
	for (;;) {
		struct arf_net_conn *conn;
		struct arf_proto_info info;
		struct arf_meta_super sb;
		int have;
		rc = dial(c, &conn, &info, &sb, &have, err, sizeof(err));
		if (!rc) {
			if ((rc = wrlock_abortable(c, w))) {
				arf_net_close(conn);
				return rc;
			}
			int restarted = info.incarnation != c->info.incarnation;
			if (arf_wlog_stale(c, info.incarnation)) {
				int wrc = arf_wlog_replay(c, conn, info.incarnation);
				/* gone again: dial again; given up: the wait below
				 * says so (every write still kept for the next try) */
				if (conn_broken(wrc) || wrc == -ECANCELED || wrc == -EINTR) {
					pthread_rwlock_unlock(&c->conn_lock);
					arf_net_close(conn);
					snprintf(err, sizeof(err), "re-sending uncommitted writes: %s",
						 strerror(-wrc));
					goto wait;
				}
				if (wrc)
					arf_log_msg(0, "re-sending uncommitted writes: %s",
						    arf_strerror(wrc));
			}
			c->conn = conn;
			__atomic_store_n(&c->down_ms, 0, __ATOMIC_RELAXED);
			c->info = info;
			c->sb = sb;
			c->have_regions = have;
			c->conn_gen++;
			c->reconnects++;
			if (restarted) /* what we cached may have changed meanwhile */
				arf_cache_clear(c);
			pthread_rwlock_unlock(&c->conn_lock);
			int said = __atomic_exchange_n(&c->not_responding, 0, __ATOMIC_RELAXED);
			arf_log_msg(1, "%sreconnected to %s (incarnation %llu%s)",
				    said ? "arfd OK: " : "", where, (unsigned long long)info.incarnation,
				    restarted ? ", restarted: caches dropped" : "");
			return 0;
		}
wait:
		if (rc == -ECANCELED || wait_abort(w))
			return given_up(w);
		uint64_t now = arf_now_ms();
		if (c->opts.reconnect_ms == ARF_WAIT_FOREVER && now - since >= c->opts.timeout_ms &&
		    !__atomic_exchange_n(&c->not_responding, 1, __ATOMIC_RELAXED))
			arf_log_msg(0, "arfd at %s not responding, still trying (%s)", where, err);
		if (w->deadline_ms && now + wait_ms >= w->deadline_ms) {
			arf_log_msg(0, "reconnect failed: %s", err);
			return -EIO;
		}
		if ((rc = sleep_abortable(w, wait_ms)))
			return rc;
		if (wait_ms < 500)
			wait_ms *= 2;
	}
}

/* Replace connection generation gen (if nobody did yet) with a new one.
 * One thread dials; the others wait for it, each still answering to its
 * own cancel hook and bound (and taking over when the dialer gives up).
 * Returns 0, -EIO (the bound passed) or -EINTR (cancelled). */
static int reconnect(arf_client *c, uint64_t gen, struct wait_ctx *w)
{
	pthread_mutex_lock(&c->dial_lock);
	while (c->conn_gen == gen && c->dialing) {
		struct timespec ts;
		abs_in(&ts, ARF_NET_ABORT_POLL_MS);
		if (pthread_cond_timedwait(&c->dial_cond, &c->dial_lock, &ts) == ETIMEDOUT &&
		    wait_abort(w)) {
			pthread_mutex_unlock(&c->dial_lock);
			return given_up(w);
		}
	}
	if (c->conn_gen != gen) {
		pthread_mutex_unlock(&c->dial_lock);
		return 0;
	}
	/* a bound already past dials no more: an asynchronous exchange's
	 * bound began when it met the broken connection or began waiting for
	 * a missing one (arf_cl_deadline), and the drive recovers exchanges one
	 * by one, so each such dial would wait out a silent server's
	 * handshake, one timeout after another */
	if (wait_abort(w)) {
		pthread_mutex_unlock(&c->dial_lock);
		return given_up(w);
	}
	c->dialing = 1;
	pthread_mutex_unlock(&c->dial_lock);

	int rc = dial_until_up(c, gen, w);

	pthread_mutex_lock(&c->dial_lock);
	c->dialing = 0;
	pthread_cond_broadcast(&c->dial_cond);
	pthread_mutex_unlock(&c->dial_lock);
	return rc;
}

int arf_cl_read(arf_client *c, struct arf_net_read_op *ops, size_t n)
{
	struct wait_ctx w = { 0, WHY_NONE };
	int rc;

	arf_net_set_thread_abort(wait_abort, &w);
	for (;;) {
		pthread_rwlock_rdlock(&c->conn_lock);
		uint64_t gen = c->conn_gen;
		rc = c->conn ? arf_net_read(c->conn, ops, n) : -ENOTCONN;
		pthread_rwlock_unlock(&c->conn_lock);
		if (rc == -ECANCELED) {
			rc = given_up(&w);
			break;
		}
		if (!conn_broken(rc) || !c->opts.reconnect_ms) {
			if (conn_broken(rc))
				rc = -EIO;
			break;
		}
		start_deadline(c, &w);
		if ((rc = reconnect(c, gen, &w)))
			break;
		if (!c->have_regions) {
			rc = ARF_ERETRY; /* the new connection has no keys: the caller asks instead */
			break;
		}
	}
	arf_net_set_thread_abort(NULL, NULL);
	return rc;
}

/* one id for every sending of a call: the server's reply cache answers a
 * mutation it applied before the connection broke */
static uint64_t call_id(arf_client *c)
{
	return ARF_NET_ID_CALLER |
	       (__atomic_add_fetch(&c->next_xid, 1, __ATOMIC_RELAXED) & ~ARF_NET_ID_CALLER);
}

static int call_in(arf_client *c, uint16_t op, uint64_t id, const struct iovec *iov, int iovcnt,
		   struct arf_net_buf *resp, int *resent, struct wait_ctx *w);

uint64_t arf_cl_new_id(arf_client *c)
{
	return call_id(c);
}

static int call_with_id(arf_client *c, uint16_t op, uint64_t id, const struct iovec *iov,
			int iovcnt, struct arf_net_buf *resp, int *resent)
{
	struct wait_ctx w = { 0, WHY_NONE };
	return call_in(c, op, id, iov, iovcnt, resp, resent, &w);
}

int arf_cl_call(arf_client *c, uint16_t op, const struct iovec *iov, int iovcnt,
		struct arf_net_buf *resp, int *resent)
{
	return call_with_id(c, op, call_id(c), iov, iovcnt, resp, resent);
}

void arf_cl_call_pieces(arf_client *c, uint16_t op, uint64_t first_id, struct arf_cl_piece *pc,
			size_t n, void (*sent)(void *arg), void (*done)(void *arg, size_t i),
			void *arg)
{
	struct wait_ctx w = { 0, WHY_NONE };
	struct arf_net_pending p[ARF_CL_PIECES_MAX];
	uint64_t id[ARF_CL_PIECES_MAX];
	int lost[ARF_CL_PIECES_MAX];
	size_t posted = 0;

	for (size_t i = 0; i < n; i++) {
		id[i] = i == 0 && first_id ? first_id : call_id(c);
		pc[i].resp = (struct arf_net_buf){ 0 };
		pc[i].rc = -ENOTCONN;
		pc[i].unlocked = 0;
	}
	arf_net_set_thread_abort(wait_abort, &w);
	pthread_rwlock_rdlock(&c->conn_lock);
	while (c->conn && posted < n &&
	       !arf_net_call_send(c->conn, op, id[posted], pc[posted].iov, pc[posted].iovcnt,
				  &p[posted]))
		posted++;
	if (sent)
		sent(arg);
	for (size_t i = 0; i < posted; i++)
		pc[i].rc = arf_net_call_end(c->conn, &p[i], &pc[i].resp);
	/* first every piece that has its answer, still under the read side:
	 * the caller keeps what the server applied, and a reconnection (this
	 * thread's below, or another thread's, which needs the write side)
	 * replays the kept writes a restarted server lacks, so these must be
	 * kept before any can begin.  A caller who gave up (the send or a
	 * wait cancelled) gets that for the rest.  A first piece sent under an
	 * id of before (first_id) is done outside, as a piece sent again: its
	 * answer may be the reply cache's from a server that has restarted
	 * since (a persisted reply, with that server's verifier), so it keeps
	 * only through arf_cl_keep_current */
	for (size_t i = 0; i < n; i++) {
		lost[i] = i >= posted || conn_broken(pc[i].rc) || pc[i].rc == -ECANCELED;
		if (lost[i] && w.why != WHY_NONE) {
			arf_net_buf_free(&pc[i].resp);
			pc[i].rc = given_up(&w);
			lost[i] = 0;
		}
		if (!lost[i] && !(i == 0 && first_id))
			done(arg, i);
	}
	pthread_rwlock_unlock(&c->conn_lock);
	if (first_id && n && !lost[0]) {
		pc[0].unlocked = 1;
		done(arg, 0);
	}
	arf_net_set_thread_abort(NULL, NULL);
	/* then what the connection lost (or never took) goes again, alone and
	 * in order, through arf_cl_call's reconnection, under its own id, all
	 * within one bound, started by the first failure: once one piece gave
	 * up, the rest give up unsent, not a bound later each */
	for (size_t i = 0; i < n; i++) {
		if (!lost[i])
			continue;
		arf_net_buf_free(&pc[i].resp);
		if (w.why != WHY_NONE) /* an earlier piece gave up: not sent at all */
			pc[i].rc = given_up(&w);
		else
			pc[i].rc = call_in(c, op, id[i], pc[i].iov, pc[i].iovcnt, &pc[i].resp, NULL,
					   &w);
		pc[i].unlocked = 1; /* done outside the lock: it keeps through arf_cl_keep_current */
		done(arg, i);
	}
}

static int call_in(arf_client *c, uint16_t op, uint64_t id, const struct iovec *iov, int iovcnt,
		   struct arf_net_buf *resp, int *resent, struct wait_ctx *w)
{
	int rc;

	if (resent)
		*resent = 0;
	arf_net_set_thread_abort(wait_abort, w);
	for (;;) {
		pthread_rwlock_rdlock(&c->conn_lock);
		uint64_t gen = c->conn_gen;
		rc = c->conn ? arf_net_call_id(c->conn, op, id, iov, iovcnt, resp) : -ENOTCONN;
		pthread_rwlock_unlock(&c->conn_lock);
		if (rc == -ECANCELED) {
			arf_net_buf_free(resp);
			rc = given_up(w);
			break;
		}
		if (!conn_broken(rc) || !c->opts.reconnect_ms) {
			if (conn_broken(rc))
				rc = -EIO;
			break;
		}
		arf_net_buf_free(resp);
		start_deadline(c, w);
		if ((rc = reconnect(c, gen, w)))
			break;
		if (resent)
			*resent = 1;
	}
	arf_net_set_thread_abort(NULL, NULL);
	return rc;
}

int arf_cl_dial(arf_client *c, char *err, size_t errlen)
{
	return dial(c, &c->conn, &c->info, &c->sb, &c->have_regions, err, errlen);
}

void arf_cl_counters(arf_client *c, struct arf_net_counters *nc)
{
	memset(nc, 0, sizeof(*nc));
	pthread_rwlock_rdlock(&c->conn_lock);
	if (c->conn)
		arf_net_counters(c->conn, nc);
	add_counters(nc, &c->base);
	pthread_rwlock_unlock(&c->conn_lock);
}

/* ----------------------------------------------- posted exchanges (async.c) */

int arf_cl_broken(int rc)
{
	return conn_broken(rc);
}

int arf_cl_post_read(arf_client *c, struct arf_net_read_op *ops, size_t n,
		     struct arf_net_pending *p, uint64_t *gen)
{
	pthread_rwlock_rdlock(&c->conn_lock);
	*gen = c->conn_gen;
	int rc = c->conn ? arf_net_post_read(c->conn, ops, n, p) : -ENOTCONN;
	pthread_rwlock_unlock(&c->conn_lock);
	return rc;
}

int arf_cl_post(arf_client *c, uint16_t op, uint64_t id, const struct iovec *iov, int iovcnt,
		struct arf_net_pending *p, uint64_t *gen)
{
	pthread_rwlock_rdlock(&c->conn_lock);
	*gen = c->conn_gen;
	int rc = c->conn ? arf_net_post_id(c->conn, op, id, iov, iovcnt, p) : -ENOTCONN;
	pthread_rwlock_unlock(&c->conn_lock);
	return rc;
}

int arf_cl_redirect(arf_client *c, uint64_t gen, struct arf_net_pending *p,
		    struct arf_net_read_op *ops)
{
	pthread_rwlock_rdlock(&c->conn_lock);
	int r = c->conn && c->conn_gen == gen ? arf_net_redirect(c->conn, p, ops) : 0;
	pthread_rwlock_unlock(&c->conn_lock);
	return r;
}

int arf_cl_reads_async(arf_client *c)
{
	pthread_rwlock_rdlock(&c->conn_lock);
	int r = c->conn ? arf_net_reads_async(c->conn) : 0;
	pthread_rwlock_unlock(&c->conn_lock);
	return r;
}

int arf_cl_wait(arf_client *c, const int *flag, int timeout_ms)
{
	pthread_rwlock_rdlock(&c->conn_lock);
	int rc = c->conn ? arf_net_wait(c->conn, flag, timeout_ms) : -ENOTCONN;
	pthread_rwlock_unlock(&c->conn_lock);
	return rc;
}

uint64_t arf_cl_deadline(arf_client *c, uint64_t since_ms)
{
	if (!c->opts.reconnect_ms)
		return 0;
	if (c->opts.reconnect_ms == ARF_WAIT_FOREVER)
		return UINT64_MAX; /* a hard wait, no bound */
	uint64_t start = arf_now_ms();
	uint64_t down = __atomic_load_n(&c->down_ms, __ATOMIC_RELAXED);
	if (down && since_ms) { /* waiting for the connection since then */
		uint64_t from = since_ms > down ? since_ms : down;
		if (from < start)
			start = from;
	}
	return start + c->opts.reconnect_ms;
}

uint64_t arf_cl_gen(arf_client *c)
{
	pthread_rwlock_rdlock(&c->conn_lock);
	uint64_t gen = c->conn_gen;
	pthread_rwlock_unlock(&c->conn_lock);
	return gen;
}

int arf_cl_recover(arf_client *c, uint64_t gen, uint64_t *deadline)
{
	if (!c->opts.reconnect_ms)
		return -EIO;
	if (!*deadline)
		*deadline = arf_cl_deadline(c, 0);
	struct wait_ctx w = { *deadline == UINT64_MAX ? 0 : *deadline, WHY_NONE };
	arf_net_set_thread_abort(wait_abort, &w);
	int rc = reconnect(c, gen, &w);
	arf_net_set_thread_abort(NULL, NULL);
	return rc;
}

int arf_cl_drop_stale(arf_client *c, uint64_t verifier)
{
	int n = 0;

	pthread_rwlock_rdlock(&c->conn_lock);
	if (c->info.incarnation == verifier)
		n = arf_wlog_drop_stale(c, verifier);
	pthread_rwlock_unlock(&c->conn_lock);
	return n;
}

int arf_cl_keep_current(arf_client *c, uint64_t verifier, void (*keep)(void *arg), void *arg)
{
	/* the read side: a reconnection (the write side) either replayed
	 * before this look, and the incarnation says so, or replays after
	 * this keep, and finds it */
	pthread_rwlock_rdlock(&c->conn_lock);
	int current = c->info.incarnation == verifier;
	if (current)
		keep(arg);
	pthread_rwlock_unlock(&c->conn_lock);
	return current;
}

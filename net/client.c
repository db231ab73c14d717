/* SPDX-License-Identifier: MIT */
/*
 * net/client — the client side of every transport once connected (dial.c
 * connects and shakes hands): pipelined request/response matched by id,
 * and the counters.  What differs
 * between tcp and shm (how one-sided operations are done, whether regions are
 * mapped) sits behind struct arf_net_cops (tcp.c, shm.c).
 *
 * Many threads may wait for replies on one socket.  There is no receiver
 * thread (waking one would cost a cross-core wake-up per reply); instead the
 * first waiter becomes the reader, polls the socket adaptively (spin while
 * spinning catches replies, then sleep: arf_net_wait_fd_spin), files every reply it reads into its waiter's slot and wakes that
 * waiter; when its own reply has come it hands the socket to the next one.
 * A waiter is a struct arf_net_pending: on the stack of a thread that waits
 * for it (arf_net_call), or posted with a done callback that the reader
 * calls (arf_net_post, arf_net_post_read), so that one thread can keep
 * many exchanges in flight and collect them with arf_net_wait.
 *
 * A one-sided READ reply is received straight into the destinations its
 * waiter gave (recv_direct): no buffer between the socket and the caller.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net_int.h"
#include "verbs_int.h"

void arf_net_buf_free(struct arf_net_buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

const struct arf_net_region_info *arf_net_find_region(struct arf_net_conn *c, uint32_t id)
{
	for (size_t i = 0; i < c->nregions; i++)
		if (c->regions[i].id == id)
			return &c->regions[i];
	return NULL;
}

static void break_locked(struct arf_net_conn *c, int rc);

void arf_net_close(struct arf_net_conn *c)
{
	if (!c)
		return;
	/* nothing can be in flight on a connection being closed but what
	 * was posted and never waited for: it gets the error now */
	pthread_mutex_lock(&c->lock);
	break_locked(c, -ECONNRESET);
	pthread_mutex_unlock(&c->lock);
	if (c->ops && c->ops->detach)
		c->ops->detach(c);
	if (c->fd >= 0)
		close(c->fd);
	arf_net_rbuf_free(&c->rb);
	free(c->info);
	pthread_mutex_destroy(&c->send_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void arf_net_abandon(struct arf_net_conn *c)
{
	if (c && c->fd >= 0) {
		struct linger l = { 1, 0 };
		(void)setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)); /* not a socket: no matter */
	}
	arf_net_close(c);
}

const struct arf_net_region_info *arf_net_regions(struct arf_net_conn *c, size_t *n)
{
	*n = c->nregions;
	return c->regions;
}

const void *arf_net_server_info(struct arf_net_conn *c, size_t *len)
{
	*len = c->info_len;
	return c->info;
}

const char *arf_net_transport_name(struct arf_net_conn *c)
{
	return c->ops->name;
}

void arf_net_counters(struct arf_net_conn *c, struct arf_net_counters *out)
{
	out->one_sided_reads = __atomic_load_n(&c->ctr.one_sided_reads, __ATOMIC_RELAXED);
	out->one_sided_bytes = __atomic_load_n(&c->ctr.one_sided_bytes, __ATOMIC_RELAXED);
	out->one_sided_writes = __atomic_load_n(&c->ctr.one_sided_writes, __ATOMIC_RELAXED);
	out->rounds = __atomic_load_n(&c->ctr.rounds, __ATOMIC_RELAXED);
	out->calls = __atomic_load_n(&c->ctr.calls, __ATOMIC_RELAXED);
	out->bytes_sent = __atomic_load_n(&c->ctr.bytes_sent, __ATOMIC_RELAXED);
	out->bytes_received = __atomic_load_n(&c->ctr.bytes_received, __ATOMIC_RELAXED);
	out->futile_wakes = __atomic_load_n(&c->ctr.futile_wakes, __ATOMIC_RELAXED);
}

/* Complete p (caller holds c->lock): unlinked, outcome set, then the
 * synchronous waiter's flag or the asynchronous caller's done, last, since
 * p may be reused the moment it is called. */
static void complete_locked(struct arf_net_conn *c, struct arf_net_pending *p, int rc)
{
	for (struct arf_net_pending **pp = &c->waiters; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	p->next = NULL;
	p->rc = rc;
	if (rc)
		arf_net_buf_free(&p->body);
	if (p->done)
		p->done(p);
	else
		__atomic_store_n(&p->completed, 1, __ATOMIC_RELEASE);
}

void arf_net_complete_now(struct arf_net_pending *p, int rc)
{
	p->rc = 0;
	p->status = arf_net_status_from_err(rc);
	if (rc == -ECONNRESET || rc == -EPIPE || rc == -ENOTCONN || rc == -ETIMEDOUT ||
	    rc == -ECONNABORTED || rc == -EBADF) {
		p->rc = rc; /* the connection, not the reads, failed */
		p->status = ARF_NET_S_IO;
	}
	p->direct = 1;
	if (p->done)
		p->done(p);
	else
		__atomic_store_n(&p->completed, 1, __ATOMIC_RELEASE);
}

/*
 * Waking sleepers (caller holds c->lock).  Each sleeping thread has its own
 * condition variable: a reply wakes only the thread it was for, and a
 * reader that leaves wakes one thread that still waits, to read next.  (One
 * shared condition, broadcast for every reply, woke every waiting thread
 * for each: net-transport's test_one_wake_per_reply counts the difference.)
 */
static void wake_filed_locked(struct arf_net_conn *c)
{
	for (struct arf_net_sleeper *s = c->sleepers; s; s = s->next)
		if (__atomic_load_n(s->flag, __ATOMIC_ACQUIRE))
			pthread_cond_signal(&s->cv);
}

/* The reader left: those whose reply came, and one that still waits. */
static void wake_reader_left_locked(struct arf_net_conn *c)
{
	int next = 0;
	for (struct arf_net_sleeper *s = c->sleepers; s; s = s->next) {
		if (__atomic_load_n(s->flag, __ATOMIC_ACQUIRE)) {
			pthread_cond_signal(&s->cv);
		} else if (!next) {
			next = 1;
			pthread_cond_signal(&s->cv);
		}
	}
}

static void wake_all_locked(struct arf_net_conn *c)
{
	for (struct arf_net_sleeper *s = c->sleepers; s; s = s->next)
		pthread_cond_signal(&s->cv);
}

/* The connection failed (caller holds c->lock): every waiter gets the
 * error, but one whose reply a reader is receiving, which that reader
 * completes. */
static void break_locked(struct arf_net_conn *c, int rc)
{
	if (!c->broken)
		c->broken = rc == -EPIPE ? -ECONNRESET : rc;
	struct arf_net_pending *p = c->waiters, *next;
	for (; p; p = next) {
		next = p->next;
		if (!p->claimed)
			complete_locked(c, p, c->broken);
	}
	wake_all_locked(c);
}

static struct arf_net_pending *find_locked(struct arf_net_conn *c, uint64_t id)
{
	for (struct arf_net_pending *p = c->waiters; p; p = p->next)
		if (p->id == id)
			return p;
	return NULL;
}

/* File one received reply with its waiter (caller holds c->lock). */
static void deliver(struct arf_net_conn *c, const struct arf_net_hdr *h, const uint8_t *body)
{
	size_t blen = h->len - sizeof(*h);
	struct arf_net_pending *p = find_locked(c, h->id);

	if (!p || p->claimed)
		return; /* a reply nobody waits for (its waiter gave up): dropped */
	p->status = h->status;
	p->aux = h->aux;
	p->body.len = blen;
	p->body.data = malloc(blen ? blen : 1);
	if (!p->body.data) {
		p->status = ARF_NET_S_NOMEM;
		p->body.len = 0;
	} else if (blen) {
		memcpy(p->body.data, body, blen);
	}
	complete_locked(c, p, 0);
}

/* Where the bytes of a READ reply go: a cursor over the ops' destinations. */
struct scatter {
	struct arf_net_read_op *ops;
	size_t n, i;  /* op i ... */
	uint32_t at;  /* ... at this offset */
};

static void scatter_copy(struct scatter *s, const uint8_t *src, size_t len)
{
	while (len && s->i < s->n) {
		size_t k = s->ops[s->i].len - s->at;
		if (k > len)
			k = len;
		memcpy((uint8_t *)s->ops[s->i].dst + s->at, src, k);
		src += k;
		len -= k;
		s->at += (uint32_t)k;
		if (s->at == s->ops[s->i].len) {
			s->i++;
			s->at = 0;
		}
	}
}

static void scatter_skip(struct scatter *s, size_t len)
{
	while (len && s->i < s->n) {
		size_t k = s->ops[s->i].len - s->at;
		if (k > len)
			k = len;
		len -= k;
		s->at += (uint32_t)k;
		if (s->at == s->ops[s->i].len) {
			s->i++;
			s->at = 0;
		}
	}
}

/*
 * A READ reply whose waiter gave destinations is received straight into
 * them: what the buffer already holds is copied, the rest read from the
 * socket with no copy in between (a 1 MiB read costs the kernel's copy
 * and nothing more).  The waiter is claimed meanwhile, so that a thread
 * breaking the connection leaves it to us.  Returns 1 when a frame was
 * taken so, 0 when the next frame is not such a reply, or the error that
 * breaks the connection (the waiter then completed with it).
 */
static int recv_direct(struct arf_net_conn *c)
{
	struct arf_net_hdr h;
	struct arf_net_pending *p;

	arf_net_hdr_decode(c->rb.buf + c->rb.start, &h);
	if (h.op != ARF_NET_OP_READ || !(h.flags & ARF_NET_F_REPLY) || h.status != ARF_NET_S_OK ||
	    h.len <= sizeof(h) || h.len > ARF_NET_MAX_FRAME)
		return 0;
	size_t blen = h.len - sizeof(h);
	pthread_mutex_lock(&c->lock);
	p = find_locked(c, h.id);
	if (!p || !p->reads || p->rtotal != blen || p->claimed) {
		pthread_mutex_unlock(&c->lock);
		return 0; /* delivered the ordinary way (and refused there if malformed) */
	}
	p->claimed = 1;
	pthread_mutex_unlock(&c->lock);

	struct scatter s = { p->reads, p->nreads, 0, 0 };
	size_t have = arf_net_rbuf_pending(&c->rb) - sizeof(h);
	if (have > blen)
		have = blen;
	scatter_copy(&s, c->rb.buf + c->rb.start + sizeof(h), have);
	arf_net_rbuf_drop(&c->rb, sizeof(h) + have);
	size_t left = blen - have;
	int rc = 0;
	while (left) {
		struct iovec v[64];
		struct scatter t = s;
		int nv = 0;
		size_t want = 0;
		while (nv < 64 && t.i < t.n && want < left) {
			size_t k = t.ops[t.i].len - t.at;
			if (k > left - want)
				k = left - want;
			v[nv++] = (struct iovec){ (uint8_t *)t.ops[t.i].dst + t.at, k };
			want += k;
			t.i++;
			t.at = 0;
		}
		struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)nv };
		ssize_t n = recvmsg(c->fd, &m, MSG_DONTWAIT);
		if (n > 0) {
			scatter_skip(&s, (size_t)n);
			left -= (size_t)n;
			continue;
		}
		if (n == 0) {
			rc = -ECONNRESET;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			rc = -errno;
			break;
		}
		/* the rest of a frame that has begun: the frame timeout applies;
		 * a caller giving up part-way leaves the frame cut: the stream ends */
		if ((rc = arf_net_wait_fd_spin(c->fd, POLLIN, &c->spin, c->timeout_ms))) {
			if (rc == -ECANCELED)
				rc = -ECONNRESET;
			break;
		}
	}
	pthread_mutex_lock(&c->lock);
	p->claimed = 0;
	if (!rc) {
		ARF_NET_CTR(c, bytes_received, h.len);
		p->status = h.status;
		p->aux = h.aux;
		p->direct = 1;
		complete_locked(c, p, 0);
		wake_filed_locked(c);
	} else {
		complete_locked(c, p, rc);
	}
	pthread_mutex_unlock(&c->lock);
	return rc ? rc : 1;
}

/* The reading thread: read until *stop is set (0), deadline_us passes
 * (0 = none; then 0 too; UINT64_MAX: until the socket has nothing more
 * now), or the connection fails (its error). */
static int pump(struct arf_net_conn *c, const int *stop, uint64_t deadline_us)
{
	for (;;) {
		struct arf_net_hdr h;
		const uint8_t *body;
		int r;

		for (;;) {
			if (arf_net_rbuf_pending(&c->rb) >= sizeof(h)) {
				r = recv_direct(c);
				if (r < 0)
					return r;
				if (r)
					continue;
			}
			if ((r = arf_net_rbuf_frame(&c->rb, &h, &body)) != 1)
				break;
			ARF_NET_CTR(c, bytes_received, h.len);
			if (!(h.flags & ARF_NET_F_REPLY))
				continue; /* the server sends nothing unasked */
			pthread_mutex_lock(&c->lock);
			deliver(c, &h, body);
			wake_filed_locked(c);
			pthread_mutex_unlock(&c->lock);
		}
		if (r < 0)
			return r;
		if (__atomic_load_n(stop, __ATOMIC_ACQUIRE))
			return 0;
		ssize_t n = arf_net_rbuf_fill(&c->rb, c->fd);
		if (n < 0)
			return (int)n;
		if (n == 0 && deadline_us == UINT64_MAX)
			return 0; /* a poll: all that was there is filed */
		if (n == 0) {
			int tmo = c->timeout_ms, rc;
			int bounded = 0;
			if (deadline_us) {
				uint64_t now = arf_net_now_us();
				if (now >= deadline_us)
					return 0;
				uint64_t left_ms = (deadline_us - now + 999) / 1000;
				if (left_ms < (uint64_t)tmo) {
					tmo = (int)left_ms;
					bounded = 1;
				}
			}
			rc = arf_net_wait_fd_spin(c->fd, POLLIN, &c->spin, tmo);
			if (rc == -ETIMEDOUT && bounded)
				return 0; /* the caller's deadline, not the connection's timeout */
			if (rc)
				return rc;
		}
	}
}

/* Sleep on cv (c->lock held) until deadline_us (0: none), with an abort hook
 * in slices.  0, or -ECANCELED when the hook says to give up. */
static int timed_wait(struct arf_net_conn *c, pthread_cond_t *cv, uint64_t deadline_us)
{
	uint64_t left = UINT64_MAX;
	if (deadline_us) {
		uint64_t now = arf_net_now_us();
		left = deadline_us > now ? deadline_us - now : 0;
	}
	if (arf_net_abort_set() && left > ARF_NET_ABORT_POLL_MS * 1000u)
		left = ARF_NET_ABORT_POLL_MS * 1000u;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(left / 1000000u);
	ts.tv_nsec += (long)(left % 1000000u) * 1000;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	if (pthread_cond_timedwait(cv, &c->lock, &ts) == ETIMEDOUT)
		return arf_net_abort_check();
	return 0;
}

/* Sleep (c->lock held) until woken (see wake_filed_locked) or deadline_us
 * (0: none): with an abort hook, in slices.  0, or -ECANCELED when the
 * hook says to give up. */
static int cond_wait(struct arf_net_conn *c, const int *flag, uint64_t deadline_us)
{
	struct arf_net_sleeper me = { .flag = flag, .next = c->sleepers };
	int rc = 0;

	pthread_cond_init(&me.cv, NULL);
	c->sleepers = &me;
	if (!deadline_us && !arf_net_abort_set()) {
		pthread_cond_wait(&me.cv, &c->lock);
	} else {
		rc = timed_wait(c, &me.cv, deadline_us);
	}
	for (struct arf_net_sleeper **pp = &c->sleepers; *pp; pp = &(*pp)->next) {
		if (*pp == &me) {
			*pp = me.next;
			break;
		}
	}
	pthread_cond_destroy(&me.cv);
	return rc;
}


/* Wait (caller holds c->lock) until *flag is set, deadline_us passes or
 * the connection breaks: reading the socket when no other thread does,
 * else sleeping until the reader files a reply or leaves.  1, 0 or the
 * connection's error, as arf_net_wait; -ECANCELED when the thread's abort
 * hook gave up (the connection stays whole: a reader stops between
 * frames). */
static int wait_locked_once(struct arf_net_conn *c, const int *flag, uint64_t deadline_us)
{
	for (int polled = 0;; polled = 1) {
		if (__atomic_load_n(flag, __ATOMIC_ACQUIRE))
			return 1;
		if (c->broken)
			return c->broken;
		if (deadline_us == UINT64_MAX && (polled || c->reading))
			return 0; /* a poll reads once, and only when nobody else does */
		if (deadline_us && deadline_us != UINT64_MAX && arf_net_now_us() >= deadline_us)
			return 0;
		if (c->reading) {
			int crc = cond_wait(c, flag, deadline_us == UINT64_MAX ? 0 : deadline_us);
			if (crc)
				return crc;
			if (c->reading && !c->broken && !__atomic_load_n(flag, __ATOMIC_ACQUIRE))
				ARF_NET_CTR(c, futile_wakes, 1);
			continue;
		}
		c->reading = 1;
		pthread_mutex_unlock(&c->lock);
		int prc = pump(c, flag, deadline_us);
		pthread_mutex_lock(&c->lock);
		c->reading = 0;
		wake_reader_left_locked(c);
		if (prc == -ECANCELED)
			return prc; /* our caller gave up; the stream is whole */
		if (prc < 0)
			break_locked(c, prc);
	}
}

/* wait_locked_once, and then, when nobody reads the socket, wake a thread
 * that still waits to read it: the one woken when the reader left may have
 * gone (its deadline passed, or it gave up) without reading. */
static int wait_locked(struct arf_net_conn *c, const int *flag, uint64_t deadline_us)
{
	int rc = wait_locked_once(c, flag, deadline_us);
	if (!c->reading && c->sleepers)
		wake_reader_left_locked(c);
	return rc;
}

/*
 * Wait until the socket takes more of a frame being sent (caller holds
 * send_lock).  A client that only sends while the server waits for it to
 * read would wait forever: the server stops reading a connection whose
 * replies pile up unread, or that holds its cap of requests in flight
 * (net/limits.c), so the client's socket buffer stays full.  So when no
 * other thread reads the connection, the sender reads meanwhile, filing
 * the replies that come as a reader would (64 requests in flight from
 * one thread, replies of 256 KiB: a 30-second stall until the timeout
 * broke the connection, 1 run in 5 of integration-async's shm "requests"
 * case).  Callbacks run here as under any reader: they never call into
 * the connection (arfclient/async.c).  0, or the error that ends it.
 */
static int wait_writable(void *arg)
{
	struct arf_net_conn *c = arg;

	pthread_mutex_lock(&c->lock);
	int mine = !c->reading && !c->broken;
	if (mine)
		c->reading = 1;
	pthread_mutex_unlock(&c->lock);
	if (!mine)
		return arf_net_wait_fd(c->fd, POLLOUT, 0, c->timeout_ms);
	int rc = arf_net_wait_fd(c->fd, POLLOUT | POLLIN, 0, c->timeout_ms);
	if (!rc) {
		static const int never;
		rc = pump(c, &never, UINT64_MAX); /* what has come; nothing if none */
	}
	pthread_mutex_lock(&c->lock);
	c->reading = 0;
	wake_reader_left_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int arf_net_submit(struct arf_net_conn *c, uint16_t op, uint32_t aux, const struct iovec *iov,
		   int iovcnt, struct arf_net_pending *p)
{
	return arf_net_submit_id(c, op, 0, aux, iov, iovcnt, p);
}

int arf_net_submit_id(struct arf_net_conn *c, uint16_t op, uint64_t id, uint32_t aux,
		      const struct iovec *iov, int iovcnt, struct arf_net_pending *p)
{
	struct arf_net_hdr h;
	size_t len = sizeof(h);
	int rc;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > ARF_NET_MAX_FRAME)
		return -E2BIG;
	p->rc = 0;
	p->status = 0;
	p->aux = 0;
	p->body = (struct arf_net_buf){ 0 };
	p->completed = 0;
	p->claimed = 0;
	p->direct = 0;
	pthread_mutex_lock(&c->lock);
	if (c->broken) {
		rc = c->broken;
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	p->id = id ? id : c->next_id++;
	p->next = c->waiters;
	c->waiters = p;
	pthread_mutex_unlock(&c->lock);

	h = (struct arf_net_hdr){ .len = (uint32_t)len, .op = op, .id = p->id, .aux = aux };
	pthread_mutex_lock(&c->send_lock);
	rc = arf_net_send_frame_wait(c->fd, &h, iov, iovcnt, NULL, 0, c->timeout_ms,
				     wait_writable, c);
	pthread_mutex_unlock(&c->send_lock);
	if (!rc) {
		ARF_NET_CTR(c, bytes_sent, len);
		return 0;
	}
	pthread_mutex_lock(&c->lock);
	/* a frame sent in part (given up, or failed) ends the stream; this
	 * completes p too (nobody receives into it yet) */
	break_locked(c, rc == -ECANCELED ? -ECONNRESET : rc);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int arf_net_await(struct arf_net_conn *c, struct arf_net_pending *p)
{
	pthread_mutex_lock(&c->lock);
	int wrc = wait_locked(c, &p->completed, 0);
	if (wrc == -ECANCELED && !__atomic_load_n(&p->completed, __ATOMIC_ACQUIRE) &&
	    !p->claimed) {
		/* the caller gave up: forget p (a late reply is dropped) */
		for (struct arf_net_pending **pp = &c->waiters; *pp; pp = &(*pp)->next) {
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		}
		pthread_mutex_unlock(&c->lock);
		arf_net_buf_free(&p->body);
		return -ECANCELED;
	}
	/* broken: break_locked completed every waiter but one being received
	 * into, whose reader completes it before it lets go of the socket */
	while (!__atomic_load_n(&p->completed, __ATOMIC_ACQUIRE))
		cond_wait(c, &p->completed, 0);
	pthread_mutex_unlock(&c->lock);
	return p->rc;
}

int arf_net_exchange(struct arf_net_conn *c, uint16_t op, uint32_t aux, const struct iovec *iov,
		     int iovcnt, int32_t *status, uint32_t *reply_aux, struct arf_net_buf *resp)
{
	return arf_net_exchange_id(c, op, 0, aux, iov, iovcnt, status, reply_aux, resp);
}

int arf_net_exchange_id(struct arf_net_conn *c, uint16_t op, uint64_t id, uint32_t aux,
			const struct iovec *iov, int iovcnt, int32_t *status, uint32_t *reply_aux,
			struct arf_net_buf *resp)
{
	struct arf_net_pending p;
	int rc;

	memset(&p, 0, sizeof(p));
	if ((rc = arf_net_submit_id(c, op, id, aux, iov, iovcnt, &p)))
		return rc;
	if ((rc = arf_net_await(c, &p)))
		return rc;
	*status = p.status;
	if (reply_aux)
		*reply_aux = p.aux;
	if (resp)
		*resp = p.body;
	else
		arf_net_buf_free(&p.body);
	return 0;
}

int arf_net_call(struct arf_net_conn *c, uint16_t op, const struct iovec *iov, int iovcnt,
		 struct arf_net_buf *resp)
{
	return arf_net_call_id(c, op, 0, iov, iovcnt, resp);
}

int arf_net_call_send(struct arf_net_conn *c, uint16_t op, uint64_t id, const struct iovec *iov,
		      int iovcnt, struct arf_net_pending *p)
{
	memset(p, 0, sizeof(*p));
	if (op < ARF_NET_OP_REQUEST_BASE || !id || id < ARF_NET_ID_CALLER)
		return -EINVAL;
	return arf_net_submit_id(c, op, id, 0, iov, iovcnt, p);
}

int arf_net_call_end(struct arf_net_conn *c, struct arf_net_pending *p, struct arf_net_buf *resp)
{
	int rc = arf_net_await(c, p);

	*resp = (struct arf_net_buf){ 0 };
	if (rc)
		return rc;
	ARF_NET_CTR(c, calls, 1);
	*resp = p->body;
	return arf_net_status_to_err(p->status);
}

int arf_net_call_id(struct arf_net_conn *c, uint16_t op, uint64_t id, const struct iovec *iov,
		    int iovcnt, struct arf_net_buf *resp)
{
	int32_t status;
	int rc;

	if (resp)
		*resp = (struct arf_net_buf){ 0 };
	if (op < ARF_NET_OP_REQUEST_BASE || (id && id < ARF_NET_ID_CALLER))
		return -EINVAL;
	rc = arf_net_exchange_id(c, op, id, 0, iov, iovcnt, &status, NULL, resp);
	if (rc)
		return rc;
	ARF_NET_CTR(c, calls, 1);
	return arf_net_status_to_err(status);
}

/* An asynchronous request's done: count the exchange, then the caller's. */
int arf_net_post(struct arf_net_conn *c, uint16_t op, const struct iovec *iov, int iovcnt,
		 struct arf_net_pending *p)
{
	return arf_net_post_id(c, op, 0, iov, iovcnt, p);
}

int arf_net_post_id(struct arf_net_conn *c, uint16_t op, uint64_t id, const struct iovec *iov,
		    int iovcnt, struct arf_net_pending *p)
{
	if (op < ARF_NET_OP_REQUEST_BASE || !p->done || (id && id < ARF_NET_ID_CALLER))
		return -EINVAL;
	p->reads = NULL;
	p->nreads = 0;
	p->rtotal = 0;
	ARF_NET_CTR(c, calls, 1);
	return arf_net_submit_id(c, op, id, 0, iov, iovcnt, p);
}

int arf_net_redirect(struct arf_net_conn *c, struct arf_net_pending *p,
		     struct arf_net_read_op *ops)
{
	int done = 0;

	if (!c->ops->post_read)
		return 0;
	pthread_mutex_lock(&c->lock);
	/* the transport clears p->impl, under this lock, when the round
	 * completes; until then its waiter is among these */
	for (struct arf_net_pending *w = c->waiters; p->impl && w; w = w->next) {
		if (w == p->impl) {
			if (!w->claimed) {
				w->reads = ops;
				done = 1;
			}
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return done;
}

int arf_net_reads_async(struct arf_net_conn *c)
{
	return c->ops->post_read != NULL;
}

int arf_net_read_fits(size_t n, uint64_t bytes)
{
	const uint64_t room = ARF_NET_MAX_FRAME - sizeof(struct arf_net_hdr);
	return n && n <= ARF_NET_MAX_BATCH && bytes <= room &&
	       n * sizeof(struct arf_net_wire_read) <= room;
}

int arf_net_post_read(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n,
		      struct arf_net_pending *p)
{
	uint64_t total = 0;

	if (!p->done)
		return -EINVAL;
	if (!n)
		return -EINVAL;
	if (n > ARF_NET_MAX_BATCH)
		return -E2BIG; /* before a look at ops[] */
	for (size_t i = 0; i < n; i++)
		total += ops[i].len;
	if (!arf_net_read_fits(n, total))
		return -E2BIG;
	if (c->ops->post_read)
		return c->ops->post_read(c, ops, n, p);
	pthread_mutex_lock(&c->lock);
	int rc = c->broken;
	pthread_mutex_unlock(&c->lock);
	if (rc)
		return rc;
	p->body = (struct arf_net_buf){ 0 };
	p->aux = 0;
	arf_net_complete_now(p, c->ops->read(c, ops, n));
	return 0;
}

int arf_net_wait(struct arf_net_conn *c, const int *flag, int timeout_ms)
{
	uint64_t deadline = 0;
	if (timeout_ms == 0) {
		deadline = UINT64_MAX; /* a poll */
	} else if (timeout_ms > 0) {
		deadline = arf_net_now_us() + (uint64_t)timeout_ms * 1000u;
		if (!deadline)
			deadline = 1;
	}
	pthread_mutex_lock(&c->lock);
	int rc = wait_locked(c, flag, deadline);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int arf_net_read(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n)
{
	if (!n)
		return 0;
	return c->ops->read(c, ops, n);
}

int arf_net_write(struct arf_net_conn *c, uint32_t region, uint64_t key, uint64_t off,
		  const void *buf, uint32_t len)
{
	return c->ops->rmw(c, ARF_NET_OP_WRITE, region, key, off, buf, len, 0, 0, NULL);
}

int arf_net_cas(struct arf_net_conn *c, uint32_t region, uint64_t key, uint64_t off,
		uint64_t expect, uint64_t desired, uint64_t *old)
{
	return c->ops->rmw(c, ARF_NET_OP_CAS, region, key, off, NULL, 8, expect, desired, old);
}

int arf_net_faa(struct arf_net_conn *c, uint32_t region, uint64_t key, uint64_t off,
		uint64_t add, uint64_t *old)
{
	return c->ops->rmw(c, ARF_NET_OP_FAA, region, key, off, NULL, 8, add, 0, old);
}

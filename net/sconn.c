/* SPDX-License-Identifier: MIT */
/*
 * net/sconn — one server-side connection: its reference count, reading and
 * dispatching its frames, its send queue, replies from any thread, close.
 *
 * Connection states: accepted (only HELLO allowed) -> ready (after a good
 * HELLO) -> closed (removed from epoll, socket shut down; the descriptor is
 * closed when the last reference goes).  arf_net_srv_conn_close() is the one
 * place that moves a connection to closed, on the soft-NIC thread.
 *
 * Sending never waits: what the socket does not take at once waits in the
 * connection's queue, written when epoll says the socket is writable; a
 * client that stops reading is no longer read from, then dropped (OUTQ_*).
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server_int.h"

void arf_net_sconn_ref(struct arf_net_sconn *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

void arf_net_sconn_unref(struct arf_net_sconn *c)
{
	if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (c->udata_free && c->udata)
		c->udata_free(c->udata);
	close(c->fd);
	arf_net_rbuf_free(&c->rb);
	free(c->spare);
	free(c->outq);
	pthread_mutex_destroy(&c->send_lock);
	free(c);
}

const struct arf_net_peer *arf_net_sconn_peer(struct arf_net_sconn *c)
{
	return &c->peer;
}

void arf_net_sconn_set_grant(struct arf_net_sconn *c, int grant_keys)
{
	c->no_grant = !grant_keys;
}

int arf_net_sconn_set_view(struct arf_net_sconn *c, uint32_t view)
{
	if (view >= ARF_NET_MAX_VIEWS)
		return -EINVAL;
	c->view = view;
	return 0;
}

void arf_net_sconn_set_udata(struct arf_net_sconn *c, void *udata, void (*udata_free)(void *))
{
	c->udata = udata;
	c->udata_free = udata_free;
}

void arf_net_sconn_body_free(struct arf_net_sconn *c, void *buf)
{
	free(__atomic_exchange_n(&c->spare, (uint8_t *)buf, __ATOMIC_ACQ_REL));
}

int arf_net_sconn_closed(struct arf_net_sconn *c)
{
	pthread_mutex_lock(&c->send_lock);
	int closed = c->closed;
	pthread_mutex_unlock(&c->send_lock);
	return closed;
}

void *arf_net_sconn_udata(struct arf_net_sconn *c)
{
	return c->udata;
}

/* Caller holds send_lock: the connection is finished; the soft-NIC sees
 * the shut-down socket and closes it. */
static void conn_fail_locked(struct arf_net_sconn *c)
{
	c->closed = 1;
	shutdown(c->fd, SHUT_RDWR);
}

/* Arm epoll for what the connection needs now (caller holds send_lock):
 * not readable while the client leaves too much unread or holds its cap
 * of requests in flight.  A half-close is not watched meanwhile either
 * (level-triggered, it would fire without end); it is read after. */
void arf_net_srv_arm_locked(struct arf_net_sconn *c)
{
	size_t pend = outq_pending(c);
	uint32_t ev = (pend ? EPOLLOUT : 0) |
		      (pend > OUTQ_HIGH || c->rstalled ? 0 : EPOLLIN | EPOLLRDHUP);

	if (c->closed || ev == c->events)
		return;
	struct epoll_event e = { .events = ev, .data.ptr = c };
	if (epoll_ctl(c->s->ep, EPOLL_CTL_MOD, c->fd, &e) == 0) {
		c->events = ev;
		return;
	}
	/* Unwatched for what it needs now (ENOMEM), the connection could wait
	 * forever for a write or a read: end it.  The shut-down socket hangs
	 * up, which epoll reports whatever the events it was armed for, and
	 * the soft-NIC closes it; the client reconnects. */
	conn_fail_locked(c);
}

/* Queue the bytes of v after the first `skip` (caller holds send_lock). */
static int outq_add(struct arf_net_sconn *c, const struct iovec *v, int nv, size_t skip)
{
	size_t total = 0;
	for (int i = 0; i < nv; i++)
		total += v[i].iov_len;
	total -= skip;
	if (outq_pending(c) + total > OUTQ_MAX)
		return -ENOBUFS;
	if (c->outq_off && c->outq_off == c->outq_len)
		c->outq_off = c->outq_len = 0;
	if (c->outq_len + total > c->outq_cap) {
		if (c->outq_off) {
			memmove(c->outq, c->outq + c->outq_off, outq_pending(c));
			c->outq_len -= c->outq_off;
			c->outq_off = 0;
		}
		if (c->outq_len + total > c->outq_cap) {
			size_t cap = c->outq_cap ? c->outq_cap : 65536;
			while (cap < c->outq_len + total)
				cap *= 2;
			uint8_t *nb = realloc(c->outq, cap);
			if (!nb)
				return -ENOMEM;
			c->outq = nb;
			c->outq_cap = cap;
		}
	}
	for (int i = 0; i < nv; i++) {
		size_t l = v[i].iov_len;
		const uint8_t *p = v[i].iov_base;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		/* racy: a one-sided READ's pieces point into exported regions
		 * that writers may be changing (softnic.c) */
		arf_net_copy_racy(c->outq + c->outq_len, p + skip, l - skip);
		c->outq_len += l - skip;
		skip = 0;
	}
	return 0;
}

/* Send what waits (caller holds send_lock).  0, or -errno when the
 * connection failed. */
static int outq_flush(struct arf_net_sconn *c)
{
	while (outq_pending(c)) {
		ssize_t n = send(c->fd, c->outq + c->outq_off, outq_pending(c),
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		c->outq_off += (size_t)n;
	}
	c->outq_off = c->outq_len = 0;
	return 0;
}

int arf_net_srv_send(struct arf_net_sconn *c, uint64_t id, uint16_t op, int32_t status,
		     uint32_t aux, uint16_t flags, const struct iovec *iov, int iovcnt,
		     const int *fds, int nfds)
{
	struct arf_net_hdr h = { .op = op, .flags = (uint16_t)(ARF_NET_F_REPLY | flags), .id = id,
				 .status = status, .aux = aux };
	uint8_t hb[sizeof(struct arf_net_hdr)];
	struct iovec v[17];
	size_t len = sizeof(h);
	int nv = 0, rc = 0;
	union {
		char buf[CMSG_SPACE(sizeof(int) * ARF_NET_MAX_REGIONS)];
		struct cmsghdr align;
	} cm;

	if (iovcnt > 16 || nfds > (int)ARF_NET_MAX_REGIONS)
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > ARF_NET_MAX_FRAME)
		return -E2BIG;
	h.len = (uint32_t)len;
	arf_net_hdr_encode(&h, hb);
	v[nv++] = (struct iovec){ hb, sizeof(hb) };
	for (int i = 0; i < iovcnt; i++)
		if (iov[i].iov_len)
			v[nv++] = iov[i];

	pthread_mutex_lock(&c->send_lock);
	if (c->closed) {
		pthread_mutex_unlock(&c->send_lock);
		return -ECONNRESET;
	}
	size_t sent = 0;
	if (!outq_pending(c)) {
		struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)nv };
		if (nfds > 0) {
			memset(&cm, 0, sizeof(cm));
			m.msg_control = cm.buf;
			m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
			struct cmsghdr *cmh = CMSG_FIRSTHDR(&m);
			cmh->cmsg_level = SOL_SOCKET;
			cmh->cmsg_type = SCM_RIGHTS;
			cmh->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
			memcpy(CMSG_DATA(cmh), fds, sizeof(int) * (size_t)nfds);
		}
		ssize_t n;
		do
			n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			rc = -errno;
		else
			sent = n > 0 ? (size_t)n : 0;
		if (!rc && nfds > 0 && sent == 0)
			rc = -EAGAIN; /* descriptors go with the first byte or not at all */
	} else if (nfds > 0) {
		rc = -EAGAIN;
	}
	if (!rc && sent < len)
		rc = outq_add(c, v, nv, sent);
	if (!rc)
		CCTR(c, bytes_sent, len);
	if (rc)
		conn_fail_locked(c);
	else
		arf_net_srv_arm_locked(c);
	pthread_mutex_unlock(&c->send_lock);
	return rc;
}

int arf_net_reply(struct arf_net_sconn *c, uint64_t id, uint16_t op, int32_t status,
		  const struct iovec *iov, int iovcnt)
{
	arf_net_srv_release_request(c, id);
	return arf_net_srv_send(c, id, op, status, 0, 0, iov, iovcnt, NULL, 0);
}

void arf_net_srv_conn_close(struct arf_net_server *s, struct arf_net_sconn *c)
{
	if (c->state == SCONN_CLOSED)
		return;
	int was_ready = c->state == SCONN_READY;
	if (c->state == SCONN_NEW)
		s->nnew--;
	c->state = SCONN_CLOSED;
	/* may fail only if it was never added; closing the fd below removes it
	 * from the set in any case */
	(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
	pthread_mutex_lock(&c->send_lock);
	c->closed = 1;
	shutdown(c->fd, SHUT_RDWR);
	if (c->rstalled)
		__atomic_sub_fetch(&s->ctr.conns_stalled, 1, __ATOMIC_RELAXED);
	c->rstalled = 0;
	pthread_mutex_unlock(&c->send_lock);
	pthread_mutex_lock(&s->conns_lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&s->conns_lock);
	__atomic_sub_fetch(&s->ctr.conns_open, 1, __ATOMIC_RELAXED);
	if (was_ready && s->o.on_close)
		s->o.on_close(s->o.ctx, c);
	/* Events for c may still be in the batch being handled: drop our
	 * reference after it (arf_net_srv_free_dead). */
	c->next = s->dead;
	s->dead = c;
}

void arf_net_srv_free_dead(struct arf_net_server *s)
{
	while (s->dead) {
		struct arf_net_sconn *c = s->dead;
		s->dead = c->next;
		arf_net_sconn_unref(c);
	}
}

struct arf_net_sconn *arf_net_srv_conn_alloc(struct arf_net_server *s, int fd, int is_unix)
{
	if (__atomic_load_n(&s->ctr.conns_open, __ATOMIC_RELAXED) >= s->o.max_conns) {
		SCTR(s, conns_refused, 1); /* before the allocation: a flood costs nothing */
		SCTR(s, conns_refused_limit, 1);
		close(fd);
		return NULL;
	}
	struct arf_net_sconn *c = calloc(1, sizeof(*c) + s->o.max_conn_requests *
						     sizeof(c->inflight[0]));
	if (!c) {
		close(fd);
		return NULL;
	}
	c->s = s;
	c->fd = fd;
	c->is_unix = is_unix;
	c->refs = 1;
	c->state = SCONN_NEW;
	c->rb.max = ARF_NET_MAX_PREAUTH_FRAME; /* until the handshake */
	pthread_mutex_init(&c->send_lock, NULL);
	return c;
}

static void conn_free_unserved(struct arf_net_sconn *c)
{
	if (c->udata_free && c->udata)
		c->udata_free(c->udata);
	close(c->fd);
	pthread_mutex_destroy(&c->send_lock);
	free(c);
}

void arf_net_srv_conn_register(struct arf_net_server *s, struct arf_net_sconn *c)
{
	if (arf_net_srv_admit_conn(s, c)) {
		SCTR(s, conns_refused, 1);
		SCTR(s, conns_refused_limit, 1);
		conn_free_unserved(c);
		return;
	}
	c->events = EPOLLIN | EPOLLRDHUP;
	c->accepted_us = c->active_us = arf_net_now_us();
	struct epoll_event ev = { .events = c->events, .data.ptr = c };
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		conn_free_unserved(c);
		return;
	}
	pthread_mutex_lock(&s->conns_lock);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	pthread_mutex_unlock(&s->conns_lock);
	SCTR(s, conns_accepted, 1);
	SCTR(s, conns_open, 1);
	s->nnew++;
}


/*
 * A big request's receive buffer, handed over rather than copied (the
 * copy was a tenth of arfd's CPU for a 1 MiB write).  The receive buffer
 * goes on in the one given back last (its pages mapped and warm), else in
 * a new one as big as the old.
 */
void *arf_net_sconn_take_body(struct arf_net_sconn *c)
{
	struct arf_net_rbuf *rb = &c->rb;
	size_t flen = c->req_len, rest, cap = rb->cap;
	uint8_t *nb;

	if (c->req_taken || flen < sizeof(struct arf_net_hdr) + ARF_NET_OWN_MIN || flen < cap / 2)
		return NULL;
	rest = rb->end - rb->start - flen;
	nb = __atomic_exchange_n(&c->spare, NULL, __ATOMIC_ACQ_REL);
	if (nb && malloc_usable_size(nb) < rest) {
		free(nb);
		nb = NULL;
	}
	if (nb)
		cap = malloc_usable_size(nb);
	else if (!(nb = malloc(cap)))
		return NULL;
	c->req_taken = 1;
	return arf_net_rbuf_detach(rb, flen, nb, cap);
}

/* One frame from a client.  Returns < 0 to close the connection,
 * FRAME_LATER to leave it buffered (the connection is at its cap of
 * requests in flight), FRAME_TAKEN when its buffer went with it
 * (arf_net_sconn_take_body: nothing to drop), 0 when it was taken. */
#define FRAME_LATER 1
#define FRAME_TAKEN 2
static int do_frame(struct arf_net_server *s, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		    const uint8_t *body)
{
	size_t len = h->len - sizeof(*h);

	if (h->flags & ARF_NET_F_REPLY) {
		SCTR(s, bad_frames, 1);
		return -EPROTO; /* clients send no replies */
	}
	if (h->op == ARF_NET_OP_HELLO)
		return arf_net_srv_hello(s, c, h, body, len);
	if (c->state != SCONN_READY) {
		SCTR(s, bad_frames, 1);
		return -EPROTO; /* nothing before the handshake */
	}
	switch (h->op) {
	case ARF_NET_OP_READ:
		return arf_net_srv_read(s, c, h, body, len);
	case ARF_NET_OP_WRITE:
	case ARF_NET_OP_CAS:
	case ARF_NET_OP_FAA:
		return arf_net_srv_rmw(s, c, h, body, len);
	default:
		break;
	}
	if (h->op >= ARF_NET_OP_REQUEST_BASE && s->o.on_request) {
		if (!arf_net_srv_admit_request(s, c, h))
			return FRAME_LATER;
		SCTR(s, requests, 1);
		CCTR(c, requests, 1);
		c->req_len = h->len;
		c->req_taken = 0;
		s->o.on_request(s->o.ctx, c, h, body, len);
		c->req_len = 0;
		return c->req_taken ? FRAME_TAKEN : 0;
	}
	SCTR(s, bad_frames, 1);
	char msg[64];
	snprintf(msg, sizeof(msg), "unknown operation 0x%x", h->op);
	return arf_net_srv_send(c, h->id, h->op, arf_net_status_from_err(ARF_EPROTO), 0, 0,
				&(struct iovec){ msg, strlen(msg) }, 1, NULL, 0);
}

/* Is the client not reading its replies (too much waits in its queue), or
 * finished by a failed send? */
static int conn_stalled(struct arf_net_sconn *c, int *closed)
{
	pthread_mutex_lock(&c->send_lock);
	int stalled = outq_pending(c) > OUTQ_HIGH;
	*closed = c->closed;
	pthread_mutex_unlock(&c->send_lock);
	return stalled;
}

/* Read and serve frames until the socket is empty or the connection
 * stalls.  Frames already buffered go first: after a stall they are next. */
static void conn_read_frames(struct arf_net_server *s, struct arf_net_sconn *c)
{
	int drained = 0;

	for (;;) {
		struct arf_net_hdr h;
		const uint8_t *body;
		int r, closed;
		for (;;) {
			if (conn_stalled(c, &closed) || closed) {
				if (closed)
					arf_net_srv_conn_close(s, c);
				return; /* resumed by EPOLLOUT once the queue drains */
			}
			r = arf_net_rbuf_peek(&c->rb, &h, &body);
			if (r != 1)
				break;
			int fr = do_frame(s, c, &h, body);
			if (fr == FRAME_LATER)
				return; /* resumed by arf_net_reply (resumeq) */
			if (fr != FRAME_TAKEN)
				arf_net_rbuf_drop(&c->rb, h.len);
			c->frame_since_us = 0;
			__atomic_store_n(&c->active_us, arf_net_now_us(), __ATOMIC_RELAXED);
			if (fr < 0) {
				arf_net_srv_conn_close(s, c);
				return;
			}
		}
		if (r < 0) { /* a length no frame can have, or too big before the handshake */
			SCTR(s, bad_frames, 1);
			if (c->state == SCONN_NEW && h.len > ARF_NET_MAX_PREAUTH_FRAME)
				SCTR(s, preauth_oversize, 1);
			arf_net_srv_conn_close(s, c);
			return;
		}
		if (drained)
			return; /* epoll (level-triggered) says when more comes */
		ssize_t n = arf_net_rbuf_fill(&c->rb, c->fd);
		if (n < 0) {
			arf_net_srv_conn_close(s, c);
			return;
		}
		if (n == 0)
			return;
		CCTR(c, bytes_received, n);
		/* less than there was room for: the socket had no more, so after
		 * these frames go back to epoll rather than ask recv() again
		 * for an EAGAIN (one system call a request saved) */
		drained = c->rb.end < c->rb.cap;
	}
}

void arf_net_srv_conn_readable(struct arf_net_server *s, struct arf_net_sconn *c)
{
	conn_read_frames(s, c);
	/* the mid-frame clock: runs from the first byte of an unfinished
	 * frame, or from the last frame taken (arf_net_srv_scan stops it
	 * while the server itself is not reading) */
	if (c->state == SCONN_CLOSED || !arf_net_rbuf_pending(&c->rb))
		c->frame_since_us = 0;
	else if (!c->frame_since_us)
		c->frame_since_us = arf_net_now_us();
}

/* The socket takes more: send what waits, then read again if we stopped. */
void arf_net_srv_conn_writable(struct arf_net_server *s, struct arf_net_sconn *c)
{
	(void)s;
	pthread_mutex_lock(&c->send_lock);
	if (!c->closed) {
		if (outq_flush(c))
			conn_fail_locked(c);
		else
			arf_net_srv_arm_locked(c);
	}
	pthread_mutex_unlock(&c->send_lock);
}

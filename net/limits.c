/* SPDX-License-Identifier: MIT */
/*
 * net/limits — every bound the server puts on what one client can hold, so
 * that no client makes the server grow without end or locks others out:
 *
 *   - connections, at accept: max_conns in all; max_conns_per_client per
 *     uid (the UNIX socket's SO_PEERCRED) or per address (tcp, rdma; IPv6
 *     by its /64, which one host usually owns whole; all of loopback as
 *     one, since any local user may bind any 127.x address); the last
 *     reserved_root_conns slots only for root-evident peers (shm uid 0,
 *     tcp from a reserved port), who are not counted per client either.
 *     A refused connection is closed before it costs anything more.
 *   - requests in flight, per connection: handed to the embedder and not
 *     yet answered, by count and by bytes.  At the cap the soft-NIC stops
 *     reading the connection (back-pressure: the client's own socket
 *     buffers fill, then its sends block) and reads on when a reply brings
 *     it under.  Frames already in the receive buffer wake no epoll, so
 *     the replying thread hands the connection back through resumeq and
 *     the eventfd.
 *   - time: the handshake (HELLO_TIMEOUT_US), a frame left unfinished
 *     (frame_timeout_ms: the buffer it holds is freed with the
 *     connection), a connection idle after its handshake
 *     (idle_timeout_ms); and a receive buffer grown for a big frame is
 *     freed once empty and quiet.  Before the handshake no frame over
 *     ARF_NET_MAX_PREAUTH_FRAME is read at all (arf_net_rbuf.max).
 *
 * The soft-NIC thread owns the connection list, the receive buffers and the
 * timers; the in-flight table is under the connection's send_lock, since
 * replies come from any thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "server_int.h"

#define DEF_MAX_CONNS         1024u
#define DEF_CONN_REQUESTS     64u          /* qd16 x 1 MiB pipelined fits, four times over */
#define DEF_CONN_REQ_BYTES    (32ull << 20)
#define DEF_FRAME_TIMEOUT_MS  10000u       /* 16 MiB in 10 s: a link slower than 13 Mbit/s */

int arf_net_srv_limits_init(struct arf_net_server *s, char *err, size_t errlen)
{
	struct arf_net_server_opts *o = &s->o;

	if (!o->max_conns)
		o->max_conns = DEF_MAX_CONNS;
	if (!o->max_conn_requests)
		o->max_conn_requests = DEF_CONN_REQUESTS;
	if (!o->max_conn_request_bytes)
		o->max_conn_request_bytes = DEF_CONN_REQ_BYTES;
	if (!o->frame_timeout_ms)
		o->frame_timeout_ms = DEF_FRAME_TIMEOUT_MS;
	if (o->reserved_root_conns >= o->max_conns) {
		snprintf(err, errlen, "reserved_root_conns (%u) must be below max_conns (%u)",
			 o->reserved_root_conns, o->max_conns);
		return -EINVAL;
	}
	if (o->max_conn_requests > 65536) {
		snprintf(err, errlen, "max_conn_requests (%u) is over 65536", o->max_conn_requests);
		return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------ connections */

/* The client a peer counts against: its uid on the UNIX socket, else the
 * address in peer->addr ("1.2.3.4:port", "[v6]:port"; an IPv4-mapped IPv6
 * address is the IPv4 one). */
static void client_key_of(const struct arf_net_peer *p, struct client_key *k)
{
	memset(k, 0, sizeof(*k));
	if (!strcmp(p->transport, "shm")) {
		k->kind = CKEY_UID;
		uint32_t uid = p->has_cred ? p->uid : UINT32_MAX;
		memcpy(k->b, &uid, sizeof(uid));
		return;
	}
	char host[64];
	const char *a = p->addr;
	size_t n;
	if (a[0] == '[') {
		const char *e = strchr(a, ']');
		n = e ? (size_t)(e - a - 1) : 0;
		a++;
	} else {
		const char *e = strrchr(a, ':');
		n = e ? (size_t)(e - a) : strlen(a);
	}
	if (n >= sizeof(host))
		return; /* CKEY_NONE: every such peer counts as one client */
	memcpy(host, a, n);
	host[n] = 0;
	uint8_t b[16];
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t v6lo[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	if (inet_pton(AF_INET, host, b) == 1) {
		k->kind = CKEY_V4;
		memcpy(k->b, b, 4);
	} else if (inet_pton(AF_INET6, host, b) == 1) {
		if (!memcmp(b, mapped, sizeof(mapped))) {
			k->kind = CKEY_V4;
			memcpy(k->b, b + 12, 4);
		} else if (!memcmp(b, v6lo, sizeof(v6lo))) {
			k->kind = CKEY_LOOPBACK;
		} else {
			k->kind = CKEY_V6;
			memcpy(k->b, b, 8); /* the /64 */
		}
	}
	/* Every loopback address is this host, and any local user may bind
	 * any of 127.0.0.0/8: they are one client, or one user could take a
	 * slot per address. */
	if (k->kind == CKEY_V4 && k->b[0] == 127) {
		k->kind = CKEY_LOOPBACK;
		memset(k->b, 0, sizeof(k->b));
	}
}

/* Root on its host, as far as the transport can tell before the handshake
 * (an rdma_cm port proves nothing: rdma peers have port 0). */
static int root_evident(const struct arf_net_peer *p)
{
	if (!strcmp(p->transport, "shm"))
		return p->has_cred && p->uid == 0;
	return !strcmp(p->transport, "tcp") && p->port > 0 && p->port < 1024;
}

int arf_net_srv_admit_conn(struct arf_net_server *s, struct arf_net_sconn *c)
{
	const struct arf_net_server_opts *o = &s->o;
	uint64_t open = __atomic_load_n(&s->ctr.conns_open, __ATOMIC_RELAXED);

	client_key_of(&c->peer, &c->ckey);
	c->root_evident = root_evident(&c->peer);
	if (open >= o->max_conns)
		return -EUSERS;
	if (c->root_evident)
		return 0;
	if (open >= o->max_conns - o->reserved_root_conns)
		return -EUSERS; /* the rest is root's */
	if (o->max_conns_per_client) {
		uint32_t same = 0;
		/* the soft-NIC thread owns the list: no lock to read it */
		for (const struct arf_net_sconn *x = s->conns; x; x = x->next)
			if (!x->root_evident && !memcmp(&x->ckey, &c->ckey, sizeof(c->ckey)))
				same++;
		if (same >= o->max_conns_per_client)
			return -EUSERS;
	}
	return 0;
}

/* -------------------------------------------------------- requests in flight */

int arf_net_srv_admit_request(struct arf_net_server *s, struct arf_net_sconn *c,
			      const struct arf_net_hdr *h)
{
	const struct arf_net_server_opts *o = &s->o;
	int ok;

	pthread_mutex_lock(&c->send_lock);
	/* one request always fits, however big: a frame is at most 16 MiB */
	ok = c->ninflight == 0 ||
	     (c->ninflight < o->max_conn_requests &&
	      c->inflight_bytes + h->len <= o->max_conn_request_bytes);
	if (ok) {
		c->inflight[c->ninflight++] = (struct inflight){ .id = h->id, .bytes = h->len };
		c->inflight_bytes += h->len;
		c->stall_counted = 0;
	} else if (!c->rstalled) {
		c->rstalled = 1;
		if (!c->stall_counted) { /* a resume that found the cap again is the same stall */
			SCTR(s, stalls, 1);
			c->stall_counted = 1;
		}
		SCTR(s, conns_stalled, 1);
		arf_net_srv_arm_locked(c); /* stop reading the socket */
	}
	pthread_mutex_unlock(&c->send_lock);
	return ok;
}

void arf_net_srv_release_request(struct arf_net_sconn *c, uint64_t id)
{
	struct arf_net_server *s = c->s;
	int resume = 0;

	__atomic_store_n(&c->active_us, arf_net_now_us(), __ATOMIC_RELAXED);
	pthread_mutex_lock(&c->send_lock);
	for (uint32_t i = 0; i < c->ninflight; i++) {
		if (c->inflight[i].id != id)
			continue;
		c->inflight_bytes -= c->inflight[i].bytes;
		c->inflight[i] = c->inflight[--c->ninflight];
		if (c->rstalled && !c->closed) {
			c->rstalled = 0;
			__atomic_sub_fetch(&s->ctr.conns_stalled, 1, __ATOMIC_RELAXED);
			arf_net_srv_arm_locked(c);
			resume = 1;
		}
		break;
	}
	pthread_mutex_unlock(&c->send_lock);
	if (!resume)
		return;
	pthread_mutex_lock(&s->resume_lock);
	if (!c->resume_queued) {
		c->resume_queued = 1;
		arf_net_sconn_ref(c);
		c->resume_next = s->resumeq;
		s->resumeq = c;
	}
	pthread_mutex_unlock(&s->resume_lock);
	uint64_t one = 1;
	if (write(s->evfd, &one, sizeof(one)) < 0) { /* the counter is readable already */ }
}

void arf_net_srv_resume_pending(struct arf_net_server *s)
{
	pthread_mutex_lock(&s->resume_lock);
	struct arf_net_sconn *c = s->resumeq;
	s->resumeq = NULL;
	pthread_mutex_unlock(&s->resume_lock);
	while (c) {
		/* while queued, no reply links c again: take the link, then
		 * let replies queue it anew (they find it read after them) */
		pthread_mutex_lock(&s->resume_lock);
		struct arf_net_sconn *next = c->resume_next;
		c->resume_queued = 0;
		pthread_mutex_unlock(&s->resume_lock);
		if (c->state != SCONN_CLOSED)
			arf_net_srv_conn_readable(s, c);
		arf_net_sconn_unref(c); /* closed ones stay on s->dead until the batch ends */
		c = next;
	}
}

/* ------------------------------------------------------------------ timers */

/* Close c if its idle time is up: ready, nothing in flight, nothing to
 * send, nothing buffered, and no byte waiting in the socket either (a
 * request that arrived just now is served, not cut off). */
static int idle_expired(struct arf_net_server *s, struct arf_net_sconn *c, uint64_t now)
{
	uint64_t active = __atomic_load_n(&c->active_us, __ATOMIC_RELAXED);
	if (!s->o.idle_timeout_ms || c->state != SCONN_READY ||
	    now - active < (uint64_t)s->o.idle_timeout_ms * 1000u || arf_net_rbuf_pending(&c->rb))
		return 0;
	pthread_mutex_lock(&c->send_lock);
	int busy = c->ninflight || outq_pending(c);
	pthread_mutex_unlock(&c->send_lock);
	if (busy)
		return 0;
	char b;
	return recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0;
}

void arf_net_srv_scan(struct arf_net_server *s, uint64_t now)
{
	struct arf_net_sconn *c = s->conns, *next;
	for (; c; c = next) {
		next = c->next;
		/* a handshake not finished in time: a flood of silent
		 * connections cannot hold the slots */
		if (c->state == SCONN_NEW && now - c->accepted_us > HELLO_TIMEOUT_US) {
			SCTR(s, conns_refused, 1);
			arf_net_srv_conn_close(s, c);
			continue;
		}
		pthread_mutex_lock(&c->send_lock);
		int stalled = c->rstalled || outq_pending(c) > OUTQ_HIGH;
		if (!outq_pending(c) && c->outq_cap > RBUF_KEEP) {
			free(c->outq); /* a big reply went out: give its room back */
			c->outq = NULL;
			c->outq_cap = c->outq_off = c->outq_len = 0;
		}
		pthread_mutex_unlock(&c->send_lock);
		if (stalled) {
			/* the server is not reading: the client is not late */
			c->frame_since_us = 0;
			continue;
		}
		if (c->frame_since_us &&
		    now - c->frame_since_us > (uint64_t)s->o.frame_timeout_ms * 1000u) {
			SCTR(s, conns_closed_midframe, 1);
			arf_net_srv_conn_close(s, c);
			continue;
		}
		if (idle_expired(s, c, now)) {
			SCTR(s, conns_closed_idle, 1);
			arf_net_srv_conn_close(s, c);
			continue;
		}
		if (!arf_net_rbuf_pending(&c->rb) && c->rb.cap > RBUF_KEEP &&
		    now - __atomic_load_n(&c->active_us, __ATOMIC_RELAXED) >= SCAN_US)
			arf_net_rbuf_free(&c->rb); /* a big frame went through: shrink back */
	}
}

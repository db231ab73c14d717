/* SPDX-License-Identifier: MIT */
/*
 * net/client — the client side of every transport: connect and handshake,
 * pipelined request/response matched by id, and the counters.  What differs
 * between tcp and shm (how one-sided operations are done, whether regions are
 * mapped) sits behind struct arf_net_cops (tcp.c, shm.c).
 *
 * Many threads may wait for replies on one socket.  There is no receiver
 * thread (waking one would cost a cross-core wake-up per reply); instead the
 * first waiter becomes the reader, polls the socket adaptively (spin, then
 * sleep), files every reply it reads into its waiter's slot and wakes that
 * waiter; when its own reply has come it hands the socket to the next one.
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

struct arf_net_waiter {
	uint64_t id;
	int done;                  /* set under c->lock */
	int32_t status;
	uint32_t aux;
	struct arf_net_buf body;
	struct arf_net_waiter *next;
};

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

/* Read exactly len bytes (blocking with timeout), collecting SCM_RIGHTS fds. */
static int recv_exact(int fd, void *buf, size_t len, int *fds, int *nfds, int timeout_ms)
{
	size_t got = 0;
	union {
		char buf[CMSG_SPACE(sizeof(int) * ARF_NET_MAX_REGIONS)];
		struct cmsghdr align;
	} cm;

	while (got < len) {
		struct iovec v = { (uint8_t *)buf + got, len - got };
		struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
		if (fds) {
			m.msg_control = cm.buf;
			m.msg_controllen = sizeof(cm.buf);
		}
		ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				int rc = arf_net_wait_fd(fd, POLLIN, 0, timeout_ms);
				if (rc)
					return rc;
				continue;
			}
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		if (fds) {
			for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
				if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
					continue;
				int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
				for (int i = 0; i < k; i++) {
					int f;
					memcpy(&f, CMSG_DATA(c) + (size_t)i * sizeof(int), sizeof(int));
					if (*nfds < (int)ARF_NET_MAX_REGIONS)
						fds[(*nfds)++] = f;
					else
						close(f);
				}
			}
		}
		got += (size_t)n;
	}
	return 0;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

/* Send HELLO, read its reply (with the region fds on shm), fill regions and
 * info.  The reply body: u32 n, n x {u32 id, u32 flags, u64 size, u64 key},
 * u32 info_len, info; on failure it is the server's message. */
static int handshake(struct arf_net_conn *c, const struct arf_net_client_opts *o, char *err,
		     size_t errlen)
{
	struct arf_net_hdr h;
	uint8_t hb[sizeof(struct arf_net_hdr)], proof[32];
	int fds[ARF_NET_MAX_REGIONS], nfds = 0, rc;
	uint8_t *body = NULL;
	size_t blen = 0;

	/* At most two rounds: a server with a shared secret answers the first
	 * HELLO with a challenge, which the second proves. */
	for (int round = 0; round < 2; round++) {
		struct iovec v[2] = { { proof, round ? sizeof(proof) : 0 },
				      { (void *)o->hello, o->hello_len } };
		h = (struct arf_net_hdr){ .op = ARF_NET_OP_HELLO, .id = (uint64_t)round,
					  .flags = round ? ARF_NET_F_PROOF : 0,
					  .aux = ARF_NET_PROTO_VERSION };
		h.len = (uint32_t)(sizeof(h) + v[0].iov_len + v[1].iov_len);
		rc = arf_net_send_frame(c->fd, &h, v, 2, NULL, 0, c->timeout_ms);
		if (rc) {
			snprintf(err, errlen, "sending hello: %s", strerror(-rc));
			return rc;
		}
		ARF_NET_CTR(c, bytes_sent, h.len);
		rc = recv_exact(c->fd, hb, sizeof(hb), fds, &nfds, c->timeout_ms);
		if (rc) {
			snprintf(err, errlen, "waiting for the server's hello: %s",
				 rc == -ECONNRESET ? "connection closed (not an arfd, or refused)"
						   : strerror(-rc));
			goto out;
		}
		arf_net_hdr_decode(hb, &h);
		if (h.len < sizeof(h) || h.len > ARF_NET_MAX_FRAME || h.op != ARF_NET_OP_HELLO ||
		    !(h.flags & ARF_NET_F_REPLY)) {
			snprintf(err, errlen, "the server's hello is malformed (not an arfd?)");
			rc = ARF_EPROTO;
			goto out;
		}
		blen = h.len - sizeof(h);
		free(body);
		body = malloc(blen + 1);
		if (!body) {
			rc = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		rc = recv_exact(c->fd, body, blen, fds, &nfds, c->timeout_ms);
		if (rc) {
			snprintf(err, errlen, "reading the server's hello: %s", strerror(-rc));
			goto out;
		}
		ARF_NET_CTR(c, bytes_received, h.len);
		body[blen] = 0;
		if (round == 0 && (h.flags & ARF_NET_F_CHALLENGE) && blen == 32) {
			if (!o->auth_key) {
				snprintf(err, errlen, "refused by the server: the export needs the shared "
					 "secret (secret file)");
				rc = ARF_EAUTH;
				goto out;
			}
			arf_net_auth_proof(o->auth_key, body, o->hello, o->hello_len, proof);
			continue;
		}
		break;
	}
	if (h.status != ARF_NET_S_OK) {
		rc = arf_net_status_to_err(h.status);
		if (h.aux != ARF_NET_PROTO_VERSION && rc == ARF_EVERSION)
			snprintf(err, errlen, "server speaks net protocol %u, client %u: %s", h.aux,
				 ARF_NET_PROTO_VERSION, (char *)body);
		else
			snprintf(err, errlen, "refused by the server: %s",
				 blen ? (char *)body : arf_err_text(rc) ? arf_err_text(rc) : strerror(-rc));
		goto out;
	}
	size_t off = 0;
	if (blen < 4 || get32(body) > ARF_NET_MAX_REGIONS)
		goto bad;
	c->nregions = get32(body);
	off = 4;
	if (blen - off < c->nregions * 24u + 4u)
		goto bad;
	for (size_t i = 0; i < c->nregions; i++, off += 24) {
		c->regions[i].id = get32(body + off);
		c->regions[i].flags = get32(body + off + 4);
		c->regions[i].size = get64(body + off + 8);
		c->regions[i].key = get64(body + off + 16);
	}
	uint32_t ilen = get32(body + off);
	off += 4;
	if (ilen > blen - off)
		goto bad;
	c->info = malloc(ilen ? ilen : 1);
	if (!c->info) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(c->info, body + off, ilen);
	c->info_len = ilen;
	if (c->ops->attach) {
		rc = c->ops->attach(c, fds, nfds, err, errlen);
		nfds = 0; /* attach owns them */
	}
	goto out;
bad:
	snprintf(err, errlen, "the server's hello is malformed");
	rc = ARF_EPROTO;
out:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	free(body);
	return rc;
}

int arf_net_connect(const struct arf_net_client_opts *opts, struct arf_net_conn **out,
		    char *err, size_t errlen)
{
	struct arf_net_conn *c;
	int rc;

	*out = NULL;
	if (!opts || !opts->transport) {
		snprintf(err, errlen, "no transport given");
		return -EINVAL;
	}
	const struct arf_net_cops *ops;
	if (!strcmp(opts->transport, "tcp"))
		ops = &arf_net_tcp_cops;
	else if (!strcmp(opts->transport, "shm") || !strcmp(opts->transport, "unix"))
		ops = &arf_net_shm_cops;
	else if (!strcmp(opts->transport, "rdma") || !strcmp(opts->transport, "verbs")) {
#ifdef ARF_HAVE_VERBS
		ops = &arf_net_verbs_cops;
#else
		snprintf(err, errlen, "transport rdma: built without rdma-core "
			 "(libibverbs-dev, librdmacm-dev)");
		return -EOPNOTSUPP;
#endif
	} else {
		snprintf(err, errlen, "unknown transport '%s' (tcp, shm, rdma)", opts->transport);
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->ops = ops;
	c->spin_us = opts->spin_us;
	c->timeout_ms = opts->timeout_ms ? (int)opts->timeout_ms : 30000;
	c->next_id = 1;
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->fd = ops->dial(opts, err, errlen);
	if (c->fd < 0) {
		rc = c->fd;
		goto fail;
	}
	if ((rc = arf_net_set_nonblock(c->fd))) {
		snprintf(err, errlen, "socket: %s", strerror(-rc));
		goto fail;
	}
	if ((rc = handshake(c, opts, err, errlen)))
		goto fail;
	*out = c;
	return 0;
fail:
	arf_net_close(c);
	return rc;
}

void arf_net_close(struct arf_net_conn *c)
{
	if (!c)
		return;
	if (c->ops && c->ops->detach)
		c->ops->detach(c);
	if (c->fd >= 0)
		close(c->fd);
	arf_net_rbuf_free(&c->rb);
	free(c->info);
	pthread_mutex_destroy(&c->send_lock);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
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
}

/* File one received reply with its waiter (caller holds c->lock). */
static void deliver(struct arf_net_conn *c, const struct arf_net_hdr *h, const uint8_t *body)
{
	size_t blen = h->len - sizeof(*h);

	for (struct arf_net_waiter *w = c->waiters; w; w = w->next) {
		if (w->id != h->id || w->done)
			continue;
		w->status = h->status;
		w->aux = h->aux;
		w->body.len = blen;
		w->body.data = malloc(blen ? blen : 1);
		if (!w->body.data) {
			w->status = ARF_NET_S_NOMEM;
			w->body.len = 0;
		} else if (blen) {
			memcpy(w->body.data, body, blen);
		}
		__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
		return;
	}
	/* A reply nobody waits for (its waiter gave up): dropped. */
}

/* The reading thread: read until our reply is filed.  Returns 0 or the
 * error that breaks the connection. */
static int pump(struct arf_net_conn *c, struct arf_net_waiter *me)
{
	for (;;) {
		struct arf_net_hdr h;
		const uint8_t *body;
		int r;

		while ((r = arf_net_rbuf_frame(&c->rb, &h, &body)) == 1) {
			ARF_NET_CTR(c, bytes_received, h.len);
			if (!(h.flags & ARF_NET_F_REPLY))
				continue; /* the server sends nothing unasked */
			pthread_mutex_lock(&c->lock);
			deliver(c, &h, body);
			pthread_cond_broadcast(&c->cond);
			pthread_mutex_unlock(&c->lock);
		}
		if (r < 0)
			return r;
		if (__atomic_load_n(&me->done, __ATOMIC_ACQUIRE))
			return 0;
		ssize_t n = arf_net_rbuf_fill(&c->rb, c->fd);
		if (n < 0)
			return (int)n;
		if (n == 0) {
			int rc = arf_net_wait_fd(c->fd, POLLIN, c->spin_us, c->timeout_ms);
			if (rc)
				return rc;
		}
	}
}

int arf_net_exchange(struct arf_net_conn *c, uint16_t op, uint32_t aux, const struct iovec *iov,
		     int iovcnt, int32_t *status, uint32_t *reply_aux, struct arf_net_buf *resp)
{
	return arf_net_exchange_id(c, op, 0, aux, iov, iovcnt, status, reply_aux, resp);
}

/* Wait on c->cond (c->lock held); with an abort hook, in slices: 0, or
 * -ECANCELED when the hook says to give up. */
static int cond_wait(struct arf_net_conn *c)
{
	if (!arf_net_abort_set()) {
		pthread_cond_wait(&c->cond, &c->lock);
		return 0;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ARF_NET_ABORT_POLL_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT)
		return arf_net_abort_check();
	return 0;
}

int arf_net_exchange_id(struct arf_net_conn *c, uint16_t op, uint64_t id, uint32_t aux,
			const struct iovec *iov, int iovcnt, int32_t *status, uint32_t *reply_aux,
			struct arf_net_buf *resp)
{
	struct arf_net_waiter w;
	struct arf_net_hdr h;
	size_t len = sizeof(h);
	int rc;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > ARF_NET_MAX_FRAME)
		return -E2BIG;
	memset(&w, 0, sizeof(w));
	pthread_mutex_lock(&c->lock);
	if (c->broken) {
		rc = c->broken;
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	w.id = id ? id : c->next_id++;
	w.next = c->waiters;
	c->waiters = &w;
	pthread_mutex_unlock(&c->lock);

	h = (struct arf_net_hdr){ .len = (uint32_t)len, .op = op, .id = w.id, .aux = aux };
	pthread_mutex_lock(&c->send_lock);
	rc = arf_net_send_frame(c->fd, &h, iov, iovcnt, NULL, 0, c->timeout_ms);
	pthread_mutex_unlock(&c->send_lock);
	if (!rc)
		ARF_NET_CTR(c, bytes_sent, len);

	pthread_mutex_lock(&c->lock);
	if (rc && !c->broken) {
		/* a frame sent in part (given up, or failed) ends the stream */
		c->broken = rc == -EPIPE || rc == -ECANCELED ? -ECONNRESET : rc;
		pthread_cond_broadcast(&c->cond);
	}
	int gave_up = 0;
	while (!w.done && !c->broken && !gave_up) {
		if (c->reading) {
			gave_up = cond_wait(c);
			continue;
		}
		c->reading = 1;
		pthread_mutex_unlock(&c->lock);
		int prc = pump(c, &w);
		pthread_mutex_lock(&c->lock);
		c->reading = 0;
		if (prc == -ECANCELED) /* our caller gave up; the stream is whole */
			gave_up = prc;
		else if (prc && !c->broken)
			c->broken = prc;
		pthread_cond_broadcast(&c->cond);
	}
	/* unlink our waiter */
	for (struct arf_net_waiter **pp = &c->waiters; *pp; pp = &(*pp)->next) {
		if (*pp == &w) {
			*pp = w.next;
			break;
		}
	}
	rc = w.done ? 0 : gave_up ? gave_up : c->broken;
	pthread_mutex_unlock(&c->lock);
	if (rc) {
		arf_net_buf_free(&w.body);
		return rc;
	}
	*status = w.status;
	if (reply_aux)
		*reply_aux = w.aux;
	if (resp)
		*resp = w.body;
	else
		arf_net_buf_free(&w.body);
	return 0;
}

int arf_net_call(struct arf_net_conn *c, uint16_t op, const struct iovec *iov, int iovcnt,
		 struct arf_net_buf *resp)
{
	return arf_net_call_id(c, op, 0, iov, iovcnt, resp);
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

/* SPDX-License-Identifier: MIT */
/*
 * net/server — the server side of tcp and shm: the soft-NIC.
 *
 * One thread owns every socket through epoll.  For a one-sided frame it
 * checks region id, key, rights and bounds (arf_range_ok) and copies bytes
 * in or out of the registered region: it never calls filesystem code, and
 * this file links nothing of meta/ or ops/.  A request frame goes to the
 * embedder's on_request callback; its reply may come later from any thread
 * (arf_net_reply), written straight to the socket under the connection's
 * send lock.  The handshake (HELLO) checks the protocol version, asks the
 * embedder's on_hello, and answers with the region table and the info blob;
 * on the UNIX socket the reply also carries one descriptor per region, a
 * read-only one for regions clients may not write.
 *
 * Waiting is adaptive: after any event the thread polls epoll without
 * sleeping for spin_us, then sleeps in epoll_wait.
 *
 * Connection states: accepted (only HELLO allowed) -> ready (after a good
 * HELLO) -> closed (removed from epoll, socket shut down; the descriptor is
 * closed when the last reference goes).  conn_close() is the one place that
 * moves a connection to closed.
 *
 * RDMA (verbs_server.c) runs beside: its connections arrive here as one end
 * of a socketpair (arf_net_server_adopt), so everything above applies to
 * them unchanged; only their one-sided operations bypass the soft-NIC.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <sodium.h>

#include "net_int.h"
#include "verbs_int.h"

#define HELLO_TIMEOUT_US (10u * 1000000u) /* a connection must finish its handshake in this */
#define OUTQ_HIGH (4u << 20)   /* stop reading a client's frames while this much waits for it */
#define OUTQ_MAX  (64u << 20)  /* a client that lets more pile up is dropped */

enum sconn_state {
	SCONN_NEW,     /* accepted: only HELLO is allowed */
	SCONN_READY,   /* handshake done */
	SCONN_CLOSED,  /* out of epoll; replies are dropped */
};

struct srv_region {
	uint32_t id, flags;
	uint8_t *base;
	uint64_t size;
	int memfd;     /* the embedder's; not ours to close */
	int passfd;    /* what shm clients get: read-only unless writable */
};

struct arf_net_sconn {
	struct arf_net_server *s;
	int fd;
	int is_unix;
	int refs;                  /* atomic */
	enum sconn_state state;    /* changed by the soft-NIC thread only (conn_close) */
	int closed;                /* under send_lock: replies dropped */
	pthread_mutex_t send_lock;
	/* Output that the socket would not take yet (under send_lock): sent
	 * when epoll says the socket is writable.  Nothing ever blocks on a
	 * client that stops reading: its frames wait here, the soft-NIC stops
	 * reading its requests past OUTQ_HIGH and drops it past OUTQ_MAX. */
	uint8_t *outq;
	size_t outq_off, outq_len, outq_cap;
	uint32_t events;           /* epoll events armed (under send_lock) */
	uint64_t accepted_us;      /* when accepted: SCONN_NEW may last HELLO_TIMEOUT_US */
	struct arf_net_conn_info ctr; /* counters (atomic adds); peer and times filled on read */
	int no_grant;              /* on_hello withheld the region keys */
	int challenged;            /* a challenge was sent: the next HELLO must prove it */
	uint8_t nonce[32];         /* that challenge */
	uint64_t keys[ARF_NET_MAX_REGIONS]; /* this connection's region keys (0 = none) */
	struct arf_net_rbuf rb;
	struct arf_net_peer peer;
	void *udata;
	struct arf_net_sconn *prev, *next;
};

struct arf_net_server {
	struct arf_net_server_opts o;
	uint8_t auth_key[ARF_NET_AUTH_KEY_BYTES];
	int has_auth;
	char unix_path[108];
	char listen_addr[128];
	int tcp_fd, unix_fd, ep, evfd;
	uint16_t port;
	pthread_t thr;
	int started, stop;

	struct srv_region regions[ARF_NET_MAX_REGIONS];
	size_t nregions;

	pthread_mutex_t info_lock;
	uint8_t *info;
	size_t info_len;

	struct arf_net_sconn *conns;   /* changed by the soft-NIC thread, under conns_lock */
	pthread_mutex_t conns_lock;    /* the list, for arf_net_server_foreach_conn */
	struct arf_net_sconn *dead;    /* closed in this epoll batch, unref after it */
	unsigned nnew;                 /* connections in SCONN_NEW (soft-NIC thread only) */
	uint8_t *out;                  /* READ reply staging, soft-NIC thread only */
	size_t out_cap;

	struct arf_net_server_counters ctr; /* atomic adds */

	char rdma_addr[128];           /* rdma: listen address ("" = any) when has_rdma */
	int has_rdma;
	struct arf_net_verbs_server *vs; /* the rdma listener, NULL = none */
	pthread_mutex_t adopt_lock;    /* adoptq */
	struct adopted *adoptq;        /* connections handed over by rdma, for the soft-NIC */
};

/* A connected socket another transport hands to the soft-NIC. */
struct adopted {
	int fd;
	struct arf_net_peer peer;
	struct adopted *next;
};

#define SCTR(s, f, n) __atomic_add_fetch(&(s)->ctr.f, (uint64_t)(n), __ATOMIC_RELAXED)
#define CCTR(c, f, n) __atomic_add_fetch(&(c)->ctr.f, (uint64_t)(n), __ATOMIC_RELAXED)

static char tag_tcp, tag_unix, tag_ev; /* epoll data for the non-connection fds */

int arf_net_server_create(const struct arf_net_server_opts *opts, struct arf_net_server **out,
			  char *err, size_t errlen)
{
	struct arf_net_server *s;

	*out = NULL;
	if (!opts->listen_addr && !opts->unix_path && !opts->rdma_addr) {
		snprintf(err, errlen, "neither a tcp address, a UNIX socket nor an rdma address "
			 "to serve on");
		return -EINVAL;
	}
	if (opts->unix_path && strlen(opts->unix_path) >= sizeof(s->unix_path)) {
		snprintf(err, errlen, "socket path too long (%zu bytes, at most %zu)",
			 strlen(opts->unix_path), sizeof(s->unix_path) - 1);
		return -ENAMETOOLONG;
	}
	if (opts->listen_addr && strlen(opts->listen_addr) >= sizeof(s->listen_addr)) {
		snprintf(err, errlen, "listen address too long");
		return -EINVAL;
	}
	if (opts->rdma_addr && strlen(opts->rdma_addr) >= sizeof(s->rdma_addr)) {
		snprintf(err, errlen, "rdma listen address too long");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->o = *opts;
	if (opts->auth_key) {
		if (sodium_init() < 0) {
			free(s);
			snprintf(err, errlen, "libsodium failed to initialise");
			return -EIO;
		}
		memcpy(s->auth_key, opts->auth_key, sizeof(s->auth_key));
		s->has_auth = 1;
		s->o.auth_key = NULL; /* ours is the copy */
	}
	if (!s->o.max_conns)
		s->o.max_conns = 1024;
	if (opts->unix_path)
		snprintf(s->unix_path, sizeof(s->unix_path), "%s", opts->unix_path);
	if (opts->listen_addr)
		snprintf(s->listen_addr, sizeof(s->listen_addr), "%s", opts->listen_addr);
	if (opts->rdma_addr) {
		snprintf(s->rdma_addr, sizeof(s->rdma_addr), "%s", opts->rdma_addr);
		s->has_rdma = 1;
	}
	s->o.rdma_addr = NULL; /* ours is the copy */
	s->tcp_fd = s->unix_fd = s->ep = s->evfd = -1;
	pthread_mutex_init(&s->adopt_lock, NULL);
	pthread_mutex_init(&s->info_lock, NULL);
	pthread_mutex_init(&s->conns_lock, NULL);
	*out = s;
	return 0;
}

int arf_net_server_add_region(struct arf_net_server *s, uint32_t id, void *base, uint64_t size,
			      int memfd, uint32_t flags)
{
	if (s->started || !base || !size)
		return -EINVAL;
	if (s->nregions >= ARF_NET_MAX_REGIONS)
		return -ENOSPC;
	for (size_t i = 0; i < s->nregions; i++)
		if (s->regions[i].id == id)
			return -EINVAL;
	struct srv_region *r = &s->regions[s->nregions];
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->flags = flags;
	r->base = base;
	r->size = size;
	r->memfd = memfd;
	r->passfd = -1;
	s->nregions++;
	return 0;
}

int arf_net_server_set_info(struct arf_net_server *s, const void *info, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, info, len);
	pthread_mutex_lock(&s->info_lock);
	free(s->info);
	s->info = copy;
	s->info_len = len;
	pthread_mutex_unlock(&s->info_lock);
	return 0;
}

uint16_t arf_net_server_port(struct arf_net_server *s)
{
	return s->port;
}

uint16_t arf_net_server_rdma_port(struct arf_net_server *s)
{
#ifdef ARF_HAVE_VERBS
	return arf_net_verbs_server_port(s->vs);
#else
	(void)s;
	return 0;
#endif
}

void arf_net_server_foreach_conn(struct arf_net_server *s,
				 void (*fn)(void *ctx, const struct arf_net_conn_info *ci), void *ctx)
{
	uint64_t now = arf_net_now_us();

	pthread_mutex_lock(&s->conns_lock);
	for (struct arf_net_sconn *c = s->conns; c; c = c->next) {
		struct arf_net_conn_info ci;
		_Static_assert(offsetof(struct arf_net_conn_info, bytes_received) ==
				       offsetof(struct arf_net_conn_info, requests) + 6 * sizeof(uint64_t),
			       "the counters are 7 consecutive uint64_t");
		uint64_t *src = &c->ctr.requests, *dst = &ci.requests;
		for (size_t i = 0; i < 7; i++) /* requests .. bytes_received */
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
		ci.peer = c->peer;
		ci.ready = __atomic_load_n(&c->state, __ATOMIC_RELAXED) == SCONN_READY;
		ci.connected_s = (double)(now - c->accepted_us) / 1e6;
		fn(ctx, &ci);
	}
	pthread_mutex_unlock(&s->conns_lock);
}

void arf_net_server_counters(struct arf_net_server *s, struct arf_net_server_counters *out)
{
	uint64_t *src = (uint64_t *)&s->ctr, *dst = (uint64_t *)out;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ connections */

void arf_net_sconn_ref(struct arf_net_sconn *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

void arf_net_sconn_unref(struct arf_net_sconn *c)
{
	if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	close(c->fd);
	arf_net_rbuf_free(&c->rb);
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

void arf_net_sconn_set_udata(struct arf_net_sconn *c, void *udata)
{
	c->udata = udata;
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

static size_t outq_pending(const struct arf_net_sconn *c)
{
	return c->outq_len - c->outq_off;
}

/* Arm epoll for what the connection needs now (caller holds send_lock). */
static void conn_arm_locked(struct arf_net_sconn *c)
{
	size_t pend = outq_pending(c);
	uint32_t ev = EPOLLRDHUP | (pend ? EPOLLOUT : 0) | (pend > OUTQ_HIGH ? 0 : EPOLLIN);

	if (c->closed || ev == c->events)
		return;
	struct epoll_event e = { .events = ev, .data.ptr = c };
	if (epoll_ctl(c->s->ep, EPOLL_CTL_MOD, c->fd, &e) == 0)
		c->events = ev;
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
		memcpy(c->outq + c->outq_len, p + skip, l - skip);
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

/* Send one frame to a client, from any thread, never waiting: what the
 * socket does not take now is queued behind what already waits. */
static int conn_send_full(struct arf_net_sconn *c, uint64_t id, uint16_t op, int32_t status,
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
		conn_arm_locked(c);
	pthread_mutex_unlock(&c->send_lock);
	return rc;
}

static int conn_send(struct arf_net_sconn *c, uint64_t id, uint16_t op, int32_t status, uint32_t aux,
		     const struct iovec *iov, int iovcnt, const int *fds, int nfds)
{
	return conn_send_full(c, id, op, status, aux, 0, iov, iovcnt, fds, nfds);
}

static int conn_send_flags(struct arf_net_sconn *c, uint64_t id, uint16_t op, int32_t status,
			   uint32_t aux, uint16_t flags, const struct iovec *iov, int iovcnt)
{
	return conn_send_full(c, id, op, status, aux, flags, iov, iovcnt, NULL, 0);
}

int arf_net_reply(struct arf_net_sconn *c, uint64_t id, uint16_t op, int32_t status,
		  const struct iovec *iov, int iovcnt)
{
	return conn_send(c, id, op, status, 0, iov, iovcnt, NULL, 0);
}

static void conn_close(struct arf_net_server *s, struct arf_net_sconn *c)
{
	if (c->state == SCONN_CLOSED)
		return;
	int was_ready = c->state == SCONN_READY;
	if (c->state == SCONN_NEW)
		s->nnew--;
	c->state = SCONN_CLOSED;
	epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
	pthread_mutex_lock(&c->send_lock);
	c->closed = 1;
	shutdown(c->fd, SHUT_RDWR);
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
	 * reference after it (free_dead). */
	c->next = s->dead;
	s->dead = c;
}

static void free_dead(struct arf_net_server *s)
{
	while (s->dead) {
		struct arf_net_sconn *c = s->dead;
		s->dead = c->next;
		arf_net_sconn_unref(c);
	}
}

/* A new connection on fd, or NULL (fd closed) when full or out of memory. */
static struct arf_net_sconn *conn_alloc(struct arf_net_server *s, int fd, int is_unix)
{
	if (__atomic_load_n(&s->ctr.conns_open, __ATOMIC_RELAXED) >= s->o.max_conns) {
		SCTR(s, conns_refused, 1);
		close(fd);
		return NULL;
	}
	struct arf_net_sconn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return NULL;
	}
	c->s = s;
	c->fd = fd;
	c->is_unix = is_unix;
	c->refs = 1;
	c->state = SCONN_NEW;
	pthread_mutex_init(&c->send_lock, NULL);
	return c;
}

/* Serve c (its peer filled in): into epoll and the list. */
static void conn_register(struct arf_net_server *s, struct arf_net_sconn *c)
{
	c->events = EPOLLIN | EPOLLRDHUP;
	c->accepted_us = arf_net_now_us();
	struct epoll_event ev = { .events = c->events, .data.ptr = c };
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		close(c->fd);
		pthread_mutex_destroy(&c->send_lock);
		free(c);
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

static void accept_one(struct arf_net_server *s, int lfd, int is_unix)
{
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	int fd = accept4(lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	struct arf_net_sconn *c = conn_alloc(s, fd, is_unix);
	if (!c)
		return;
	if (is_unix) {
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		c->peer.transport = "shm";
		snprintf(c->peer.addr, sizeof(c->peer.addr), "unix");
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0) {
			c->peer.has_cred = 1;
			c->peer.pid = (uint32_t)cr.pid;
			c->peer.uid = cr.uid;
			c->peer.gid = cr.gid;
			snprintf(c->peer.addr, sizeof(c->peer.addr), "unix:pid=%d", (int)cr.pid);
			/* the groups as the kernel has them for the socket, not
			 * /proc/PID (which races with the pid's reuse) */
			gid_t g[256];
			socklen_t gl = sizeof(g);
			if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &gl) == 0)
				for (size_t i = 0; i < gl / sizeof(g[0]) && c->peer.ngroups < 16; i++)
					c->peer.groups[c->peer.ngroups++] = (uint32_t)g[i];
		}
	} else {
		int one = 1;
		char host[INET6_ADDRSTRLEN] = "?";
		unsigned port = 0;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->peer.transport = "tcp";
		if (sa.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&sa;
			inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
			port = ntohs(in->sin_port);
			snprintf(c->peer.addr, sizeof(c->peer.addr), "%s:%u", host, port);
			c->peer.port = (uint16_t)port;
		} else if (sa.ss_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;
			inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
			port = ntohs(in6->sin6_port);
			snprintf(c->peer.addr, sizeof(c->peer.addr), "[%s]:%u", host, port);
			c->peer.port = (uint16_t)port;
		}
	}
	conn_register(s, c);
}

int arf_net_server_adopt(void *server, int fd, const struct arf_net_peer *peer)
{
	struct arf_net_server *s = server;
	struct adopted *a = malloc(sizeof(*a));
	uint64_t one = 1;

	if (!a) {
		close(fd);
		return -ENOMEM;
	}
	a->fd = fd;
	a->peer = *peer;
	pthread_mutex_lock(&s->adopt_lock);
	a->next = s->adoptq;
	s->adoptq = a;
	pthread_mutex_unlock(&s->adopt_lock);
	if (write(s->evfd, &one, sizeof(one)) < 0) { /* the counter is readable already */ }
	return 0;
}

/* The soft-NIC thread: serve what arf_net_server_adopt queued. */
static void adopt_pending(struct arf_net_server *s)
{
	pthread_mutex_lock(&s->adopt_lock);
	struct adopted *a = s->adoptq;
	s->adoptq = NULL;
	pthread_mutex_unlock(&s->adopt_lock);
	while (a) {
		struct adopted *next = a->next;
		struct arf_net_sconn *c = conn_alloc(s, a->fd, 0);
		if (c) {
			c->peer = a->peer;
			conn_register(s, c);
		}
		free(a);
		a = next;
	}
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

/* HELLO: version, the embedder's decision, then regions + info (+ fds). */
static int do_hello(struct arf_net_server *s, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		    const uint8_t *body, size_t len)
{
	char msg[256] = "";
	int rc;

	if (c->state != SCONN_NEW) {
		SCTR(s, bad_frames, 1);
		snprintf(msg, sizeof(msg), "handshake already done");
		conn_send(c, h->id, h->op, arf_net_status_from_err(ARF_EPROTO), ARF_NET_PROTO_VERSION,
			  &(struct iovec){ msg, strlen(msg) }, 1, NULL, 0);
		return 0;
	}
	if (h->aux != ARF_NET_PROTO_VERSION) {
		snprintf(msg, sizeof(msg), "client speaks net protocol %u, arfd speaks %u", h->aux,
			 ARF_NET_PROTO_VERSION);
		rc = ARF_EVERSION;
		goto refuse;
	}
	if (s->has_auth) {
		/* challenge-response: the secret never travels */
		if (!(h->flags & ARF_NET_F_PROOF)) {
			if (c->challenged) {
				snprintf(msg, sizeof(msg), "this export needs the shared secret");
				rc = ARF_EAUTH;
				goto refuse;
			}
			randombytes_buf(c->nonce, sizeof(c->nonce));
			c->challenged = 1;
			return conn_send_flags(c, h->id, h->op, arf_net_status_from_err(ARF_EAUTH),
					       ARF_NET_PROTO_VERSION, ARF_NET_F_CHALLENGE,
					       &(struct iovec){ c->nonce, sizeof(c->nonce) }, 1);
		}
		if (!c->challenged || len < crypto_auth_BYTES ||
		    arf_net_auth_verify(s->auth_key, c->nonce, body + crypto_auth_BYTES,
					len - crypto_auth_BYTES, body)) {
			snprintf(msg, sizeof(msg), "wrong shared secret");
			rc = ARF_EAUTH;
			goto refuse;
		}
		body += crypto_auth_BYTES;
		len -= crypto_auth_BYTES;
		c->peer.authenticated = 1;
	}
	rc = s->o.on_hello ? s->o.on_hello(s->o.ctx, c, &c->peer, body, len, msg, sizeof(msg)) : 0;
	if (rc)
		goto refuse;
	if (!c->no_grant)
		for (size_t i = 0; i < s->nregions; i++)
			do
				randombytes_buf(&c->keys[i], sizeof(c->keys[i]));
			while (!c->keys[i]);

	pthread_mutex_lock(&s->info_lock);
	size_t nreg = c->no_grant ? 0 : s->nregions;
	size_t blen = 4 + nreg * 24 + 4 + s->info_len;
	uint8_t *b = malloc(blen);
	if (!b) {
		pthread_mutex_unlock(&s->info_lock);
		rc = -ENOMEM;
		goto refuse;
	}
	put32(b, (uint32_t)nreg);
	size_t off = 4;
	int fds[ARF_NET_MAX_REGIONS], nfds = 0;
	for (size_t i = 0; i < nreg; i++, off += 24) {
		put32(b + off, s->regions[i].id);
		put32(b + off + 4, s->regions[i].flags);
		put64(b + off + 8, s->regions[i].size);
		put64(b + off + 16, c->keys[i]);
		if (c->is_unix)
			fds[nfds++] = s->regions[i].passfd;
	}
	put32(b + off, (uint32_t)s->info_len);
	if (s->info_len)
		memcpy(b + off + 4, s->info, s->info_len);
	pthread_mutex_unlock(&s->info_lock);
	if (c->is_unix) {
		for (int i = 0; i < nfds; i++) {
			if (fds[i] < 0) { /* a region without a descriptor cannot be mapped */
				free(b);
				snprintf(msg, sizeof(msg), "shm is not available: region %u has no descriptor",
					 s->regions[i].id);
				rc = -EOPNOTSUPP;
				goto refuse;
			}
		}
	}
	c->state = SCONN_READY;
	s->nnew--;
	rc = conn_send(c, h->id, h->op, ARF_NET_S_OK, ARF_NET_PROTO_VERSION,
		       &(struct iovec){ b, blen }, 1, fds, nfds);
	free(b);
	return rc;
refuse:
	SCTR(s, conns_refused, 1);
	if (!msg[0])
		snprintf(msg, sizeof(msg), "%s", arf_err_text(rc) ? arf_err_text(rc) : strerror(-rc));
	conn_send(c, h->id, h->op, arf_net_status_from_err(rc), ARF_NET_PROTO_VERSION,
		  &(struct iovec){ msg, strlen(msg) }, 1, NULL, 0);
	return -EPERM; /* close after the refusal */
}

/* The region a one-sided operation names, if this connection holds its key. */
static struct srv_region *find_region(struct arf_net_server *s, struct arf_net_sconn *c,
				      uint32_t id, uint64_t key)
{
	for (size_t i = 0; i < s->nregions; i++)
		if (s->regions[i].id == id)
			return c->keys[i] && c->keys[i] == key ? &s->regions[i] : NULL;
	return NULL;
}

static int do_read(struct arf_net_server *s, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		   const uint8_t *body, size_t len)
{
	uint32_t n = h->aux;
	uint64_t total = 0;
	int32_t st = ARF_NET_S_OK;

	if (n == 0 || n > ARF_NET_MAX_BATCH || len != (size_t)n * sizeof(struct arf_net_wire_read)) {
		SCTR(s, bad_frames, 1);
		st = arf_net_status_from_err(ARF_EPROTO);
		goto reply;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct arf_net_wire_read w;
		memcpy(&w, body + i * sizeof(w), sizeof(w));
		struct srv_region *r = find_region(s, c, le32toh(w.region), le64toh(w.key));
		uint32_t l = le32toh(w.len);
		if (!r || !arf_range_ok(le64toh(w.off), l, r->size)) {
			st = arf_net_status_from_err(ARF_EKEY);
			goto reply;
		}
		total += l;
	}
	if (total > ARF_NET_MAX_FRAME - sizeof(struct arf_net_hdr)) {
		st = arf_net_status_from_err(ARF_EKEY);
		goto reply;
	}
	if (s->out_cap < total) {
		uint8_t *nb = realloc(s->out, total);
		if (!nb) {
			st = ARF_NET_S_NOMEM;
			goto reply;
		}
		s->out = nb;
		s->out_cap = total;
	}
	size_t off = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct arf_net_wire_read w;
		memcpy(&w, body + i * sizeof(w), sizeof(w));
		struct srv_region *r = find_region(s, c, le32toh(w.region), le64toh(w.key));
		uint32_t l = le32toh(w.len);
		arf_net_copy_racy(s->out + off, r->base + le64toh(w.off), l);
		off += l;
	}
	SCTR(s, one_sided_reads, n);
	SCTR(s, one_sided_bytes, total);
	SCTR(s, one_sided_rounds, 1);
	CCTR(c, one_sided_reads, n);
	CCTR(c, one_sided_bytes, total);
	return conn_send(c, h->id, h->op, ARF_NET_S_OK, n, &(struct iovec){ s->out, total }, 1, NULL,
			 0);
reply:
	SCTR(s, one_sided_refused, 1);
	CCTR(c, refused, 1);
	return conn_send(c, h->id, h->op, st, 0, NULL, 0, NULL, 0);
}

static int do_rmw(struct arf_net_server *s, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		  const uint8_t *body, size_t len)
{
	struct arf_net_wire_rmw w;
	uint64_t prev = 0;

	if (len < sizeof(w))
		goto refuse;
	memcpy(&w, body, sizeof(w));
	uint32_t l = le32toh(w.len);
	uint64_t off = le64toh(w.off);
	struct srv_region *r = find_region(s, c, le32toh(w.region), le64toh(w.key));
	if (!r || !(r->flags & ARF_NET_REGION_WRITABLE) || !arf_range_ok(off, l, r->size))
		goto refuse;
	if (h->op == ARF_NET_OP_WRITE) {
		if (len != sizeof(w) + l)
			goto refuse;
		memcpy(r->base + off, body + sizeof(w), l);
	} else {
		if (l != 8 || off % 8 || len != sizeof(w))
			goto refuse;
		uint64_t *p = (uint64_t *)(void *)(r->base + off);
		if (h->op == ARF_NET_OP_CAS) {
			prev = le64toh(w.arg0);
			__atomic_compare_exchange_n(p, &prev, le64toh(w.arg1), 0, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
		} else {
			prev = __atomic_fetch_add(p, le64toh(w.arg0), __ATOMIC_SEQ_CST);
		}
	}
	SCTR(s, one_sided_writes, 1);
	SCTR(s, one_sided_rounds, 1);
	CCTR(c, one_sided_writes, 1);
	uint8_t ob[8];
	put64(ob, prev);
	return conn_send(c, h->id, h->op, ARF_NET_S_OK, 0,
			 &(struct iovec){ ob, h->op == ARF_NET_OP_WRITE ? 0 : 8 }, 1, NULL, 0);
refuse:
	SCTR(s, one_sided_refused, 1);
	CCTR(c, refused, 1);
	return conn_send(c, h->id, h->op, arf_net_status_from_err(ARF_EKEY), 0, NULL, 0, NULL, 0);
}

/* One frame from a client.  Returns < 0 to close the connection. */
static int do_frame(struct arf_net_server *s, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		    const uint8_t *body)
{
	size_t len = h->len - sizeof(*h);

	if (h->flags & ARF_NET_F_REPLY) {
		SCTR(s, bad_frames, 1);
		return -EPROTO; /* clients send no replies */
	}
	if (h->op == ARF_NET_OP_HELLO)
		return do_hello(s, c, h, body, len);
	if (c->state != SCONN_READY) {
		SCTR(s, bad_frames, 1);
		return -EPROTO; /* nothing before the handshake */
	}
	switch (h->op) {
	case ARF_NET_OP_READ:
		return do_read(s, c, h, body, len);
	case ARF_NET_OP_WRITE:
	case ARF_NET_OP_CAS:
	case ARF_NET_OP_FAA:
		return do_rmw(s, c, h, body, len);
	default:
		break;
	}
	if (h->op >= ARF_NET_OP_REQUEST_BASE && s->o.on_request) {
		SCTR(s, requests, 1);
		CCTR(c, requests, 1);
		s->o.on_request(s->o.ctx, c, h, body, len);
		return 0;
	}
	SCTR(s, bad_frames, 1);
	char msg[64];
	snprintf(msg, sizeof(msg), "unknown operation 0x%x", h->op);
	return conn_send(c, h->id, h->op, arf_net_status_from_err(ARF_EPROTO), 0,
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

static void conn_readable(struct arf_net_server *s, struct arf_net_sconn *c)
{
	for (;;) {
		struct arf_net_hdr h;
		const uint8_t *body;
		int r, closed;
		/* frames already buffered first: after a stall they are next */
		for (;;) {
			if (conn_stalled(c, &closed) || closed) {
				if (closed)
					conn_close(s, c);
				return; /* resumed by EPOLLOUT once the queue drains */
			}
			r = arf_net_rbuf_frame(&c->rb, &h, &body);
			if (r != 1)
				break;
			if (do_frame(s, c, &h, body) < 0) {
				conn_close(s, c);
				return;
			}
		}
		if (r < 0) { /* a length no frame can have */
			SCTR(s, bad_frames, 1);
			conn_close(s, c);
			return;
		}
		ssize_t n = arf_net_rbuf_fill(&c->rb, c->fd);
		if (n < 0) {
			conn_close(s, c);
			return;
		}
		if (n == 0)
			return;
		CCTR(c, bytes_received, n);
	}
}

/* The socket takes more: send what waits, then read again if we stopped. */
static void conn_writable(struct arf_net_server *s, struct arf_net_sconn *c)
{
	(void)s;
	pthread_mutex_lock(&c->send_lock);
	if (!c->closed) {
		if (outq_flush(c))
			conn_fail_locked(c);
		else
			conn_arm_locked(c);
	}
	pthread_mutex_unlock(&c->send_lock);
}

/* A connection that has not finished its handshake in HELLO_TIMEOUT_US is
 * dropped: a flood of silent connections cannot hold the slots forever. */
static void expire_handshakes(struct arf_net_server *s, uint64_t now)
{
	struct arf_net_sconn *c = s->conns, *next;
	for (; c; c = next) {
		next = c->next;
		if (c->state == SCONN_NEW && now - c->accepted_us > HELLO_TIMEOUT_US) {
			SCTR(s, conns_refused, 1);
			conn_close(s, c);
		}
	}
}

static void *snic_main(void *arg)
{
	struct arf_net_server *s = arg;
	struct epoll_event evs[64];
	uint64_t last = arf_net_now_us(), last_scan = last;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		int spinning = s->o.spin_us && arf_net_now_us() - last < s->o.spin_us;
		/* connections still in their handshake are looked at every second */
		int n = epoll_wait(s->ep, evs, 64, spinning ? 0 : s->nnew ? 1000 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n > 0)
			last = arf_net_now_us();
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			if (p == &tag_ev) {
				uint64_t v;
				if (read(s->evfd, &v, sizeof(v)) < 0) { /* woken to stop */ }
				adopt_pending(s); /* or to serve an rdma connection */
				continue;
			}
			if (p == &tag_tcp) {
				accept_one(s, s->tcp_fd, 0);
				continue;
			}
			if (p == &tag_unix) {
				accept_one(s, s->unix_fd, 1);
				continue;
			}
			struct arf_net_sconn *c = p;
			if (c->state == SCONN_CLOSED)
				continue; /* closed earlier in this batch */
			if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
				conn_close(s, c);
				continue;
			}
			if (evs[i].events & EPOLLOUT)
				conn_writable(s, c);
			conn_readable(s, c);
		}
		uint64_t now = arf_net_now_us();
		if (s->nnew && now - last_scan >= 1000000u) {
			last_scan = now;
			expire_handshakes(s, now);
		}
		free_dead(s);
	}
	return NULL;
}

static int listen_tcp(struct arf_net_server *s, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	char port[8];
	int rc = -EADDRNOTAVAIL, one = 1;

	snprintf(port, sizeof(port), "%u", s->o.port);
	int g = getaddrinfo(s->listen_addr[0] ? s->listen_addr : NULL, port, &hints, &res);
	if (g) {
		snprintf(err, errlen, "listen address '%s': %s", s->listen_addr, gai_strerror(g));
		return -EINVAL;
	}
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, 128) < 0) {
			rc = -errno;
			close(fd);
			continue;
		}
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		getsockname(fd, (struct sockaddr *)&sa, &sl);
		s->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
							 : ((struct sockaddr_in *)&sa)->sin_port);
		s->tcp_fd = fd;
		rc = 0;
		break;
	}
	freeaddrinfo(res);
	if (rc)
		snprintf(err, errlen, "listen on %s:%u: %s", s->listen_addr, s->o.port, strerror(-rc));
	return rc;
}

static int listen_unix(struct arf_net_server *s, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	memcpy(sa.sun_path, s->unix_path, strlen(s->unix_path) + 1);
	/* A socket file left by a server that died is removed; one that
	 * answers belongs to a live server and is left alone. */
	struct stat st;
	if (lstat(s->unix_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "socket path %s exists and is not a socket", s->unix_path);
			return -EEXIST;
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(fd);
			snprintf(err, errlen, "socket %s is in use by a running server", s->unix_path);
			return -EADDRINUSE;
		}
		if (fd >= 0)
			close(fd);
		unlink(s->unix_path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "socket %s: %s", s->unix_path, strerror(e));
		return -e;
	}
	s->unix_fd = fd;
	return 0;
}

/* A read-only region's memfd, before any client gets it.  A read-only
 * descriptor alone is not enough: a memfd's inode is mode 0777, so a client
 * holding one can open /proc/self/fd/N for writing and map the pages
 * writable.  F_SEAL_FUTURE_WRITE refuses every later write() and writable
 * shared mapping of the inode, whoever asks, while the embedder's own
 * mappings, made before start, keep writing.  A memfd created without
 * MFD_ALLOW_SEALING cannot be sealed; then at least other users are kept
 * from reopening it for writing (owner read only: the open below needs it),
 * and the embedder should create it sealable. */
static void protect_readonly(struct srv_region *r)
{
	if (fcntl(r->memfd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == 0)
		return;
	if (errno == EPERM) /* a memfd that forbids sealing */
		(void)fchmod(r->memfd, S_IRUSR);
	/* EINVAL: not a memfd (a file of its own, with its own permissions) */
}

/* Descriptors shm clients receive: read-only regions get a new, read-only
 * open of the memfd, sealed against writes (protect_readonly), so that a
 * client cannot map them writable. */
static int make_passfds(struct arf_net_server *s)
{
	for (size_t i = 0; i < s->nregions; i++) {
		struct srv_region *r = &s->regions[i];
		if (r->memfd < 0)
			continue;
		if (!(r->flags & ARF_NET_REGION_WRITABLE))
			protect_readonly(r);
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", r->memfd);
		int mode = r->flags & ARF_NET_REGION_WRITABLE ? O_RDWR : O_RDONLY;
		r->passfd = open(path, mode | O_CLOEXEC);
		if (r->passfd < 0)
			return -errno;
	}
	return 0;
}

/* rdma beside tcp and shm: its connections come back through
 * arf_net_server_adopt (queued until the soft-NIC thread runs). */
static int listen_rdma(struct arf_net_server *s, char *err, size_t errlen)
{
#ifdef ARF_HAVE_VERBS
	struct arf_net_verbs_sregion r[ARF_NET_MAX_REGIONS];
	for (size_t i = 0; i < s->nregions; i++)
		r[i] = (struct arf_net_verbs_sregion){ .id = s->regions[i].id,
						       .flags = s->regions[i].flags,
						       .base = s->regions[i].base,
						       .size = s->regions[i].size };
	return arf_net_verbs_server_start(s->rdma_addr, s->o.rdma_port, s->o.spin_us, r,
					  s->nregions, arf_net_server_adopt, s, &s->vs, err,
					  errlen);
#else
	(void)s;
	snprintf(err, errlen, "rdma: built without rdma-core (libibverbs-dev, librdmacm-dev)");
	return -EOPNOTSUPP;
#endif
}

int arf_net_server_start(struct arf_net_server *s, char *err, size_t errlen)
{
	int rc;

	if (s->started) {
		snprintf(err, errlen, "server already started");
		return -EINVAL;
	}
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	s->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->ep < 0 || s->evfd < 0) {
		rc = -errno;
		snprintf(err, errlen, "epoll: %s", strerror(-rc));
		return rc;
	}
	if (s->unix_path[0] && (rc = make_passfds(s))) {
		snprintf(err, errlen, "region descriptors for shm: %s", strerror(-rc));
		return rc;
	}
	if (s->listen_addr[0] || s->o.listen_addr) {
		if ((rc = listen_tcp(s, err, errlen)))
			return rc;
	}
	if (s->unix_path[0] && (rc = listen_unix(s, err, errlen)))
		return rc;
	if (s->has_rdma && (rc = listen_rdma(s, err, errlen)))
		return rc;
	struct epoll_event ev = { .events = EPOLLIN };
	ev.data.ptr = &tag_ev;
	epoll_ctl(s->ep, EPOLL_CTL_ADD, s->evfd, &ev);
	if (s->tcp_fd >= 0) {
		ev.data.ptr = &tag_tcp;
		epoll_ctl(s->ep, EPOLL_CTL_ADD, s->tcp_fd, &ev);
	}
	if (s->unix_fd >= 0) {
		ev.data.ptr = &tag_unix;
		epoll_ctl(s->ep, EPOLL_CTL_ADD, s->unix_fd, &ev);
	}
	if ((rc = -pthread_create(&s->thr, NULL, snic_main, s))) {
		snprintf(err, errlen, "soft-NIC thread: %s", strerror(-rc));
		return rc;
	}
	s->started = 1;
	return 0;
}

void arf_net_server_destroy(struct arf_net_server *s)
{
	if (!s)
		return;
#ifdef ARF_HAVE_VERBS
	/* first, while the soft-NIC still runs: its pumps may be adopting */
	arf_net_verbs_server_stop(s->vs);
	s->vs = NULL;
#endif
	if (s->started) {
		uint64_t one = 1;
		__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
		if (write(s->evfd, &one, sizeof(one)) < 0) { /* the thread also sees stop */ }
		pthread_join(s->thr, NULL);
	}
	while (s->conns)
		conn_close(s, s->conns);
	free_dead(s);
	if (s->tcp_fd >= 0)
		close(s->tcp_fd);
	if (s->unix_fd >= 0) {
		close(s->unix_fd);
		unlink(s->unix_path);
	}
	if (s->ep >= 0)
		close(s->ep);
	if (s->evfd >= 0)
		close(s->evfd);
	for (size_t i = 0; i < s->nregions; i++)
		if (s->regions[i].passfd >= 0)
			close(s->regions[i].passfd);
	while (s->adoptq) { /* handed over but never served */
		struct adopted *a = s->adoptq;
		s->adoptq = a->next;
		close(a->fd);
		free(a);
	}
	pthread_mutex_destroy(&s->adopt_lock);
	pthread_mutex_destroy(&s->info_lock);
	pthread_mutex_destroy(&s->conns_lock);
	free(s->info);
	free(s->out);
	free(s);
}

/* SPDX-License-Identifier: MIT */
/*
 * net/tcp — the client side of the tcp transport.  One-sided operations are
 * frames to the server's soft-NIC, which only checks and copies; a batched
 * READ is one frame out and one back, however many reads it carries, and
 * its reply lands in the reads' destinations with no copy on the way
 * (client.c).  Rounds may be posted without waiting (tcp_post_read).
 */
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "net_int.h"

/* Reserved source ports a root client tries (as NFS's resvport: below 665
 * sit well-known services), and how many before it settles for any port. */
#define RESV_LO 665u
#define RESV_HI 1023u
#define RESV_TRIES 64

static int bind_port(int fd, int family, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1;

	memset(&ss, 0, sizeof(ss));
	/* a port whose last connection is in TIME_WAIT may serve another peer */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
		a6->sin6_family = AF_INET6;
		a6->sin6_addr = in6addr_any;
		a6->sin6_port = htons(port);
		sl = sizeof(*a6);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
		a4->sin_family = AF_INET;
		a4->sin_addr.s_addr = htonl(INADDR_ANY);
		a4->sin_port = htons(port);
		sl = sizeof(*a4);
	}
	return bind(fd, (struct sockaddr *)&ss, sl) ? -errno : 0;
}

/* One connection attempt to a from source port sport (0 = any): 0 with *out
 * set, or -errno. */
static int tcp_try(const struct addrinfo *a, uint16_t sport, int timeout_ms, int *out)
{
	int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
	int rc;

	if (fd < 0)
		return -errno;
	if (sport && (rc = bind_port(fd, a->ai_family, sport))) {
		close(fd);
		return rc;
	}
	if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
		*out = fd;
		return 0;
	}
	if (errno == EINPROGRESS) {
		rc = arf_net_wait_fd(fd, POLLOUT, 0, timeout_ms);
		if (!rc) {
			int soerr = 0;
			socklen_t sl = sizeof(soerr);
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
			rc = -soerr;
		}
	} else {
		rc = -errno;
	}
	if (!rc) {
		*out = fd;
		return 0;
	}
	close(fd);
	return rc;
}

/* A root client with resvport set connects from a reserved port, which
 * tells arfd (one_sided = root) that root on this host asks; when every
 * port tried is taken it connects from any port, and gets requests only. */
static int tcp_try_resv(const struct addrinfo *a, int timeout_ms, int *out)
{
	int rc = -EADDRINUSE;
	if (sodium_init() < 0)
		return rc;
	uint32_t span = RESV_HI - RESV_LO + 1, start = randombytes_uniform(span);

	for (int t = 0; t < RESV_TRIES; t++) {
		rc = tcp_try(a, (uint16_t)(RESV_LO + (start + (uint32_t)t) % span), timeout_ms, out);
		if (rc != -EADDRINUSE && rc != -EADDRNOTAVAIL)
			return rc; /* connected, or the server's answer: no other port changes it */
	}
	return rc;
}

static int tcp_dial(const struct arf_net_client_opts *o, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char port[8];
	int fd = -1, rc = -ECONNREFUSED, one = 1;
	int timeout_ms = o->timeout_ms ? (int)o->timeout_ms : 30000;
	int resv = o->resvport && geteuid() == 0;

	if (!o->host || !o->host[0]) {
		snprintf(err, errlen, "tcp: no host given");
		return -EINVAL;
	}
	snprintf(port, sizeof(port), "%u", o->port ? o->port : ARF_NET_DEFAULT_PORT);
	int g = getaddrinfo(o->host, port, &hints, &res);
	if (g) {
		snprintf(err, errlen, "tcp: %s: %s", o->host, gai_strerror(g));
		return -EHOSTUNREACH;
	}
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		rc = resv ? tcp_try_resv(a, timeout_ms, &fd) : -EADDRINUSE;
		if (rc == -EADDRINUSE || rc == -EADDRNOTAVAIL || rc == -EACCES)
			rc = tcp_try(a, 0, timeout_ms, &fd);
		if (!rc)
			break;
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "tcp: connect to %s:%s: %s", o->host, port, strerror(-rc));
		return rc;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static uint64_t key_for(struct arf_net_conn *c, uint32_t region, uint64_t key)
{
	if (key)
		return key;
	const struct arf_net_region_info *r = arf_net_find_region(c, region);
	return r ? r->key : 0;
}

/* The wire form of n reads (malloc'd, or NULL), their bytes in *total. */
static struct arf_net_wire_read *wire_reads(struct arf_net_conn *c, const struct arf_net_read_op *ops,
					    size_t n, uint64_t *total)
{
	struct arf_net_wire_read *w = malloc(n * sizeof(*w));

	*total = 0;
	if (!w)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		w[i].region = htole32(ops[i].region);
		w[i].len = htole32(ops[i].len);
		w[i].key = htole64(key_for(c, ops[i].region, ops[i].key));
		w[i].off = htole64(ops[i].off);
		*total += ops[i].len;
	}
	return w;
}

/* Send one round of reads for p, whose reply the reader receives straight
 * into the ops' destinations (client.c, recv_direct). */
static int read_submit(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n,
		       struct arf_net_pending *p)
{
	uint64_t total;
	struct arf_net_wire_read *w = wire_reads(c, ops, n, &total);

	if (!w)
		return -ENOMEM;
	p->reads = ops;
	p->nreads = n;
	p->rtotal = total;
	struct iovec v = { w, n * sizeof(*w) };
	int rc = arf_net_submit(c, ARF_NET_OP_READ, (uint32_t)n, &v, 1, p);
	free(w); /* sent (or never to be) once submit returns */
	return rc;
}

/* What a READ reply means, counted: 0 with the bytes in place, ARF_EKEY
 * (refused), ARF_EPROTO (a reply of the wrong size). */
static int read_outcome(struct arf_net_conn *c, struct arf_net_pending *p)
{
	int rc = arf_net_status_to_err(p->status);

	arf_net_buf_free(&p->body);
	ARF_NET_CTR(c, rounds, 1);
	if (!rc && !p->direct)
		rc = ARF_EPROTO; /* status OK, but not the bytes asked for */
	if (!rc) {
		ARF_NET_CTR(c, one_sided_reads, p->nreads);
		ARF_NET_CTR(c, one_sided_bytes, p->rtotal);
	}
	return rc;
}

/* One round: reads [first, first+n) whose bytes fit in one frame. */
static int tcp_read_round(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n)
{
	struct arf_net_pending p;
	int rc;

	memset(&p, 0, sizeof(p));
	if ((rc = read_submit(c, ops, n, &p)))
		return rc;
	if ((rc = arf_net_await(c, &p)))
		return rc;
	return read_outcome(c, &p);
}

static int tcp_read(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n)
{
	const uint64_t room = ARF_NET_MAX_FRAME - sizeof(struct arf_net_hdr);
	size_t first = 0;

	/* As many reads per round as a frame holds; a single read larger than
	 * a frame is refused like any out-of-range access. */
	while (first < n) {
		uint64_t bytes = 0;
		size_t k = 0;
		while (first + k < n && k < ARF_NET_MAX_BATCH &&
		       bytes + ops[first + k].len <= room &&
		       (k + 1) * sizeof(struct arf_net_wire_read) <= room) {
			bytes += ops[first + k].len;
			k++;
		}
		if (k == 0)
			return ARF_EKEY;
		int rc = tcp_read_round(c, ops + first, k);
		if (rc)
			return rc;
		first += k;
	}
	return 0;
}

/* An asynchronous round: the caller's done sees rc = 0 and the status
 * turned into what read_outcome says, through this shim. */
struct tcp_post {
	struct arf_net_pending inner;
	struct arf_net_pending *outer;
	struct arf_net_conn *c;
};

static void tcp_post_done(struct arf_net_pending *ip)
{
	struct tcp_post *tp = (struct tcp_post *)ip;
	struct arf_net_pending *p = tp->outer;

	p->impl = NULL; /* under the connection's lock: arf_net_redirect looks */
	p->rc = ip->rc;
	p->aux = ip->aux;
	p->direct = ip->direct;
	p->body = (struct arf_net_buf){ 0 };
	p->status = ip->rc ? ARF_NET_S_IO
			   : arf_net_status_from_err(read_outcome(tp->c, ip));
	free(tp);
	p->done(p);
}

static int tcp_post_read(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n,
			 struct arf_net_pending *p)
{
	struct tcp_post *tp = calloc(1, sizeof(*tp));
	int rc;

	if (!tp)
		return -ENOMEM;
	tp->outer = p;
	tp->c = c;
	tp->inner.done = tcp_post_done;
	p->impl = &tp->inner; /* for arf_net_redirect */
	if ((rc = read_submit(c, ops, n, &tp->inner))) {
		p->impl = NULL;
		free(tp);
	}
	return rc;
}

static int tcp_rmw(struct arf_net_conn *c, uint16_t op, uint32_t region, uint64_t key,
		   uint64_t off, const void *buf, uint32_t len, uint64_t arg0, uint64_t arg1,
		   uint64_t *old)
{
	struct arf_net_wire_rmw w = {
		.region = htole32(region), .len = htole32(len), .key = htole64(key_for(c, region, key)),
		.off = htole64(off), .arg0 = htole64(arg0), .arg1 = htole64(arg1),
	};
	struct iovec v[2] = { { &w, sizeof(w) }, { (void *)buf, op == ARF_NET_OP_WRITE ? len : 0 } };
	struct arf_net_buf resp = { 0 };
	int32_t status;
	int rc;

	rc = arf_net_exchange(c, op, 0, v, 2, &status, NULL, &resp);
	if (rc)
		return rc;
	ARF_NET_CTR(c, rounds, 1);
	rc = arf_net_status_to_err(status);
	if (!rc) {
		ARF_NET_CTR(c, one_sided_writes, 1);
		if (op != ARF_NET_OP_WRITE) {
			if (resp.len != 8)
				rc = ARF_EPROTO;
			else if (old) {
				uint64_t v64;
				memcpy(&v64, resp.data, 8);
				*old = le64toh(v64);
			}
		}
	}
	arf_net_buf_free(&resp);
	return rc;
}

const struct arf_net_cops arf_net_tcp_cops = {
	.name = "tcp",
	.dial = tcp_dial,
	.attach = NULL,
	.read = tcp_read,
	.post_read = tcp_post_read,
	.rmw = tcp_rmw,
	.detach = NULL,
};

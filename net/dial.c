/* SPDX-License-Identifier: MIT */
/*
 * net/dial — the client's connection made: the transport's dial (tcp.c,
 * shm.c, verbs_client.c), then the handshake: the hello (and the shared
 * secret's proof) sent, the server's answer read -- its regions with their
 * keys, its info blob, and over shm the regions' descriptors, mapped by
 * the transport.  Split from client.c, which keeps what a connection does
 * once it is up (requests matched by id, the reader hand-off, one-sided
 * operations).
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
	arf_spin_init(&c->spin, opts->spin_us);
	c->timeout_ms = opts->timeout_ms ? (int)opts->timeout_ms : 30000;
	c->next_id = 1;
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_mutex_init(&c->lock, NULL);
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

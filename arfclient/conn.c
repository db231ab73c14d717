/* SPDX-License-Identifier: MIT */
/*
 * libarf's connection layer: dialling the server (the net transport's
 * connect, then the handshake's server info and superblock checked), and
 * the two ways every other file talks to it -- a batch of one-sided reads
 * (arf_cl_read) and a request/response exchange (arf_cl_call).  When the
 * connection breaks they dial again, with backoff, for up to
 * opts.reconnect_ms, swapping the new connection in under conn_lock's
 * write side while operations hold its read side; a server that restarted
 * (a new incarnation) has its caches dropped.  Counters of the connections
 * replaced are kept in c->base so arf_stats() never goes backwards.
 *
 * Below this file are only the net transport, the caches and util.c:
 * nothing here calls back up into requests, programs or the API.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client_int.h"

/* Open a connection to c->url with c's hello and key, and read what the
 * handshake says.  On success *conn, *info, *sb and *have are filled. */
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
	if ((rc = arf_net_connect(&no, conn, err, errlen)))
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
}

/* Replace connection generation gen (if nobody did yet) with a new one,
 * trying until deadline_ms.  Returns 0 or -EIO. */
static int reconnect(arf_client *c, uint64_t gen, uint64_t deadline_ms)
{
	char err[256];
	uint32_t wait_ms = 20;
	int rc = -EIO;

	pthread_rwlock_wrlock(&c->conn_lock);
	if (c->conn_gen != gen) {
		pthread_rwlock_unlock(&c->conn_lock);
		return 0;
	}
	if (c->conn) {
		struct arf_net_counters nc;
		arf_net_counters(c->conn, &nc);
		add_counters(&c->base, &nc);
		arf_net_close(c->conn);
		c->conn = NULL;
	}
	for (;;) {
		struct arf_net_conn *conn;
		struct arf_proto_info info;
		struct arf_meta_super sb;
		int have;
		if (!dial(c, &conn, &info, &sb, &have, err, sizeof(err))) {
			int restarted = info.incarnation != c->info.incarnation;
			c->conn = conn;
			c->info = info;
			c->sb = sb;
			c->have_regions = have;
			c->conn_gen++;
			c->reconnects++;
			if (restarted) /* what we cached may have changed meanwhile */
				arf_cache_clear(c);
			arf_log_msg(1, "reconnected to %s (incarnation %llu%s)", c->url.host[0] ?
				    c->url.host : c->url.socket, (unsigned long long)info.incarnation,
				    restarted ? ", restarted: caches dropped" : "");
			rc = 0;
			break;
		}
		if (arf_now_ms() + wait_ms >= deadline_ms) {
			arf_log_msg(0, "reconnect failed: %s", err);
			break;
		}
		struct timespec ts = { 0, (long)wait_ms * 1000000L };
		nanosleep(&ts, NULL);
		if (wait_ms < 500)
			wait_ms *= 2;
	}
	pthread_rwlock_unlock(&c->conn_lock);
	return rc;
}

int arf_cl_read(arf_client *c, struct arf_net_read_op *ops, size_t n)
{
	uint64_t deadline = 0;
	for (;;) {
		pthread_rwlock_rdlock(&c->conn_lock);
		uint64_t gen = c->conn_gen;
		int rc = c->conn ? arf_net_read(c->conn, ops, n) : -ENOTCONN;
		pthread_rwlock_unlock(&c->conn_lock);
		if (!conn_broken(rc) || !c->opts.reconnect_ms)
			return conn_broken(rc) ? -EIO : rc;
		if (!deadline)
			deadline = arf_now_ms() + c->opts.reconnect_ms;
		if (reconnect(c, gen, deadline))
			return -EIO;
		if (!c->have_regions)
			return ARF_ERETRY; /* the new connection has no keys: the caller asks instead */
	}
}

int arf_cl_call(arf_client *c, uint16_t op, const struct iovec *iov, int iovcnt,
		struct arf_net_buf *resp, int *resent)
{
	uint64_t deadline = 0;
	if (resent)
		*resent = 0;
	for (;;) {
		pthread_rwlock_rdlock(&c->conn_lock);
		uint64_t gen = c->conn_gen;
		int rc = c->conn ? arf_net_call(c->conn, op, iov, iovcnt, resp) : -ENOTCONN;
		pthread_rwlock_unlock(&c->conn_lock);
		if (!conn_broken(rc) || !c->opts.reconnect_ms)
			return conn_broken(rc) ? -EIO : rc;
		arf_net_buf_free(resp);
		if (!deadline)
			deadline = arf_now_ms() + c->opts.reconnect_ms;
		if (reconnect(c, gen, deadline))
			return -EIO;
		if (resent)
			*resent = 1;
	}
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

int arf_cl_post(arf_client *c, uint16_t op, const struct iovec *iov, int iovcnt,
		struct arf_net_pending *p, uint64_t *gen)
{
	pthread_rwlock_rdlock(&c->conn_lock);
	*gen = c->conn_gen;
	int rc = c->conn ? arf_net_post(c->conn, op, iov, iovcnt, p) : -ENOTCONN;
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

int arf_cl_recover(arf_client *c, uint64_t gen, uint64_t *deadline)
{
	if (!c->opts.reconnect_ms)
		return -EIO;
	if (!*deadline)
		*deadline = arf_now_ms() + c->opts.reconnect_ms;
	return reconnect(c, gen, *deadline);
}

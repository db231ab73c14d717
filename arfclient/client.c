/* SPDX-License-Identifier: MIT */
/*
 * libarf: URLs, connecting, counters, error texts and the log sink.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "client_int.h"

static arf_log_func log_fn;
static void *log_ctx;

void arf_set_log_func(arf_log_func fn, void *ctx)
{
	log_fn = fn;
	log_ctx = ctx;
}

void arf_log_msg(int level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!log_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_fn(log_ctx, level, buf);
}

uint64_t arf_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void arf_client_opts_init(struct arf_client_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->spin_us = 50;
	o->timeout_ms = 30000;
	o->max_hops = ARF_OPT_AUTO;
	o->retries = 8;
	o->attr_timeout_ms = 1000;
	o->entry_timeout_ms = 1000;
	o->one_sided = 1;
	o->reconnect_ms = 30000;
	o->shipped_lookup = 1;
	o->resolve_exec_depth = ARF_OPT_AUTO;
	o->readdir_exec_min = ARF_OPT_AUTO;
	o->readdir_req_min = ARF_OPT_AUTO;
	o->resvport = 1;
}

/*
 * The thresholds of the mobile-code policy, per transport: where a round
 * trip costs ~15 us (tcp; rdma is taken the same until it is measured) a
 * program or a request pays for itself after about 8 rounds saved; where a
 * one-sided read is a memory copy (shm) the one-sided walk wins until
 * hundreds of reads.  arf.h gives the measurements behind each number.
 */
struct policy_defaults {
	const char *transport;
	uint32_t max_hops, resolve_exec_depth, readdir_exec_min, readdirplus_exec_min,
		readdir_req_min;
};
static const struct policy_defaults policy_table[] = {
	{ "tcp", 11, 8, 0, 10, 1024 },
	{ "rdma", 11, 8, 0, 10, 1024 },
	{ "shm", 256, 0, 0, 0, 0 },
};

/* The value in force: the caller's, or the transport's when it left the
 * threshold to libarf (noting so in *from). */
static uint32_t resolve_one(uint32_t given, uint32_t by_transport, uint32_t bit, uint32_t *from)
{
	if (given != ARF_OPT_AUTO)
		return given;
	*from |= bit;
	return by_transport;
}

/* Resolve o's ARF_OPT_AUTO thresholds for transport into p; an explicit
 * value is kept as given (readdir_exec_min then applies to both calls). */
static void policy_resolve(const struct arf_client_opts *o, const char *transport,
			   struct arf_client_policy *p)
{
	const struct policy_defaults *d = &policy_table[0]; /* an unknown transport: as tcp */
	uint32_t *from = &p->from_transport;

	for (size_t i = 0; i < sizeof(policy_table) / sizeof(policy_table[0]); i++)
		if (!strcmp(policy_table[i].transport, transport))
			d = &policy_table[i];
	memset(p, 0, sizeof(*p));
	p->max_hops = resolve_one(o->max_hops, d->max_hops, ARF_POLICY_MAX_HOPS, from);
	p->resolve_exec_depth = resolve_one(o->resolve_exec_depth, d->resolve_exec_depth,
					    ARF_POLICY_RESOLVE_EXEC, from);
	p->readdir_exec_min = resolve_one(o->readdir_exec_min, d->readdir_exec_min,
					  ARF_POLICY_READDIR_EXEC, from);
	p->readdirplus_exec_min = resolve_one(o->readdir_exec_min, d->readdirplus_exec_min,
					      ARF_POLICY_READDIR_EXEC, from);
	p->readdir_req_min = resolve_one(o->readdir_req_min, d->readdir_req_min,
					 ARF_POLICY_READDIR_REQ, from);
}

void arf_client_policy(arf_client *c, struct arf_client_policy *out)
{
	*out = c->pol;
}

_Static_assert(ARF_DEFAULT_PORT == ARF_NET_DEFAULT_PORT, "tcp port");
_Static_assert(ARF_DEFAULT_RDMA_PORT == ARF_NET_DEFAULT_RDMA_PORT, "rdma port");
_Static_assert(ARF_NKINDS == ARF_PROTO_NKINDS, "one list of request kinds");
_Static_assert(ARF_TOKEN_SIZE == ARF_PROTO_TOKEN_SIZE, "token size");

/* HOST[:PORT]/PATH of arf://, arf+tcp:// and arf+rdma:// (rest is what
 * follows the scheme); port 0 in u means the transport's default. */
static int url_host(const char *url, const char *rest, uint16_t defport, struct arf_url *u,
		    char *err, size_t errlen)
{
	const char *slash = strchr(rest, '/');
	size_t hl = slash ? (size_t)(slash - rest) : strlen(rest);
	char hostport[sizeof(u->host)];
	if (hl == 0 || hl >= sizeof(hostport)) {
		snprintf(err, errlen, "%s: missing or overlong host", url);
		return -EINVAL;
	}
	memcpy(hostport, rest, hl);
	hostport[hl] = 0;
	u->port = defport;
	char *portp = NULL;
	if (hostport[0] == '[') {
		char *close = strchr(hostport, ']');
		if (!close) {
			snprintf(err, errlen, "%s: unbalanced '[' in host", url);
			return -EINVAL;
		}
		*close = 0;
		memmove(u->host, hostport + 1, strlen(hostport + 1) + 1);
		if (close[1] == ':')
			portp = close + 2;
		else if (close[1]) {
			snprintf(err, errlen, "%s: junk after ']'", url);
			return -EINVAL;
		}
	} else {
		char *colon = strchr(hostport, ':');
		if (colon) {
			*colon = 0;
			portp = colon + 1;
		}
		memcpy(u->host, hostport, strlen(hostport) + 1);
	}
	if (!u->host[0]) {
		snprintf(err, errlen, "%s: missing host", url);
		return -EINVAL;
	}
	if (portp) {
		char *end;
		long p = strtol(portp, &end, 10);
		if (!*portp || *end || p <= 0 || p > 65535) {
			snprintf(err, errlen, "%s: bad port '%s'", url, portp);
			return -EINVAL;
		}
		u->port = (uint16_t)p;
	}
	snprintf(u->path, sizeof(u->path), "%s", slash ? slash : "/");
	return 0;
}

int arf_url_parse(const char *url, struct arf_url *u, char *err, size_t errlen)
{
	const char *rest;
	int rc;

	memset(u, 0, sizeof(*u));
	if (!strncmp(url, "arf://", 6) || !strncmp(url, "arf+tcp://", 10)) {
		strcpy(u->transport, "tcp");
		rest = url + (url[3] == '+' ? 10 : 6);
		if ((rc = url_host(url, rest, ARF_DEFAULT_PORT, u, err, errlen)))
			return rc;
	} else if (!strncmp(url, "arf+rdma://", 11)) {
		/* RDMA verbs (InfiniBand, RoCE, iWARP): rdma_cm resolves HOST
		 * to an RDMA device.  Whether this libarf has verbs, and the
		 * machine a device, is arf_connect's to say. */
		strcpy(u->transport, "rdma");
		if ((rc = url_host(url, url + 11, ARF_DEFAULT_RDMA_PORT, u, err, errlen)))
			return rc;
	} else if (!strncmp(url, "arf+shm://", 10) || !strncmp(url, "arf+unix://", 11)) {
		strcpy(u->transport, "shm");
		rest = url + (url[4] == 's' ? 10 : 11);
		if (rest[0] != '/') {
			snprintf(err, errlen, "%s: expected arf+shm:///PATH[?socket=SOCK]", url);
			return -EINVAL;
		}
		snprintf(u->socket, sizeof(u->socket), "%s", ARF_DEFAULT_SOCKET);
		const char *q = strchr(rest, '?');
		size_t pl = q ? (size_t)(q - rest) : strlen(rest);
		if (pl >= sizeof(u->path)) {
			snprintf(err, errlen, "%s: path too long", url);
			return -EINVAL;
		}
		memcpy(u->path, rest, pl);
		u->path[pl] = 0;
		if (q) {
			if (strncmp(q, "?socket=", 8) || !q[8] || strlen(q + 8) >= sizeof(u->socket)) {
				snprintf(err, errlen, "%s: the only query is ?socket=PATH", url);
				return -EINVAL;
			}
			snprintf(u->socket, sizeof(u->socket), "%s", q + 8);
		}
	} else {
		snprintf(err, errlen,
			 "%s: not an ARF URL (arf://HOST[:PORT]/PATH, arf+rdma://HOST[:PORT]/PATH "
			 "or arf+shm:///PATH[?socket=SOCK])",
			 url);
		return -EINVAL;
	}
	if (!u->path[0])
		strcpy(u->path, "/");
	return 0;
}

/* The shared secret of secret_file, hashed to the net layer's 32-byte key
 * (the same derivation as arfd's). */
static int secret_key(const char *path, uint8_t key[ARF_NET_AUTH_KEY_BYTES], char *err,
		      size_t errlen)
{
	uint8_t buf[4096];
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "secret file %s: %s", path, strerror(errno));
		return -errno;
	}
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (!n) {
		snprintf(err, errlen, "secret file %s is empty", path);
		return -EINVAL;
	}
	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium failed to initialise");
		return -EIO;
	}
	crypto_generichash(key, ARF_NET_AUTH_KEY_BYTES, buf, n, NULL, 0);
	sodium_memzero(buf, sizeof(buf));
	return 0;
}

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

int arf_connect(const char *url, const struct arf_client_opts *opts, arf_client **out, char *err,
		size_t errlen)
{
	struct arf_proto_hello hello;
	struct arf_proto_wr w;
	arf_client *c;
	int rc;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pthread_rwlock_init(&c->conn_lock, NULL);
	pthread_mutex_init(&c->cache_lock, NULL);
	if (opts)
		c->opts = *opts;
	else
		arf_client_opts_init(&c->opts);
	if ((rc = arf_url_parse(url, &c->url, err, errlen)))
		goto fail;
	policy_resolve(&c->opts, c->url.transport, &c->pol);
	c->icache = calloc(ARF_ICACHE_SIZE, sizeof(*c->icache));
	c->ecache = calloc(ARF_ECACHE_SIZE, sizeof(*c->ecache));
	if (!c->icache || !c->ecache) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	if (c->opts.secret_file) {
		rc = secret_key(c->opts.secret_file, c->auth_key, err, errlen);
		if (rc)
			goto fail;
		c->has_auth_key = 1;
	}
	c->opts.secret_file = NULL; /* not kept: the caller's pointer */
	if (c->opts.cred_token) {
		memcpy(c->token, c->opts.cred_token, sizeof(c->token));
		c->has_token = 1;
	}
	c->opts.cred_token = NULL; /* likewise: ours is the copy */

	memset(&hello, 0, sizeof(hello));
	hello.version = ARF_PROTO_INFO_VERSION;
	/* Only the export prefix matters to the server: a longer path is cut. */
	size_t pl = strnlen(c->url.path, sizeof(hello.path) - 1);
	memcpy(hello.path, c->url.path, pl);
	hello.path[pl] = 0;
	if (c->has_token) {
		hello.flags |= ARF_PROTO_HELLO_TOKEN;
		memcpy(hello.token, c->token, sizeof(hello.token));
	}
	arf_proto_wr_init(&w);
	arf_proto_put_hello(&w, &hello);
	if (w.err) {
		rc = w.err;
		arf_proto_wr_free(&w);
		goto fail;
	}
	c->hello = w.buf; /* kept for reconnecting; freed by arf_close */
	c->hello_len = w.len;
	if ((rc = dial(c, &c->conn, &c->info, &c->sb, &c->have_regions, err, errlen))) {
		char why[200];
		/* arf+rdma:// where verbs cannot be had: say which side lacks it */
		if (!strcmp(c->url.transport, "rdma") && (rc == -ENODEV || rc == -EOPNOTSUPP) &&
		    !arf_net_rdma_available(why, sizeof(why)))
			snprintf(err, errlen, "%s: the rdma transport is not available %s: %s", url,
				 rc == -EOPNOTSUPP ? "in this libarf" : "on this machine", why);
		goto fail;
	}
	*out = c;
	return 0;
fail:
	arf_close(c);
	return rc;
}

void arf_close(arf_client *c)
{
	if (!c)
		return;
	arf_net_close(c->conn);
	pthread_rwlock_destroy(&c->conn_lock);
	pthread_mutex_destroy(&c->cache_lock);
	sodium_memzero(c->auth_key, sizeof(c->auth_key));
	free(c->hello);
	arf_prog_free(c);
	free(c->icache);
	free(c->ecache);
	free(c);
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
			if (restarted) { /* what we cached may have changed meanwhile */
				pthread_mutex_lock(&c->cache_lock);
				memset(c->icache, 0, ARF_ICACHE_SIZE * sizeof(*c->icache));
				memset(c->ecache, 0, ARF_ECACHE_SIZE * sizeof(*c->ecache));
				pthread_mutex_unlock(&c->cache_lock);
			}
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

uint64_t arf_server_incarnation(arf_client *c)
{
	return c->info.incarnation;
}

const char *arf_transport(arf_client *c)
{
	return c->url.transport;
}

static const char *const reason_names[ARF_FALLBACK_NREASONS] = { "torn", "hops", "tag", "policy" };

const char *arf_fallback_reason_name(int reason)
{
	return reason >= 0 && reason < ARF_FALLBACK_NREASONS ? reason_names[reason] : "unknown";
}

const char *arf_request_kind_name(int i)
{
	return arf_proto_kind_name(i);
}

void arf_stats(arf_client *c, struct arf_client_stats *s)
{
	struct arf_net_counters nc;

	memset(s, 0, sizeof(*s));
	pthread_rwlock_rdlock(&c->conn_lock);
	memset(&nc, 0, sizeof(nc));
	if (c->conn)
		arf_net_counters(c->conn, &nc);
	add_counters(&nc, &c->base);
	pthread_rwlock_unlock(&c->conn_lock);
	s->one_sided_reads = nc.one_sided_reads;
	s->one_sided_bytes = nc.one_sided_bytes;
	s->rounds = nc.rounds;
	s->bytes_sent = nc.bytes_sent;
	s->bytes_received = nc.bytes_received;
	for (int i = 0; i < ARF_NKINDS; i++) {
		s->requests_by_kind[i] = __atomic_load_n(&c->requests_by_kind[i], __ATOMIC_RELAXED);
		s->requests += s->requests_by_kind[i];
	}
	for (int i = 0; i < ARF_FALLBACK_NREASONS; i++)
		s->fallbacks_by_reason[i] = __atomic_load_n(&c->fallbacks_by_reason[i], __ATOMIC_RELAXED);
	s->retries = __atomic_load_n(&c->retries, __ATOMIC_RELAXED);
	s->fallbacks = __atomic_load_n(&c->fallbacks, __ATOMIC_RELAXED);
	s->execs = __atomic_load_n(&c->execs, __ATOMIC_RELAXED);
	arf_prog_stats(c, s);
	s->cache_hits = __atomic_load_n(&c->cache_hits, __ATOMIC_RELAXED);
	s->cache_misses = __atomic_load_n(&c->cache_misses, __ATOMIC_RELAXED);
}

const char *arf_strerror(int err)
{
	const char *t = arf_err_text(err);
	if (t)
		return t;
	if (err < 0)
		return strerror(-err);
	return err == 0 ? "success" : "unknown error";
}

void arf_fallback(arf_client *c, int reason)
{
	ARF_CTR_ADD(c, fallbacks, 1);
	ARF_CTR_ADD(c, fallbacks_by_reason[reason], 1);
}

void arf_stat_from_inode(const struct arf_meta_inode *in, struct arf_stat *st)
{
	st->ino = in->ino;
	st->gen = in->gen;
	st->mode = in->mode;
	st->nlink = in->nlink;
	st->uid = in->uid;
	st->gid = in->gid;
	st->size = in->size;
	st->blocks = in->blocks * (ARF_BLOCK_SIZE / 512);
	st->atime_ns = in->atime_ns;
	st->mtime_ns = in->mtime_ns;
	st->ctime_ns = in->ctime_ns;
	st->rdev = in->rdev;
}

void arf_stat_from_proto(const struct arf_proto_attr *a, struct arf_stat *st)
{
	st->ino = a->ino;
	st->gen = a->gen;
	st->mode = a->mode;
	st->nlink = a->nlink;
	st->uid = a->uid;
	st->gid = a->gid;
	st->size = a->size;
	st->blocks = a->blocks;
	st->atime_ns = a->atime_ns;
	st->mtime_ns = a->mtime_ns;
	st->ctime_ns = a->ctime_ns;
	st->rdev = a->rdev;
}

int arf_cred_token(arf_client *c, uint8_t token[ARF_TOKEN_SIZE], uint32_t *ttl_s)
{
	struct arf_net_buf resp;
	struct arf_proto_rd r;
	uint32_t n = 0;
	int rc = arf_req(c, ARF_OP_CRED_MINT, NULL, &resp);

	if (!rc) {
		arf_proto_rd_init(&r, resp.data, resp.len);
		const uint8_t *t = arf_proto_get_bytes(&r, ARF_TOKEN_SIZE, &n);
		uint32_t ttl = arf_proto_get_u32(&r);
		if (!arf_proto_rd_done(&r) || n != ARF_TOKEN_SIZE) {
			rc = ARF_EPROTO;
		} else {
			memcpy(token, t, ARF_TOKEN_SIZE);
			if (ttl_s)
				*ttl_s = ttl;
		}
	}
	arf_net_buf_free(&resp);
	return rc;
}

int arf_connect_fd(int fd, const struct arf_client_opts *opts, arf_client **out, uint64_t *ino,
		   uint32_t *gen, char *err, size_t errlen)
{
	struct arf_ioc_cred *ic = calloc(1, sizeof(*ic));
	struct arf_client_opts o;
	int rc;

	*out = NULL;
	if (!ic) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (ioctl(fd, ARF_IOC_CRED, ic) < 0) {
		rc = -errno;
		snprintf(err, errlen, rc == -ENOTTY ? "not a file of an ARF mount"
			 : "asking the mount for credentials: %s", strerror(-rc));
		goto out;
	}
	if (ic->version != ARF_IOC_CRED_VERSION || !memchr(ic->url, 0, sizeof(ic->url))) {
		snprintf(err, errlen, "the mount answered ARF_IOC_CRED in a version libarf does "
			 "not speak (%u)", ic->version);
		rc = ARF_EVERSION;
		goto out;
	}
	if (opts)
		o = *opts;
	else
		arf_client_opts_init(&o);
	o.cred_token = ic->token;
	rc = arf_connect(ic->url, &o, out, err, errlen);
	if (!rc) {
		*ino = ic->ino;
		*gen = ic->gen;
	}
out:
	sodium_memzero(ic, sizeof(*ic));
	free(ic);
	return rc;
}

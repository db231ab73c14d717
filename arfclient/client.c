/* SPDX-License-Identifier: MIT */
/*
 * libarf's client handle: the options' defaults and the mobile-code
 * policy each transport gets, arf_connect() (URL, secret, credential
 * token and handshake bytes gathered, then the first dial through conn.c),
 * arf_connect_fd() for tools that run on a mount, arf_close(), and
 * arf_stats() gathering every file's counters.  This is the top of the
 * library's call graph: it calls conn.c, progs.c and the caches' owner,
 * and nothing below calls back into it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "client_int.h"

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
	o->unstable_max_mib = 64;
	o->readahead = 1;
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
_Static_assert(ARF_NKINDS <= ARF_PROTO_NKINDS, "one list of request kinds (libarf's: a prefix)");
_Static_assert(ARF_TOKEN_SIZE == ARF_PROTO_TOKEN_SIZE, "token size");

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

static arf_client *client_new(void)
{
	arf_client *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_rwlock_init(&c->conn_lock, NULL);
	pthread_mutex_init(&c->cache_lock, NULL);
	pthread_mutex_init(&c->dial_lock, NULL);
	pthread_mutex_init(&c->url_lock, NULL);
	pthread_cond_init(&c->dial_cond, NULL);
	return c;
}

/* The rest of a connection, once c has its options, URL, volume, secret
 * and token: the caches, the handshake bytes and the first dial. */
static int client_start(arf_client *c, const char *url, char *err, size_t errlen)
{
	struct arf_proto_hello hello;
	struct arf_proto_wr w;
	int rc;

	policy_resolve(&c->opts, c->url.transport, &c->pol);
	if ((rc = arf_cache_init(c)) || (rc = arf_wlog_init(c)) || (rc = arf_behind_init(c)) ||
	    (rc = arf_locks_init(c)) || (c->opts.readahead && (rc = arf_ra_init(c)))) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
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
	/* who we are across reconnections, for arfd's reply cache */
	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium failed to initialise");
		return -EIO;
	}
	randombytes_buf(c->client_id, sizeof(c->client_id));
	hello.flags |= ARF_PROTO_HELLO_CLIENT;
	memcpy(hello.client, c->client_id, sizeof(hello.client));
	if (c->volume[0]) {
		hello.flags |= ARF_PROTO_HELLO_VOLUME;
		memcpy(hello.volume, c->volume, sizeof(hello.volume));
	}
	arf_proto_wr_init(&w);
	arf_proto_put_hello(&w, &hello);
	if (w.err) {
		rc = w.err;
		arf_proto_wr_free(&w);
		return rc;
	}
	c->hello = w.buf; /* kept for reconnecting; freed by arf_close */
	c->hello_len = w.len;
	if ((rc = arf_cl_dial(c, err, errlen))) {
		char why[200];
		/* arf+rdma:// where verbs cannot be had: say which side lacks it */
		if (!strcmp(c->url.transport, "rdma") && (rc == -ENODEV || rc == -EOPNOTSUPP) &&
		    !arf_net_rdma_available(why, sizeof(why)))
			snprintf(err, errlen, "%s: the rdma transport is not available %s: %s", url,
				 rc == -EOPNOTSUPP ? "in this libarf" : "on this machine", why);
		return rc;
	}
	return 0;
}

int arf_connect(const char *url, const struct arf_client_opts *opts, arf_client **out, char *err,
		size_t errlen)
{
	arf_client *c;
	int rc;

	*out = NULL;
	c = client_new();
	if (!c || !(c->vols = arf_vols_new())) {
		snprintf(err, errlen, "out of memory");
		arf_close(c);
		return -ENOMEM;
	}
	if (opts)
		c->opts = *opts;
	else
		arf_client_opts_init(&c->opts);
	rc = arf_url_volume(url, c->volume, sizeof(c->volume), err, errlen);
	if (!rc)
		rc = arf_url_parse(url, &c->url, err, errlen); /* without the volume */
	if (rc)
		goto fail;
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
	if ((rc = client_start(c, url, err, errlen)))
		goto fail;
	*out = c;
	return 0;
fail:
	arf_close(c);
	return rc;
}

int arf_connect_like(const arf_client *like, const struct arf_url *u, const char *volume,
		     int with_token, arf_client **out, char *err, size_t errlen)
{
	arf_client *c = client_new();
	int rc;

	*out = NULL;
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->opts = like->opts;
	c->url = *u;
	snprintf(c->volume, sizeof(c->volume), "%s", volume ? volume : "");
	memcpy(c->auth_key, like->auth_key, sizeof(c->auth_key));
	c->has_auth_key = like->has_auth_key;
	if (with_token) {
		memcpy(c->token, like->token, sizeof(c->token));
		c->has_token = like->has_token;
	}
	if ((rc = client_start(c, u->host[0] ? u->host : u->socket, err, errlen))) {
		arf_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

void arf_url_copy(arf_client *c, struct arf_url *out)
{
	pthread_mutex_lock(&c->url_lock);
	*out = c->url;
	pthread_mutex_unlock(&c->url_lock);
}

void arf_close(arf_client *c)
{
	if (!c)
		return;
	arf_behind_free(c); /* its COMMIT uses the connection */
	/* as close(2) on NFS: what this client wrote is committed */
	if (c->wlog && c->conn && arf_wlog_holds(c, 0) && arf_v_fsync(c, 0, 0))
		arf_log_msg(0, "closing: the last writes could not be committed");
	arf_vols_free(c); /* the volumes crossed into: each closes as this does */
	arf_wlog_free(c);
	arf_locks_free(c); /* its renewer uses the connection */
	arf_net_close(c->conn);
	arf_ra_free(c); /* after the close: its rounds have all ended */
	pthread_rwlock_destroy(&c->conn_lock);
	pthread_mutex_destroy(&c->cache_lock);
	pthread_mutex_destroy(&c->dial_lock);
	pthread_mutex_destroy(&c->url_lock);
	pthread_cond_destroy(&c->dial_cond);
	sodium_memzero(c->auth_key, sizeof(c->auth_key));
	free(c->hello);
	arf_prog_free(c);
	arf_cache_free(c);
	free(c);
}

uint64_t arf_server_incarnation(arf_client *c)
{
	return c->info.incarnation;
}

const char *arf_transport(arf_client *c)
{
	return c->url.transport;
}

void arf_stats(arf_client *c, struct arf_client_stats *s)
{
	struct arf_net_counters nc;

	memset(s, 0, sizeof(*s));
	arf_cl_counters(c, &nc);
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
	s->resent_bytes = __atomic_load_n(&c->resent_bytes, __ATOMIC_RELAXED);
	s->commits = __atomic_load_n(&c->commits, __ATOMIC_RELAXED);
	if (c->wlog)
		arf_wlog_counts(c, &s->unstable_bytes, &s->unstable_writes);
	s->cache_misses = __atomic_load_n(&c->cache_misses, __ATOMIC_RELAXED);
	s->readahead_bytes = __atomic_load_n(&c->readahead_bytes, __ATOMIC_RELAXED);
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

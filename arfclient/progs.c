/* SPDX-License-Identifier: MIT */
/*
 * libarf mobile code: loading and running programs on the server
 * (arf_exec), and the shipped standard programs behind the read path's
 * policy (api.c): the chain lookup once a hash chain outgrows max_hops, the
 * whole-path resolution for deep uncached paths, the batched readdir for
 * large directories.
 *
 * A program is loaded once per server incarnation: this client remembers
 * the hashes it loaded, and when the server answers ARF_ENOPROG (evicted,
 * or restarted) it loads the program again and repeats the run, so the
 * caller never sees that code.  Loads and runs are not counted as
 * requests: `prog_loads` and `execs` (with their reason) count them.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "arf_prog_abi.h"
#include "arf_progs.h"
#include "client_int.h"

#define KNOWN_MAX 64 /* hashes remembered as loaded */
#define HASH_LEN  ARF_PROTO_PROG_HASH

struct arf_progstate {
	pthread_mutex_t lock;
	struct {
		uint8_t hash[HASH_LEN];
		uint64_t incarnation;   /* loaded into this incarnation of the server */
	} known[KNOWN_MAX];
	size_t nknown, next;            /* ring once full */
	uint64_t prog_loads, exec_insns;
	uint64_t by_reason[ARF_EXEC_NREASONS];
};

static struct arf_progstate *state(arf_client *c)
{
	struct arf_progstate *p = __atomic_load_n(&c->progs, __ATOMIC_ACQUIRE), *none = NULL;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	if (!__atomic_compare_exchange_n(&c->progs, &none, p, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		pthread_mutex_destroy(&p->lock);
		free(p);
		return none;
	}
	return p;
}

void arf_prog_free(arf_client *c)
{
	if (!c->progs)
		return;
	pthread_mutex_destroy(&c->progs->lock);
	free(c->progs);
	c->progs = NULL;
}

void arf_prog_stats(arf_client *c, struct arf_client_stats *s)
{
	struct arf_progstate *p = c->progs;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	s->prog_loads = p->prog_loads;
	s->exec_insns = p->exec_insns;
	memcpy(s->execs_by_reason, p->by_reason, sizeof(s->execs_by_reason));
	pthread_mutex_unlock(&p->lock);
}

/* Is hash loaded in the server's present incarnation, as far as we know? */
static int known(struct arf_progstate *p, const uint8_t *hash, uint64_t inc, int forget)
{
	int hit = 0;

	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->nknown; i++)
		if (!memcmp(p->known[i].hash, hash, HASH_LEN) && p->known[i].incarnation == inc) {
			hit = 1;
			if (forget)
				p->known[i].incarnation = 0;
		}
	pthread_mutex_unlock(&p->lock);
	return hit;
}

static void remember(struct arf_progstate *p, const uint8_t *hash, uint64_t inc)
{
	pthread_mutex_lock(&p->lock);
	p->prog_loads++;
	size_t i;
	for (i = 0; i < p->nknown; i++)
		if (!memcmp(p->known[i].hash, hash, HASH_LEN))
			break;
	if (i == p->nknown) {
		if (p->nknown < KNOWN_MAX)
			i = p->nknown++;
		else
			i = p->next++ % KNOWN_MAX;
	}
	memcpy(p->known[i].hash, hash, HASH_LEN);
	p->known[i].incarnation = inc;
	pthread_mutex_unlock(&p->lock);
}

/* A failed reply's message into res. */
static void take_error(const struct arf_net_buf *resp, int rc, struct arf_exec_result *res)
{
	struct arf_proto_rd r;
	struct arf_proto_prog_error pe;

	res->pc = 0;
	res->msg[0] = 0;
	if (resp->len) {
		arf_proto_rd_init(&r, resp->data, resp->len);
		arf_proto_get_prog_error(&r, &pe);
		if (!r.err) {
			res->pc = pe.pc;
			res->insns = pe.insns;
			snprintf(res->msg, sizeof(res->msg), "%s", pe.msg);
		}
	}
	if (!res->msg[0])
		snprintf(res->msg, sizeof(res->msg), "%s", arf_strerror(rc));
}

static int load(arf_client *c, struct arf_progstate *p, const void *prog, size_t len,
		uint8_t *hash, struct arf_exec_result *res)
{
	struct arf_proto_wr w;
	struct arf_net_buf resp;
	uint64_t inc = c->info.incarnation;
	int rc;

	if (len > ARF_PROTO_MAX_PROG) {
		snprintf(res->msg, sizeof(res->msg), "program of %zu bytes (at most %u)", len,
			 ARF_PROTO_MAX_PROG);
		return -E2BIG;
	}
	arf_proto_wr_init(&w);
	arf_proto_put_bytes(&w, prog, (uint32_t)len);
	rc = arf_req(c, ARF_OP_PROG_LOAD, &w, &resp);
	arf_proto_wr_free(&w);
	if (rc) {
		take_error(&resp, rc, res);
	} else if (resp.len < HASH_LEN || memcmp(resp.data, hash, HASH_LEN)) {
		snprintf(res->msg, sizeof(res->msg), "server named the program by another hash");
		rc = ARF_EPROTO;
	} else {
		remember(p, hash, inc);
	}
	arf_net_buf_free(&resp);
	return rc;
}

int arf_prog_load(arf_client *c, const void *prog, size_t prog_len, uint8_t hash[32],
		  struct arf_exec_result *res)
{
	struct arf_progstate *p = state(c);
	uint8_t h[HASH_LEN];

	memset(res, 0, sizeof(*res));
	if (!p)
		return -ENOMEM;
	crypto_generichash(h, sizeof(h), prog, prog_len, NULL, 0);
	int rc = load(c, p, prog, prog_len, h, res);
	if (!rc && hash)
		memcpy(hash, h, HASH_LEN);
	return rc;
}

/* The whole exec policy: load when unknown, run, reload once on ENOPROG.
 * as: the credentials to run with (NULL: the thread's). */
static int exec_reason(arf_client *c, const void *prog, size_t prog_len, const void *arg,
		       size_t arg_len, void *out, size_t out_cap, struct arf_exec_result *res,
		       int reason, const struct arf_proto_cred *as)
{
	struct arf_progstate *p = state(c);
	uint8_t hash[HASH_LEN];
	int rc = 0;

	memset(res, 0, sizeof(*res));
	if (!p)
		return -ENOMEM;
	if (arg_len > ARF_PROTO_MAX_PROG_ARG) {
		snprintf(res->msg, sizeof(res->msg), "argument of %zu bytes (at most %u)", arg_len,
			 ARF_PROTO_MAX_PROG_ARG);
		return -E2BIG;
	}
	crypto_generichash(hash, sizeof(hash), prog, prog_len, NULL, 0);
	for (int attempt = 0; attempt < 2; attempt++) {
		struct arf_proto_wr w;
		struct arf_net_buf resp;

		if (!known(p, hash, c->info.incarnation, 0) &&
		    (rc = load(c, p, prog, prog_len, hash, res)))
			return rc;
		arf_proto_wr_init(&w);
		arf_proto_put(&w, hash, sizeof(hash));
		arf_proto_put_u32(&w, out_cap > UINT32_MAX ? UINT32_MAX : (uint32_t)out_cap);
		arf_proto_put_bytes(&w, arg, (uint32_t)arg_len);
		rc = arf_req_as(c, ARF_OP_PROG_EXEC, &w, &resp, NULL, as);
		arf_proto_wr_free(&w);
		if (rc != ARF_ENOPROG) {
			ARF_CTR_ADD(c, execs, 1);
			pthread_mutex_lock(&p->lock);
			p->by_reason[reason]++;
			pthread_mutex_unlock(&p->lock);
		}
		if (rc == ARF_ENOPROG) {
			known(p, hash, c->info.incarnation, 1); /* forget it: load again */
			arf_net_buf_free(&resp);
			continue;
		}
		if (rc) {
			take_error(&resp, rc, res);
		} else {
			struct arf_proto_rd r;
			struct arf_proto_prog_result pr;
			arf_proto_rd_init(&r, resp.data, resp.len);
			arf_proto_get_prog_result(&r, &pr);
			if (!arf_proto_rd_done(&r)) {
				rc = ARF_EPROTO;
				snprintf(res->msg, sizeof(res->msg), "malformed PROG_EXEC reply");
			} else if (pr.out_len > out_cap) {
				rc = ARF_EOUTPUT;
				snprintf(res->msg, sizeof(res->msg), "%u bytes of output for %zu of room",
					 pr.out_len, out_cap);
			} else {
				res->r0 = (int64_t)pr.r0;
				res->out_len = pr.out_len;
				if (pr.out_len)
					memcpy(out, pr.out, pr.out_len);
			}
			res->insns = pr.insns;
		}
		pthread_mutex_lock(&p->lock);
		p->exec_insns += res->insns;
		pthread_mutex_unlock(&p->lock);
		arf_net_buf_free(&resp);
		return rc;
	}
	snprintf(res->msg, sizeof(res->msg), "the server keeps forgetting the program");
	return ARF_ENOPROG;
}

int arf_exec(arf_client *c, const void *prog, size_t prog_len, const void *arg, size_t arg_len,
	     void *out, size_t out_cap, struct arf_exec_result *res)
{
	return exec_reason(c, prog, prog_len, arg, arg_len, out, out_cap, res, ARF_EXEC_USER, NULL);
}

static int exec_std(arf_client *c, enum arf_std_prog which, const void *arg, size_t arg_len,
		    void *out, size_t out_cap, struct arf_exec_result *res, int reason)
{
	const struct arf_std_prog_image *im = &arf_std_progs[which];
	/* The read-only standard programs do on the server what this client's
	 * one-sided reads would do here, so they run as the connection rather
	 * than as the thread's user: as root, which arfd believes only from a
	 * connection that proved root (and then lends them the regions). */
	static const struct arf_proto_cred as_conn = { 0 };

	if (!im->len || __atomic_load_n(&c->std_progs_blind, __ATOMIC_RELAXED)) {
		memset(res, 0, sizeof(*res));
		snprintf(res->msg, sizeof(res->msg), im->len ? "the server lends this connection's "
			 "programs no regions" : "libarf was built without its standard programs");
		return -ENOSYS;
	}
	int rc = exec_reason(c, im->elf, im->len, arg, arg_len, out, out_cap, res, reason, &as_conn);
	if (rc == ARF_EFAULT) /* empty regions: not root proven here (one_sided = all) */
		__atomic_store_n(&c->std_progs_blind, 1, __ATOMIC_RELAXED);
	return rc;
}

/* ---- chain lookup --------------------------------------------------------- */

/* The lookup program's output: the entry, then the child's attributes
 * (ARF_PROG_LK_ATTRS) when its inode validated on the server. */
struct lookup_reply {
	struct arf_prog_lookup_out ent;
	struct arf_prog_attr attr;
};

int arf_prog_lookup(arf_client *c, uint64_t dir, const char *name, size_t len, uint64_t *child,
		    uint32_t *child_gen, uint8_t *type, struct arf_stat *st, int *have_st)
{
	struct arf_prog_lookup_arg a;
	struct lookup_reply o;
	struct arf_exec_result res;

	*have_st = 0;
	if (len == 0 || len > ARF_NAME_MAX)
		return 1;
	memset(&a, 0, sizeof(a));
	a.dir = dir;
	a.namelen = (uint32_t)len;
	a.flags = ARF_PROG_LK_ATTRS; /* no inode round after the run */
	memcpy(a.name, name, len);
	int rc = exec_std(c, ARF_STD_PROG_LOOKUP, &a, sizeof(a), &o, sizeof(o), &res, ARF_EXEC_HOPS);
	if (rc) {
		arf_log_msg(1, "shipped lookup failed: %s", res.msg);
		return 1;
	}
	if (res.r0 == -ENOENT)
		return -ENOENT;
	if (res.r0 || (res.out_len != sizeof(o.ent) && res.out_len != sizeof(o)))
		return 1; /* torn entries: the server's LOOKUP answers */
	*child = o.ent.child;
	*child_gen = o.ent.gen;
	*type = (uint8_t)o.ent.type;
	if (res.out_len == sizeof(o) && o.attr.ino == o.ent.child && o.attr.gen == o.ent.gen) {
		arf_stat_from_prog(&o.attr, st);
		*have_st = 1;
	}
	return 0;
}

/* ---- whole-path resolution ------------------------------------------------- */

/* The next component of path at *pos: its start and length (0 at the end). */
static size_t next_comp(const char *path, size_t *pos, const char **start)
{
	size_t i = *pos;

	while (path[i] == '/')
		i++;
	*start = path + i;
	size_t s = i;
	while (path[i] && path[i] != '/')
		i++;
	*pos = i;
	return i - s;
}

int arf_prog_resolve(arf_client *c, const char *path, struct arf_stat *out)
{
	uint64_t dir = ARF_ROOT_INO;
	uint32_t dgen = c->info.root_gen;
	size_t pos = 0, rest = 0, ncomp = 0;
	const char *s;
	size_t n;

	if (!c->pol.resolve_exec_depth)
		return 1;
	/* follow the entry cache as far as it goes */
	for (;;) {
		size_t before = pos;
		n = next_comp(path, &pos, &s);
		if (!n)
			return 1; /* all cached: the ordinary walk is free */
		uint64_t child;
		uint32_t cgen;
		uint8_t type;
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.') ||
		    arf_ecache_get(c, dir, s, n, &child, &cgen, &type) || type != DT_DIR) {
			pos = before;
			break;
		}
		dir = child;
		dgen = cgen;
	}
	rest = pos;
	for (size_t p2 = pos; next_comp(path, &p2, &s);)
		ncomp++;
	if (ncomp < c->pol.resolve_exec_depth)
		return 1;

	size_t plen = strlen(path + rest);
	size_t alen = sizeof(struct arf_prog_resolve_arg) + plen;
	size_t ocap = ncomp * sizeof(struct arf_prog_ent) + sizeof(struct arf_prog_attr);
	uint8_t *arg = malloc(alen), *o = malloc(ocap);
	struct arf_exec_result res;
	int rc = 1;
	if (!arg || !o)
		goto out;
	struct arf_prog_resolve_arg *a = (void *)arg;
	a->dir = dir;
	a->dgen = dgen;
	a->len = (uint32_t)plen;
	memcpy(arg + sizeof(*a), path + rest, plen);
	if (exec_std(c, ARF_STD_PROG_RESOLVE, arg, alen, o, ocap, &res, ARF_EXEC_PATH)) {
		arf_log_msg(1, "shipped resolve failed: %s", res.msg);
		goto out;
	}
	if (res.r0 == -ENOENT || res.r0 == -ENOTDIR || res.r0 == -ENAMETOOLONG) {
		rc = (int)res.r0;
		goto out;
	}
	if (res.r0 < 0)
		goto out; /* torn or stale: the ordinary walk sorts it out */
	/* the entries resolved feed the entry cache, so a stop costs nothing twice */
	size_t ents = res.r0 == 0 ? (res.out_len - sizeof(struct arf_prog_attr)) /
					    sizeof(struct arf_prog_ent)
				  : res.out_len / sizeof(struct arf_prog_ent);
	if (res.out_len < (res.r0 == 0 ? sizeof(struct arf_prog_attr) : 0) || ents > ncomp)
		goto out;
	size_t p2 = rest;
	uint64_t d = dir;
	for (size_t i = 0; i < ents; i++) {
		struct arf_prog_ent e;
		memcpy(&e, o + i * sizeof(e), sizeof(e));
		n = next_comp(path, &p2, &s);
		if (!(n == 1 && s[0] == '.'))
			arf_ecache_put(c, d, s, n, e.ino, e.gen, (uint8_t)e.type);
		d = e.ino;
	}
	if (res.r0 == 0) {
		struct arf_prog_attr at = { 0 };
		memcpy(&at, o + ents * sizeof(struct arf_prog_ent), sizeof(at));
		arf_stat_from_prog(&at, out);
		rc = 0;
	}
out:
	free(arg);
	free(o);
	return rc;
}

/* ---- batched readdir -------------------------------------------------------- */

int arf_prog_readdir(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		     struct arf_dirent *ents, struct arf_stat *st, size_t max, size_t *n, int *eof)
{
	struct arf_prog_readdir_arg a;
	struct arf_exec_result res;
	size_t rec = sizeof(struct arf_prog_dirent) + (st ? sizeof(struct arf_prog_attr) : 0) +
		     ARF_NAME_MAX + 1;
	size_t cap = max * rec;
	uint8_t *o;
	int rc = 1;

	*n = 0;
	*eof = 0;
	if (max > 1024)
		max = 1024;
	cap = max * rec;
	if (!max || !(o = malloc(cap)))
		return 1;
	memset(&a, 0, sizeof(a));
	a.dir = dir;
	a.dgen = dgen;
	a.max = (uint32_t)max;
	a.cookie = cookie;
	a.flags = st ? ARF_PROG_RD_ATTRS : 0;
	if (exec_std(c, ARF_STD_PROG_READDIR, &a, sizeof(a), o, cap, &res, ARF_EXEC_READDIR)) {
		arf_log_msg(1, "shipped readdir failed: %s", res.msg);
		goto out;
	}
	if (res.r0 == -ENOTDIR || res.r0 == -ESTALE) {
		rc = (int)res.r0;
		goto out;
	}
	if (res.r0 < 0)
		goto out;
	size_t off = 0;
	while (off < res.out_len && *n < max) {
		struct arf_prog_dirent d;
		struct arf_prog_attr at = { 0 };
		if (res.out_len - off < sizeof(d))
			goto bad;
		memcpy(&d, o + off, sizeof(d));
		off += sizeof(d);
		if (d.has_attr) {
			if (res.out_len - off < sizeof(at))
				goto bad;
			memcpy(&at, o + off, sizeof(at));
			off += sizeof(at);
		}
		size_t padded = ((size_t)d.namelen + 7) & ~(size_t)7;
		if (res.out_len - off < padded || d.namelen == 0)
			goto bad;
		struct arf_dirent *e = &ents[*n];
		e->ino = d.ino;
		e->gen = d.gen;
		e->type = d.type;
		e->cookie = d.cookie;
		memcpy(e->name, o + off, d.namelen);
		e->name[d.namelen] = 0;
		off += padded;
		if (st) {
			if (d.has_attr)
				arf_stat_from_prog(&at, &st[*n]);
			else
				memset(&st[*n], 0, sizeof(st[*n]));
		}
		(*n)++;
	}
	*eof = res.r0 == 1;
	rc = 0;
	goto out;
bad:
	*n = 0;
	rc = 1;
out:
	free(o);
	return rc;
}

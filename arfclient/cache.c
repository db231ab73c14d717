/* SPDX-License-Identifier: MIT */
/*
 * libarf caches: validated inode copies and name -> inode entries, each
 * trusted for a bounded time (attr_timeout_ms / entry_timeout_ms, as NFS's
 * attribute cache) and dropped by this client's own changes.  Direct-mapped
 * tables under one lock: small, and never a correctness risk, since a stale
 * inode's block map is caught by the data blocks' tags.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

int arf_cache_init(arf_client *c)
{
	c->icache = calloc(ARF_ICACHE_SIZE, sizeof(*c->icache));
	c->ecache = calloc(ARF_ECACHE_SIZE, sizeof(*c->ecache));
	return c->icache && c->ecache ? 0 : -ENOMEM;
}

void arf_cache_free(arf_client *c)
{
	free(c->icache);
	free(c->ecache);
	c->icache = NULL;
	c->ecache = NULL;
}

/* The server restarted: whatever it had may have changed meanwhile. */
void arf_cache_clear(arf_client *c)
{
	pthread_mutex_lock(&c->cache_lock);
	memset(c->icache, 0, ARF_ICACHE_SIZE * sizeof(*c->icache));
	memset(c->ecache, 0, ARF_ECACHE_SIZE * sizeof(*c->ecache));
	pthread_mutex_unlock(&c->cache_lock);
}

static size_t islot(uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 40) & (ARF_ICACHE_SIZE - 1);
}

int arf_icache_get(arf_client *c, uint64_t ino, uint32_t gen, struct arf_meta_inode *out)
{
	int rc = -1;

	if (!c->opts.attr_timeout_ms)
		return -1;
	pthread_mutex_lock(&c->cache_lock);
	struct arf_icache_ent *e = &c->icache[islot(ino)];
	if (e->ino == ino && !e->attrs_only && e->inode.gen == gen &&
	    arf_now_ms() - e->stamp_ms < c->opts.attr_timeout_ms) {
		*out = e->inode;
		rc = 0;
	}
	pthread_mutex_unlock(&c->cache_lock);
	ARF_CTR_ADD(c, cache_hits, rc == 0);
	ARF_CTR_ADD(c, cache_misses, rc != 0);
	return rc;
}

void arf_icache_put(arf_client *c, const struct arf_meta_inode *in)
{
	pthread_mutex_lock(&c->cache_lock);
	struct arf_icache_ent *e = &c->icache[islot(in->ino)];
	e->ino = in->ino;
	e->attrs_only = 0;
	e->fresh = 0;
	e->inode = *in;
	e->stamp_ms = arf_now_ms();
	pthread_mutex_unlock(&c->cache_lock);
}

void arf_icache_drop(arf_client *c, uint64_t ino)
{
	pthread_mutex_lock(&c->cache_lock);
	struct arf_icache_ent *e = &c->icache[islot(ino)];
	if (e->ino == ino)
		e->ino = 0;
	pthread_mutex_unlock(&c->cache_lock);
}

/* A reply carried fresh attributes: the cached copy stays only if it
 * agrees; otherwise the reply's attributes take its place (NFS's post-op
 * attributes), so that a GETATTR after a change needs no round trip.  A
 * reply can be older than what is cached when two requests on one file
 * overlap: the later ctime wins. */
void arf_icache_update_stat(arf_client *c, const struct arf_stat *st)
{
	if (!c->opts.attr_timeout_ms || !st->ino)
		return;
	pthread_mutex_lock(&c->cache_lock);
	struct arf_icache_ent *e = &c->icache[islot(st->ino)];
	if (e->ino == st->ino && !e->attrs_only && e->inode.gen == st->gen &&
	    e->inode.size == st->size && e->inode.mode == st->mode &&
	    e->inode.mtime_ns == st->mtime_ns && e->inode.ctime_ns == st->ctime_ns &&
	    e->inode.nlink == st->nlink && e->inode.uid == st->uid && e->inode.gid == st->gid) {
		e->fresh = 1; /* agrees */
		goto out;
	}
	if (e->ino == st->ino &&
	    (e->attrs_only ? e->st.gen == st->gen && e->st.ctime_ns > st->ctime_ns
			   : e->inode.gen == st->gen && e->inode.ctime_ns > st->ctime_ns))
		goto out; /* the cache saw a later change */
	e->ino = st->ino;
	e->attrs_only = 1;
	e->st = *st;
	e->stamp_ms = arf_now_ms();
	e->fresh = 1;
out:
	pthread_mutex_unlock(&c->cache_lock);
}

int arf_v_reply_attr(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out)
{
	int rc = -ENOENT;

	if (!c->opts.attr_timeout_ms)
		return rc;
	pthread_mutex_lock(&c->cache_lock);
	struct arf_icache_ent *e = &c->icache[islot(ino)];
	if (e->ino == ino && e->fresh && arf_now_ms() - e->stamp_ms < c->opts.attr_timeout_ms) {
		if (e->attrs_only && e->st.gen == gen) {
			*out = e->st;
			rc = 0;
		} else if (!e->attrs_only && e->inode.gen == gen) {
			arf_stat_from_inode(&e->inode, out);
			rc = 0;
		}
		e->fresh = 0;
	}
	pthread_mutex_unlock(&c->cache_lock);
	return rc;
}

void arf_v_reply_attr_drop(arf_client *c, uint64_t ino)
{
	pthread_mutex_lock(&c->cache_lock);
	struct arf_icache_ent *e = &c->icache[islot(ino)];
	if (e->ino == ino)
		e->fresh = 0;
	pthread_mutex_unlock(&c->cache_lock);
}

int arf_icache_get_stat(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out)
{
	int rc = -1;

	if (!c->opts.attr_timeout_ms)
		return -1;
	pthread_mutex_lock(&c->cache_lock);
	struct arf_icache_ent *e = &c->icache[islot(ino)];
	if (e->ino == ino && arf_now_ms() - e->stamp_ms < c->opts.attr_timeout_ms) {
		if (e->attrs_only && e->st.gen == gen) {
			*out = e->st;
			rc = 0;
		} else if (!e->attrs_only && e->inode.gen == gen) {
			arf_stat_from_inode(&e->inode, out);
			rc = 0;
		}
	}
	pthread_mutex_unlock(&c->cache_lock);
	ARF_CTR_ADD(c, cache_hits, rc == 0);
	ARF_CTR_ADD(c, cache_misses, rc != 0);
	return rc;
}

static size_t eslot(uint64_t dir, const char *name, size_t len)
{
	return arf_meta_name_hash(dir, name, len) & (ARF_ECACHE_SIZE - 1);
}

int arf_ecache_get(arf_client *c, uint64_t dir, const char *name, size_t len, uint64_t *child,
		   uint32_t *gen, uint8_t *type)
{
	int rc = -1;

	if (!c->opts.entry_timeout_ms || len > ARF_NAME_MAX)
		return -1;
	pthread_mutex_lock(&c->cache_lock);
	struct arf_ecache_ent *e = &c->ecache[eslot(dir, name, len)];
	if (e->dir == dir && e->namelen == len && !memcmp(e->name, name, len) &&
	    arf_now_ms() - e->stamp_ms < c->opts.entry_timeout_ms) {
		*child = e->child;
		*gen = e->child_gen;
		*type = e->type;
		rc = 0;
	}
	pthread_mutex_unlock(&c->cache_lock);
	ARF_CTR_ADD(c, cache_hits, rc == 0);
	ARF_CTR_ADD(c, cache_misses, rc != 0);
	return rc;
}

void arf_ecache_put(arf_client *c, uint64_t dir, const char *name, size_t len, uint64_t child,
		    uint32_t gen, uint8_t type)
{
	if (len > ARF_NAME_MAX)
		return;
	pthread_mutex_lock(&c->cache_lock);
	struct arf_ecache_ent *e = &c->ecache[eslot(dir, name, len)];
	e->dir = dir;
	e->namelen = (uint8_t)len;
	memcpy(e->name, name, len);
	e->child = child;
	e->child_gen = gen;
	e->type = type;
	e->stamp_ms = arf_now_ms();
	pthread_mutex_unlock(&c->cache_lock);
}

void arf_ecache_drop(arf_client *c, uint64_t dir, const char *name, size_t len)
{
	if (len > ARF_NAME_MAX)
		return;
	pthread_mutex_lock(&c->cache_lock);
	struct arf_ecache_ent *e = &c->ecache[eslot(dir, name, len)];
	if (e->dir == dir && e->namelen == len && !memcmp(e->name, name, len))
		e->dir = 0;
	pthread_mutex_unlock(&c->cache_lock);
}

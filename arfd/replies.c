/* SPDX-License-Identifier: MIT */
/*
 * arfd/replies — the reply cache: the answers to the last ARFD_REPLIES
 * mutations, persisted with the mutations themselves.
 *
 * A client that loses its connection (arfd restarted, the network cut)
 * sends its call again on a new one, with the same request id (net/'s
 * caller-chosen frame id) under the same client id (the hello's).  If the
 * server had applied the mutation before the connection went, applying it
 * again would fail (an unlink: ENOENT; an exclusive create: EEXIST) or,
 * worse, succeed twice (an append).  NFS answers from a duplicate request
 * cache that dies with the server; here each successful mutation's reply
 * is a record ('R' + slot) written in the same RocksDB batch as the
 * mutation (store.c's staging), so either both survive a crash or
 * neither, and the request sent again after a restart is answered with
 * the reply it had the first time: same status, same body (an append's
 * offset included).  Failed mutations are not kept: nothing changed, so
 * doing them again answers as well.
 *
 * The records form a ring of ARFD_REPLIES slots, overwritten in turn (no
 * deletes): the window is the last ARFD_REPLIES mutations of all clients,
 * ample for a call re-sent seconds later.  A record also holds the uid the
 * call acted as, and answers only a call with the same one.  At start the
 * ring is rebuilt from RocksDB.  Everything here runs under fs_lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arfd.h"
#include "log.h"

#define ARFD_REPLIES    8192u /* records kept (a power of two) */
#define ARFD_REPLY_BODY 512u  /* the largest reply body kept: an attr is 76 bytes, a
			       * rename's two wcc and two objs about 400 */
#define NBUCKETS        (ARFD_REPLIES * 2)

struct rec {
	uint8_t client[ARF_PROTO_CLIENT_ID];
	uint64_t xid;        /* the request id */
	uint64_t stamp;      /* the cache's own clock: the newest record is the last written */
	uint64_t txn;        /* this incarnation's transaction (0: durable before it started) */
	uint32_t uid;        /* the credentials the call acted with */
	uint32_t len;
	uint8_t body[ARFD_REPLY_BODY];
	int used;
	int32_t next;        /* hash chain (slot index, -1 = end) */
};

/* On disk: client, xid, stamp, uid, len, body (little-endian fields). */
#define REC_HDR (ARF_PROTO_CLIENT_ID + 8 + 8 + 4 + 4)

struct arfd_replies {
	struct rec ring[ARFD_REPLIES];
	int32_t bucket[NBUCKETS];
	uint32_t next_slot;  /* the next slot to write */
	uint64_t stamp;      /* the last stamp given */
	int staged;          /* a record waits in the store's batch ... */
	struct rec pending;  /* ... this one, for slot next_slot */
	uint64_t replayed;   /* calls answered from the cache */
};

static uint32_t hash(const uint8_t client[ARF_PROTO_CLIENT_ID], uint64_t xid)
{
	uint64_t h = xid * 0x9e3779b97f4a7c15ull;
	for (unsigned i = 0; i < ARF_PROTO_CLIENT_ID; i++)
		h = (h ^ client[i]) * 0x100000001b3ull;
	return (uint32_t)(h >> 32) % NBUCKETS;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void key_of(uint32_t slot, char k[5])
{
	k[0] = 'R';
	for (int i = 0; i < 4; i++)
		k[1 + i] = (char)(slot >> (24 - 8 * i));
}

static void unlink_slot(struct arfd_replies *r, uint32_t slot)
{
	struct rec *e = &r->ring[slot];
	if (!e->used)
		return;
	int32_t *pp = &r->bucket[hash(e->client, e->xid)];
	while (*pp >= 0 && *pp != (int32_t)slot)
		pp = &r->ring[*pp].next;
	if (*pp >= 0)
		*pp = e->next;
	e->used = 0;
}

static void install(struct arfd_replies *r, uint32_t slot, const struct rec *e)
{
	unlink_slot(r, slot);
	r->ring[slot] = *e;
	r->ring[slot].used = 1;
	uint32_t b = hash(e->client, e->xid);
	r->ring[slot].next = r->bucket[b];
	r->bucket[b] = (int32_t)slot;
}

/* One stored record, at start. */
static int load_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct arfd_replies *r = ctx;
	const uint8_t *k = key, *v = val;
	struct rec e;

	if (klen != 5 || vlen < REC_HDR)
		return 0; /* not ours: ignored */
	uint32_t slot = (uint32_t)k[1] << 24 | (uint32_t)k[2] << 16 | (uint32_t)k[3] << 8 | k[4];
	memset(&e, 0, sizeof(e));
	memcpy(e.client, v, ARF_PROTO_CLIENT_ID);
	e.xid = get_le(v + 16, 8);
	e.stamp = get_le(v + 24, 8);
	e.uid = (uint32_t)get_le(v + 32, 4);
	e.len = (uint32_t)get_le(v + 36, 4);
	if (slot >= ARFD_REPLIES || e.len > ARFD_REPLY_BODY || vlen != REC_HDR + e.len)
		return 0; /* another ring size, or damaged: not used */
	memcpy(e.body, v + REC_HDR, e.len);
	install(r, slot, &e);
	if (e.stamp >= r->stamp) {
		r->stamp = e.stamp;
		r->next_slot = (slot + 1) % ARFD_REPLIES;
	}
	return 0;
}

int arfd_replies_start(struct arfd *d, char *err, size_t errlen)
{
	struct arfd_replies *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(err, errlen, "out of memory (reply cache)");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < NBUCKETS; i++)
		r->bucket[i] = -1;
	d->replies = r;
	return arfd_store_each(d->store, 'R', load_one, r, err, errlen);
}

void arfd_replies_stop(struct arfd *d)
{
	free(d->replies);
	d->replies = NULL;
}

/* May this call have a record?  A client that said who it is, a request
 * id of its choosing. */
static int keyed(const struct arfd_conn *ac, uint64_t id)
{
	return ac && ac->has_client_id && id >= ARF_NET_ID_CALLER;
}

int arfd_replies_find(struct arfd *d, const struct arfd_conn *ac, uint64_t id, uint32_t uid,
		      struct arf_proto_wr *w, uint64_t *txn)
{
	struct arfd_replies *r = d->replies;

	if (!r || !keyed(ac, id))
		return 0;
	for (int32_t s = r->bucket[hash(ac->client_id, id)]; s >= 0; s = r->ring[s].next) {
		const struct rec *e = &r->ring[s];
		if (e->xid != id || memcmp(e->client, ac->client_id, ARF_PROTO_CLIENT_ID))
			continue;
		if (e->uid != uid)
			return 0; /* not the caller it answered: do the call */
		arf_proto_put(w, e->body, e->len);
		*txn = e->txn;
		r->replayed++;
		return 1;
	}
	return 0;
}

void arfd_replies_stage(struct arfd *d, const struct arfd_conn *ac, uint64_t id, uint32_t uid,
			const struct arf_proto_wr *w)
{
	struct arfd_replies *r = d->replies;
	uint8_t val[REC_HDR + ARFD_REPLY_BODY];
	char key[5];

	if (!r || !keyed(ac, id) || w->err)
		return;
	if (w->len > ARFD_REPLY_BODY) { /* a new request kind's reply outgrew it */
		arfd_log_limited(ARFD_LOG_WARN, "a %zu-byte reply is too large for the reply "
				 "cache (%u): not kept", w->len, ARFD_REPLY_BODY);
		return;
	}
	struct rec *e = &r->pending;
	memset(e, 0, sizeof(*e));
	memcpy(e->client, ac->client_id, ARF_PROTO_CLIENT_ID);
	e->xid = id;
	e->stamp = r->stamp + 1;
	e->uid = uid;
	e->len = (uint32_t)w->len;
	memcpy(e->body, w->buf, w->len);
	memcpy(val, e->client, ARF_PROTO_CLIENT_ID);
	put_le(val + 16, e->xid, 8);
	put_le(val + 24, e->stamp, 8);
	put_le(val + 32, e->uid, 4);
	put_le(val + 36, e->len, 4);
	memcpy(val + REC_HDR, e->body, e->len);
	key_of(r->next_slot, key);
	arfd_store_stage(d->store, key, sizeof(key), val, REC_HDR + e->len);
	r->staged = 1;
}

void arfd_replies_done(struct arfd *d, uint64_t txn)
{
	struct arfd_replies *r = d->replies;

	if (!r || !r->staged)
		return;
	r->staged = 0;
	if (!txn) { /* nothing was written: neither is the record */
		arfd_store_unstage(d->store);
		return;
	}
	r->pending.txn = txn;
	install(r, r->next_slot, &r->pending);
	r->stamp = r->pending.stamp;
	r->next_slot = (r->next_slot + 1) % ARFD_REPLIES;
}

uint64_t arfd_replies_replayed(const struct arfd *d)
{
	return d->replies ? d->replies->replayed : 0;
}

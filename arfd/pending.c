/* SPDX-License-Identifier: MIT */
/*
 * arfd/pending — what waits for durability on a sync export: objects a
 * transaction changed (kept odd, i.e. invisible to one-sided readers, until
 * the write-ahead log holding them is synced) and the replies of those
 * transactions.  An object changed again by a later transaction is sealed
 * only when that later one is durable: a map from object to the last
 * transaction that touched it decides.
 *
 * Once the export has failed (commit.c) nothing is sealed any more
 * (arfd_pending_freeze): a durable transaction's replies still go out, but
 * an object it shares with the failed one would show the failed change.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arfd.h"

struct arfd_reply {
	struct arfd_reply *next;
	uint64_t seq;
	struct arf_net_sconn *c;   /* referenced */
	uint64_t id;
	uint16_t op;
	int32_t status;
	void *body;                /* owned */
	size_t len;
};

struct ptxn {
	struct ptxn *next;
	uint64_t seq;
	size_t n;
	struct arf_meta_dirty obj[];
};

struct arfd_pending {
	/* open-addressing map: object key -> last seq (0 = empty slot) */
	uint64_t *keys, *seqs;
	size_t cap, used;
	struct ptxn *txn_head, *txn_tail;
	struct arfd_reply *rep_head, *rep_tail;
	int frozen;                /* the export failed: seal nothing more */
};

static uint64_t okey(const struct arf_meta_dirty *d)
{
	return ((uint64_t)d->region << 60) | d->off;
}

static size_t slot_of(const struct arfd_pending *p, uint64_t k)
{
	uint64_t h = k * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 17) & (p->cap - 1);
}

static int map_grow(struct arfd_pending *p)
{
	size_t ncap = p->cap ? p->cap * 2 : 1024;
	uint64_t *nk = calloc(ncap, sizeof(*nk)), *ns = calloc(ncap, sizeof(*ns));
	if (!nk || !ns) {
		free(nk);
		free(ns);
		return -ENOMEM;
	}
	uint64_t *ok = p->keys, *os = p->seqs;
	size_t ocap = p->cap;
	p->keys = nk;
	p->seqs = ns;
	p->cap = ncap;
	for (size_t i = 0; i < ocap; i++) {
		if (!os[i])
			continue;
		size_t s = slot_of(p, ok[i]);
		while (p->seqs[s])
			s = (s + 1) & (p->cap - 1);
		p->keys[s] = ok[i];
		p->seqs[s] = os[i];
	}
	free(ok);
	free(os);
	return 0;
}

static int map_set(struct arfd_pending *p, uint64_t k, uint64_t seq)
{
	if ((p->used + 1) * 2 > p->cap && map_grow(p))
		return -ENOMEM;
	size_t s = slot_of(p, k);
	while (p->seqs[s] && p->keys[s] != k)
		s = (s + 1) & (p->cap - 1);
	if (!p->seqs[s])
		p->used++;
	p->keys[s] = k;
	p->seqs[s] = seq;
	return 0;
}

static size_t map_find(const struct arfd_pending *p, uint64_t k)
{
	if (!p->cap)
		return SIZE_MAX;
	size_t s = slot_of(p, k);
	while (p->seqs[s]) {
		if (p->keys[s] == k)
			return s;
		s = (s + 1) & (p->cap - 1);
	}
	return SIZE_MAX;
}

/* Backward-shift deletion keeps probe chains intact. */
static void map_del(struct arfd_pending *p, size_t s)
{
	size_t i = s, j = s;
	p->seqs[i] = 0;
	p->used--;
	for (;;) {
		j = (j + 1) & (p->cap - 1);
		if (!p->seqs[j])
			return;
		size_t home = slot_of(p, p->keys[j]);
		/* can the entry at j move to the hole at i? */
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			p->keys[i] = p->keys[j];
			p->seqs[i] = p->seqs[j];
			p->seqs[j] = 0;
			i = j;
		}
	}
}

struct arfd_pending *arfd_pending_create(void)
{
	struct arfd_pending *p = calloc(1, sizeof(*p));
	if (p && map_grow(p)) {
		free(p);
		return NULL;
	}
	return p;
}

void arfd_pending_destroy(struct arfd_pending *p)
{
	if (!p)
		return;
	while (p->txn_head) {
		struct ptxn *t = p->txn_head;
		p->txn_head = t->next;
		free(t);
	}
	while (p->rep_head) {
		struct arfd_reply *r = p->rep_head;
		p->rep_head = r->next;
		arf_net_sconn_unref(r->c);
		free(r->body);
		free(r);
	}
	free(p->keys);
	free(p->seqs);
	free(p);
}

int arfd_pending_add_txn(struct arfd_pending *p, uint64_t seq, const struct arf_meta_dirty *list,
			 size_t n)
{
	struct ptxn *t;

	if (!n)
		return 0;
	t = malloc(sizeof(*t) + n * sizeof(t->obj[0]));
	if (!t)
		return -ENOMEM;
	t->next = NULL;
	t->seq = seq;
	t->n = n;
	memcpy(t->obj, list, n * sizeof(t->obj[0]));
	for (size_t i = 0; i < n; i++)
		if (map_set(p, okey(&list[i]), seq)) {
			free(t);
			return -ENOMEM;
		}
	if (p->txn_tail)
		p->txn_tail->next = t;
	else
		p->txn_head = t;
	p->txn_tail = t;
	return 0;
}

int arfd_pending_add_reply(struct arfd_pending *p, uint64_t seq, struct arf_net_sconn *c,
			   uint64_t id, uint16_t op, int32_t status, void *body, size_t len)
{
	struct arfd_reply *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->next = NULL;
	r->seq = seq;
	r->c = c;
	arf_net_sconn_ref(c);
	r->id = id;
	r->op = op;
	r->status = status;
	r->body = body;
	r->len = len;
	if (p->rep_tail)
		p->rep_tail->next = r;
	else
		p->rep_head = r;
	p->rep_tail = r;
	return 0;
}

struct arfd_reply *arfd_pending_commit(struct arfd_pending *p, struct arf_meta_fs *fs, uint64_t seq)
{
	struct arfd_reply *out = NULL, **tail = &out;

	while (p->txn_head && p->txn_head->seq <= seq) {
		struct ptxn *t = p->txn_head;
		for (size_t i = 0; i < t->n; i++) {
			const struct arf_meta_dirty *d = &t->obj[i];
			size_t s = map_find(p, okey(d));
			if (s == SIZE_MAX || p->seqs[s] > seq)
				continue; /* a later, not yet durable transaction changed it */
			if (d->region == ARF_REGION_META && !p->frozen)
				arf_meta_obj_seal(fs->meta + d->off, d->len);
			map_del(p, s);
		}
		p->txn_head = t->next;
		if (!p->txn_head)
			p->txn_tail = NULL;
		free(t);
	}
	/* Data blocks are covered by their tags (META objects, sealed above). */
	while (p->rep_head && p->rep_head->seq <= seq) {
		struct arfd_reply *r = p->rep_head;
		p->rep_head = r->next;
		if (!p->rep_head)
			p->rep_tail = NULL;
		r->next = NULL;
		*tail = r;
		tail = &r->next;
	}
	return out;
}

void arfd_pending_freeze(struct arfd_pending *p)
{
	p->frozen = 1;
}

struct arfd_reply *arfd_pending_fail(struct arfd_pending *p)
{
	while (p->txn_head) { /* never sealed: their objects stay odd */
		struct ptxn *t = p->txn_head;
		p->txn_head = t->next;
		free(t);
	}
	p->txn_tail = NULL;
	memset(p->seqs, 0, p->cap * sizeof(*p->seqs));
	p->used = 0;
	struct arfd_reply *out = p->rep_head;
	for (struct arfd_reply *r = out; r; r = r->next) {
		r->status = arf_net_status_from_err(-EIO);
		free(r->body); /* an error carries no body */
		r->body = NULL;
		r->len = 0;
	}
	p->rep_head = p->rep_tail = NULL;
	return out;
}

struct arfd_reply *arfd_pending_join(struct arfd_reply *a, struct arfd_reply *b)
{
	struct arfd_reply **end = &a;

	while (*end)
		end = &(*end)->next;
	*end = b;
	return a;
}

void arfd_pending_send(struct arfd_reply *r)
{
	while (r) {
		struct arfd_reply *n = r->next;
		struct iovec iov = { r->body, r->len };
		arf_net_reply(r->c, r->id, r->op, r->status, &iov, r->len ? 1 : 0);
		arf_net_sconn_unref(r->c);
		free(r->body);
		free(r);
		r = n;
	}
}

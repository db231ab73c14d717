/* SPDX-License-Identifier: MIT */
/*
 * net/softnic — the one-sided operations of the tcp transport: a batched
 * READ, WRITE, compare-and-swap and fetch-and-add on registered regions.
 * Each checks region id, this connection's key, rights and bounds
 * (arf_range_ok) and copies bytes in or out: it never calls filesystem
 * code, and net/ links nothing of meta/ or ops/ (tests/net checks it).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"

/* Reads in a batch sent straight from the regions (arf_net_srv_send takes
 * 16 pieces besides the header). */
#define SEND_IOV 16u

/* The region a one-sided operation names, if this connection holds its key. */
static struct srv_region *find_region(struct arf_net_server *s, struct arf_net_sconn *c,
				      uint32_t id, uint64_t key)
{
	for (size_t i = 0, n = __atomic_load_n(&s->nregions, __ATOMIC_ACQUIRE); i < n; i++)
		if (s->regions[i].id == id && s->regions[i].view == c->view)
			return c->keys[i] && c->keys[i] == key ? &s->regions[i] : NULL;
	return NULL;
}

int arf_net_srv_read(struct arf_net_server *s, struct arf_net_sconn *c,
		     const struct arf_net_hdr *h, const uint8_t *body, size_t len)
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
	SCTR(s, one_sided_reads, n);
	SCTR(s, one_sided_bytes, total);
	__atomic_add_fetch(&s->view_reads[c->view], n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->view_bytes[c->view], total, __ATOMIC_RELAXED);
	SCTR(s, one_sided_rounds, 1);
	CCTR(c, one_sided_reads, n);
	CCTR(c, one_sided_bytes, total);
#ifndef __SANITIZE_THREAD__
	if (n <= SEND_IOV) {
		/* A few reads (a file read is one per run of blocks and one for
		 * their tags): sent straight from the regions, the kernel's copy
		 * into the socket being the snapshot -- no copy of our own.  What
		 * the socket cannot take now goes to the connection's queue
		 * through arf_net_copy_racy (sconn.c).  (ThreadSanitizer sees
		 * the kernel's reads as the process's: it gets the copy below.) */
		struct iovec v[SEND_IOV];
		for (uint32_t i = 0; i < n; i++) {
			struct arf_net_wire_read w;
			memcpy(&w, body + i * sizeof(w), sizeof(w));
			struct srv_region *r = find_region(s, c, le32toh(w.region), le64toh(w.key));
			v[i] = (struct iovec){ r->base + le64toh(w.off), le32toh(w.len) };
		}
		return arf_net_srv_send(c, h->id, h->op, ARF_NET_S_OK, n, 0, v, (int)n, NULL, 0);
	}
#endif
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
	return arf_net_srv_send(c, h->id, h->op, ARF_NET_S_OK, n, 0, &(struct iovec){ s->out, total },
				1, NULL, 0);
reply:
	SCTR(s, one_sided_refused, 1);
	CCTR(c, refused, 1);
	return arf_net_srv_send(c, h->id, h->op, st, 0, 0, NULL, 0, NULL, 0);
}

int arf_net_srv_rmw(struct arf_net_server *s, struct arf_net_sconn *c,
		    const struct arf_net_hdr *h, const uint8_t *body, size_t len)
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
	return arf_net_srv_send(c, h->id, h->op, ARF_NET_S_OK, 0, 0,
				&(struct iovec){ ob, h->op == ARF_NET_OP_WRITE ? 0 : 8 }, 1, NULL, 0);
refuse:
	SCTR(s, one_sided_refused, 1);
	CCTR(c, refused, 1);
	return arf_net_srv_send(c, h->id, h->op, arf_net_status_from_err(ARF_EKEY), 0, 0, NULL, 0,
				NULL, 0);
}

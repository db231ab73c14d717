/* SPDX-License-Identifier: MIT */
/*
 * net/verbs_flow — the part of the verbs transport that needs no device:
 * message packing, private data, the rkey table, credit flow control, the
 * completion table, the adaptive wait, the read planner, the client-side
 * region check and the connection state machine (verbs_int.h says what
 * each one is for).  Nothing here includes an rdma-core header or touches a
 * device, so tests/verbs checks all of it on any machine; verbs.c does the
 * posting and polling around these decisions.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_int.h"

static void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
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

/* ------------------------------------------------------------ messages */

size_t arf_net_verbs_pack(uint8_t *buf, size_t cap, uint16_t kind, uint16_t credits,
			  const uint8_t *src, size_t srclen)
{
	size_t take;

	if (cap < ARF_NET_VERBS_MSG_HDR)
		return 0;
	take = kind == ARF_NET_VERBS_CREDIT ? 0 : srclen;
	if (take > cap - ARF_NET_VERBS_MSG_HDR)
		take = cap - ARF_NET_VERBS_MSG_HDR;
	put32(buf, (uint32_t)take);
	put16(buf + 4, credits);
	put16(buf + 6, kind);
	if (take)
		memcpy(buf + ARF_NET_VERBS_MSG_HDR, src, take);
	return take;
}

int arf_net_verbs_unpack(const uint8_t *buf, size_t got, struct arf_net_verbs_msg *m,
			 const uint8_t **payload)
{
	if (got < ARF_NET_VERBS_MSG_HDR)
		return ARF_EPROTO;
	m->len = get32(buf);
	m->credits = get16(buf + 4);
	m->kind = get16(buf + 6);
	if (m->len != got - ARF_NET_VERBS_MSG_HDR)
		return ARF_EPROTO;
	switch (m->kind) {
	case ARF_NET_VERBS_DATA:
	case ARF_NET_VERBS_RKEYS:
		break;
	case ARF_NET_VERBS_CREDIT:
		if (m->len)
			return ARF_EPROTO;
		break;
	default:
		return ARF_EPROTO;
	}
	*payload = buf + ARF_NET_VERBS_MSG_HDR;
	return 0;
}

void arf_net_verbs_pdata_encode(const struct arf_net_verbs_pdata *p, uint8_t out[16])
{
	put32(out, ARF_NET_VERBS_MAGIC);
	put16(out + 4, ARF_NET_VERBS_VERSION);
	put16(out + 6, p->flags);
	put32(out + 8, p->depth);
	put32(out + 12, p->buf_size);
}

int arf_net_verbs_pdata_decode(const void *in, size_t len, struct arf_net_verbs_pdata *p)
{
	const uint8_t *b = in;

	if (!in || len < ARF_NET_VERBS_PDATA || get32(b) != ARF_NET_VERBS_MAGIC)
		return ARF_EPROTO;
	if (get16(b + 4) != ARF_NET_VERBS_VERSION)
		return ARF_EVERSION;
	p->flags = get16(b + 6);
	p->depth = get32(b + 8);
	p->buf_size = get32(b + 12);
	if (p->depth < 2 || p->depth > ARF_NET_VERBS_MAX_DEPTH ||
	    p->buf_size < ARF_NET_VERBS_MIN_BUF || p->buf_size > ARF_NET_VERBS_MAX_BUF)
		return ARF_EPROTO;
	return 0;
}

/* ------------------------------------------------------------ rkey table */

size_t arf_net_verbs_rkeys_encode(const struct arf_net_verbs_rkey *k, size_t n, uint8_t *out,
				  size_t cap)
{
	size_t need = 4 + 16 * n;

	if (cap < need)
		return 0;
	put32(out, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		put32(out + 4 + 16 * i, k[i].region);
		put32(out + 8 + 16 * i, k[i].rkey);
		put64(out + 12 + 16 * i, k[i].addr);
	}
	return need;
}

int arf_net_verbs_rkeys_decode(const uint8_t *in, size_t len, struct arf_net_verbs_rkey *k,
			       size_t max)
{
	if (len < 4)
		return ARF_EPROTO;
	uint32_t n = get32(in);
	if (n > max || len != 4 + 16 * (size_t)n)
		return ARF_EPROTO;
	for (uint32_t i = 0; i < n; i++) {
		k[i].region = get32(in + 4 + 16 * i);
		k[i].rkey = get32(in + 8 + 16 * i);
		k[i].addr = get64(in + 12 + 16 * i);
	}
	return (int)n;
}

int arf_net_verbs_hello_regions(const uint8_t *body, size_t len, uint32_t *ids, uint32_t *flags,
				size_t max)
{
	if (len < 4)
		return ARF_EPROTO;
	uint32_t n = get32(body);
	if (n > max || len - 4 < 24 * (size_t)n)
		return ARF_EPROTO;
	for (uint32_t i = 0; i < n; i++) {
		ids[i] = get32(body + 4 + 24 * i);
		flags[i] = get32(body + 8 + 24 * i);
	}
	return (int)n;
}

const struct arf_net_verbs_rregion *
arf_net_verbs_check(const struct arf_net_verbs_rregion *r, size_t n, uint32_t region,
		    uint64_t key, uint64_t off, uint64_t len, int write, int atomic)
{
	for (size_t i = 0; i < n; i++) {
		if (r[i].id != region)
			continue;
		if (key && key != r[i].key)
			return NULL;
		if (write && !(r[i].flags & ARF_NET_REGION_WRITABLE))
			return NULL;
		if (!arf_range_ok(off, len, r[i].size))
			return NULL;
		if (atomic && (len != 8 || off % 8))
			return NULL;
		return &r[i];
	}
	return NULL;
}

/* ------------------------------------------------------------ credits */

void arf_net_verbs_credits_init(struct arf_net_verbs_credits *cr, uint32_t depth,
				uint32_t peer_depth)
{
	cr->tx = peer_depth;
	cr->owed = 0;
	cr->depth = depth;
	cr->peer_depth = peer_depth;
}

int arf_net_verbs_can_send_data(const struct arf_net_verbs_credits *cr)
{
	return cr->tx >= 2;
}

int arf_net_verbs_credit_due(const struct arf_net_verbs_credits *cr)
{
	uint32_t half = cr->depth / 2 ? cr->depth / 2 : 1;
	return cr->tx >= 1 && cr->owed >= half;
}

int arf_net_verbs_take(struct arf_net_verbs_credits *cr, uint16_t kind)
{
	if (kind == ARF_NET_VERBS_CREDIT ? cr->tx < 1 : !arf_net_verbs_can_send_data(cr))
		return -EAGAIN;
	uint32_t give = cr->owed > 0xffff ? 0xffff : cr->owed;
	cr->owed -= give;
	cr->tx--;
	return (int)give;
}

int arf_net_verbs_returned(struct arf_net_verbs_credits *cr, uint32_t credits)
{
	if (credits > cr->peer_depth - cr->tx)
		return ARF_EPROTO;
	cr->tx += credits;
	return 0;
}

int arf_net_verbs_reposted(struct arf_net_verbs_credits *cr, uint32_t n)
{
	if (n > cr->depth - cr->owed)
		return ARF_EPROTO;
	cr->owed += n;
	return 0;
}

/* ------------------------------------------------------------ completions */

int arf_net_verbs_optab_init(struct arf_net_verbs_optab *t, uint32_t n, uint32_t sq_depth)
{
	memset(t, 0, sizeof(*t));
	if (!n || !sq_depth)
		return -EINVAL;
	t->v = calloc(n, sizeof(*t->v));
	if (!t->v)
		return -ENOMEM;
	t->n = t->nfree = n;
	t->sq_depth = sq_depth;
	for (uint32_t i = 0; i < n; i++)
		t->v[i].next_free = i + 1 < n ? i + 1 : UINT32_MAX;
	t->free_head = 0;
	return 0;
}

void arf_net_verbs_optab_free(struct arf_net_verbs_optab *t)
{
	free(t->v);
	t->v = NULL;
	t->n = t->nfree = 0;
}

static struct arf_net_verbs_op *op_of(const struct arf_net_verbs_optab *t, uint64_t wr_id)
{
	uint32_t idx = (uint32_t)wr_id, gen = (uint32_t)(wr_id >> 32);
	if (idx >= t->n || t->v[idx].gen != gen)
		return NULL;
	return &t->v[idx];
}

uint64_t arf_net_verbs_op_take(struct arf_net_verbs_optab *t, uint32_t nwr)
{
	if (!nwr || nwr > t->sq_depth || !t->nfree || t->sq_used + nwr > t->sq_depth)
		return 0;
	uint32_t idx = t->free_head;
	struct arf_net_verbs_op *o = &t->v[idx];
	t->free_head = o->next_free;
	t->nfree--;
	o->gen++;
	if (!o->gen) /* generation 0 would make wr_id 0 possible: skip it */
		o->gen = 1;
	o->state = ARF_NET_VERBS_OP_POSTED;
	o->nwr = nwr;
	o->err = 0;
	t->sq_used += nwr;
	return (uint64_t)o->gen << 32 | idx;
}

int arf_net_verbs_op_complete(struct arf_net_verbs_optab *t, uint64_t wr_id, int wc_status)
{
	struct arf_net_verbs_op *o = op_of(t, wr_id);

	if (!o || o->state != ARF_NET_VERBS_OP_POSTED) {
		t->stale++;
		return 0;
	}
	o->err = arf_net_verbs_wc_err(wc_status);
	o->state = o->err ? ARF_NET_VERBS_OP_FAILED : ARF_NET_VERBS_OP_DONE;
	t->sq_used -= o->nwr;
	o->nwr = 0;
	return 1;
}

int arf_net_verbs_op_state(const struct arf_net_verbs_optab *t, uint64_t wr_id, int *err)
{
	const struct arf_net_verbs_op *o = op_of(t, wr_id);
	if (!o)
		return ARF_NET_VERBS_OP_FREE;
	if (err && o->state == ARF_NET_VERBS_OP_FAILED)
		*err = o->err;
	return o->state;
}

void arf_net_verbs_op_release(struct arf_net_verbs_optab *t, uint64_t wr_id)
{
	struct arf_net_verbs_op *o = op_of(t, wr_id);
	if (!o || o->state == ARF_NET_VERBS_OP_FREE)
		return;
	/* An abandoned POSTED piece keeps its send-queue slots: its work
	 * requests are still in the queue pair, whose connection is dead. */
	o->state = ARF_NET_VERBS_OP_FREE;
	o->gen++;
	if (!o->gen)
		o->gen = 1;
	o->next_free = t->free_head;
	t->free_head = (uint32_t)(o - t->v);
	t->nfree++;
}

int arf_net_verbs_wc_err(int wc_status)
{
	switch (wc_status) {
	case ARF_NET_VERBS_WC_SUCCESS:
		return 0;
	case ARF_NET_VERBS_WC_REM_ACCESS_ERR:
	case ARF_NET_VERBS_WC_REM_INV_REQ_ERR:
		return ARF_EKEY;
	case ARF_NET_VERBS_WC_RETRY_EXC_ERR:
	case ARF_NET_VERBS_WC_RNR_RETRY_EXC_ERR:
		return -ETIMEDOUT;
	case ARF_NET_VERBS_WC_WR_FLUSH_ERR:
		return -ECONNRESET;
	default:
		return -EIO;
	}
}

/* ------------------------------------------------------------ waiting */

void arf_net_verbs_wait_init(struct arf_net_verbs_wait *w, uint32_t spin_us, uint64_t now_us)
{
	w->spin_us = spin_us;
	w->idle_since = now_us;
	w->armed = 0;
}

enum arf_net_verbs_wait_act arf_net_verbs_wait_next(struct arf_net_verbs_wait *w, int found,
						     uint64_t now_us)
{
	if (found) {
		/* The notification, if armed, may still fire: harmless, the
		 * next block returns at once and polls. */
		w->idle_since = now_us;
		return ARF_NET_VERBS_POLL;
	}
	if (w->armed)
		return ARF_NET_VERBS_BLOCK; /* armed, then polled empty: safe to sleep */
	if (now_us - w->idle_since < w->spin_us)
		return ARF_NET_VERBS_POLL;
	w->armed = 1;
	return ARF_NET_VERBS_ARM;
}

void arf_net_verbs_wait_woken(struct arf_net_verbs_wait *w, uint64_t now_us)
{
	w->armed = 0;
	w->idle_since = now_us;
}

/* ------------------------------------------------------------ read plan */

size_t arf_net_verbs_plan(const uint32_t *lens, size_t n, struct arf_net_verbs_cursor *cur,
			  uint64_t stage_cap, struct arf_net_verbs_piece *pieces,
			  size_t max_pieces)
{
	size_t np = 0;
	uint64_t used = 0;

	while (cur->op < n && np < max_pieces && used < stage_cap) {
		uint64_t left = lens[cur->op] - cur->off;
		if (left == 0) { /* empty read, or finished: nothing to post */
			cur->op++;
			cur->off = 0;
			continue;
		}
		uint64_t take = left < stage_cap - used ? left : stage_cap - used;
		pieces[np++] = (struct arf_net_verbs_piece){ .op = (uint32_t)cur->op,
							     .len = (uint32_t)take,
							     .op_off = cur->off,
							     .stage_off = used };
		used += take;
		cur->off += take;
		if (cur->off == lens[cur->op]) {
			cur->op++;
			cur->off = 0;
		}
	}
	/* skip trailing empty reads so that "0 pieces" means "all planned" */
	while (np == 0 && cur->op < n && lens[cur->op] == 0)
		cur->op++;
	return np;
}

/* ------------------------------------------------------------ connection */

enum arf_net_verbs_cstate arf_net_verbs_conn_next(enum arf_net_verbs_cstate s,
						  enum arf_net_verbs_cevent e, int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	*err = 0;

	if (e == ARF_NET_VERBS_EV_OTHER)
		return s;
	if (s == ARF_NET_VERBS_CS_CLOSED || s == ARF_NET_VERBS_CS_FAILED)
		return s; /* final: late events change nothing */

	switch (e) {
	case ARF_NET_VERBS_EV_RESOLVE:
		if (s == ARF_NET_VERBS_CS_IDLE)
			return ARF_NET_VERBS_CS_ADDR;
		break;
	case ARF_NET_VERBS_EV_ADDR_RESOLVED:
		if (s == ARF_NET_VERBS_CS_ADDR)
			return ARF_NET_VERBS_CS_ROUTE;
		break;
	case ARF_NET_VERBS_EV_ROUTE_RESOLVED:
		if (s == ARF_NET_VERBS_CS_ROUTE)
			return ARF_NET_VERBS_CS_CONNECTING;
		break;
	case ARF_NET_VERBS_EV_CONNECT_REQUEST:
		if (s == ARF_NET_VERBS_CS_IDLE)
			return ARF_NET_VERBS_CS_ACCEPTING;
		break;
	case ARF_NET_VERBS_EV_ESTABLISHED:
		if (s == ARF_NET_VERBS_CS_CONNECTING || s == ARF_NET_VERBS_CS_ACCEPTING)
			return ARF_NET_VERBS_CS_ESTABLISHED;
		break;
	case ARF_NET_VERBS_EV_REJECTED:
		*err = -ECONNREFUSED;
		return ARF_NET_VERBS_CS_FAILED;
	case ARF_NET_VERBS_EV_ERROR:
		*err = s == ARF_NET_VERBS_CS_ADDR || s == ARF_NET_VERBS_CS_ROUTE ? -EHOSTUNREACH
										  : -ECONNRESET;
		return ARF_NET_VERBS_CS_FAILED;
	case ARF_NET_VERBS_EV_DEVICE_REMOVAL:
		*err = -ENODEV;
		return ARF_NET_VERBS_CS_FAILED;
	case ARF_NET_VERBS_EV_QP_ERROR:
		*err = -ECONNRESET;
		return ARF_NET_VERBS_CS_FAILED;
	case ARF_NET_VERBS_EV_DISCONNECTED:
	case ARF_NET_VERBS_EV_LOCAL_CLOSE:
		if (s != ARF_NET_VERBS_CS_ESTABLISHED)
			*err = -ECONNRESET;
		return ARF_NET_VERBS_CS_CLOSED;
	case ARF_NET_VERBS_EV_OTHER:
		return s;
	}
	*err = -EPROTO;
	return ARF_NET_VERBS_CS_FAILED;
}

enum arf_net_verbs_cevent arf_net_verbs_cm_event(int t)
{
	/* enum rdma_cm_event_type (rdma_cma.h); verbs.c asserts the numbers */
	switch (t) {
	case 0: return ARF_NET_VERBS_EV_ADDR_RESOLVED;   /* ADDR_RESOLVED */
	case 1: return ARF_NET_VERBS_EV_ERROR;           /* ADDR_ERROR */
	case 2: return ARF_NET_VERBS_EV_ROUTE_RESOLVED;  /* ROUTE_RESOLVED */
	case 3: return ARF_NET_VERBS_EV_ERROR;           /* ROUTE_ERROR */
	case 4: return ARF_NET_VERBS_EV_CONNECT_REQUEST; /* CONNECT_REQUEST */
	case 5: return ARF_NET_VERBS_EV_OTHER;           /* CONNECT_RESPONSE (no QP only) */
	case 6: return ARF_NET_VERBS_EV_ERROR;           /* CONNECT_ERROR */
	case 7: return ARF_NET_VERBS_EV_ERROR;           /* UNREACHABLE */
	case 8: return ARF_NET_VERBS_EV_REJECTED;        /* REJECTED */
	case 9: return ARF_NET_VERBS_EV_ESTABLISHED;     /* ESTABLISHED */
	case 10: return ARF_NET_VERBS_EV_DISCONNECTED;   /* DISCONNECTED */
	case 11: return ARF_NET_VERBS_EV_DEVICE_REMOVAL; /* DEVICE_REMOVAL */
	default: return ARF_NET_VERBS_EV_OTHER;          /* multicast, timewait, addr change */
	}
}

const char *arf_net_verbs_cstate_name(enum arf_net_verbs_cstate s)
{
	static const char *const names[] = { "idle", "resolving address", "resolving route",
					     "connecting", "accepting", "established", "closed",
					     "failed" };
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

#ifndef ARF_HAVE_VERBS
/* Built without rdma-core: the transport does not exist here (verbs.c
 * defines the real one). */
int arf_net_rdma_available(char *why, size_t len)
{
	if (why && len)
		snprintf(why, len, "built without rdma-core (libibverbs-dev, librdmacm-dev)");
	return 0;
}
#endif

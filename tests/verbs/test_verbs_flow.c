/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the verbs transport's device-free half (net/verbs_flow.c),
 * run on every machine: the message header and frame packing into
 * fixed-size buffers (a stream of frames of many sizes survives being cut
 * into buffers and glued back), the connection private data, the rkey
 * table and the HELLO reply's region list, the client-side region check
 * (key, rights, bounds with overflow, atomic alignment), credit flow
 * control (its rules, and a two-peer simulation with stalling readers that
 * checks no message ever lands without a posted buffer and that neither
 * side deadlocks), the completion table (generations, stale completions,
 * send-queue accounting, error mapping), the adaptive wait machine, the
 * read planner, and the connection state machine.  Last, the selection
 * seen from outside on a machine without a device: rdma says plainly why it
 * is unavailable, a server asked for rdma fails with that reason, and one
 * not asked for rdma starts as before.
 */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net_int.h"
#include "verbs_int.h"

/* ------------------------------------------------------------ packing */

static void test_pack_header(void **state)
{
	(void)state;
	uint8_t buf[64], src[100];
	struct arf_net_verbs_msg m;
	const uint8_t *pl;

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)i;
	size_t took = arf_net_verbs_pack(buf, sizeof(buf), ARF_NET_VERBS_DATA, 7, src, sizeof(src));
	assert_int_equal(took, sizeof(buf) - ARF_NET_VERBS_MSG_HDR);
	assert_int_equal(arf_net_verbs_unpack(buf, ARF_NET_VERBS_MSG_HDR + took, &m, &pl), 0);
	assert_int_equal(m.len, took);
	assert_int_equal(m.credits, 7);
	assert_int_equal(m.kind, ARF_NET_VERBS_DATA);
	assert_memory_equal(pl, src, took);
	/* little-endian on the wire */
	assert_int_equal(buf[0], (uint8_t)took);
	assert_int_equal(buf[4], 7);

	/* CREDIT never carries bytes, even when offered some */
	took = arf_net_verbs_pack(buf, sizeof(buf), ARF_NET_VERBS_CREDIT, 3, src, 10);
	assert_int_equal(took, 0);
	assert_int_equal(arf_net_verbs_unpack(buf, ARF_NET_VERBS_MSG_HDR, &m, &pl), 0);
	assert_int_equal(m.kind, ARF_NET_VERBS_CREDIT);
	assert_int_equal(m.credits, 3);

	/* a buffer smaller than the header takes nothing */
	assert_int_equal(arf_net_verbs_pack(buf, 4, ARF_NET_VERBS_DATA, 0, src, 10), 0);
}

static void test_unpack_rejects(void **state)
{
	(void)state;
	uint8_t buf[64] = { 0 };
	struct arf_net_verbs_msg m;
	const uint8_t *pl;

	assert_int_equal(arf_net_verbs_unpack(buf, 7, &m, &pl), ARF_EPROTO); /* short */
	arf_net_verbs_pack(buf, sizeof(buf), ARF_NET_VERBS_DATA, 0, (const uint8_t *)"abcdef", 6);
	assert_int_equal(arf_net_verbs_unpack(buf, 8 + 5, &m, &pl), ARF_EPROTO); /* len > got */
	assert_int_equal(arf_net_verbs_unpack(buf, 8 + 7, &m, &pl), ARF_EPROTO); /* len < got */
	assert_int_equal(arf_net_verbs_unpack(buf, 8 + 6, &m, &pl), 0);
	buf[6] = 99; /* unknown kind */
	assert_int_equal(arf_net_verbs_unpack(buf, 8 + 6, &m, &pl), ARF_EPROTO);
	buf[6] = ARF_NET_VERBS_CREDIT; /* CREDIT with a payload */
	assert_int_equal(arf_net_verbs_unpack(buf, 8 + 6, &m, &pl), ARF_EPROTO);
	buf[6] = 0;
	assert_int_equal(arf_net_verbs_unpack(buf, 8 + 6, &m, &pl), ARF_EPROTO);
}

static size_t put_frame(uint8_t *out, uint64_t id, uint32_t body_len)
{
	struct arf_net_hdr h = { .len = (uint32_t)sizeof(h) + body_len, .op = 0x101, .id = id,
				 .aux = body_len };
	uint8_t hb[24];
	uint32_t v32 = htole32(h.len);
	uint16_t v16 = htole16(h.op);
	uint64_t v64 = htole64(h.id);
	memset(hb, 0, sizeof(hb));
	memcpy(hb, &v32, 4);
	memcpy(hb + 4, &v16, 2);
	memcpy(hb + 8, &v64, 8);
	v32 = htole32(h.aux);
	memcpy(hb + 20, &v32, 4);
	memcpy(out, hb, 24);
	for (uint32_t i = 0; i < body_len; i++)
		out[24 + i] = (uint8_t)(id * 31 + i);
	return h.len;
}

/* A stream of frames (tiny ones, one exactly filling a buffer, several
 * larger than a buffer) packed into fixed-size buffers and glued back
 * comes out byte for byte, every frame whole and in order; small frames
 * share a buffer. */
static void test_pack_stream(void **state)
{
	(void)state;
	static const uint32_t bodies[] = { 0, 1, 5, 1000, 4096 - 8 - 24, 0, 70000, 3, 16383, 0, 9 };
	const size_t nf = sizeof(bodies) / sizeof(bodies[0]);
	const size_t cap = 4096;
	size_t total = 0;
	for (size_t i = 0; i < nf; i++)
		total += 24 + bodies[i];
	uint8_t *stream = malloc(total), *glued = malloc(total), *buf = malloc(cap);
	assert_non_null(stream);
	assert_non_null(glued);
	assert_non_null(buf);
	size_t off = 0;
	for (size_t i = 0; i < nf; i++)
		off += put_frame(stream + off, i + 1, bodies[i]);
	assert_int_equal(off, total);

	size_t sent = 0, got = 0, msgs = 0;
	while (sent < total) {
		size_t took = arf_net_verbs_pack(buf, cap, ARF_NET_VERBS_DATA, 0, stream + sent,
						 total - sent);
		assert_true(took > 0);
		struct arf_net_verbs_msg m;
		const uint8_t *pl;
		assert_int_equal(arf_net_verbs_unpack(buf, ARF_NET_VERBS_MSG_HDR + took, &m, &pl), 0);
		memcpy(glued + got, pl, m.len);
		got += m.len;
		sent += took;
		msgs++;
	}
	assert_int_equal(got, total);
	assert_memory_equal(glued, stream, total);
	/* fewer messages than frames + the big ones' pieces would need if
	 * every frame took a buffer of its own */
	size_t per_frame = 0;
	for (size_t i = 0; i < nf; i++)
		per_frame += (24 + bodies[i] + cap - 8 - 1) / (cap - 8);
	assert_true(msgs < per_frame);
	assert_int_equal(msgs, (total + cap - 8 - 1) / (cap - 8));
	/* parse the frames back */
	off = 0;
	for (size_t i = 0; i < nf; i++) {
		struct arf_net_hdr h;
		arf_net_hdr_decode(glued + off, &h);
		assert_int_equal(h.len, 24 + bodies[i]);
		assert_int_equal(h.id, i + 1);
		off += h.len;
	}
	free(stream);
	free(glued);
	free(buf);
}

/* ------------------------------------------------------------ pdata, rkeys */

static void test_pdata(void **state)
{
	(void)state;
	struct arf_net_verbs_pdata p = { .depth = 64, .buf_size = 16384, .flags = 0 }, q;
	uint8_t b[16];

	arf_net_verbs_pdata_encode(&p, b);
	assert_int_equal(arf_net_verbs_pdata_decode(b, sizeof(b), &q), 0);
	assert_int_equal(q.depth, 64);
	assert_int_equal(q.buf_size, 16384);
	/* iWARP/IB may hand back more private data than was sent: fine */
	uint8_t big[56] = { 0 };
	memcpy(big, b, 16);
	assert_int_equal(arf_net_verbs_pdata_decode(big, sizeof(big), &q), 0);
	assert_int_equal(arf_net_verbs_pdata_decode(b, 15, &q), ARF_EPROTO);
	assert_int_equal(arf_net_verbs_pdata_decode(NULL, 0, &q), ARF_EPROTO);
	uint8_t bad[16];
	memcpy(bad, b, 16);
	bad[0] ^= 1;
	assert_int_equal(arf_net_verbs_pdata_decode(bad, 16, &q), ARF_EPROTO); /* magic */
	memcpy(bad, b, 16);
	bad[4] = 2;
	assert_int_equal(arf_net_verbs_pdata_decode(bad, 16, &q), ARF_EVERSION);
	p.depth = 1;
	arf_net_verbs_pdata_encode(&p, b);
	assert_int_equal(arf_net_verbs_pdata_decode(b, 16, &q), ARF_EPROTO);
	p.depth = ARF_NET_VERBS_MAX_DEPTH + 1;
	arf_net_verbs_pdata_encode(&p, b);
	assert_int_equal(arf_net_verbs_pdata_decode(b, 16, &q), ARF_EPROTO);
	p.depth = 8;
	p.buf_size = 100;
	arf_net_verbs_pdata_encode(&p, b);
	assert_int_equal(arf_net_verbs_pdata_decode(b, 16, &q), ARF_EPROTO);
	p.buf_size = ARF_NET_VERBS_MAX_BUF + 1;
	arf_net_verbs_pdata_encode(&p, b);
	assert_int_equal(arf_net_verbs_pdata_decode(b, 16, &q), ARF_EPROTO);
}

static void test_rkeys(void **state)
{
	(void)state;
	struct arf_net_verbs_rkey k[3] = { { 0, 0x1234, 0x7f0000001000ull },
					   { 2, 0xdeadbeef, 0x7f0000200000ull },
					   { 5, 1, 8 } },
				  out[ARF_NET_MAX_REGIONS];
	uint8_t b[4 + 16 * ARF_NET_MAX_REGIONS];

	size_t len = arf_net_verbs_rkeys_encode(k, 3, b, sizeof(b));
	assert_int_equal(len, 4 + 48);
	assert_int_equal(arf_net_verbs_rkeys_decode(b, len, out, ARF_NET_MAX_REGIONS), 3);
	assert_memory_equal(out, k, sizeof(k));
	assert_int_equal(arf_net_verbs_rkeys_encode(k, 3, b, 51), 0); /* too small */
	assert_int_equal(arf_net_verbs_rkeys_decode(b, len - 1, out, 16), ARF_EPROTO);
	assert_int_equal(arf_net_verbs_rkeys_decode(b, len + 16, out, 16), ARF_EPROTO);
	assert_int_equal(arf_net_verbs_rkeys_decode(b, len, out, 2), ARF_EPROTO); /* n > max */
	assert_int_equal(arf_net_verbs_rkeys_decode(b, 3, out, 16), ARF_EPROTO);
	len = arf_net_verbs_rkeys_encode(k, 0, b, sizeof(b)); /* a grant of nothing */
	assert_int_equal(len, 4);
	assert_int_equal(arf_net_verbs_rkeys_decode(b, len, out, 16), 0);
}

static void test_hello_regions(void **state)
{
	(void)state;
	uint8_t b[4 + 2 * 24 + 4 + 3];
	uint32_t ids[16], flags[16], v;

	memset(b, 0, sizeof(b));
	v = htole32(2);
	memcpy(b, &v, 4);
	v = htole32(7);
	memcpy(b + 4, &v, 4);
	v = htole32(ARF_NET_REGION_WRITABLE);
	memcpy(b + 4 + 24 + 4, &v, 4);
	v = htole32(9);
	memcpy(b + 4 + 24, &v, 4);
	assert_int_equal(arf_net_verbs_hello_regions(b, sizeof(b), ids, flags, 16), 2);
	assert_int_equal(ids[0], 7);
	assert_int_equal(flags[0], 0);
	assert_int_equal(ids[1], 9);
	assert_int_equal(flags[1], ARF_NET_REGION_WRITABLE);
	assert_int_equal(arf_net_verbs_hello_regions(b, 4 + 24, ids, flags, 16), ARF_EPROTO);
	assert_int_equal(arf_net_verbs_hello_regions(b, sizeof(b), ids, flags, 1), ARF_EPROTO);
	assert_int_equal(arf_net_verbs_hello_regions(b, 3, ids, flags, 16), ARF_EPROTO);
	v = htole32(0); /* no grant: no regions */
	memcpy(b, &v, 4);
	assert_int_equal(arf_net_verbs_hello_regions(b, 8, ids, flags, 16), 0);
}

static void test_check(void **state)
{
	(void)state;
	struct arf_net_verbs_rregion r[2] = {
		{ .id = 0, .flags = 0, .size = 4096, .key = 111, .has_rkey = 1 },
		{ .id = 2, .flags = ARF_NET_REGION_WRITABLE, .size = 64, .key = 222, .has_rkey = 1 },
	};
	assert_ptr_equal(arf_net_verbs_check(r, 2, 0, 0, 0, 4096, 0, 0), &r[0]);
	assert_ptr_equal(arf_net_verbs_check(r, 2, 0, 111, 4095, 1, 0, 0), &r[0]);
	assert_null(arf_net_verbs_check(r, 2, 0, 112, 0, 1, 0, 0));          /* key */
	assert_null(arf_net_verbs_check(r, 2, 0, 0, 4096, 1, 0, 0));         /* bounds */
	assert_null(arf_net_verbs_check(r, 2, 0, 0, UINT64_MAX - 2, 8, 0, 0)); /* overflow */
	assert_null(arf_net_verbs_check(r, 2, 0, 0, 0, 8, 1, 0));            /* read-only */
	assert_null(arf_net_verbs_check(r, 2, 1, 0, 0, 8, 0, 0));            /* no region 1 */
	assert_ptr_equal(arf_net_verbs_check(r, 2, 2, 0, 56, 8, 1, 1), &r[1]);
	assert_null(arf_net_verbs_check(r, 2, 2, 0, 4, 8, 1, 1));            /* misaligned */
	assert_null(arf_net_verbs_check(r, 2, 2, 0, 0, 4, 1, 1));            /* not 8 bytes */
	assert_null(arf_net_verbs_check(r, 2, 2, 0, 64, 8, 1, 1));           /* past the end */
	assert_ptr_equal(arf_net_verbs_check(r, 2, 2, 222, 0, 64, 1, 0), &r[1]);
	assert_ptr_equal(arf_net_verbs_check(r, 2, 2, 0, 64, 0, 1, 0), &r[1]); /* empty write at end */
}

/* ------------------------------------------------------------ credits */

static void test_credit_rules(void **state)
{
	(void)state;
	struct arf_net_verbs_credits cr;

	arf_net_verbs_credits_init(&cr, 8, 4);
	assert_int_equal(cr.tx, 4);
	assert_true(arf_net_verbs_can_send_data(&cr));
	assert_int_equal(arf_net_verbs_take(&cr, ARF_NET_VERBS_DATA), 0);
	assert_int_equal(arf_net_verbs_take(&cr, ARF_NET_VERBS_DATA), 0);
	assert_int_equal(arf_net_verbs_take(&cr, ARF_NET_VERBS_DATA), 0);
	assert_int_equal(cr.tx, 1);
	/* the last credit is kept for a CREDIT message */
	assert_false(arf_net_verbs_can_send_data(&cr));
	assert_int_equal(arf_net_verbs_take(&cr, ARF_NET_VERBS_DATA), -EAGAIN);
	assert_int_equal(arf_net_verbs_take(&cr, ARF_NET_VERBS_RKEYS), -EAGAIN);
	assert_false(arf_net_verbs_credit_due(&cr)); /* nothing owed */
	/* we consumed and re-posted 3 of ours: not yet half of 8 */
	assert_int_equal(arf_net_verbs_reposted(&cr, 3), 0);
	assert_false(arf_net_verbs_credit_due(&cr));
	assert_int_equal(arf_net_verbs_reposted(&cr, 1), 0);
	assert_true(arf_net_verbs_credit_due(&cr));
	assert_int_equal(arf_net_verbs_take(&cr, ARF_NET_VERBS_CREDIT), 4); /* carries all owed */
	assert_int_equal(cr.owed, 0);
	assert_int_equal(cr.tx, 0);
	assert_int_equal(arf_net_verbs_take(&cr, ARF_NET_VERBS_CREDIT), -EAGAIN);
	/* the peer gives back what we used: no more than its depth */
	assert_int_equal(arf_net_verbs_returned(&cr, 5), ARF_EPROTO);
	assert_int_equal(arf_net_verbs_returned(&cr, 4), 0);
	assert_int_equal(arf_net_verbs_returned(&cr, 1), ARF_EPROTO);
	assert_int_equal(cr.tx, 4);
	/* owing more than we have buffers is a bug of ours */
	assert_int_equal(arf_net_verbs_reposted(&cr, 8), 0);
	assert_int_equal(arf_net_verbs_reposted(&cr, 1), ARF_EPROTO);
	/* owed credits ride on data too */
	assert_int_equal(arf_net_verbs_take(&cr, ARF_NET_VERBS_DATA), 8);
	assert_int_equal(cr.owed, 0);
}

/* Two peers, each with a receive queue, a sender that always has data (or
 * sometimes none) and a reader that sometimes stalls (holding buffers).
 * Messages travel through an in-order link with random delay.  Checked at
 * every step: no message arrives without a posted buffer, credits never
 * exceed the depth, and, whenever both readers run, traffic keeps flowing
 * both ways (no deadlock). */
struct sim_peer {
	struct arf_net_verbs_credits cr;
	uint32_t posted;       /* receive buffers posted now */
	uint32_t held;         /* received data buffers the reader has not consumed */
	uint64_t sent_data, got_data;
};
struct sim_msg {
	uint16_t kind, credits;
};
#define SIM_LINK 256

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

static void sim_run(uint32_t da, uint32_t db, int steps)
{
	struct sim_peer p[2];
	struct sim_msg link[2][SIM_LINK]; /* link[i]: messages from i to 1-i */
	size_t head[2] = { 0, 0 }, n[2] = { 0, 0 };
	uint32_t depth[2] = { da, db };

	for (int i = 0; i < 2; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		arf_net_verbs_credits_init(&p[i].cr, depth[i], depth[1 - i]);
		p[i].posted = depth[i];
	}
	uint64_t last_a = 0, last_b = 0;
	for (int step = 0; step < steps; step++) {
		int stall = step % 4000 < 1000; /* readers stall for a while, then run */
		for (int i = 0; i < 2; i++) {
			struct sim_peer *me = &p[i];
			/* reader: consume held buffers unless stalled */
			if (!stall && me->held) {
				uint32_t k = 1 + rnd() % me->held;
				me->held -= k;
				me->posted += k;
				assert_int_equal(arf_net_verbs_reposted(&me->cr, k), 0);
			}
			/* sender: data most of the time, credit when due */
			int want_data = rnd() % 8 != 0;
			uint16_t kind = 0;
			if (want_data && arf_net_verbs_can_send_data(&me->cr))
				kind = ARF_NET_VERBS_DATA;
			else if (arf_net_verbs_credit_due(&me->cr))
				kind = ARF_NET_VERBS_CREDIT;
			if (kind && n[i] < SIM_LINK) {
				int c = arf_net_verbs_take(&me->cr, kind);
				assert_true(c >= 0);
				size_t slot = (head[i] + n[i]) % SIM_LINK;
				link[i][slot] = (struct sim_msg){ kind, (uint16_t)c };
				n[i]++;
				if (kind == ARF_NET_VERBS_DATA)
					me->sent_data++;
			}
			/* the link delivers some of what is in flight, in order */
			uint32_t deliver = n[i] ? rnd() % (uint32_t)(n[i] + 1) : 0;
			struct sim_peer *peer = &p[1 - i];
			while (deliver--) {
				struct sim_msg m = link[i][head[i]];
				head[i] = (head[i] + 1) % SIM_LINK;
				n[i]--;
				/* the heart of it: a buffer must be posted */
				assert_true(peer->posted > 0);
				peer->posted--;
				assert_int_equal(arf_net_verbs_returned(&peer->cr, m.credits), 0);
				if (m.kind == ARF_NET_VERBS_DATA) {
					peer->held++;
					peer->got_data++;
				} else {
					peer->posted++; /* CREDIT: re-posted at once */
					assert_int_equal(arf_net_verbs_reposted(&peer->cr, 1), 0);
				}
			}
			assert_true(me->cr.tx <= me->cr.peer_depth);
			assert_true(me->cr.owed <= me->cr.depth);
		}
		/* liveness: every running phase moves data both ways */
		if (step % 4000 == 3999) {
			assert_true(p[0].got_data > last_a);
			assert_true(p[1].got_data > last_b);
			last_a = p[0].got_data;
			last_b = p[1].got_data;
		}
	}
	assert_true(p[0].got_data > 1000 && p[1].got_data > 1000);
}

static void test_credit_simulation(void **state)
{
	(void)state;
	sim_run(64, 64, 40000);
	sim_run(2, 2, 40000);   /* the smallest queues allowed */
	sim_run(2, 64, 40000);  /* lopsided */
	sim_run(3, 5, 40000);
}

/* ------------------------------------------------------------ completions */

static void test_optab(void **state)
{
	(void)state;
	struct arf_net_verbs_optab t;
	int err;

	assert_int_equal(arf_net_verbs_optab_init(&t, 4, 10), 0);
	uint64_t a = arf_net_verbs_op_take(&t, 6);
	assert_true(a != 0);
	assert_int_equal(t.sq_used, 6);
	assert_int_equal(arf_net_verbs_op_take(&t, 5), 0);  /* no send-queue room */
	assert_int_equal(arf_net_verbs_op_take(&t, 0), 0);  /* nothing to post */
	assert_int_equal(arf_net_verbs_op_take(&t, 11), 0); /* never fits */
	uint64_t b = arf_net_verbs_op_take(&t, 4);
	assert_true(b != 0 && b != a);
	assert_int_equal(arf_net_verbs_op_state(&t, a, NULL), ARF_NET_VERBS_OP_POSTED);

	/* a good completion ends a, frees its send-queue slots */
	assert_int_equal(arf_net_verbs_op_complete(&t, a, ARF_NET_VERBS_WC_SUCCESS), 1);
	assert_int_equal(arf_net_verbs_op_state(&t, a, NULL), ARF_NET_VERBS_OP_DONE);
	assert_int_equal(t.sq_used, 4);
	/* a second one for it (a flushed unsignalled request) is ignored */
	assert_int_equal(arf_net_verbs_op_complete(&t, a, ARF_NET_VERBS_WC_WR_FLUSH_ERR), 0);
	assert_int_equal(arf_net_verbs_op_state(&t, a, NULL), ARF_NET_VERBS_OP_DONE);
	arf_net_verbs_op_release(&t, a);
	assert_int_equal(arf_net_verbs_op_state(&t, a, NULL), ARF_NET_VERBS_OP_FREE);

	/* the slot is reused with a new generation: a's late completion
	 * cannot touch its new owner */
	uint64_t c = arf_net_verbs_op_take(&t, 1);
	assert_true(c != 0);
	uint64_t stale0 = t.stale;
	assert_int_equal(arf_net_verbs_op_complete(&t, a, ARF_NET_VERBS_WC_SUCCESS), 0);
	assert_int_equal(t.stale, stale0 + 1);
	assert_int_equal(arf_net_verbs_op_state(&t, c, NULL), ARF_NET_VERBS_OP_POSTED);

	/* a failed piece: remote access -> ARF_EKEY */
	assert_int_equal(arf_net_verbs_op_complete(&t, b, ARF_NET_VERBS_WC_REM_ACCESS_ERR), 1);
	err = 0;
	assert_int_equal(arf_net_verbs_op_state(&t, b, &err), ARF_NET_VERBS_OP_FAILED);
	assert_int_equal(err, ARF_EKEY);
	arf_net_verbs_op_release(&t, b);

	/* abandoning a posted piece (timeout) keeps its send-queue slots */
	uint32_t used = t.sq_used;
	arf_net_verbs_op_release(&t, c);
	assert_int_equal(t.sq_used, used);
	assert_int_equal(arf_net_verbs_op_complete(&t, c, ARF_NET_VERBS_WC_SUCCESS), 0);

	/* garbage wr_ids are stale, not crashes */
	assert_int_equal(arf_net_verbs_op_complete(&t, 0, 0), 0);
	assert_int_equal(arf_net_verbs_op_complete(&t, 0xffffffffffffffffull, 0), 0);
	assert_int_equal(arf_net_verbs_op_state(&t, 12345, NULL), ARF_NET_VERBS_OP_FREE);

	/* every slot taken: no more */
	arf_net_verbs_optab_free(&t);
	assert_int_equal(arf_net_verbs_optab_init(&t, 2, 100), 0);
	assert_true(arf_net_verbs_op_take(&t, 1));
	assert_true(arf_net_verbs_op_take(&t, 1));
	assert_int_equal(arf_net_verbs_op_take(&t, 1), 0);
	arf_net_verbs_optab_free(&t);
	assert_int_equal(arf_net_verbs_optab_init(&t, 0, 1), -EINVAL);
}

static void test_optab_generations(void **state)
{
	(void)state;
	struct arf_net_verbs_optab t;
	assert_int_equal(arf_net_verbs_optab_init(&t, 1, 1), 0);
	/* many rounds through one slot: wr_id never 0, never repeats soon */
	uint64_t prev = 0;
	for (int i = 0; i < 100000; i++) {
		uint64_t id = arf_net_verbs_op_take(&t, 1);
		assert_true(id != 0);
		assert_true(id != prev);
		assert_int_equal(arf_net_verbs_op_complete(&t, id, 0), 1);
		assert_int_equal(arf_net_verbs_op_complete(&t, prev, 0), 0);
		arf_net_verbs_op_release(&t, id);
		prev = id;
	}
	arf_net_verbs_optab_free(&t);
}

static void test_wc_err(void **state)
{
	(void)state;
	assert_int_equal(arf_net_verbs_wc_err(ARF_NET_VERBS_WC_SUCCESS), 0);
	assert_int_equal(arf_net_verbs_wc_err(ARF_NET_VERBS_WC_REM_ACCESS_ERR), ARF_EKEY);
	assert_int_equal(arf_net_verbs_wc_err(ARF_NET_VERBS_WC_REM_INV_REQ_ERR), ARF_EKEY);
	assert_int_equal(arf_net_verbs_wc_err(ARF_NET_VERBS_WC_RETRY_EXC_ERR), -ETIMEDOUT);
	assert_int_equal(arf_net_verbs_wc_err(ARF_NET_VERBS_WC_RNR_RETRY_EXC_ERR), -ETIMEDOUT);
	assert_int_equal(arf_net_verbs_wc_err(ARF_NET_VERBS_WC_WR_FLUSH_ERR), -ECONNRESET);
	assert_int_equal(arf_net_verbs_wc_err(ARF_NET_VERBS_WC_LOC_PROT_ERR), -EIO);
	assert_int_equal(arf_net_verbs_wc_err(ARF_NET_VERBS_WC_REM_OP_ERR), -EIO);
	assert_int_equal(arf_net_verbs_wc_err(999), -EIO);
}

/* ------------------------------------------------------------ waiting */

static void test_wait_machine(void **state)
{
	(void)state;
	struct arf_net_verbs_wait w;

	arf_net_verbs_wait_init(&w, 100, 1000);
	assert_int_equal(arf_net_verbs_wait_next(&w, 0, 1000), ARF_NET_VERBS_POLL);
	assert_int_equal(arf_net_verbs_wait_next(&w, 0, 1099), ARF_NET_VERBS_POLL);
	/* spun spin_us with nothing: arm, then poll once more */
	assert_int_equal(arf_net_verbs_wait_next(&w, 0, 1100), ARF_NET_VERBS_ARM);
	/* that poll found nothing: only now may it sleep */
	assert_int_equal(arf_net_verbs_wait_next(&w, 0, 1101), ARF_NET_VERBS_BLOCK);
	assert_int_equal(arf_net_verbs_wait_next(&w, 0, 5000), ARF_NET_VERBS_BLOCK);
	/* woken: poll and spin again */
	arf_net_verbs_wait_woken(&w, 9000);
	assert_int_equal(arf_net_verbs_wait_next(&w, 0, 9050), ARF_NET_VERBS_POLL);
	/* a completion resets the idle clock */
	assert_int_equal(arf_net_verbs_wait_next(&w, 3, 9099), ARF_NET_VERBS_POLL);
	assert_int_equal(arf_net_verbs_wait_next(&w, 0, 9150), ARF_NET_VERBS_POLL);
	assert_int_equal(arf_net_verbs_wait_next(&w, 0, 9199), ARF_NET_VERBS_ARM);
	/* the re-poll after arming found something: keep polling (the armed
	 * notification will fire harmlessly) */
	assert_int_equal(arf_net_verbs_wait_next(&w, 1, 9200), ARF_NET_VERBS_POLL);

	/* spin_us 0: never spin, arm at once */
	arf_net_verbs_wait_init(&w, 0, 0);
	assert_int_equal(arf_net_verbs_wait_next(&w, 0, 0), ARF_NET_VERBS_ARM);
	assert_int_equal(arf_net_verbs_wait_next(&w, 0, 0), ARF_NET_VERBS_BLOCK);
}

/* ------------------------------------------------------------ plan */

static void test_plan(void **state)
{
	(void)state;
	struct arf_net_verbs_piece pc[8];
	struct arf_net_verbs_cursor cur = { 0, 0 };
	const uint32_t lens[] = { 10, 0, 300, 5, 0 };
	uint64_t covered[5] = { 0 };
	size_t np, rounds = 0;

	while ((np = arf_net_verbs_plan(lens, 5, &cur, 128, pc, 8))) {
		uint64_t used = 0;
		rounds++;
		for (size_t k = 0; k < np; k++) {
			assert_true(pc[k].len > 0);
			assert_int_equal(pc[k].stage_off, used); /* packed in staging */
			assert_int_equal(pc[k].op_off, covered[pc[k].op]); /* in order */
			covered[pc[k].op] += pc[k].len;
			used += pc[k].len;
		}
		assert_true(used <= 128);
	}
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(covered[i], lens[i]);
	assert_int_equal(rounds, 3); /* 315 bytes through 128 of staging */
	assert_int_equal(cur.op, 5);

	/* the piece limit cuts a round too */
	const uint32_t many[] = { 1, 1, 1, 1, 1 };
	cur = (struct arf_net_verbs_cursor){ 0, 0 };
	assert_int_equal(arf_net_verbs_plan(many, 5, &cur, 1 << 20, pc, 2), 2);
	assert_int_equal(arf_net_verbs_plan(many, 5, &cur, 1 << 20, pc, 2), 2);
	assert_int_equal(arf_net_verbs_plan(many, 5, &cur, 1 << 20, pc, 2), 1);
	assert_int_equal(pc[0].op, 4);
	assert_int_equal(arf_net_verbs_plan(many, 5, &cur, 1 << 20, pc, 2), 0);

	/* nothing but empty reads: nothing to post */
	const uint32_t none[] = { 0, 0 };
	cur = (struct arf_net_verbs_cursor){ 0, 0 };
	assert_int_equal(arf_net_verbs_plan(none, 2, &cur, 64, pc, 8), 0);
	assert_int_equal(cur.op, 2);
}

/* ------------------------------------------------------------ connection */

static void test_conn_client(void **state)
{
	(void)state;
	enum arf_net_verbs_cstate s = ARF_NET_VERBS_CS_IDLE;
	int err;

	s = arf_net_verbs_conn_next(s, ARF_NET_VERBS_EV_RESOLVE, &err);
	assert_int_equal(s, ARF_NET_VERBS_CS_ADDR);
	s = arf_net_verbs_conn_next(s, arf_net_verbs_cm_event(0), &err); /* ADDR_RESOLVED */
	assert_int_equal(s, ARF_NET_VERBS_CS_ROUTE);
	s = arf_net_verbs_conn_next(s, arf_net_verbs_cm_event(2), &err); /* ROUTE_RESOLVED */
	assert_int_equal(s, ARF_NET_VERBS_CS_CONNECTING);
	s = arf_net_verbs_conn_next(s, arf_net_verbs_cm_event(14), &err); /* TIMEWAIT_EXIT: ignored */
	assert_int_equal(s, ARF_NET_VERBS_CS_CONNECTING);
	s = arf_net_verbs_conn_next(s, arf_net_verbs_cm_event(9), &err); /* ESTABLISHED */
	assert_int_equal(s, ARF_NET_VERBS_CS_ESTABLISHED);
	assert_int_equal(err, 0);
	s = arf_net_verbs_conn_next(s, arf_net_verbs_cm_event(10), &err); /* DISCONNECTED */
	assert_int_equal(s, ARF_NET_VERBS_CS_CLOSED);
	assert_int_equal(err, 0);
	/* final: nothing moves it */
	s = arf_net_verbs_conn_next(s, ARF_NET_VERBS_EV_ESTABLISHED, &err);
	assert_int_equal(s, ARF_NET_VERBS_CS_CLOSED);
}

static void test_conn_errors(void **state)
{
	(void)state;
	int err;

	/* rejected: refused */
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_CONNECTING,
						 arf_net_verbs_cm_event(8), &err),
			 ARF_NET_VERBS_CS_FAILED);
	assert_int_equal(err, -ECONNREFUSED);
	/* no RDMA route to the address */
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_ADDR, arf_net_verbs_cm_event(1),
						 &err),
			 ARF_NET_VERBS_CS_FAILED);
	assert_int_equal(err, -EHOSTUNREACH);
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_ROUTE, arf_net_verbs_cm_event(3),
						 &err),
			 ARF_NET_VERBS_CS_FAILED);
	assert_int_equal(err, -EHOSTUNREACH);
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_CONNECTING,
						 arf_net_verbs_cm_event(7), &err),
			 ARF_NET_VERBS_CS_FAILED); /* UNREACHABLE */
	assert_int_equal(err, -ECONNRESET);
	/* hung up before it was up */
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_ACCEPTING,
						 ARF_NET_VERBS_EV_DISCONNECTED, &err),
			 ARF_NET_VERBS_CS_CLOSED);
	assert_int_equal(err, -ECONNRESET);
	/* the device went away */
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_ESTABLISHED,
						 arf_net_verbs_cm_event(11), &err),
			 ARF_NET_VERBS_CS_FAILED);
	assert_int_equal(err, -ENODEV);
	/* a completion in error */
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_ESTABLISHED,
						 ARF_NET_VERBS_EV_QP_ERROR, &err),
			 ARF_NET_VERBS_CS_FAILED);
	assert_int_equal(err, -ECONNRESET);
	/* events out of order */
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_IDLE,
						 ARF_NET_VERBS_EV_ESTABLISHED, &err),
			 ARF_NET_VERBS_CS_FAILED);
	assert_int_equal(err, -EPROTO);
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_ADDR,
						 ARF_NET_VERBS_EV_ROUTE_RESOLVED, &err),
			 ARF_NET_VERBS_CS_FAILED);
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_ESTABLISHED,
						 ARF_NET_VERBS_EV_CONNECT_REQUEST, &err),
			 ARF_NET_VERBS_CS_FAILED);
	/* local close of an established connection is a clean end */
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_ESTABLISHED,
						 ARF_NET_VERBS_EV_LOCAL_CLOSE, &err),
			 ARF_NET_VERBS_CS_CLOSED);
	assert_int_equal(err, 0);
	/* err may be NULL */
	assert_int_equal(arf_net_verbs_conn_next(ARF_NET_VERBS_CS_FAILED,
						 ARF_NET_VERBS_EV_ESTABLISHED, NULL),
			 ARF_NET_VERBS_CS_FAILED);
	assert_string_equal(arf_net_verbs_cstate_name(ARF_NET_VERBS_CS_ESTABLISHED), "established");
}

static void test_conn_server(void **state)
{
	(void)state;
	enum arf_net_verbs_cstate s = ARF_NET_VERBS_CS_IDLE;
	s = arf_net_verbs_conn_next(s, arf_net_verbs_cm_event(4), NULL); /* CONNECT_REQUEST */
	assert_int_equal(s, ARF_NET_VERBS_CS_ACCEPTING);
	s = arf_net_verbs_conn_next(s, arf_net_verbs_cm_event(9), NULL);
	assert_int_equal(s, ARF_NET_VERBS_CS_ESTABLISHED);
	assert_int_equal(arf_net_verbs_cm_event(5), ARF_NET_VERBS_EV_OTHER);
	assert_int_equal(arf_net_verbs_cm_event(6), ARF_NET_VERBS_EV_ERROR);
	assert_int_equal(arf_net_verbs_cm_event(1000), ARF_NET_VERBS_EV_OTHER);
}

/* ------------------------------------------------------------ selection */

static int want_device(void)
{
	char why[200];
	return arf_net_rdma_available(why, sizeof(why));
}

/* Without a device: one plain sentence, from every door. */
static void test_no_device(void **state)
{
	(void)state;
	char why[200], err[256];

	if (want_device())
		skip(); /* a machine with RDMA: tests/verbs' loopback covers it */
	assert_int_equal(arf_net_rdma_available(why, sizeof(why)), 0);
	assert_non_null(strstr(why, "built without rdma-core") ? why : strstr(why, "no RDMA device"));
	printf("rdma here: %s\n", why);
	assert_int_equal(arf_net_rdma_available(NULL, 0), 0);

	/* a server asked for rdma says so */
	struct arf_net_server_opts so = { .rdma_addr = "127.0.0.1", .rdma_port = 0 };
	struct arf_net_server *s = NULL;
	static uint8_t mem[4096];
	assert_int_equal(arf_net_server_create(&so, &s, err, sizeof(err)), 0);
	assert_int_equal(arf_net_server_add_region(s, 0, mem, sizeof(mem), -1, 0), 0);
	int rc = arf_net_server_start(s, err, sizeof(err));
	assert_true(rc == -ENODEV || rc == -EOPNOTSUPP);
	printf("server start with rdma: %s\n", err);
	assert_non_null(strstr(err, why));
	arf_net_server_destroy(s);

	/* one not asked for rdma starts as before */
	struct arf_net_server_opts to = { .listen_addr = "127.0.0.1", .port = 0 };
	assert_int_equal(arf_net_server_create(&to, &s, err, sizeof(err)), 0);
	assert_int_equal(arf_net_server_start(s, err, sizeof(err)), 0);
	assert_true(arf_net_server_port(s) != 0);
	assert_int_equal(arf_net_server_rdma_port(s), 0);
	/* a client asking for rdma is told why not, and tcp still works */
	struct arf_net_client_opts co = { .transport = "rdma", .host = "127.0.0.1",
					  .timeout_ms = 2000 };
	struct arf_net_conn *c = NULL;
	rc = arf_net_connect(&co, &c, err, sizeof(err));
	assert_true(rc == -ENODEV || rc == -EOPNOTSUPP);
	assert_null(c);
	printf("client connect over rdma: %s\n", err);
	assert_non_null(strstr(err, why));
	co.transport = "verbs";
	assert_int_equal(arf_net_connect(&co, &c, err, sizeof(err)), rc);
	co.transport = "tcp";
	co.port = arf_net_server_port(s);
	assert_int_equal(arf_net_connect(&co, &c, err, sizeof(err)), 0);
	assert_string_equal(arf_net_transport_name(c), "tcp");
	arf_net_close(c);
	co.transport = "carrier-pigeon";
	assert_int_equal(arf_net_connect(&co, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "rdma"));
	arf_net_server_destroy(s);

	/* rdma alone is a valid choice of what to serve */
	struct arf_net_server_opts ro = { .rdma_addr = "" };
	assert_int_equal(arf_net_server_create(&ro, &s, err, sizeof(err)), 0);
	arf_net_server_destroy(s);
	struct arf_net_server_opts none = { 0 };
	assert_int_equal(arf_net_server_create(&none, &s, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack_header),
		cmocka_unit_test(test_unpack_rejects),
		cmocka_unit_test(test_pack_stream),
		cmocka_unit_test(test_pdata),
		cmocka_unit_test(test_rkeys),
		cmocka_unit_test(test_hello_regions),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_credit_rules),
		cmocka_unit_test(test_credit_simulation),
		cmocka_unit_test(test_optab),
		cmocka_unit_test(test_optab_generations),
		cmocka_unit_test(test_wc_err),
		cmocka_unit_test(test_wait_machine),
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_conn_client),
		cmocka_unit_test(test_conn_errors),
		cmocka_unit_test(test_conn_server),
		cmocka_unit_test(test_no_device),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

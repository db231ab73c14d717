/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the request protocol codec: round trips of every message
 * part, and the decoder's refusal of truncated, oversized and malformed
 * bodies (every prefix of a valid body must fail cleanly).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arf_proto.h"

static void test_roundtrip(void **state)
{
	struct arf_proto_wr w;
	struct arf_proto_cred c = { 1000, 100, 2, { 5, 6 } }, c2;
	struct arf_proto_fh fh = { 42, 7 }, fh2;
	struct arf_proto_attr a, a2;
	struct arf_proto_setattr s = { 0xff, 0644, 1, 2, 1ull << 40, 5, 6 }, s2;
	(void)state;

	/* compared with memcmp below: the padding must be equal too */
	memset(&a, 0, sizeof(a));
	memset(&a2, 0, sizeof(a2));
	a.ino = 42;
	a.gen = 7;
	a.mode = 0100644;
	a.nlink = 1;
	a.uid = 1000;
	a.gid = 100;
	a.size = 12345;
	a.blocks = 24;
	a.atime_ns = -1;
	a.mtime_ns = 2;
	a.ctime_ns = 3;
	a.rdev = 0;
	arf_proto_wr_init(&w);
	arf_proto_put_cred(&w, &c);
	arf_proto_put_fh(&w, &fh);
	arf_proto_put_bytes(&w, "name", 4);
	arf_proto_put_attr(&w, &a);
	arf_proto_put_setattr(&w, &s);
	assert_int_equal(w.err, 0);

	struct arf_proto_rd r;
	uint32_t n;
	arf_proto_rd_init(&r, w.buf, w.len);
	arf_proto_get_cred(&r, &c2);
	arf_proto_get_fh(&r, &fh2);
	const char *name = arf_proto_get_name(&r, &n);
	arf_proto_get_attr(&r, &a2);
	arf_proto_get_setattr(&r, &s2);
	assert_true(arf_proto_rd_done(&r));
	assert_int_equal(c2.uid, 1000);
	assert_int_equal(c2.ngroups, 2);
	assert_int_equal(c2.groups[1], 6);
	assert_int_equal(fh2.ino, 42);
	assert_int_equal(n, 4);
	assert_memory_equal(name, "name", 4);
	assert_memory_equal(&a, &a2, sizeof(a));
	assert_memory_equal(&s, &s2, sizeof(s));

	/* every truncation fails without reading past the end */
	for (size_t cut = 0; cut < w.len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, w.buf, cut);
		arf_proto_rd_init(&r, copy, cut);
		arf_proto_get_cred(&r, &c2);
		arf_proto_get_fh(&r, &fh2);
		arf_proto_get_name(&r, &n);
		arf_proto_get_attr(&r, &a2);
		arf_proto_get_setattr(&r, &s2);
		assert_int_equal(r.err, ARF_EPROTO);
		free(copy);
	}
	arf_proto_wr_free(&w);
}

static void test_malformed(void **state)
{
	struct arf_proto_rd r;
	struct arf_proto_cred c;
	uint32_t n;
	(void)state;

	/* too many groups */
	uint32_t bad_cred[3] = { 0, 0, 17 };
	arf_proto_rd_init(&r, bad_cred, sizeof(bad_cred));
	arf_proto_get_cred(&r, &c);
	assert_int_equal(r.err, ARF_EPROTO);

	/* a length past the buffer */
	uint32_t bad_bytes[2] = { 100, 0 };
	arf_proto_rd_init(&r, bad_bytes, sizeof(bad_bytes));
	assert_null(arf_proto_get_bytes(&r, 4096, &n));
	assert_int_equal(r.err, ARF_EPROTO);

	/* a length over the limit */
	uint8_t big[8 + 16] = { 16, 0, 0, 0 };
	arf_proto_rd_init(&r, big, sizeof(big));
	assert_null(arf_proto_get_bytes(&r, 8, &n));
	assert_int_equal(r.err, ARF_EPROTO);

	/* an empty name */
	uint32_t empty[1] = { 0 };
	arf_proto_rd_init(&r, empty, sizeof(empty));
	arf_proto_get_name(&r, &n);
	assert_int_equal(r.err, ARF_EPROTO);

	/* trailing bytes are not "done" */
	uint32_t extra[2] = { 1, 2 };
	arf_proto_rd_init(&r, extra, sizeof(extra));
	arf_proto_get_u32(&r);
	assert_false(arf_proto_rd_done(&r));
}

/* A wcc: what is written reads back; a reply that ends before it says
 * nothing (n 0, no error); more directories than room is malformed. */
static void test_wcc(void **state)
{
	struct arf_proto_wr w;
	struct arf_proto_wcc v[2], got[2];
	struct arf_proto_rd r;
	(void)state;

	memset(v, 0, sizeof(v));
	memset(got, 0, sizeof(got));
	for (int i = 0; i < 2; i++) {
		v[i].dir.ino = 10 + (uint64_t)i;
		v[i].dir.gen = 7;
		v[i].pre_ctime_ns = -5 + i;
		v[i].post.ino = 10 + (uint64_t)i;
		v[i].post.gen = 7;
		v[i].post.mode = 040755;
		v[i].post.size = 3;
		v[i].post.ctime_ns = 99;
	}
	arf_proto_wr_init(&w);
	arf_proto_put_wcc(&w, v, 2);
	assert_int_equal(w.err, 0);
	arf_proto_rd_init(&r, w.buf, w.len);
	assert_int_equal(arf_proto_get_wcc(&r, got, 2), 2);
	assert_true(arf_proto_rd_done(&r));
	for (int i = 0; i < 2; i++) {
		assert_int_equal(got[i].dir.ino, v[i].dir.ino);
		assert_int_equal(got[i].pre_ctime_ns, v[i].pre_ctime_ns);
		assert_memory_equal(&got[i].post, &v[i].post, sizeof(v[i].post));
	}
	arf_proto_rd_init(&r, w.buf, w.len);
	assert_int_equal(arf_proto_get_wcc(&r, got, 1), 0); /* no room for 2 */
	assert_int_equal(r.err, ARF_EPROTO);
	arf_proto_rd_init(&r, w.buf, 0);
	assert_int_equal(arf_proto_get_wcc(&r, got, 2), 0); /* an older server's reply */
	assert_int_equal(r.err, 0);
	for (size_t cut = 1; cut < w.len; cut++) {
		arf_proto_rd_init(&r, w.buf, cut);
		assert_int_equal(arf_proto_get_wcc(&r, got, 2), 0);
		assert_int_equal(r.err, ARF_EPROTO);
	}
	arf_proto_wr_free(&w);
}

/* The request kinds' names and counter indexes: every index below the
 * catch-all is the index of exactly one request kind, whose name is the
 * index's name; every other op value has none. */
static void test_op_names(void **state)
{
	int owner[ARF_PROTO_NKINDS];
	(void)state;

	assert_string_equal(arf_proto_op_name(ARF_OP_LOOKUP), "lookup");
	assert_string_equal(arf_proto_op_name(ARF_OP_WRITE), "write");
	assert_string_equal(arf_proto_op_name(ARF_OP_PROG_EXEC), "prog_exec");
	assert_string_equal(arf_proto_op_name(0x1ff), "unknown");
	/* arfd counts it by name; libarf as "other" (its list is in its ABI) */
	assert_string_equal(arf_proto_op_name(ARF_OP_READDIRPLUS), "readdirplus");
	assert_true(arf_proto_op_index(ARF_OP_READDIRPLUS) >= 36);
	assert_string_equal(arf_proto_kind_name(ARF_PROTO_NKINDS - 1), "other");
	assert_string_equal(arf_proto_kind_name(ARF_PROTO_NKINDS), "unknown");
	assert_string_equal(arf_proto_kind_name(-1), "unknown");
	for (int i = 0; i < ARF_PROTO_NKINDS; i++)
		owner[i] = -1;
	for (int op = 0; op <= 0xffff; op++) {
		int i = arf_proto_op_index((uint16_t)op);
		if (i < 0) {
			assert_int_equal(i, -1);
			assert_string_equal(arf_proto_op_name((uint16_t)op), "unknown");
			continue;
		}
		/* a request kind: a real index, no other op's, named as its index */
		if (i >= ARF_PROTO_NKINDS - 1)
			fail_msg("op %#x has index %d, the catch-all or beyond", op, i);
		if (owner[i] != -1)
			fail_msg("ops %#x and %#x share index %d", owner[i], op, i);
		owner[i] = op;
		assert_true(op >= ARF_OP_GETATTR && op < ARF_OP_MAX);
		assert_string_equal(arf_proto_op_name((uint16_t)op), arf_proto_kind_name(i));
		assert_string_not_equal(arf_proto_kind_name(i), "other");
	}
	for (int i = 0; i < ARF_PROTO_NKINDS - 1; i++)
		if (owner[i] == -1)
			fail_msg("index %d (%s) belongs to no op", i, arf_proto_kind_name(i));
	/* names are distinct too: a counter's name says which kind it counts */
	for (int i = 0; i < ARF_PROTO_NKINDS; i++)
		for (int j = i + 1; j < ARF_PROTO_NKINDS; j++)
			assert_string_not_equal(arf_proto_kind_name(i), arf_proto_kind_name(j));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_op_names),
		cmocka_unit_test(test_wcc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

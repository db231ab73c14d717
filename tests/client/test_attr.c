/* SPDX-License-Identifier: MIT */
/*
 * The attribute conversions (issue 19): every form attributes travel in --
 * an inode record, the server's struct arf_ops_attr, the wire's struct
 * arf_proto_attr, the programs' struct arf_prog_attr and libarf's struct
 * arf_stat -- is copied through one field list, ARF_META_ATTR_COPY
 * (meta/arf_meta.h), and libarf's arfclient/attr.c turns each form it
 * receives into struct arf_stat.  (struct arf_ops_attr, which has the
 * programs' layout, cannot share a file with arf.h: both name a struct
 * arf_cred; tests/ops check what the hooks fill.)  Each field gets a value of its own, so
 * a field dropped, swapped or cut to a narrower type shows as the field
 * that differs; and each form's size is pinned, so a field added to one
 * form fails here until the list (and this test) copies it too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "arf_prog_abi.h"
#include "client_int.h"

/* Distinct values that need every bit of their field's type: a field cut
 * to 32 bits, or taken from a neighbour, cannot match. */
#define V_INO   0x1122334455667788ull
#define V_GEN   0x0badcafeu
#define V_MODE  0100644u
#define V_NLINK 3u
#define V_UID   100001u
#define V_GID   200002u
#define V_SIZE  0x0000000987654321ull
#define V_BLKS  0x0000000000012345ull
#define V_ATIME (-1234567890123456789ll) /* before 1970: signed */
#define V_MTIME 1700000000123456789ll
#define V_CTIME 1700000001987654321ll
#define V_RDEV  0x0000010300000007ull

#define FILL(x)                     \
	do {                        \
		(x)->ino = V_INO;      \
		(x)->gen = V_GEN;      \
		(x)->mode = V_MODE;    \
		(x)->nlink = V_NLINK;  \
		(x)->uid = V_UID;      \
		(x)->gid = V_GID;      \
		(x)->size = V_SIZE;    \
		(x)->blocks = V_BLKS;  \
		(x)->atime_ns = V_ATIME; \
		(x)->mtime_ns = V_MTIME; \
		(x)->ctime_ns = V_CTIME; \
		(x)->rdev = V_RDEV;    \
	} while (0)

static void check_stat(const struct arf_stat *st, uint64_t blocks)
{
	assert_int_equal(st->ino, V_INO);
	assert_int_equal(st->gen, V_GEN);
	assert_int_equal(st->mode, V_MODE);
	assert_int_equal(st->nlink, V_NLINK);
	assert_int_equal(st->uid, V_UID);
	assert_int_equal(st->gid, V_GID);
	assert_int_equal(st->size, V_SIZE);
	assert_int_equal(st->blocks, blocks);
	assert_true(st->atime_ns == V_ATIME);
	assert_true(st->mtime_ns == V_MTIME);
	assert_true(st->ctime_ns == V_CTIME);
	assert_int_equal(st->rdev, V_RDEV);
}

/* One-sided: the inode record counts data blocks, arf_stat 512-byte units;
 * what the record holds beyond the twelve stays out. */
static void from_inode(void **state)
{
	struct arf_meta_inode in;
	struct arf_stat st;

	(void)state;
	memset(&in, 0x7f, sizeof(in));
	FILL(&in);
	memset(&st, 0, sizeof(st));
	arf_stat_from_inode(&in, &st);
	check_stat(&st, V_BLKS * (ARF_BLOCK_SIZE / 512));
}

static void from_proto(void **state)
{
	struct arf_proto_attr a;
	struct arf_stat st;

	(void)state;
	memset(&a, 0, sizeof(a));
	FILL(&a);
	memset(&st, 0, sizeof(st));
	arf_stat_from_proto(&a, &st);
	check_stat(&st, V_BLKS);
}

static void from_prog(void **state)
{
	struct arf_prog_attr a;
	struct arf_stat st;

	(void)state;
	memset(&a, 0, sizeof(a));
	FILL(&a);
	memset(&st, 0, sizeof(st));
	arf_stat_from_prog(&a, &st);
	check_stat(&st, V_BLKS);
}

/* The server's path: inode -> attributes (ops_attr, the programs'
 * prog_attr) -> the wire's and the programs' forms (arfd's put_attr,
 * to_prog_attr), then libarf's. */
static void server_forms(void **state)
{
	struct arf_meta_inode in;
	struct arf_prog_attr o, g;
	struct arf_proto_attr p;
	struct arf_stat st;

	(void)state;
	memset(&in, 0x7f, sizeof(in));
	FILL(&in);
	memset(&o, 0, sizeof(o));
	ARF_META_ATTR_FROM_INODE(&o, &in);
	memset(&p, 0, sizeof(p));
	ARF_META_ATTR_COPY(&p, &o);
	memset(&g, 0, sizeof(g));
	ARF_META_ATTR_COPY(&g, &o);
	arf_stat_from_proto(&p, &st);
	check_stat(&st, V_BLKS * (ARF_BLOCK_SIZE / 512));
	arf_stat_from_prog(&g, &st);
	check_stat(&st, V_BLKS * (ARF_BLOCK_SIZE / 512));
	assert_int_equal(g.pad0, 0);
}

/* Bytes of dst the list wrote, when src is all ones and dst all zeros: the
 * twelve fields are 76 bytes in every form. */
#define COPIED(T, out)                                                \
	do {                                                          \
		T s_, d_;                                             \
		memset(&s_, 0xff, sizeof(s_));                        \
		memset(&d_, 0, sizeof(d_));                           \
		ARF_META_ATTR_COPY(&d_, &s_);                         \
		size_t k_ = 0;                                        \
		for (size_t i_ = 0; i_ < sizeof(d_); i_++)            \
			k_ += ((unsigned char *)&d_)[i_] != 0;        \
		*(out) = k_;                                          \
	} while (0)

/* A field added to one form and not to the list: that form grows. */
static void forms_pinned(void **state)
{
	size_t n;

	(void)state;
	assert_int_equal(sizeof(struct arf_stat), 80);
	assert_int_equal(sizeof(struct arf_proto_attr), 80);
	assert_int_equal(sizeof(struct arf_prog_attr), 80);
	COPIED(struct arf_stat, &n);
	assert_int_equal(n, 76);
	COPIED(struct arf_proto_attr, &n);
	assert_int_equal(n, 76);
	COPIED(struct arf_prog_attr, &n);
	assert_int_equal(n, 76);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(from_inode),
		cmocka_unit_test(from_proto),
		cmocka_unit_test(from_prog),
		cmocka_unit_test(server_forms),
		cmocka_unit_test(forms_pinned),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	printf("client-attr: inode, wire, program and server attribute forms carry all twelve "
	       "fields through one list (%s)\n", failed ? "FAILED" : "ok");
	return failed;
}

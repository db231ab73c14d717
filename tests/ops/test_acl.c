/* SPDX-License-Identifier: MIT */
/*
 * ops/ POSIX ACLs (acl.c), on the bytes Linux hands a filesystem: what is
 * a valid ACL, the mode an access ACL makes, chmod and create masking, the
 * permission algorithm (owner, named users and the mask, groups that deny,
 * other), and arf_ops_permitted asking the registered source only for an
 * inode flagged ARF_META_INO_ACL.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "arf_ops.h"

#define UO 0x01
#define U  0x02
#define GO 0x04
#define G  0x08
#define M  0x10
#define O  0x20

struct acl {
	uint8_t b[4 + 8 * 16];
	size_t len;
};

/* An ACL from (tag, perm, id) triples, in the order given. */
static struct acl mk(int n, const int e[][3])
{
	struct acl a;

	memset(&a, 0, sizeof(a));
	a.b[0] = 2;
	for (int i = 0; i < n; i++) {
		uint8_t *p = a.b + 4 + 8 * i;
		p[0] = (uint8_t)e[i][0];
		p[2] = (uint8_t)e[i][1];
		uint32_t id = (uint32_t)e[i][2];
		memcpy(p + 4, &id, 4);
	}
	a.len = 4 + 8 * (size_t)n;
	return a;
}

static const int full[][3] = {
	{ UO, 6, -1 }, { U, 7, 1000 }, { U, 4, 1001 }, { GO, 4, -1 }, { G, 6, 50 }, { M, 6, -1 },
	{ O, 0, -1 },
};

static void test_valid(void **state)
{
	(void)state;
	struct acl a = mk(7, full);
	assert_int_equal(arf_ops_acl_valid(a.b, a.len), 0);
	static const int base[][3] = { { UO, 7, -1 }, { GO, 5, -1 }, { O, 5, -1 } };
	a = mk(3, base);
	assert_int_equal(arf_ops_acl_valid(a.b, a.len), 0);
	static const int unsorted[][3] = { { GO, 4, -1 }, { UO, 6, -1 }, { O, 0, -1 } };
	a = mk(3, unsorted);
	assert_int_equal(arf_ops_acl_valid(a.b, a.len), -EINVAL);
	static const int nomask[][3] = { { UO, 6, -1 }, { U, 6, 7 }, { GO, 4, -1 }, { O, 0, -1 } };
	a = mk(4, nomask);
	assert_int_equal(arf_ops_acl_valid(a.b, a.len), -EINVAL);
	static const int dup[][3] = { { UO, 6, -1 }, { U, 6, 7 }, { U, 4, 7 }, { GO, 4, -1 },
				      { M, 6, -1 }, { O, 0, -1 } };
	a = mk(6, dup);
	assert_int_equal(arf_ops_acl_valid(a.b, a.len), -EINVAL);
	static const int badperm[][3] = { { UO, 8, -1 }, { GO, 4, -1 }, { O, 0, -1 } };
	a = mk(3, badperm);
	assert_int_equal(arf_ops_acl_valid(a.b, a.len), -EINVAL);
	static const int noother[][3] = { { UO, 6, -1 }, { GO, 4, -1 } };
	a = mk(2, noother);
	assert_int_equal(arf_ops_acl_valid(a.b, a.len), -EINVAL);
	a = mk(7, full);
	a.b[0] = 1; /* version */
	assert_int_equal(arf_ops_acl_valid(a.b, a.len), -EINVAL);
	a = mk(7, full);
	assert_int_equal(arf_ops_acl_valid(a.b, a.len - 3), -EINVAL);
	assert_int_equal(arf_ops_acl_valid(a.b, 2), -EINVAL);
}

static void test_mode_chmod_create(void **state)
{
	(void)state;
	struct acl a = mk(7, full);
	uint32_t mode = S_IFREG | S_ISGID | 0777;
	assert_int_equal(arf_ops_acl_to_mode(a.b, a.len, &mode), 1);
	assert_int_equal(mode, S_IFREG | S_ISGID | 0660); /* group bits: the mask's */
	static const int base[][3] = { { UO, 7, -1 }, { GO, 5, -1 }, { O, 1, -1 } };
	struct acl b = mk(3, base);
	mode = S_IFDIR;
	assert_int_equal(arf_ops_acl_to_mode(b.b, b.len, &mode), 0); /* just the mode */
	assert_int_equal(mode, S_IFDIR | 0751);
	/* chmod: owner, mask, other follow; the owning group entry stays */
	arf_ops_acl_chmod(a.b, a.len, 0710);
	mode = 0;
	arf_ops_acl_to_mode(a.b, a.len, &mode);
	assert_int_equal(mode, 0710);
	assert_int_equal(a.b[4 + 8 * 3 + 2], 4); /* GROUP_OBJ untouched under a mask */
	arf_ops_acl_chmod(b.b, b.len, 0640);     /* without a mask, the owning group */
	mode = 0;
	arf_ops_acl_to_mode(b.b, b.len, &mode);
	assert_int_equal(mode, 0640);
	/* create with mode 0640 under the default ACL "full" */
	a = mk(7, full);
	mode = S_IFREG | 0640;
	assert_int_equal(arf_ops_acl_create(a.b, a.len, &mode), 1);
	assert_int_equal(mode, S_IFREG | 0640); /* u 6&6, mask 6&4, o 0&0 */
	assert_int_equal(a.b[4 + 8 * 1 + 2], 7); /* named entries keep their perms ... */
	assert_int_equal(a.b[4 + 8 * 5 + 2], 4); /* ... under the narrowed mask */
}

static struct arf_cred cred(uint32_t uid, uint32_t gid, int ngroups, ...)
{
	struct arf_cred c = { uid, gid, 0, { 0 } };
	va_list ap;

	va_start(ap, ngroups);
	for (int i = 0; i < ngroups; i++)
		c.groups[c.ngroups++] = va_arg(ap, uint32_t);
	va_end(ap);
	return c;
}

static void test_permission(void **state)
{
	(void)state;
	struct arf_meta_inode in;
	memset(&in, 0, sizeof(in));
	in.ino = 5;
	in.gen = 9;
	in.uid = 500;
	in.gid = 40;
	in.mode = S_IFREG | 0660;
	struct acl a = mk(7, full);
	struct arf_cred c;

	c = cred(500, 1, 0); /* the owner: its entry, rw */
	assert_int_equal(arf_ops_acl_permitted(&in, a.b, a.len, &c, R_OK | W_OK), 0);
	assert_int_equal(arf_ops_acl_permitted(&in, a.b, a.len, &c, X_OK), -EACCES);
	c = cred(1000, 1, 0); /* named rwx, masked to rw */
	assert_int_equal(arf_ops_acl_permitted(&in, a.b, a.len, &c, W_OK), 0);
	assert_int_equal(arf_ops_acl_permitted(&in, a.b, a.len, &c, X_OK), -EACCES);
	c = cred(1001, 1, 0); /* named r */
	assert_int_equal(arf_ops_acl_permitted(&in, a.b, a.len, &c, W_OK), -EACCES);
	c = cred(7, 40, 0); /* owning group: r */
	assert_int_equal(arf_ops_acl_permitted(&in, a.b, a.len, &c, R_OK), 0);
	assert_int_equal(arf_ops_acl_permitted(&in, a.b, a.len, &c, W_OK), -EACCES);
	c = cred(7, 40, 1, 50u); /* group 50 grants rw */
	assert_int_equal(arf_ops_acl_permitted(&in, a.b, a.len, &c, W_OK), 0);
	c = cred(7, 40, 0); /* a matching group that does not grant denies: not "other" */
	static const int o7[][3] = { { UO, 6, -1 }, { GO, 0, -1 }, { M, 7, -1 }, { O, 7, -1 } };
	struct acl b = mk(4, o7);
	assert_int_equal(arf_ops_acl_permitted(&in, b.b, b.len, &c, R_OK), -EACCES);
	c = cred(8, 8, 0); /* other */
	assert_int_equal(arf_ops_acl_permitted(&in, b.b, b.len, &c, R_OK | W_OK | X_OK), 0);
	assert_int_equal(arf_ops_acl_permitted(&in, a.b, a.len, &c, R_OK), -EACCES);
}

static struct acl src_acl;
static int src_calls;

static int source(void *ctx, uint64_t ino, uint32_t gen, const void **acl, size_t *len)
{
	(void)ctx;
	src_calls++;
	if (ino != 5 || gen != 9)
		return -ENODATA;
	*acl = src_acl.b;
	*len = src_acl.len;
	return 0;
}

static void test_permitted_asks_the_source(void **state)
{
	(void)state;
	struct arf_meta_inode in;
	memset(&in, 0, sizeof(in));
	in.ino = 5;
	in.gen = 9;
	in.uid = 500;
	in.gid = 40;
	in.mode = S_IFREG | 0660;
	struct arf_cred named = cred(1000, 1, 0), root = cred(0, 0, 0);

	src_acl = mk(7, full);
	arf_ops_set_acl_source(source, NULL);
	assert_int_equal(arf_ops_permitted(&in, &named, W_OK), -EACCES); /* no flag: mode bits */
	assert_int_equal(src_calls, 0);
	in.flags = ARF_META_INO_ACL;
	assert_int_equal(arf_ops_permitted(&in, &named, W_OK), 0);
	assert_int_equal(src_calls, 1);
	assert_int_equal(arf_ops_permitted(&in, &root, W_OK), 0); /* root: never asked */
	assert_int_equal(src_calls, 1);
	in.gen = 10; /* flagged but nothing found: the mode decides */
	assert_int_equal(arf_ops_permitted(&in, &named, W_OK), -EACCES);
	arf_ops_set_acl_source(NULL, NULL);
	in.gen = 9;
	assert_int_equal(arf_ops_permitted(&in, &named, W_OK), -EACCES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_mode_chmod_create),
		cmocka_unit_test(test_permission),
		cmocka_unit_test(test_permitted_asks_the_source),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

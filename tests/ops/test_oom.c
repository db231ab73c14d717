/* SPDX-License-Identifier: MIT */
/*
 * Running out of memory in a mutation, SQLite-style: every hook runs with
 * the k-th allocation (and every later one) failing, for k = 1, 2, ...
 * until it succeeds.  The contract (ops/arf_ops.h, meta/arf_meta_fs.h):
 * a hook reserves everything, the transaction's record included
 * (arf_meta_txn_reserve), before its first change, so a failure is -ENOMEM
 * with the regions byte for byte as they were and nothing touched.  And
 * when a touch past the reservation cannot record its object, the
 * transaction says so (arf_meta_txn_error) and seals nothing, where it
 * used to abort the process.
 *
 * The allocator is replaced at link time (-Wl,--wrap=malloc,calloc,realloc):
 * only calls from meta/, ops/ and this file go through the wrappers.
 */
#include "ops_test.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

static unsigned long alloc_count, fail_from; /* fail_from = 0: never fail */

static int fail_now(void)
{
	return fail_from && ++alloc_count >= fail_from;
}

void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
	return fail_now() ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fail_now() ? NULL : __real_realloc(p, n);
}

static void arm(unsigned long k)
{
	alloc_count = 0;
	fail_from = k;
}

static void disarm(void)
{
	fail_from = 0;
}

/* Drop the transaction's buffers between transactions, so that the next
 * hook's reservation has to allocate them again (the state a long-running
 * server is in before its first big transaction). */
static void shrink(struct arf_meta_fs *fs)
{
	free(fs->dirty);
	free(fs->dirty_set);
	fs->dirty = NULL;
	fs->dirty_set = NULL;
	fs->dirty_cap = fs->dirty_set_cap = fs->ndirty = 0;
}

struct snap {
	uint8_t *meta, *data;
	uint32_t free_inodes, free_entries, free_pages, free_blocks;
};

static void snap_take(struct tfs *t, struct snap *s)
{
	s->meta = __real_malloc(t->geo.meta_size);
	s->data = __real_malloc(t->geo.data_size);
	assert_non_null(s->meta);
	assert_non_null(s->data);
	memcpy(s->meta, t->meta, t->geo.meta_size);
	memcpy(s->data, t->data, t->geo.data_size);
	s->free_inodes = t->fs.free_inodes;
	s->free_entries = t->fs.free_entries;
	s->free_pages = t->fs.free_pages;
	s->free_blocks = t->fs.free_blocks;
}

static void snap_same(struct tfs *t, const struct snap *s)
{
	assert_memory_equal(s->meta, t->meta, t->geo.meta_size);
	assert_memory_equal(s->data, t->data, t->geo.data_size);
	assert_int_equal(s->free_inodes, t->fs.free_inodes);
	assert_int_equal(s->free_entries, t->fs.free_entries);
	assert_int_equal(s->free_pages, t->fs.free_pages);
	assert_int_equal(s->free_blocks, t->fs.free_blocks);
	free(s->meta);
	free(s->data);
}

enum step { S_CREATE, S_WRITE, S_MKDIR, S_LINK, S_RENAME, S_SYMLINK, S_TRUNCATE, S_UNLINK1,
	    S_UNLINK2, S_RMDIR, S_NSTEPS };
static const char *const step_name[] = { "create", "write 200 blocks", "mkdir", "link",
					 "rename", "symlink", "truncate", "unlink (a link)",
					 "unlink (the file)", "rmdir" };

static uint8_t wbuf[200 * 4096];

/* One hook, its handles resolved before the allocator is armed with k. */
static int step(struct tfs *t, enum step s, unsigned long k)
{
	struct arf_meta_fs *fs = &t->fs;
	struct fh a = path(t, "/a"), f = path(t, "/a/file"), m = path(t, "/a/moved");
	struct arf_ops_attr at;
	size_t w;
	int rc;

	arm(k);
	arf_meta_txn_begin(fs);
	switch (s) {
	case S_CREATE:
		rc = arf_ops_create(fs, &ROOT, a.ino, a.gen, "file", 4, 0644, 1, &at);
		break;
	case S_WRITE:
		rc = arf_ops_write(fs, &ROOT, f.ino, f.gen, 0, wbuf, sizeof(wbuf), &w);
		break;
	case S_MKDIR:
		rc = arf_ops_mkdir(fs, &ROOT, a.ino, a.gen, "sub", 3, 0755, &at);
		break;
	case S_LINK:
		rc = arf_ops_link(fs, &ROOT, f.ino, f.gen, a.ino, a.gen, "hard", 4, &at);
		break;
	case S_RENAME:
		rc = arf_ops_rename(fs, &ROOT, a.ino, a.gen, "file", 4, a.ino, a.gen, "moved", 5, 0);
		break;
	case S_SYMLINK:
		rc = arf_ops_symlink(fs, &ROOT, a.ino, a.gen, "ln", 2, "moved", 5, &at);
		break;
	case S_TRUNCATE: {
		struct arf_ops_setattr sa = { .valid = ARF_OPS_SET_SIZE, .size = 1000 };
		rc = arf_ops_setattr(fs, &ROOT, m.ino, m.gen, &sa, &at);
		break;
	}
	case S_UNLINK1:
		rc = arf_ops_unlink(fs, &ROOT, a.ino, a.gen, "hard", 4);
		break;
	case S_UNLINK2:
		rc = arf_ops_unlink(fs, &ROOT, a.ino, a.gen, "moved", 5);
		break;
	default:
		rc = arf_ops_rmdir(fs, &ROOT, a.ino, a.gen, "sub", 3);
		break;
	}
	return rc;
}

static void test_every_hook_fails_cleanly(void **state)
{
	struct tfs *t = tfs_new(256, 64, 256, 64, 512, 0);
	unsigned long failures = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(wbuf); i++)
		wbuf[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(do_mkdir(t, &ROOT, "/a", 0755), 0);
	for (int s = 0; s < S_NSTEPS; s++) {
		unsigned long k;
		for (k = 1; k < 10000; k++) {
			struct snap before;
			shrink(&t->fs);
			snap_take(t, &before);
			int rc = step(t, (enum step)s, k);
			size_t n = arf_meta_txn_end(&t->fs, NULL);
			disarm();
			assert_int_equal(arf_meta_txn_error(&t->fs), 0); /* nothing unrecorded */
			if (rc == 0) {
				assert_true(n > 0);
				free(before.meta);
				free(before.data);
				break;
			}
			if (rc != -ENOMEM)
				fail_msg("%s with allocation %lu failing: %d, not -ENOMEM",
					 step_name[s], k, rc);
			if (n)
				fail_msg("%s with allocation %lu failing touched %zu objects "
					 "before failing", step_name[s], k, n);
			snap_same(t, &before); /* byte for byte, allocators too */
			failures++;
		}
		assert_true(k < 10000);
		fsck(t);
	}
	/* the result is what the hooks were asked for */
	assert_int_equal(path(t, "/a/moved").ino, 0);
	assert_int_equal(path(t, "/a/sub").ino, 0);
	assert_int_not_equal(path(t, "/a/ln").ino, 0);
	tfs_free(t);
	print_message("%d hooks under failing allocations: %lu failed with -ENOMEM, each "
		      "leaving the regions as they were\n", S_NSTEPS, failures);
}

/* A touch past the reservation, with no memory to grow the record. */
static void test_touch_past_reservation(void **state)
{
	struct tfs *t = tfs_new(256, 16, 256, 16, 64, 0);
	struct arf_meta_fs *fs = &t->fs;

	(void)state;
	shrink(fs);
	arf_meta_txn_begin(fs);
	assert_int_equal(arf_meta_txn_reserve(fs, 2), 0);
	size_t cap = fs->dirty_cap;
	assert_true(cap >= 2 && cap < 200);
	arm(1); /* no allocation succeeds from here on */
	for (uint64_t ino = 1; ino <= cap + 5; ino++)
		arf_meta_inode_touch(fs, ino)->atime_ns = 42; /* the caller goes on regardless */
	const struct arf_meta_dirty *list;
	size_t n = arf_meta_txn_end(fs, &list);
	disarm();
	assert_int_equal(arf_meta_txn_error(fs), -ENOMEM);
	assert_int_equal(n, cap); /* what could be recorded */
	/* nothing of it is visible to a one-sided reader, recorded or not */
	for (uint64_t ino = 1; ino <= cap + 5; ino++) {
		struct arf_meta_inode *in = arf_meta_inode_ptr(fs, ino);
		assert_int_equal(arf_meta_obj_validate(in, sizeof(*in)), ARF_ETORN);
	}
	/* the next transaction starts clean, and seals */
	arf_meta_txn_begin(fs);
	assert_int_equal(arf_meta_txn_error(fs), 0);
	arf_meta_inode_touch(fs, ARF_ROOT_INO)->atime_ns = 43;
	assert_int_equal(arf_meta_txn_end(fs, NULL), 1);
	assert_int_equal(arf_meta_txn_error(fs), 0);
	struct arf_meta_inode *root = arf_meta_inode_ptr(fs, ARF_ROOT_INO);
	assert_int_equal(arf_meta_obj_validate(root, sizeof(*root)), 0);
	tfs_free(t);
	print_message("touching %zu objects with room for %zu and no memory: the transaction "
		      "reports -ENOMEM and seals nothing (no abort)\n", cap + 5, cap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_hook_fails_cleanly),
		cmocka_unit_test(test_touch_past_reservation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

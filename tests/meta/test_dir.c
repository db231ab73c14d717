/* SPDX-License-Identifier: MIT */
/*
 * meta/ directories: hash chains forced long (one bucket, or a hash mask),
 * insert/lookup/remove at the head, in the middle and at the tail, chains
 * still walkable by a client working on sealed copies; the listing pages
 * with cookies that stay valid across removals and insertions; page
 * reclamation; and a random workload checked against a reference set.
 */
#include <errno.h>

#include "meta_test.h"

/* Make a regular-file inode and name it in dir, as ops would (meta level). */
static uint64_t mk(struct tfs *t, uint64_t dir, const char *name)
{
	struct arf_meta_fs *fs = &t->fs;
	struct arf_meta_dir_res res;
	uint64_t ino;
	size_t len = strlen(name);

	arf_meta_txn_begin(fs);
	assert_int_equal(arf_meta_inode_alloc(fs, &ino), 0);
	assert_int_equal(arf_meta_dir_reserve(fs, arf_meta_inode_ptr(fs, dir), name, len, &res), 0);
	struct arf_meta_inode *in = arf_meta_inode_touch(fs, ino);
	uint32_t gen = in->gen + 1;
	memset((uint8_t *)in + 16, 0, sizeof(*in) - 16);
	in->ino = ino;
	in->gen = gen;
	in->mode = S_IFREG | 0644;
	in->nlink = 1;
	arf_meta_dir_insert(fs, &res, dir, name, len, ino, gen, arf_meta_dtype(in->mode));
	arf_meta_inode_touch(fs, dir)->size++;
	arf_meta_txn_end(fs, NULL);
	tfs_check_sealed(t);
	return ino;
}

static void rm(struct tfs *t, uint64_t dir, const char *name)
{
	struct arf_meta_fs *fs = &t->fs;
	uint32_t idx;

	assert_int_equal(arf_meta_dir_find(fs, dir, name, strlen(name), &idx), 0);
	uint64_t ino = arf_meta_entry_ptr(fs, idx)->child;
	arf_meta_txn_begin(fs);
	arf_meta_dir_remove(fs, idx);
	arf_meta_inode_touch(fs, dir)->size--;
	arf_meta_inode_free(fs, ino);
	arf_meta_txn_end(fs, NULL);
	tfs_check_sealed(t);
}

static int found(struct tfs *t, uint64_t dir, const char *name, uint32_t *hops)
{
	uint32_t idx, h = 0;
	uint64_t child;
	int a = arf_meta_dir_find(&t->fs, dir, name, strlen(name), &idx);
	int b = os_lookup(t, dir, name, strlen(name), &child, hops ? hops : &h);

	assert_int_equal(a == 0, b == 0); /* server and client-style walks agree */
	if (!a)
		assert_int_equal(child, arf_meta_entry_ptr(&t->fs, idx)->child);
	return a == 0;
}

static void test_one_chain(void **state)
{
	struct tfs *t = tfs_new(64, 1, 64, 8, 16, 0); /* one bucket: every name collides */
	char name[32];
	uint32_t hops;

	(void)state;
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "n%02d", i);
		mk(t, ARF_ROOT_INO, name);
	}
	/* n00 sits in the head; each later name right after it: n19 n18 ... n01 */
	assert_int_equal(arf_meta_entry_ptr(&t->fs, 0)->namelen, 3);
	assert_memory_equal(arf_meta_entry_ptr(&t->fs, 0)->name, "n00", 3);
	assert_true(found(t, ARF_ROOT_INO, "n00", &hops));
	assert_int_equal(hops, 0);
	assert_true(found(t, ARF_ROOT_INO, "n19", &hops));
	assert_int_equal(hops, 1);
	assert_true(found(t, ARF_ROOT_INO, "n01", &hops));
	assert_int_equal(hops, 19);
	assert_false(found(t, ARF_ROOT_INO, "zz", &hops));
	assert_false(found(t, 2, "n05", NULL)); /* same name, another parent */
	fsck(t);

	/* remove the head's own entry: the head stays, empty, with the chain */
	rm(t, ARF_ROOT_INO, "n00");
	assert_int_equal(arf_meta_entry_ptr(&t->fs, 0)->parent, 0);
	assert_int_not_equal(arf_meta_entry_ptr(&t->fs, 0)->next, ARF_META_NONE);
	for (int i = 1; i < 20; i++) {
		snprintf(name, sizeof(name), "n%02d", i);
		assert_true(found(t, ARF_ROOT_INO, name, NULL));
	}
	assert_false(found(t, ARF_ROOT_INO, "n00", NULL));
	fsck(t);
	/* middle, right after the head, and the tail */
	rm(t, ARF_ROOT_INO, "n10");
	rm(t, ARF_ROOT_INO, "n19");
	rm(t, ARF_ROOT_INO, "n01");
	for (int i = 1; i < 20; i++) {
		snprintf(name, sizeof(name), "n%02d", i);
		assert_int_equal(found(t, ARF_ROOT_INO, name, NULL), i != 10 && i != 19 && i != 1);
	}
	fsck(t);
	/* a new name fills the empty head again */
	uint32_t free_before = t->fs.free_entries;
	mk(t, ARF_ROOT_INO, "new");
	assert_int_equal(t->fs.free_entries, free_before);
	assert_true(found(t, ARF_ROOT_INO, "new", &hops));
	assert_int_equal(hops, 0);
	fsck(t);
	/* remove everything: the chain ends empty */
	for (int i = 2; i < 19; i++) {
		snprintf(name, sizeof(name), "n%02d", i);
		if (i != 10)
			rm(t, ARF_ROOT_INO, name);
	}
	rm(t, ARF_ROOT_INO, "new");
	assert_int_equal(arf_meta_entry_ptr(&t->fs, 0)->next, ARF_META_NONE);
	assert_int_equal(t->fs.free_entries, 64);
	assert_int_equal(arf_meta_inode_ptr(&t->fs, ARF_ROOT_INO)->size, 0);
	fsck(t);
	tfs_free(t);
}

static void test_hash_mask(void **state)
{
	struct tfs *t = tfs_new(300, 64, 300, 8, 16, 0x1); /* only buckets 0 and 1 */
	char name[32];

	(void)state;
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "file-%d", i);
		mk(t, ARF_ROOT_INO, name);
	}
	for (uint32_t b = 2; b < 64; b++)
		assert_int_equal(arf_meta_entry_ptr(&t->fs, b)->parent, 0);
	for (int i = 0; i < 200; i += 3) {
		snprintf(name, sizeof(name), "file-%d", i);
		rm(t, ARF_ROOT_INO, name);
	}
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "file-%d", i);
		assert_int_equal(found(t, ARF_ROOT_INO, name, NULL), i % 3 != 0);
	}
	fsck(t);
	tfs_free(t);
}

/* Readers reject what a transaction has touched until it is sealed. */
static void test_torn_during_txn(void **state)
{
	struct tfs *t = tfs_new(64, 1, 64, 8, 16, 0);
	struct arf_meta_fs *fs = &t->fs;
	struct arf_meta_dir_res res;
	uint64_t child;
	uint32_t hops;

	(void)state;
	mk(t, ARF_ROOT_INO, "a");
	arf_meta_txn_begin(fs);
	assert_int_equal(arf_meta_dir_reserve(fs, arf_meta_inode_ptr(fs, ARF_ROOT_INO), "b", 1, &res), 0);
	arf_meta_dir_insert(fs, &res, ARF_ROOT_INO, "b", 1, 1, 1, 4);
	assert_int_equal(os_lookup(t, ARF_ROOT_INO, "a", 1, &child, &hops), ARF_ETORN);
	arf_meta_txn_end(fs, NULL);
	assert_int_equal(os_lookup(t, ARF_ROOT_INO, "a", 1, &child, &hops), 0);
	assert_int_equal(os_lookup(t, ARF_ROOT_INO, "b", 1, &child, &hops), 0);
	tfs_free(t);
}

/* Collect a listing from `cookie` with the iterator, as readdir does. */
static size_t list_from(struct tfs *t, uint64_t cookie, uint64_t *cookies, char (*names)[16], size_t max)
{
	struct arf_meta_dir_iter it;
	uint32_t idx;
	size_t n = 0;

	arf_meta_dir_seek(&t->fs, arf_meta_inode_ptr(&t->fs, ARF_ROOT_INO), cookie, &it);
	while (n < max && arf_meta_dir_next(&t->fs, &it, &idx)) {
		const struct arf_meta_dirent *e = arf_meta_entry_ptr(&t->fs, idx);
		cookies[n] = e->cookie;
		memcpy(names[n], e->name, e->namelen);
		names[n][e->namelen] = 0;
		n++;
	}
	return n;
}

static void test_listing_cookies(void **state)
{
	enum { N = 2600 };
	struct tfs *t = tfs_new(N + 100, 512, N + 100, 16, 16, 0);
	static uint64_t cookies[N + 100], c2[N + 100];
	static char names[N + 100][16], n2[N + 100][16];
	char name[16];

	(void)state;
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		mk(t, ARF_ROOT_INO, name);
	}
	const struct arf_meta_inode *root = arf_meta_inode_ptr(&t->fs, ARF_ROOT_INO);
	assert_int_equal(root->dir_pages, 3); /* 1012 + 1012 + 576 */
	assert_int_equal(list_from(t, 0, cookies, names, N + 100), N);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		assert_string_equal(names[i], name); /* insertion order */
		assert_int_equal(cookies[i], (uint64_t)i + 1);
	}
	/* resuming at any cookie gives exactly the rest */
	for (int i = 0; i < N; i += 97) {
		size_t n = list_from(t, cookies[i], c2, n2, N);
		assert_int_equal(n, (size_t)(N - i - 1));
		if (n)
			assert_int_equal(c2[0], cookies[i + 1]);
	}
	/* remove every other entry and the whole second page; add some more */
	for (int i = 0; i < N; i++)
		if (i % 2 == 0 || (i >= 1012 && i < 2024)) {
			snprintf(name, sizeof(name), "e%d", i);
			rm(t, ARF_ROOT_INO, name);
		}
	assert_int_equal(root->dir_pages, 2); /* the emptied middle page was freed */
	for (int i = N; i < N + 50; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		mk(t, ARF_ROOT_INO, name);
	}
	fsck(t);
	/* survivors keep their cookies; a cookie taken before still resumes right */
	size_t n = list_from(t, 0, c2, n2, N + 100);
	size_t k = 0;
	for (int i = 0; i < N; i++)
		if (!(i % 2 == 0 || (i >= 1012 && i < 2024))) {
			assert_string_equal(n2[k], names[i]);
			assert_int_equal(c2[k], cookies[i]);
			k++;
		}
	assert_int_equal(n, k + 50);
	/* resume from a removed entry's cookie: continue after its position */
	n = list_from(t, cookies[1500], c2, n2, N);
	snprintf(name, sizeof(name), "e%d", 2025);
	assert_string_equal(n2[0], name);
	n = list_from(t, cookies[N - 1], c2, n2, N);
	assert_int_equal(n, 50);
	snprintf(name, sizeof(name), "e%d", N);
	assert_string_equal(n2[0], name);
	/* the directory is emptied and its pages freed */
	for (int i = 0; i < N + 50; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		uint32_t idx;
		if (!arf_meta_dir_find(&t->fs, ARF_ROOT_INO, name, strlen(name), &idx))
			rm(t, ARF_ROOT_INO, name);
	}
	arf_meta_txn_begin(&t->fs);
	arf_meta_dir_free_pages(&t->fs, ARF_ROOT_INO);
	arf_meta_txn_end(&t->fs, NULL);
	assert_int_equal(t->fs.free_pages, 16);
	fsck(t);
	tfs_free(t);
}

/* Random inserts and removes with short chains, against a reference set. */
static void test_random(void **state)
{
	enum { NAMES = 400 };
	struct tfs *t = tfs_new(NAMES + 8, 8, NAMES + 8, 8, 16, 0);
	static int present[NAMES];
	char name[32];
	unsigned seed = 12345;

	(void)state;
	memset(present, 0, sizeof(present));
	for (int step = 0; step < 4000; step++) {
		seed = seed * 1103515245u + 12345u;
		int i = (int)((seed >> 8) % NAMES);
		snprintf(name, sizeof(name), "name-%d-%s", i, i % 7 ? "x" : "a-longer-suffix");
		if (present[i])
			rm(t, ARF_ROOT_INO, name);
		else
			mk(t, ARF_ROOT_INO, name);
		present[i] ^= 1;
		if (step % 500 == 0)
			fsck(t);
	}
	for (int i = 0; i < NAMES; i++) {
		snprintf(name, sizeof(name), "name-%d-%s", i, i % 7 ? "x" : "a-longer-suffix");
		assert_int_equal(found(t, ARF_ROOT_INO, name, NULL), present[i]);
	}
	fsck(t);
	tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_chain),
		cmocka_unit_test(test_hash_mask),
		cmocka_unit_test(test_torn_during_txn),
		cmocka_unit_test(test_listing_cookies),
		cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

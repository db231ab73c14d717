/* SPDX-License-Identifier: MIT */
/*
 * ops/ namespace: rename in and across directories (link counts, "..",
 * replaced targets freed), RENAME_EXCHANGE, hard link counts and inode
 * reuse with a new generation, readdir cookies across removals and
 * insertions, timestamps, setgid directories, EMLINK, and a timing of
 * 10,000 creates in nested directories.
 */
#include <time.h>

#include "ops_test.h"

static uint32_t nlink_of(struct tfs *t, const char *p)
{
	return attr_of(t, p).nlink;
}

static void test_rename_dirs(void **state)
{
	struct tfs *t = tfs_new(64, 16, 64, 32, 64, 0);
	struct arf_ops_attr a;

	(void)state;
	assert_int_equal(do_mkdir(t, &ROOT, "/a", 0755), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/b", 0755), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/a/x", 0755), 0);
	assert_int_equal(do_create(t, &ROOT, "/a/x/file", 0644), 0);
	assert_int_equal(nlink_of(t, "/"), 4);
	assert_int_equal(nlink_of(t, "/a"), 3);
	assert_int_equal(nlink_of(t, "/b"), 2);
	/* across parents */
	assert_int_equal(do_rename(t, &ROOT, "/a/x", "/b/y", 0), 0);
	assert_int_equal(nlink_of(t, "/a"), 2);
	assert_int_equal(nlink_of(t, "/b"), 3);
	assert_int_equal(attr_of(t, "/a").size, 0);
	assert_int_equal(attr_of(t, "/b").size, 1);
	assert_int_not_equal(path(t, "/b/y/file").ino, 0);
	assert_int_equal(path(t, "/a/x").ino, 0);
	struct fh y = path(t, "/b/y");
	assert_int_equal(arf_ops_lookup(&t->fs, &ROOT, y.ino, y.gen, "..", 2, &a), 0);
	assert_int_equal(a.ino, path(t, "/b").ino);
	fsck(t);
	/* dir over an empty dir in another parent: the target is freed */
	assert_int_equal(do_mkdir(t, &ROOT, "/a/empty", 0755), 0);
	uint32_t free0 = t->fs.free_inodes;
	assert_int_equal(do_rename(t, &ROOT, "/b/y", "/a/empty", 0), 0);
	assert_int_equal(t->fs.free_inodes, free0 + 1);
	assert_int_equal(nlink_of(t, "/a"), 3);
	assert_int_equal(nlink_of(t, "/b"), 2);
	assert_int_not_equal(path(t, "/a/empty/file").ino, 0);
	fsck(t);
	/* dir over empty dir, same parent */
	assert_int_equal(do_mkdir(t, &ROOT, "/a/e2", 0755), 0);
	assert_int_equal(nlink_of(t, "/a"), 4);
	assert_int_equal(do_rename(t, &ROOT, "/a/empty", "/a/e2", 0), 0);
	assert_int_equal(nlink_of(t, "/a"), 3);
	fsck(t);
	/* exchange a file and a dir across parents */
	assert_int_equal(do_create(t, &ROOT, "/b/f", 0644), 0);
	assert_int_equal(do_rename(t, &ROOT, "/b/f", "/a/e2", ARF_OPS_RENAME_EXCHANGE), 0);
	assert_true(S_ISDIR(attr_of(t, "/b/f").mode));
	assert_true(S_ISREG(attr_of(t, "/a/e2").mode));
	assert_int_equal(nlink_of(t, "/a"), 2);
	assert_int_equal(nlink_of(t, "/b"), 3);
	struct fh bf = path(t, "/b/f");
	assert_int_equal(arf_ops_lookup(&t->fs, &ROOT, bf.ino, bf.gen, "..", 2, &a), 0);
	assert_int_equal(a.ino, path(t, "/b").ino);
	fsck(t);
	tfs_free(t);
}

static void test_rename_files_and_links(void **state)
{
	struct tfs *t = tfs_new(64, 16, 64, 32, 64, 0);
	char data[10000];

	(void)state;
	memset(data, 'q', sizeof(data));
	assert_int_equal(do_create(t, &ROOT, "/f", 0644), 0);
	assert_int_equal(do_create(t, &ROOT, "/g", 0644), 0);
	assert_int_equal(do_write(t, &ROOT, "/g", 0, data, sizeof(data)), 0);
	struct fh f = path(t, "/f"), g = path(t, "/g");
	assert_int_equal(t->fs.free_blocks, 61);
	/* file over file: the target and its blocks are freed */
	assert_int_equal(do_rename(t, &ROOT, "/f", "/g", 0), 0);
	assert_int_equal(path(t, "/g").ino, f.ino);
	assert_int_equal(path(t, "/f").ino, 0);
	assert_int_equal(t->fs.free_blocks, 64);
	struct arf_ops_attr a;
	assert_int_equal(arf_ops_getattr(&t->fs, g.ino, g.gen, &a), -ESTALE);
	fsck(t);

	/* links: counts up and down, the inode lives until the last one goes */
	assert_int_equal(do_mkdir(t, &ROOT, "/d", 0755), 0);
	assert_int_equal(do_link(t, &ROOT, "/g", "/d/l1"), 0);
	assert_int_equal(do_link(t, &ROOT, "/g", "/d/l2"), 0);
	assert_int_equal(nlink_of(t, "/g"), 3);
	assert_int_equal(nlink_of(t, "/d/l1"), 3);
	fsck(t);
	/* renaming one link onto another of the same inode does nothing */
	assert_int_equal(do_rename(t, &ROOT, "/d/l1", "/d/l2", 0), 0);
	assert_int_equal(nlink_of(t, "/g"), 3);
	assert_int_not_equal(path(t, "/d/l1").ino, 0);
	assert_int_equal(do_unlink(t, &ROOT, "/g"), 0);
	assert_int_equal(do_unlink(t, &ROOT, "/d/l1"), 0);
	assert_int_equal(nlink_of(t, "/d/l2"), 1);
	uint32_t free0 = t->fs.free_inodes;
	assert_int_equal(do_unlink(t, &ROOT, "/d/l2"), 0);
	assert_int_equal(t->fs.free_inodes, free0 + 1);
	fsck(t);
	/* the slot is reused with a new generation; the old handle is stale */
	struct arf_ops_attr n;
	struct fh r = path(t, "/");
	uint32_t tries = 0;
	do {
		char name[16];
		snprintf(name, sizeof(name), "n%u", tries++);
		assert_int_equal(TXN(t, arf_ops_create(&t->fs, &ROOT, r.ino, r.gen, name, strlen(name),
						       0644, 1, &n)), 0);
	} while (n.ino != f.ino);
	assert_int_not_equal(n.gen, f.gen);
	assert_int_equal(arf_ops_getattr(&t->fs, f.ino, f.gen, &a), -ESTALE);
	assert_int_equal(arf_ops_getattr(&t->fs, n.ino, n.gen, &a), 0);
	fsck(t);
	tfs_free(t);
}

static void test_readdir_cookies(void **state)
{
	enum { N = 3000 };
	struct tfs *t = tfs_new(N + 200, 1024, N + 200, 32, 16, 0);
	static struct arf_ops_dirent ents[N + 200];
	static int seen[N + 200];
	struct fh r = path(t, "/");
	char name[32];
	size_t n;
	int eof;

	(void)state;
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		assert_int_equal(do_create(t, &ROOT, (snprintf(name, sizeof(name), "/e%d", i), name), 0644), 0);
	}
	/* page through in chunks of 100, mutating between chunks */
	memset(seen, 0, sizeof(seen));
	uint64_t cookie = 0;
	int chunks = 0, added = 0;
	for (;;) {
		assert_int_equal(arf_ops_readdir(&t->fs, &ROOT, r.ino, r.gen, cookie, ents, 100, &n, &eof), 0);
		for (size_t i = 0; i < n; i++) {
			int k = atoi(ents[i].name + 1);
			assert_int_equal(ents[i].namelen, strlen(ents[i].name));
			assert_int_equal(seen[k], 0); /* never twice */
			seen[k] = 1;
			if (i)
				assert_true(ents[i].cookie > ents[i - 1].cookie);
		}
		if (n)
			cookie = ents[n - 1].cookie;
		if (eof)
			break;
		assert_int_equal(n, 100);
		/* remove some entries ahead of us and some behind, add new ones */
		chunks++;
		for (int j = 0; j < 5; j++) {
			int victim = (chunks * 37 + j * 101) % N;
			snprintf(name, sizeof(name), "/e%d", victim);
			if (path(t, name).ino) {
				assert_int_equal(do_unlink(t, &ROOT, name), 0);
				if (!seen[victim])
					seen[victim] = -1; /* removed before we saw it */
			}
		}
		snprintf(name, sizeof(name), "/e%d", N + added++);
		assert_int_equal(do_create(t, &ROOT, name, 0644), 0);
	}
	/* everything that existed throughout was seen; everything added too */
	for (int i = 0; i < N + added; i++)
		assert_int_not_equal(seen[i], 0);
	fsck(t);
	/* a listing of everything, resumed at every cookie, agrees with itself */
	assert_int_equal(arf_ops_readdir(&t->fs, &ROOT, r.ino, r.gen, 0, ents, N + 200, &n, &eof), 0);
	assert_true(eof);
	assert_int_equal(n, attr_of(t, "/").size);
	for (size_t i = 0; i < n; i += 211) {
		static struct arf_ops_dirent rest[N + 200];
		size_t m;
		assert_int_equal(arf_ops_readdir(&t->fs, &ROOT, r.ino, r.gen, ents[i].cookie, rest, N + 200, &m, &eof), 0);
		assert_int_equal(m, n - i - 1);
		if (m)
			assert_string_equal(rest[0].name, ents[i + 1].name);
	}
	/* exactly max entries left: eof only when nothing follows */
	assert_int_equal(arf_ops_readdir(&t->fs, &ROOT, r.ino, r.gen, ents[n - 3].cookie, ents, 2, &n, &eof), 0);
	assert_int_equal(n, 2);
	assert_true(eof);
	tfs_free(t);
}

static void test_times_and_setgid(void **state)
{
	struct tfs *t = tfs_new(64, 16, 64, 32, 64, 0);
	struct timespec pause = { 0, 2000000 };

	(void)state;
	assert_int_equal(do_mkdir(t, &ROOT, "/d", 0755), 0);
	struct arf_ops_attr d0 = attr_of(t, "/d");
	nanosleep(&pause, NULL);
	assert_int_equal(do_create(t, &ROOT, "/d/f", 0644), 0);
	struct arf_ops_attr d1 = attr_of(t, "/d"), f0 = attr_of(t, "/d/f");
	assert_true(d1.mtime_ns > d0.mtime_ns);
	assert_true(d1.ctime_ns > d0.ctime_ns);
	nanosleep(&pause, NULL);
	struct arf_ops_setattr sa = { .valid = ARF_OPS_SET_MODE, .mode = 0600 };
	assert_int_equal(do_setattr(t, &ROOT, "/d/f", &sa), 0);
	struct arf_ops_attr f1 = attr_of(t, "/d/f");
	assert_int_equal(f1.mtime_ns, f0.mtime_ns);
	assert_true(f1.ctime_ns > f0.ctime_ns);
	nanosleep(&pause, NULL);
	assert_int_equal(do_write(t, &ROOT, "/d/f", 0, "x", 1), 0);
	struct arf_ops_attr f2 = attr_of(t, "/d/f");
	assert_true(f2.mtime_ns > f1.mtime_ns);
	/* explicit times */
	sa = (struct arf_ops_setattr){ .valid = ARF_OPS_SET_ATIME | ARF_OPS_SET_MTIME,
				       .atime_ns = 1000, .mtime_ns = 2000 };
	assert_int_equal(do_setattr(t, &ROOT, "/d/f", &sa), 0);
	assert_int_equal(attr_of(t, "/d/f").atime_ns, 1000);
	assert_int_equal(attr_of(t, "/d/f").mtime_ns, 2000);
	/* link bumps the inode's ctime, unlink the directory's mtime */
	nanosleep(&pause, NULL);
	assert_int_equal(do_link(t, &ROOT, "/d/f", "/d/g"), 0);
	assert_true(attr_of(t, "/d/f").ctime_ns > f2.ctime_ns);

	/* setgid directory: group inherited, and the bit by subdirectories */
	own(t, "/d", 0, 777, 02775);
	assert_int_equal(do_create(t, &ROOT, "/d/h", 0644), 0);
	assert_int_equal(attr_of(t, "/d/h").gid, 777);
	assert_int_equal(do_mkdir(t, &ROOT, "/d/sub", 0755), 0);
	assert_int_equal(attr_of(t, "/d/sub").gid, 777);
	assert_true(attr_of(t, "/d/sub").mode & S_ISGID);
	/* chmod by a non-member owner drops S_ISGID */
	own(t, "/d/h", 1000, 777, 0644);
	sa = (struct arf_ops_setattr){ .valid = ARF_OPS_SET_MODE, .mode = 02755 };
	assert_int_equal(do_setattr(t, &U1, "/d/h", &sa), 0);
	assert_int_equal(attr_of(t, "/d/h").mode & 07777, 0755);
	fsck(t);
	tfs_free(t);
}

static void test_emlink(void **state)
{
	struct tfs *t = tfs_new(64, 16, 64, 32, 64, 0);
	struct fh f;

	(void)state;
	assert_int_equal(do_create(t, &ROOT, "/f", 0644), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/d", 0755), 0);
	f = path(t, "/f");
	arf_meta_txn_begin(&t->fs);
	arf_meta_inode_touch(&t->fs, f.ino)->nlink = 65000;
	arf_meta_inode_touch(&t->fs, path(t, "/d").ino)->nlink = 65000;
	arf_meta_txn_end(&t->fs, NULL);
	assert_int_equal(do_link(t, &ROOT, "/f", "/g"), -EMLINK);
	assert_int_equal(do_mkdir(t, &ROOT, "/d/sub", 0755), -EMLINK);
	assert_int_equal(do_create(t, &ROOT, "/d/file", 0644), 0); /* files do not count */
	tfs_free(t);
}

static double secs(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* 10,000 files in 100 directories three levels down, each created in a
 * transaction of its own; every lookup finds the very inode (number and
 * generation) its create returned, with the creator as owner; no two files
 * share an inode; a name never created is not found; the free count and
 * fsck agree.  The time taken is printed for information, never asserted:
 * on a shared machine a time bound could only fail for the wrong reason. */
static void test_10k_files_in_100_directories(void **state)
{
	struct tfs *t = tfs_new(20000, 16384, 20000, 512, 64, 0);
	struct arf_meta_fs *fs = &t->fs;
	struct timespec t1, t2, t3;
	struct arf_ops_attr a, d1, d2, d3;
	struct fh r = path(t, "/");
	char name[32];
	static uint64_t dirs[100], inos[100][100];
	static uint32_t dgens[100], gens[100][100];
	static uint8_t seen[20000];

	(void)state;
	assert_int_equal(TXN(t, arf_ops_mkdir(fs, &ROOT, r.ino, r.gen, "l1", 2, 0755, &d1)), 0);
	assert_int_equal(TXN(t, arf_ops_mkdir(fs, &ROOT, d1.ino, d1.gen, "l2", 2, 0755, &d2)), 0);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "dir%02d", i);
		assert_int_equal(TXN(t, arf_ops_mkdir(fs, &ROOT, d2.ino, d2.gen, name, strlen(name), 0777, &d3)), 0);
		dirs[i] = d3.ino;
		dgens[i] = d3.gen;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int i = 0; i < 100; i++)
		for (int j = 0; j < 100; j++) {
			snprintf(name, sizeof(name), "file-%03d", j);
			arf_meta_txn_begin(fs);
			int rc = arf_ops_create(fs, &U1, dirs[i], dgens[i], name, strlen(name), 0644, 1, &a);
			arf_meta_txn_end(fs, NULL);
			assert_int_equal(rc, 0);
			assert_true(a.ino < 20000);
			assert_int_equal(seen[a.ino], 0); /* a fresh inode for every file */
			seen[a.ino] = 1;
			inos[i][j] = a.ino;
			gens[i][j] = a.gen;
		}
	clock_gettime(CLOCK_MONOTONIC, &t2);
	for (int i = 0; i < 100; i++)
		for (int j = 0; j < 100; j++) {
			snprintf(name, sizeof(name), "file-%03d", j);
			assert_int_equal(arf_ops_lookup(fs, &U1, dirs[i], dgens[i], name, strlen(name), &a), 0);
			assert_int_equal(a.ino, inos[i][j]);
			assert_int_equal(a.gen, gens[i][j]);
			assert_int_equal(a.uid, U1.uid);
			assert_int_equal(a.mode & 07777, 0644);
		}
	clock_gettime(CLOCK_MONOTONIC, &t3);
	assert_int_equal(arf_ops_lookup(fs, &U1, dirs[7], dgens[7], "file-100", 8, &a), -ENOENT);
	print_message("      10,000 creates (each its own transaction, sealed): %.1f ms, %.2f us/create; "
		      "10,000 lookups: %.2f us/lookup (not asserted)\n",
		      secs(&t1, &t2) * 1e3, secs(&t1, &t2) * 1e6 / 10000, secs(&t2, &t3) * 1e6 / 10000);
	assert_int_equal(fs->free_inodes, 20000 - 1 - 102 - 10000);
	fsck(t);
	tfs_free(t);
}

static unsigned rnd(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

/* Random namespace operations on a small tree with long hash chains: any
 * result is allowed, but a failure must change nothing and every success
 * must leave a tree that passes fsck. */
static void test_random_namespace(void **state)
{
	struct tfs *t = tfs_new(48, 4, 64, 24, 32, 0);
	static const char *dirs[] = { "", "/a", "/b", "/a/c" };
	static const char *names[] = { "a", "b", "c", "x", "y", "z" };
	char p1[64], p2[64], data[6000];
	unsigned seed = 4242;
	int ok = 0;

	(void)state;
	memset(data, 'd', sizeof(data));
	assert_int_equal(do_mkdir(t, &ROOT, "/a", 0755), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/b", 0755), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/a/c", 0755), 0);
#define PICK(arr) arr[rnd(&seed) % (sizeof(arr) / sizeof(arr[0]))]
	for (int step = 0; step < 3000; step++) {
		const char *d1 = PICK(dirs), *m1 = PICK(names), *d2 = PICK(dirs), *m2 = PICK(names);
		snprintf(p1, sizeof(p1), "%s/%s", d1, m1);
		snprintf(p2, sizeof(p2), "%s/%s", d2, m2);
		const char *n1;
		if (!parent_of(t, p1, &n1).ino || !parent_of(t, p2, &n1).ino)
			continue; /* a parent that does not exist now */
		uint8_t *meta = malloc(t->geo.meta_size);
		assert_non_null(meta);
		memcpy(meta, t->meta, t->geo.meta_size);
		uint32_t fb = t->fs.free_blocks, fi = t->fs.free_inodes;
		int rc, op = (int)(rnd(&seed) % 9);
		switch (op) {
		case 0: rc = do_create(t, &ROOT, p1, 0644); break;
		case 1: rc = do_mkdir(t, &ROOT, p1, 0755); break;
		case 2: rc = do_unlink(t, &ROOT, p1); break;
		case 3: rc = do_rmdir(t, &ROOT, p1); break;
		case 4: rc = do_rename(t, &ROOT, p1, p2, 0); break;
		case 5: rc = do_rename(t, &ROOT, p1, p2, ARF_OPS_RENAME_EXCHANGE); break;
		case 6: rc = path(t, p1).ino ? do_link(t, &ROOT, p1, p2) : -ENOENT; break;
		case 7: rc = path(t, p1).ino ? do_write(t, &ROOT, p1, rnd(&seed) % 9000, data, rnd(&seed) % sizeof(data)) : -ENOENT; break;
		default: rc = do_rename(t, &ROOT, p1, p2, ARF_OPS_RENAME_NOREPLACE); break;
		}
		if (rc) {
			assert_int_equal(memcmp(meta, t->meta, t->geo.meta_size), 0);
			assert_int_equal(fb, t->fs.free_blocks);
			assert_int_equal(fi, t->fs.free_inodes);
		} else {
			ok++;
		}
		free(meta);
		if (!rc || step % 50 == 0)
			fsck(t);
	}
	print_message("      %d of 3000 random operations succeeded\n", ok);
	assert_true(ok > 300);
	tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rename_dirs),
		cmocka_unit_test(test_rename_files_and_links),
		cmocka_unit_test(test_readdir_cookies),
		cmocka_unit_test(test_times_and_setgid),
		cmocka_unit_test(test_emlink),
		cmocka_unit_test(test_random_namespace),
		cmocka_unit_test(test_10k_files_in_100_directories),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

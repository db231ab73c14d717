/* SPDX-License-Identifier: MIT */
/*
 * libarf's one-sided directory listing (arfclient/onesided.c) fed hostile
 * pages: everything a client reads one-sidedly is untrusted, so a listing
 * page with a valid checksum but a count past its 4 KiB, a chain of pages
 * that loops, a page of another generation of the directory, or a link
 * past the region must end the walk as torn (ARF_ERETRY, after which
 * libarf retries and asks the server), in bounded time, without reading
 * past any buffer (run it under ASan to see that last part).
 *
 * The pages come from a real directory built by meta/ in private memory
 * (tests/meta/meta_test.h); a fake transport copies from that region with
 * the bounds check the soft-NIC applies.  Damage is resealed, as a hostile
 * server would do, so the checksum passes and only the checks can tell.
 */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "../meta/meta_test.h"
#include "client_int.h"

#define NAMES 2100 /* three listing pages of ARF_META_DIR_SLOTS (1012) */

struct fixture {
	struct tfs *t;
	struct arf_meta_inode dir; /* the validated copy a client would hold */
	uint32_t page[3];          /* the listing pages, in order */
	unsigned long reads;       /* one-sided reads served */
};

/* The fake transport: one round of reads from the META region, refused
 * (as the soft-NIC does) when out of bounds. */
static int fake_read(void *ctx, struct arf_net_read_op *ops, size_t n)
{
	struct fixture *f = ctx;

	for (size_t i = 0; i < n; i++) {
		if (ops[i].region != ARF_REGION_META ||
		    !arf_range_ok(ops[i].off, ops[i].len, f->t->geo.meta_size))
			return ARF_EKEY;
		memcpy(ops[i].dst, f->t->meta + ops[i].off, ops[i].len);
		f->reads++;
	}
	return 0;
}

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
	memset((uint8_t *)in + sizeof(in->h), 0, sizeof(*in) - sizeof(in->h));
	in->ino = ino;
	in->gen = gen;
	in->mode = S_IFREG | 0644;
	in->nlink = 1;
	arf_meta_dir_insert(fs, &res, dir, name, len, ino, gen, arf_meta_dtype(in->mode));
	arf_meta_inode_touch(fs, dir)->size++;
	arf_meta_txn_end(fs, NULL);
	return ino;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char name[32];

	assert_non_null(f);
	f->t = tfs_new(4096, 1024, 4096, 16, 16, 0);
	for (int i = 0; i < NAMES; i++) {
		snprintf(name, sizeof(name), "name%05d", i);
		mk(f->t, ARF_ROOT_INO, name);
	}
	f->dir = *arf_meta_inode_ptr(&f->t->fs, ARF_ROOT_INO);
	assert_int_equal(f->dir.dir_pages, 3);
	uint32_t p = f->dir.dir_first;
	for (int i = 0; i < 3; i++) {
		f->page[i] = p;
		p = arf_meta_page_ptr(&f->t->fs, p)->next;
	}
	assert_int_equal(p, ARF_META_NONE);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	tfs_free(f->t);
	free(f);
	return 0;
}

/* Change listing page i as a hostile server would: then reseal it, so the
 * checksum is right and only the checks can tell. */
static struct arf_meta_page *damage(struct fixture *f, int i)
{
	struct arf_meta_page *pg = arf_meta_page_ptr(&f->t->fs, f->page[i]);
	arf_meta_obj_begin(pg, sizeof(*pg));
	return pg;
}

static void reseal(struct arf_meta_page *pg)
{
	arf_meta_obj_seal(pg, sizeof(*pg));
}

static int list(struct fixture *f, uint64_t cookie, struct arf_dirent *ents, size_t max,
		size_t *n, int *eof)
{
	struct arf_os_src src = { .read = fake_read, .ctx = f, .sb = f->t->fs.sb, .retries = 3 };

	alarm(10); /* a walk that loops fails the test instead of hanging it */
	int rc = arf_os_listing(&src, &f->dir, cookie, ents, max, n, eof);
	alarm(0);
	return rc;
}

static void test_whole_listing_and_resume(void **state)
{
	struct fixture *f = *state;
	struct arf_dirent *ents = calloc(NAMES + 10, sizeof(*ents));
	uint8_t seen[NAMES] = { 0 };
	size_t n, total = 0;
	int eof = 0;
	uint64_t cookie = 0;

	assert_non_null(ents);
	assert_int_equal(list(f, 0, ents, NAMES + 10, &n, &eof), 0);
	assert_int_equal(n, NAMES);
	assert_true(eof);
	/* in batches of 500, resuming at each batch's last cookie */
	eof = 0;
	while (!eof) {
		assert_int_equal(list(f, cookie, ents, 500, &n, &eof), 0);
		for (size_t i = 0; i < n; i++) {
			int k = atoi(ents[i].name + 4);
			assert_true(k >= 0 && k < NAMES);
			assert_false(seen[k]);
			seen[k] = 1;
		}
		total += n;
		if (n)
			cookie = ents[n - 1].cookie;
		assert_true(total <= NAMES);
	}
	assert_int_equal(total, NAMES);
	free(ents);
	print_message("listing: %d names in one call and in batches of 500, each once\n", NAMES);
}

/* A continuation page whose count runs far past its 4 KiB. */
static void test_huge_count_on_continuation_page(void **state)
{
	struct fixture *f = *state;
	struct arf_dirent *ents = calloc(NAMES + 10, sizeof(*ents));
	size_t n;
	int eof;

	assert_non_null(ents);
	struct arf_meta_page *pg = damage(f, 1);
	pg->count = 0xFFFFFFFFu;
	reseal(pg);
	assert_int_equal(arf_meta_obj_validate(pg, sizeof(*pg)), 0); /* the checksum passes */
	assert_int_equal(list(f, 0, ents, NAMES + 10, &n, &eof), ARF_ERETRY);
	/* resuming right at that page: refused before its slots are read */
	assert_int_equal(list(f, (uint64_t)ARF_META_DIR_SLOTS, ents, 10, &n, &eof), ARF_ERETRY);
	/* one slot too many is as bad */
	pg = damage(f, 1);
	pg->count = ARF_META_DIR_SLOTS + 1;
	reseal(pg);
	assert_int_equal(list(f, 0, ents, NAMES + 10, &n, &eof), ARF_ERETRY);
	free(ents);
	print_message("a continuation page claiming 2^32-1 (or 1013) slots: torn, not read past\n");
}

static void test_huge_count_on_first_page(void **state)
{
	struct fixture *f = *state;
	struct arf_dirent ents[8];
	size_t n;
	int eof;

	struct arf_meta_page *pg = damage(f, 0);
	pg->count = 0x7FFFFFFFu;
	reseal(pg);
	assert_int_equal(list(f, 0, ents, 8, &n, &eof), ARF_ERETRY);
}

/* The last page links back to the first: the ordinals stop growing. */
static void test_cycle_while_listing(void **state)
{
	struct fixture *f = *state;
	struct arf_dirent *ents = calloc(4 * NAMES, sizeof(*ents));
	size_t n;
	int eof;

	assert_non_null(ents);
	struct arf_meta_page *pg = damage(f, 2);
	pg->next = f->page[0];
	reseal(pg);
	unsigned long before = f->reads;
	assert_int_equal(list(f, 0, ents, 4 * NAMES, &n, &eof), ARF_ERETRY);
	assert_true(n <= NAMES); /* never a name twice */
	assert_true(f->reads - before <= NAMES + 4);
	free(ents);
	print_message("a looping chain while listing: torn after %lu reads\n", f->reads - before);
}

/* A loop of pages whose ordinals never reach the cookie's. */
static void test_cycle_while_seeking(void **state)
{
	struct fixture *f = *state;
	struct arf_dirent ents[8];
	size_t n;
	int eof;

	struct arf_meta_page *pg = damage(f, 1);
	pg->next = f->page[0];
	reseal(pg);
	unsigned long before = f->reads;
	/* a cookie on page ordinal 40: the walk would go round for ever */
	assert_int_equal(list(f, 40ull * ARF_META_DIR_SLOTS, ents, 8, &n, &eof), ARF_ERETRY);
	assert_true(f->reads - before <= 4);
	print_message("a looping chain while seeking a cookie: torn after %lu page reads\n",
		      f->reads - before);
}

/* Even with growing ordinals, no more pages than the inode counts (+1). */
static void test_chain_longer_than_the_inode_says(void **state)
{
	struct fixture *f = *state;
	struct arf_dirent ents[8];
	size_t n;
	int eof;

	f->dir.dir_pages = 1; /* the copy the client holds is older than the chain */
	assert_int_equal(list(f, 2ull * ARF_META_DIR_SLOTS, ents, 8, &n, &eof), ARF_ERETRY);
	f->dir.dir_pages = 2; /* one appended since: still walked */
	assert_int_equal(list(f, 2ull * ARF_META_DIR_SLOTS, ents, 8, &n, &eof), 0);
	assert_true(n > 0);
}

/* A page of an earlier directory in the same inode slot. */
static void test_page_of_another_generation(void **state)
{
	struct fixture *f = *state;
	struct arf_dirent *ents = calloc(NAMES + 10, sizeof(*ents));
	size_t n;
	int eof;

	assert_non_null(ents);
	struct arf_meta_page *pg = damage(f, 1);
	pg->owner_gen = f->dir.gen + 1;
	reseal(pg);
	assert_int_equal(list(f, 0, ents, NAMES + 10, &n, &eof), ARF_ERETRY);
	pg = damage(f, 2);
	pg->owner_gen = f->dir.gen;
	pg->kind = ARF_META_PAGE_EXT;
	reseal(pg);
	pg = damage(f, 1);
	pg->owner_gen = f->dir.gen;
	reseal(pg);
	assert_int_equal(list(f, 0, ents, NAMES + 10, &n, &eof), ARF_ERETRY);
	free(ents);
}

/* Links past the region, and a page torn for good. */
static void test_bad_links_and_torn_pages(void **state)
{
	struct fixture *f = *state;
	struct arf_dirent ents[8];
	size_t n;
	int eof;

	struct arf_meta_page *pg = damage(f, 0);
	pg->next = f->t->geo.n_pages; /* one past the last page */
	reseal(pg);
	assert_int_equal(list(f, 2ull * ARF_META_DIR_SLOTS, ents, 8, &n, &eof), ARF_ERETRY);
	pg = damage(f, 0);
	pg->next = f->page[1];
	pg->u.slot[0] = f->t->geo.n_entries; /* an entry past the table */
	reseal(pg);
	assert_int_equal(list(f, 0, ents, 8, &n, &eof), ARF_ERETRY);
	pg = damage(f, 0); /* left odd: a writer that never finishes */
	unsigned long before = f->reads;
	assert_int_equal(list(f, 0, ents, 8, &n, &eof), ARF_ERETRY);
	assert_int_equal(f->reads - before, 4); /* the first copy and three retries */
}

static void test_page_check(void **state)
{
	struct fixture *f = *state;
	struct arf_meta_page pg = *arf_meta_page_ptr(&f->t->fs, f->page[0]);

	assert_int_equal(arf_os_dir_page_check(&pg, &f->dir), 0);
	pg.count = ARF_META_DIR_SLOTS;
	assert_int_equal(arf_os_dir_page_check(&pg, &f->dir), 0);
	pg.count = ARF_META_DIR_SLOTS + 1;
	assert_int_equal(arf_os_dir_page_check(&pg, &f->dir), ARF_ERETRY);
	pg.count = 1;
	pg.owner = f->dir.ino + 1;
	assert_int_equal(arf_os_dir_page_check(&pg, &f->dir), ARF_ERETRY);
	pg.owner = f->dir.ino;
	pg.owner_gen ^= 1;
	assert_int_equal(arf_os_dir_page_check(&pg, &f->dir), ARF_ERETRY);
	pg.owner_gen ^= 1;
	pg.kind = ARF_META_PAGE_EXT;
	assert_int_equal(arf_os_dir_page_check(&pg, &f->dir), ARF_ERETRY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_whole_listing_and_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_huge_count_on_continuation_page, setup, teardown),
		cmocka_unit_test_setup_teardown(test_huge_count_on_first_page, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cycle_while_listing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cycle_while_seeking, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain_longer_than_the_inode_says, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_page_of_another_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_links_and_torn_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_page_check, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

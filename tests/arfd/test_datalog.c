/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of arfd's data log (arfd/datalog.c), on real files in a
 * scratch directory: what recovery keeps and what it leaves.
 *
 *   - a log bigger than the scan's buffer replays every block's last image;
 *   - a torn tail ends what is whole at the last complete transaction, and
 *     begin cuts it;
 *   - a segment that lost its tail while the next kept records (the page
 *     cache's order) is damage too;
 *   - the validity rule decides: a crashed incarnation's records above what
 *     it was durable through are void;
 *   - buffered mode (test_power_loss) loses exactly what was not synced;
 *   - reclamation deletes dead segments, copies live records, and recovery
 *     afterwards still finds every block;
 *   - freed blocks are neither replayed nor compared;
 *   - a deleted segment's file is recycled as a later head, and what its
 *     earlier life left past the new records is never read as records:
 *     neither at the head's end after a crash nor past a closed segment's
 *     end, where it would read as damage and void later transactions;
 *   - a hole in a recycled segment whose successor lost its header is
 *     damage (nothing else witnesses the segment's length);
 *   - syncs from two threads at once (the committer's, arfctl
 *     checkpoint's) each finish their work: none fails nor closes the
 *     other's descriptors.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "datalog.h"

#define BS 4096u
#define NB 2048u                     /* blocks in the test's region: 8 MiB */

static char dir[64];
static uint8_t *region, *back;       /* what is written, what replay rebuilds */

/* Records are valid up to durable[inc] (0 = every record of inc). */
static uint64_t durable[8];

static int valid(void *ctx, uint64_t inc, uint64_t seq)
{
	(void)ctx;
	return inc < 8 && (!durable[inc] || seq <= durable[inc]);
}

static uint8_t freed[NB];

static int is_free(void *ctx, uint32_t blk)
{
	(void)ctx;
	return freed[blk];
}

static void fill(uint32_t blk, uint32_t ver)
{
	for (size_t i = 0; i < BS; i += 8) {
		uint64_t v = (uint64_t)blk << 32 | ver;
		memcpy(region + (size_t)blk * BS + i, &v, 8);
	}
}

static void rmdir_all(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[400];
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/arf-datalog-XXXXXX");
	assert_non_null(mkdtemp(dir));
	region = calloc(NB, BS);
	back = calloc(NB, BS);
	memset(durable, 0, sizeof(durable));
	memset(freed, 0, sizeof(freed));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rmdir_all();
	free(region);
	free(back);
	return 0;
}

static struct arfd_datalog *open_log(int buffered, uint64_t seg)
{
	struct arfd_datalog *l;
	char err[256];
	assert_int_equal(arfd_datalog_open(dir, NB, seg, buffered, &l, err, sizeof(err)), 0);
	return l;
}

/* Write blocks [first, first + n) at version ver as transaction seq. */
static void txn(struct arfd_datalog *l, uint64_t inc, uint64_t seq, uint32_t first, uint32_t n,
		uint32_t ver)
{
	uint32_t *b = malloc(n * sizeof(*b));
	char err[256];
	for (uint32_t i = 0; i < n; i++) {
		b[i] = first + i;
		fill(first + i, ver);
	}
	assert_int_equal(arfd_datalog_append(l, inc, seq, b, NULL, n, region, 0, err, sizeof(err)), 0);
	free(b);
}

/* Recover as the incarnation after inc: *through, and back filled. */
static struct arfd_datalog *recover(uint64_t inc, uint64_t start, uint64_t *through,
				    uint64_t *loaded, int buffered, uint64_t seg)
{
	struct arfd_datalog *l = open_log(buffered, seg);
	*loaded = 0;
	char err[256];
	memset(back, 0, (size_t)NB * BS);
	assert_int_equal(arfd_datalog_scan(l, inc, start, through, err, sizeof(err)), 0);
	return l;
}

static void replay(struct arfd_datalog *l, uint64_t *loaded)
{
	char err[256];
	assert_int_equal(arfd_datalog_replay(l, back, (uint64_t)NB * BS, valid, is_free, NULL,
					     loaded, err, sizeof(err)), 0);
}

static void test_big_log_replays_last_images(void **state)
{
	struct arfd_datalog *l = open_log(0, 64u << 20);
	char err[256];
	uint64_t through, loaded;
	(void)state;
	assert_int_equal(arfd_datalog_begin(l, 1, err, sizeof(err)), 0);
	/* 12 MiB of records: three times the scan's 4 MiB buffer */
	for (uint32_t v = 1; v <= 6; v++)
		txn(l, 1, v, (v - 1) * 64, 512, v); /* overlapping ranges */
	assert_int_equal(arfd_datalog_sync(l, 1, 6, err, sizeof(err)), 0);
	arfd_datalog_close(l);
	l = recover(1, 1, &through, &loaded, 0, 64u << 20);
	assert_int_equal(through, 6);
	replay(l, &loaded);
	assert_int_equal(loaded, 5 * 64 + 512);
	assert_memory_equal(back, region, (size_t)NB * BS);
	arfd_datalog_close(l);
}

static void test_torn_tail(void **state)
{
	struct arfd_datalog *l = open_log(0, 64u << 20);
	char err[256], p[400];
	uint64_t through, loaded;
	struct stat st;
	(void)state;
	assert_int_equal(arfd_datalog_begin(l, 1, err, sizeof(err)), 0);
	txn(l, 1, 1, 0, 4, 1);
	txn(l, 1, 2, 4, 4, 2);
	arfd_datalog_close(l);
	snprintf(p, sizeof(p), "%s/%016x.seg", dir, 1);
	assert_int_equal(stat(p, &st), 0);
	/* the second transaction's last record loses its last bytes */
	assert_int_equal(truncate(p, st.st_size - 100), 0);
	l = recover(1, 1, &through, &loaded, 0, 64u << 20);
	assert_int_equal(through, 1); /* 2 is not whole */
	durable[1] = through;
	replay(l, &loaded);
	assert_int_equal(loaded, 4);
	assert_memory_equal(back, region, 4 * BS);
	/* begin cuts the torn tail: nothing reads past it again */
	assert_int_equal(arfd_datalog_begin(l, 2, err, sizeof(err)), 0);
	arfd_datalog_sync(l, 2, 2, err, sizeof(err));
	arfd_datalog_close(l);
	assert_int_equal(stat(p, &st), 0);
	/* the header, transaction 1's four records, three whole ones of 2 */
	assert_int_equal(st.st_size, 48 + 7 * (48 + BS));
}

static void test_hole_in_an_earlier_segment(void **state)
{
	struct arfd_datalog *l = open_log(0, 1u << 20);
	char err[256], p[400];
	uint64_t through, loaded;
	struct stat st;
	(void)state;
	assert_int_equal(arfd_datalog_begin(l, 1, err, sizeof(err)), 0);
	for (uint32_t v = 1; v <= 8; v++) /* ~1.2 MiB each: a segment each */
		txn(l, 1, v, (v - 1) * 16, 300, v);
	arfd_datalog_close(l);
	/* segment 3 lost its tail, segment 4 on kept its records */
	snprintf(p, sizeof(p), "%s/%016x.seg", dir, 3);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(truncate(p, st.st_size - (48 + BS)), 0);
	l = recover(1, 1, &through, &loaded, 0, 1u << 20);
	assert_int_equal(through, 2); /* transaction 3 is segment 3's */
	arfd_datalog_close(l);
}

static void test_void_records_of_a_crashed_incarnation(void **state)
{
	struct arfd_datalog *l = open_log(0, 64u << 20);
	char err[256];
	uint64_t through, loaded;
	(void)state;
	assert_int_equal(arfd_datalog_begin(l, 1, err, sizeof(err)), 0);
	txn(l, 1, 1, 0, 8, 1);
	txn(l, 1, 2, 0, 8, 2);
	uint8_t *v2 = malloc(8 * BS);
	memcpy(v2, region, 8 * BS); /* what version 2 looks like */
	txn(l, 1, 3, 0, 8, 3);
	arfd_datalog_close(l);
	/* RocksDB recovered only through 2: 3 is void though the log has it */
	l = recover(1, 1, &through, &loaded, 0, 64u << 20);
	assert_int_equal(through, 3);
	durable[1] = 2;
	memcpy(region, v2, 8 * BS);
	free(v2);
	replay(l, &loaded);
	assert_memory_equal(back, region, 8 * BS);
	/* the next incarnation writes sequence 3 again: its own, valid */
	assert_int_equal(arfd_datalog_begin(l, 2, err, sizeof(err)), 0);
	txn(l, 2, 3, 4, 4, 9);
	assert_int_equal(arfd_datalog_sync(l, 2, 3, err, sizeof(err)), 0);
	arfd_datalog_close(l);
	l = recover(2, 3, &through, &loaded, 0, 64u << 20);
	assert_int_equal(through, 3);
	replay(l, &loaded);
	assert_memory_equal(back, region, 8 * BS); /* 0-3 at version 2, 4-7 at 9 */
	arfd_datalog_close(l);
}

static void test_buffered_loses_what_was_not_synced(void **state)
{
	struct arfd_datalog *l = open_log(1, 64u << 20);
	char err[256];
	uint64_t through, loaded;
	(void)state;
	assert_int_equal(arfd_datalog_begin(l, 1, err, sizeof(err)), 0);
	txn(l, 1, 1, 0, 8, 1);
	assert_int_equal(arfd_datalog_sync(l, 1, 1, err, sizeof(err)), 0);
	memcpy(back, region, 8 * BS);
	uint8_t *synced = malloc(8 * BS);
	memcpy(synced, region, 8 * BS);
	txn(l, 1, 2, 0, 8, 2); /* never synced: in memory only */
	arfd_datalog_close(l); /* as a SIGKILL: the buffer is gone */
	l = recover(1, 1, &through, &loaded, 1, 64u << 20);
	assert_int_equal(through, 1);
	replay(l, &loaded);
	assert_memory_equal(back, synced, 8 * BS);
	free(synced);
	arfd_datalog_close(l);
}

/* Reclaim until there is nothing left to do: each round copies a segment,
 * then a sync covers the copies and the round after deletes. */
static void reclaim_all(struct arfd_datalog *l, uint64_t inc, uint64_t seq)
{
	char err[256];
	int rounds = 0;
	for (;;) {
		int rc = arfd_datalog_reclaim(l, seq, err, sizeof(err));
		assert_true(rc >= 0);
		if (rc)
			arfd_datalog_reclaim_wait(l, seq);
		assert_int_equal(arfd_datalog_sync(l, inc, seq, err, sizeof(err)), 0);
		if (!rc && ++rounds > 1)
			break;
	}
}

static void test_reclaim(void **state)
{
	struct arfd_datalog *l = open_log(0, 1u << 20);
	struct arfd_datalog_stats s;
	char err[256];
	uint64_t through, loaded, seq = 0;
	(void)state;
	assert_int_equal(arfd_datalog_begin(l, 1, err, sizeof(err)), 0);
	/* 64 blocks written over and over: 40 segments, 1 of them live */
	for (uint32_t v = 1; v <= 160; v++)
		txn(l, 1, ++seq, 0, 64, v);
	txn(l, 1, ++seq, 64, 16, 7); /* and some that stay where they are */
	/* a freed block: dead, not replayed */
	arfd_datalog_drop(l, 70);
	freed[70] = 1;
	memset(region + 70 * BS, 0, BS);
	assert_int_equal(arfd_datalog_sync(l, 1, seq, err, sizeof(err)), 0);
	arfd_datalog_stats(l, &s);
	uint64_t before = s.bytes;
	assert_true(s.segments > 30);
	reclaim_all(l, 1, seq);
	assert_int_equal(arfd_datalog_reclaim(l, seq, err, sizeof(err)), 0);
	arfd_datalog_stats(l, &s);
	assert_true(s.bytes < before / 4);
	assert_true(s.reclaimed_bytes > 0);
	uint64_t diff = 0;
	int d = arfd_datalog_compare(l, region, (uint64_t)NB * BS, NULL, NULL, &diff, err,
				     sizeof(err));
	assert_int_equal(d, 0);
	assert_int_equal(diff, 64 + 15);
	arfd_datalog_close(l);
	l = recover(1, 1, &through, &loaded, 0, 1u << 20);
	assert_int_equal(through, seq);
	replay(l, &loaded);
	assert_int_equal(loaded, 64 + 15);
	assert_memory_equal(back, region, (size_t)NB * BS);
	arfd_datalog_close(l);
}

/* The names of the files in dir ending in suffix (up to max), sorted. */
static int list_files(const char *suffix, char names[][64], int max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d))) {
		size_t a = strlen(e->d_name), b = strlen(suffix);
		if (a > b && a < 64 && !strcmp(e->d_name + a - b, suffix) && n < max)
			snprintf(names[n++], 64, "%s", e->d_name);
	}
	if (d)
		closedir(d);
	qsort(names, (size_t)n, 64, (int (*)(const void *, const void *))strcmp);
	return n;
}

/* Begin incarnation 1 of l (1 MiB segments), write 64 blocks over and
 * over (40 segments), sync and reclaim: two deleted files kept as spares. */
static void with_spares(struct arfd_datalog *l, uint64_t *seq, uint32_t *v)
{
	char err[256], names[4][64];
	assert_int_equal(arfd_datalog_begin(l, 1, err, sizeof(err)), 0);
	while (*v < 160)
		txn(l, 1, ++*seq, 0, 64, ++*v);
	assert_int_equal(arfd_datalog_sync(l, 1, *seq, err, sizeof(err)), 0);
	reclaim_all(l, 1, *seq);
	assert_int_equal(list_files(".free", names, 4), 2);
}

static void test_recycled_segments(void **state)
{
	struct arfd_datalog *l = open_log(0, 1u << 20);
	struct arfd_datalog_stats s;
	char err[256], p[400], names[64][64];
	uint64_t through, loaded, seq = 0;
	uint32_t v = 0;
	uint8_t hdr[48], rec[48 + BS];
	(void)state;
	with_spares(l, &seq, &v);
	/* a checkpoint gives them back */
	arfd_datalog_drop_spares(l);
	assert_int_equal(list_files(".free", names, 64), 0);
	while (v < 200) /* ten more segments, reclaimed: two spares again */
		txn(l, 1, ++seq, 0, 64, ++v);
	assert_int_equal(arfd_datalog_sync(l, 1, seq, err, sizeof(err)), 0);
	reclaim_all(l, 1, seq);
	assert_int_equal(list_files(".free", names, 64), 2);
	/* the next heads are those files, each overwritten from its start:
	 * 4 transactions a segment, so two heads and one more */
	for (int i = 0; i < 9; i++)
		txn(l, 1, ++seq, 0, 64, ++v);
	assert_int_equal(arfd_datalog_sync(l, 1, seq, err, sizeof(err)), 0);
	arfd_datalog_stats(l, &s);
	assert_int_equal(s.recycled, 2);
	assert_int_equal(list_files(".free", names, 64), 0);
	uint64_t diff = 0;
	assert_int_equal(arfd_datalog_compare(l, region, (uint64_t)NB * BS, NULL, NULL, &diff, err,
					      sizeof(err)), 0);
	arfd_datalog_close(l);

	/* A closed recycled segment whose cut of its old tail was lost (a
	 * crash before the truncate reached the disk): whole records of its
	 * earlier life follow its own.  As one, a block record of another
	 * segment (it checks there, seeded with that segment's id) is put
	 * after the last record of each closed recycled segment.  Read as
	 * records, they would make the segment longer than its successor's
	 * header says: damage, and every later transaction void. */
	int n = list_files(".seg", names, 64), grown = 0;
	assert_true(n >= 3);
	snprintf(p, sizeof(p), "%s/%.63s", dir, names[n - 1]); /* the head: another id */
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	assert_int_equal(fseek(f, 48, SEEK_SET), 0);
	assert_int_equal(fread(rec, 1, sizeof(rec), f), sizeof(rec));
	fclose(f);
	for (int i = 0; i < n - 1; i++) {
		uint16_t flags;
		snprintf(p, sizeof(p), "%s/%.63s", dir, names[i]);
		f = fopen(p, "r+");
		assert_non_null(f);
		assert_int_equal(fread(hdr, 1, sizeof(hdr), f), sizeof(hdr));
		memcpy(&flags, hdr + 6, 2); /* the on-disk header's flags: 0x8 = F_REUSED */
		if (flags & 0x8) {
			assert_int_equal(fseek(f, 0, SEEK_END), 0);
			assert_int_equal(fwrite(rec, 1, sizeof(rec), f), sizeof(rec));
			grown++;
		}
		fclose(f);
	}
	assert_int_equal(grown, 2);
	l = recover(1, 1, &through, &loaded, 0, 1u << 20);
	assert_int_equal(through, seq); /* nothing read as damage */
	replay(l, &loaded);
	assert_int_equal(loaded, 64);
	assert_memory_equal(back, region, (size_t)NB * BS);

	/* A later incarnation reclaims, and its head after that is a spare
	 * holding records of the earlier life past what it writes; then a
	 * crash: what was not synced is void (RocksDB recovered only
	 * through the last sync), the rest is whole. */
	assert_int_equal(arfd_datalog_begin(l, 2, err, sizeof(err)), 0);
	for (int i = 0; i < 12; i++)
		txn(l, 2, ++seq, 0, 64, ++v);
	assert_int_equal(arfd_datalog_sync(l, 2, seq, err, sizeof(err)), 0);
	reclaim_all(l, 2, seq);
	uint64_t synced = seq;
	uint8_t *snap = malloc((size_t)NB * BS);
	memcpy(snap, region, (size_t)NB * BS);
	for (int i = 0; i < 6; i++)
		txn(l, 2, ++seq, 0, 64, ++v);
	arfd_datalog_stats(l, &s);
	assert_true(s.recycled >= 1);
	arfd_datalog_close(l); /* a crash */
	l = recover(2, 1, &through, &loaded, 0, 1u << 20);
	assert_int_equal(through, seq);
	durable[2] = synced;
	replay(l, &loaded);
	assert_memory_equal(back, snap, (size_t)NB * BS);
	free(snap);
	arfd_datalog_close(l);
}

/* Overwrite len bytes at off of segment id's file with garbage. */
static void scribble(uint32_t id, long off, size_t len)
{
	char p[400];
	uint8_t junk[48 + BS];
	memset(junk, 0x5a, sizeof(junk));
	snprintf(p, sizeof(p), "%s/%016x.seg", dir, id);
	FILE *f = fopen(p, "r+");
	assert_non_null(f);
	assert_int_equal(fseek(f, off, SEEK_SET), 0);
	assert_int_equal(fwrite(junk, 1, len, f), len);
	fclose(f);
}

static void test_recycled_hole_and_lost_header(void **state)
{
	struct arfd_datalog *l = open_log(0, 1u << 20);
	struct arfd_datalog_stats s;
	char names[64][64];
	uint64_t through, loaded, seq = 0;
	uint32_t v = 0;
	(void)state;
	with_spares(l, &seq, &v);
	uint64_t synced = seq;
	/* three segments after the last sync: two recycled files, one new */
	for (int i = 0; i < 12; i++)
		txn(l, 1, ++seq, 0, 64, ++v);
	arfd_datalog_stats(l, &s);
	assert_int_equal(s.recycled, 2);
	arfd_datalog_close(l);
	/* a power cut: the first recycled segment loses a page in its middle
	 * (its earlier life's bytes show there), the second its header page;
	 * the third is whole */
	int n = list_files(".seg", names, 64);
	assert_true(n >= 3);
	uint32_t r1 = (uint32_t)strtoul(names[n - 3], NULL, 16);
	scribble(r1, 48 + 100 * (48 + BS), 48 + BS); /* record 100: transaction 2 */
	scribble(r1 + 1, 0, 48);
	l = recover(1, 1, &through, &loaded, 0, 1u << 20);
	/* whole through the first transaction after the sync, not beyond:
	 * the last segment's records do not make the lost ones whole */
	assert_int_equal(through, synced + 1);
	arfd_datalog_close(l);
}

struct syncer {
	struct arfd_datalog *l;
	int stop;
	int failures;
	char err[256];
};

static void *sync_loop(void *arg)
{
	struct syncer *s = arg;
	char err[256];
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		if (arfd_datalog_sync(s->l, 1, 1, err, sizeof(err)) &&
		    __atomic_fetch_add(&s->failures, 1, __ATOMIC_ACQ_REL) == 0)
			memcpy(s->err, err, sizeof(err)); /* the first failure's reason */
	return NULL;
}

static void test_syncs_from_two_threads(void **state)
{
	struct arfd_datalog *l = open_log(0, 1u << 20);
	char err[256];
	uint64_t seq = 0;
	pthread_t t[2];
	struct syncer s = { l, 0, 0, "" };
	(void)state;
	assert_int_equal(arfd_datalog_begin(l, 1, err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, sync_loop, &s), 0);
	/* 64-block transactions: a segment rolls over every fourth */
	for (uint32_t v = 1; v <= 400; v++)
		txn(l, 1, ++seq, (v % 8) * 64, 64, v);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (s.failures)
		fail_msg("%d syncs failed: %s", s.failures, s.err);
	assert_int_equal(arfd_datalog_sync(l, 1, seq, err, sizeof(err)), 0);
	arfd_datalog_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_big_log_replays_last_images, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hole_in_an_earlier_segment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_void_records_of_a_crashed_incarnation, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_buffered_loses_what_was_not_synced, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reclaim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recycled_segments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recycled_hole_and_lost_header, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_syncs_from_two_threads, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

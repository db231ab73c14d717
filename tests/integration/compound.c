/* SPDX-License-Identifier: MIT */
/*
 * arf-compound — libarf's compound calls against a real arfd (started and
 * stopped by tests/integration/test_compound.py):
 *
 *   arf-compound create-write URL    arf_create_write: one request makes a
 *                                    file whole; EEXIST; a failure after
 *                                    the file was made leaves no name
 *   arf-compound copy URL            arf_copy: bytes, holes, offsets and
 *                                    short counts as copy_file_range(2),
 *                                    permissions, and few bytes on the wire
 *
 * Every check prints one line saying what it showed; the first that fails
 * prints "FAIL: reason" and exits 1.  Checks read back through a second
 * client with no caches, so they see what the server has.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arf.h"

#define FAIL(...)                                      \
	do {                                           \
		fprintf(stdout, "FAIL: " __VA_ARGS__); \
		fprintf(stdout, "\n");                 \
		exit(1);                               \
	} while (0)

#define CHECK(cond, ...)             \
	do {                         \
		if (!(cond))         \
			FAIL(__VA_ARGS__); \
	} while (0)

static arf_client *c, *fresh; /* the one under test; one without caches */

static arf_client *dial(const char *url, uint32_t cache_ms)
{
	struct arf_client_opts o;
	char err[512];
	arf_client *cl;

	arf_client_opts_init(&o);
	o.attr_timeout_ms = cache_ms;
	o.entry_timeout_ms = cache_ms;
	o.spin_us = 0;
	if (arf_connect(url, &o, &cl, err, sizeof(err)))
		FAIL("connect %s: %s", url, err);
	return cl;
}

static void as_user(uint32_t uid)
{
	struct arf_cred cr = { uid, uid, 0, { 0 } };
	arf_set_thread_cred(uid ? &cr : NULL);
}

static struct arf_stat mkdir_at(const char *name, uint32_t mode)
{
	struct arf_stat root, st;
	int rc;

	CHECK(!arf_root(c, &root), "root");
	if ((rc = arf_mkdir(c, root.ino, root.gen, name, mode, &st)))
		FAIL("mkdir %s: %s", name, arf_strerror(rc));
	return st;
}

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

/* The whole file as the server has it (malloc'd). */
static uint8_t *slurp(uint64_t ino, uint32_t gen, uint64_t size)
{
	uint8_t *b = malloc(size ? size : 1);
	CHECK(b, "out of memory");
	ssize_t n = arf_read(fresh, ino, gen, 0, b, size);
	CHECK(n >= 0 && (uint64_t)n == size, "read back %" PRIu64 " bytes: got %zd", size, n);
	return b;
}

static uint64_t reqs(arf_client *cl, const char *kind)
{
	struct arf_client_stats s;
	arf_stats(cl, &s);
	if (!kind)
		return s.requests + s.rounds + s.execs;
	for (int i = 0; i < ARF_NKINDS; i++)
		if (!strcmp(arf_request_kind_name(i), kind))
			return s.requests_by_kind[i];
	return 0;
}

static int cmd_create_write(void)
{
	struct arf_stat d = mkdir_at("cw", 0777), st, got;
	struct arf_setattr sa = { 0 };
	uint8_t data[3000];
	int rc;

	fill(data, sizeof(data), 1);
	sa.valid = ARF_SET_MODE | ARF_SET_MTIME | ARF_SET_ATIME;
	sa.mode = 0640;
	sa.mtime_ns = 1000000000LL * 1234567890 + 42;
	sa.atime_ns = 1000000000LL * 1234567000;
	uint64_t r0 = reqs(c, NULL), k0 = reqs(c, "create_write");
	rc = arf_create_write(c, d.ino, d.gen, "a", 0600, data, sizeof(data), &sa, &st);
	CHECK(!rc, "create_write: %s", arf_strerror(rc));
	CHECK(reqs(c, NULL) - r0 == 1 && reqs(c, "create_write") - k0 == 1,
	      "create_write took %" PRIu64 " round trips, not 1", reqs(c, NULL) - r0);
	CHECK(!arf_lookup(fresh, d.ino, d.gen, "a", &got), "lookup a");
	CHECK(got.ino == st.ino && got.size == sizeof(data) && (got.mode & 07777) == 0640 &&
	      got.mtime_ns == sa.mtime_ns && got.atime_ns == sa.atime_ns && S_ISREG(got.mode),
	      "a: size %" PRIu64 " mode %o mtime %" PRId64, got.size, got.mode, got.mtime_ns);
	uint8_t *b = slurp(got.ino, got.gen, got.size);
	CHECK(!memcmp(b, data, sizeof(data)), "a's bytes differ");
	free(b);
	printf("create_write: 3000 bytes, mode 0640 and times set in 1 round trip\n");

	rc = arf_create_write(c, d.ino, d.gen, "a", 0600, "x", 1, NULL, NULL);
	CHECK(rc == -EEXIST, "second create_write of a: %s, not EEXIST", arf_strerror(rc));
	CHECK(!arf_lookup(fresh, d.ino, d.gen, "a", &got) && got.size == sizeof(data),
	      "a changed by a refused create_write");
	printf("create_write: an existing name is EEXIST and stays as it was\n");

	rc = arf_create_write(c, d.ino, d.gen, "empty", 0644, NULL, 0, NULL, &st);
	CHECK(!rc && st.size == 0 && S_ISREG(st.mode), "empty file: %s", arf_strerror(rc));
	sa.valid = ARF_SET_SIZE;
	rc = arf_create_write(c, d.ino, d.gen, "sized", 0644, "x", 1, &sa, NULL);
	CHECK(rc == -EINVAL, "ARF_SET_SIZE: %s, not EINVAL", arf_strerror(rc));
	CHECK(arf_lookup(fresh, d.ino, d.gen, "sized", &got) == -ENOENT, "sized was made");
	printf("create_write: no data makes an empty file; a size in sa is EINVAL\n");

	/* a user who may create here but not give the file away: EPERM after
	 * the file was made and written, so the call must take it back */
	struct arf_stat before, after;
	CHECK(!arf_getattr(fresh, d.ino, d.gen, &before), "getattr cw");
	as_user(1000);
	sa.valid = ARF_SET_UID;
	sa.uid = 0;
	rc = arf_create_write(c, d.ino, d.gen, "given", 0644, data, sizeof(data), &sa, NULL);
	as_user(0);
	CHECK(rc == -EPERM, "chown to root by uid 1000: %s, not EPERM", arf_strerror(rc));
	CHECK(arf_lookup(fresh, d.ino, d.gen, "given", &got) == -ENOENT,
	      "a failed create_write left its name");
	CHECK(!arf_getattr(fresh, d.ino, d.gen, &after) && after.size == before.size &&
	      after.mtime_ns == before.mtime_ns && after.ctime_ns == before.ctime_ns,
	      "the directory changed: %" PRIu64 " entries (was %" PRIu64 "), mtime %" PRId64
	      " (was %" PRId64 ")", after.size, before.size, after.mtime_ns, before.mtime_ns);
	printf("create_write: EPERM after the write leaves no name and the directory as it was\n");

	struct arf_dir_change ch;
	rc = arf_create_write(c, d.ino, d.gen, "b", 0644, "b", 1, NULL, NULL);
	CHECK(!rc && !arf_last_dir_change(c, &ch) && ch.n == 1 && ch.dir[0].post.ino == d.ino &&
	      ch.dir[0].pre_ctime_ns == after.ctime_ns &&
	      ch.dir[0].post.size == after.size + 1, "the reply's wcc");
	printf("create_write: the reply's wcc names the directory before and after\n");
	return 0;
}

static struct arf_stat new_file(struct arf_stat d, const char *name, uint32_t mode)
{
	struct arf_stat st;
	int rc = arf_create(c, d.ino, d.gen, name, mode, 1, &st);
	if (rc)
		FAIL("create %s: %s", name, arf_strerror(rc));
	return st;
}

static int cmd_copy(void)
{
	struct arf_stat d = mkdir_at("cp", 0777), src, dst, got;
	const size_t MiB = 1u << 20;
	uint64_t ssize = 4 * MiB + 123;
	uint8_t *ref = calloc(1, ssize), *b;
	ssize_t n;

	CHECK(ref, "out of memory");
	/* data, a 2 MiB hole, data to an odd end */
	fill(ref, MiB, 2);
	fill(ref + 3 * MiB, MiB + 123, 3);
	src = new_file(d, "src", 0644);
	CHECK(arf_write(c, src.ino, src.gen, 0, ref, MiB) == (ssize_t)MiB, "write src");
	CHECK(arf_write(c, src.ino, src.gen, 3 * MiB, ref + 3 * MiB, MiB + 123) ==
	      (ssize_t)(MiB + 123), "write src tail");
	CHECK(!arf_getattr(fresh, src.ino, src.gen, &src) && src.size == ssize, "src size");

	dst = new_file(d, "dst", 0644);
	n = arf_copy(c, src.ino, src.gen, 0, dst.ino, dst.gen, 0, 100 * MiB, 0, &got);
	CHECK(n == (ssize_t)ssize, "copy whole: %zd, not %" PRIu64, n, ssize);
	CHECK(!arf_getattr(fresh, dst.ino, dst.gen, &got) && got.size == ssize, "dst size %" PRIu64,
	      got.size);
	b = slurp(dst.ino, dst.gen, ssize);
	CHECK(!memcmp(b, ref, ssize), "dst's bytes differ from src's");
	free(b);
	CHECK(got.blocks == src.blocks, "holes: dst has %" PRIu64 " blocks, src %" PRIu64,
	      got.blocks, src.blocks);
	printf("copy: 4 MiB + 123 with a 2 MiB hole: same bytes, same %" PRIu64
	       " blocks (the hole stayed one); len past the end gave the short count\n", got.blocks);

	/* unaligned offsets into a file with data: bytes land where asked */
	struct arf_stat d2 = new_file(d, "off", 0644);
	uint8_t *pre = malloc(3 * MiB), *want = malloc(3 * MiB);
	CHECK(pre && want, "out of memory");
	fill(pre, 3 * MiB, 9);
	CHECK(arf_write(c, d2.ino, d2.gen, 0, pre, 3 * MiB) == (ssize_t)(3 * MiB), "write off");
	memcpy(want, pre, 3 * MiB);
	memcpy(want + 4097, ref + 4095, 2 * MiB); /* the hole's zeros overwrite data */
	n = arf_copy(c, src.ino, src.gen, 4095, d2.ino, d2.gen, 4097, 2 * MiB, 0, NULL);
	CHECK(n == (ssize_t)(2 * MiB), "copy at 4095 -> 4097: %zd", n);
	b = slurp(d2.ino, d2.gen, 3 * MiB);
	CHECK(!memcmp(b, want, 3 * MiB), "unaligned copy: bytes differ");
	free(b);
	printf("copy: 2 MiB from offset 4095 to 4097 over data: data and zeros where asked\n");

	/* past the destination's end: a gap reads as zeros */
	struct arf_stat d3 = new_file(d, "gap", 0644);
	n = arf_copy(c, src.ino, src.gen, 10, d3.ino, d3.gen, 5 * MiB, 1000, 0, NULL);
	CHECK(n == 1000 && !arf_getattr(fresh, d3.ino, d3.gen, &got) && got.size == 5 * MiB + 1000,
	      "copy past the end: %zd, size %" PRIu64, n, got.size);
	b = slurp(d3.ino, d3.gen, got.size);
	for (size_t i = 0; i < 5 * MiB; i++)
		CHECK(!b[i], "the gap is not zeros at %zu", i);
	CHECK(!memcmp(b + 5 * MiB, ref + 10, 1000), "copied bytes past the gap differ");
	free(b);
	printf("copy: to 5 MiB in an empty file: a zero gap, then the bytes\n");

	/* counts as copy_file_range(2) gives them */
	CHECK(arf_copy(c, src.ino, src.gen, ssize, dst.ino, dst.gen, 0, 10, 0, NULL) == 0,
	      "at the end: not 0");
	CHECK(arf_copy(c, src.ino, src.gen, ssize + 5, dst.ino, dst.gen, 0, 10, 0, NULL) == 0,
	      "past the end: not 0");
	CHECK(arf_copy(c, src.ino, src.gen, ssize - 3, dst.ino, dst.gen, 0, 10, 0, NULL) == 3,
	      "3 before the end: not 3");
	CHECK(arf_copy(c, src.ino, src.gen, 0, dst.ino, dst.gen, 0, 0, 0, NULL) == 0, "len 0");
	CHECK(arf_copy(c, src.ino, src.gen, 0, src.ino, src.gen, 100, 200, 0, NULL) == -EINVAL,
	      "overlapping ranges of one file: not EINVAL");
	CHECK(arf_copy(c, src.ino, src.gen, 0, src.ino, src.gen, ssize, 200, 0, NULL) == 200,
	      "disjoint ranges of one file");
	CHECK(arf_copy(c, src.ino, src.gen, 0, dst.ino, dst.gen, 0, 10, 1, NULL) == -EINVAL,
	      "flags: not EINVAL");
	CHECK(arf_copy(c, d.ino, d.gen, 0, dst.ino, dst.gen, 0, 10, 0, NULL) == -EISDIR,
	      "a directory: not EISDIR");
	CHECK(arf_copy(c, src.ino, src.gen, 0, dst.ino, dst.gen, 1ull << 44, 10, 0, NULL) == -EFBIG,
	      "at 16 TiB: not EFBIG");
	CHECK(arf_copy(c, src.ino, src.gen + 1, 0, dst.ino, dst.gen, 0, 10, 0, NULL) == -ESTALE,
	      "a stale handle: not ESTALE");
	printf("copy: 0 at and past the end, a short count near it, EINVAL (overlap, flags), "
	       "EISDIR, EFBIG, ESTALE\n");

	/* permissions: read on the source, write on the destination */
	struct arf_stat priv = new_file(d, "private", 0600), ro = new_file(d, "readonly", 0644);
	struct arf_stat mine;
	CHECK(arf_write(c, priv.ino, priv.gen, 0, "secret", 6) == 6, "write private");
	as_user(1000);
	mine = new_file(d, "mine", 0644);
	n = arf_copy(c, priv.ino, priv.gen, 0, mine.ino, mine.gen, 0, 6, 0, NULL);
	CHECK(n == -EACCES, "uid 1000 copying root's 0600 file: %zd, not EACCES", n);
	CHECK(arf_write(c, mine.ino, mine.gen, 0, "mine", 4) == 4, "write mine");
	n = arf_copy(c, mine.ino, mine.gen, 0, ro.ino, ro.gen, 0, 4, 0, NULL);
	CHECK(n == -EACCES, "uid 1000 copying into root's 0644 file: %zd, not EACCES", n);
	n = arf_copy(c, src.ino, src.gen, 0, mine.ino, mine.gen, 0, 4, 0, NULL);
	CHECK(n == 4, "uid 1000 copying root's 0644 file into its own: %zd", n);
	as_user(0);
	CHECK(!arf_getattr(fresh, ro.ino, ro.gen, &got) && got.size == 0, "readonly was written");
	printf("copy: EACCES without read on the source or write on the destination\n");

	/* the bytes stay in the server */
	struct arf_client_stats s0, s1;
	uint64_t big = 64 * MiB;
	struct arf_stat bs = new_file(d, "big", 0644), bd = new_file(d, "bigcopy", 0644);
	uint8_t *chunk = malloc(MiB);
	CHECK(chunk, "out of memory");
	for (uint64_t off = 0; off < big; off += MiB) {
		fill(chunk, MiB, (uint32_t)(off / MiB) + 100);
		CHECK(arf_write(c, bs.ino, bs.gen, off, chunk, MiB) == (ssize_t)MiB, "write big");
	}
	arf_stats(c, &s0);
	n = arf_copy(c, bs.ino, bs.gen, 0, bd.ino, bd.gen, 0, big, 0, NULL);
	arf_stats(c, &s1);
	CHECK(n == (ssize_t)big, "64 MiB copy: %zd", n);
	uint64_t wire = (s1.bytes_sent - s0.bytes_sent) + (s1.bytes_received - s0.bytes_received);
	uint64_t rounds = (s1.requests - s0.requests) + (s1.rounds - s0.rounds) +
			  (s1.execs - s0.execs);
	CHECK(wire < 64 * 1024, "64 MiB copy moved %" PRIu64 " bytes on the wire", wire);
	CHECK(rounds == big / ARF_COPY_CHUNK, "64 MiB copy took %" PRIu64 " round trips", rounds);
	for (uint64_t off = 0; off < big; off += MiB) {
		uint8_t *r = malloc(MiB);
		CHECK(r, "out of memory");
		fill(chunk, MiB, (uint32_t)(off / MiB) + 100);
		CHECK(arf_read(fresh, bd.ino, bd.gen, off, r, MiB) == (ssize_t)MiB &&
		      !memcmp(r, chunk, MiB), "bigcopy differs at %" PRIu64, off);
		free(r);
	}
	printf("copy: 64 MiB in %" PRIu64 " requests, %" PRIu64 " bytes sent and received; "
	       "the bytes match\n", rounds, wire);
	free(chunk);
	free(pre);
	free(want);
	free(ref);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: arf-compound create-write|copy URL\n");
		return 2;
	}
	c = dial(argv[2], 1000);
	fresh = dial(argv[2], 0);
	int rc = !strcmp(argv[1], "create-write") ? cmd_create_write()
		 : !strcmp(argv[1], "copy")       ? cmd_copy()
						  : 2;
	arf_close(fresh);
	arf_close(c);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * arf-powerloss URL — the client side of the power-loss test
 * (test_powerloss.py): two clients of one arfd that runs with
 * [server] test_power_loss (everything not yet synced lives in arfd's
 * memory, so its SIGKILL loses what a power cut would).  The test drives it
 * line by line on stdin:
 *
 *   cycle N   the work of one cycle, then "crash" on stdout: the test now
 *             SIGKILLs arfd and starts it again
 *   check     A commits (its connection comes back on the new arfd, which
 *             first re-sends A's lost writes), then a fresh client reads
 *             everything back against the model; "ok RESENT" or "FAIL ..."
 *   quit      a summary line, exit 0
 *
 * Each cycle, client A writes blocks of its file a.dat (unstable), commits
 * some of them, and writes one block X of the shared file s.dat; client B
 * then writes X too and commits (B's COMMIT makes A's earlier write of X
 * durable with everything else before it) and creates cN.dat (durable, with
 * nothing new in the data log to sync); A writes more blocks, X
 * excepted, and does not commit them: those are what the crash loses.
 * After the restart:
 *   - everything committed is there (a.dat's committed blocks, X = B's,
 *     every cN.dat);
 *   - A's uncommitted writes are back too, re-sent by libarf (resent_bytes
 *     grows), with the bytes A wrote last in every block;
 *   - X still holds B's bytes: A never re-sends a write that a later
 *     COMMIT (B's) made durable, so it never clobbers B's committed write.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf.h"

#define BLOCKS 64           /* a.dat and s.dat: 64 blocks of 4 KiB */
#define BS 4096

static arf_client *a, *b;
static struct arf_stat fa, fs;       /* a.dat, s.dat */
static uint32_t want_a[BLOCKS];      /* the version each block of a.dat should hold */
static uint32_t want_s[BLOCKS];      /* likewise for s.dat */
static uint64_t rng = 88172645463325252ull;
static uint32_t created;             /* c1.dat .. cN.dat exist (B's creates) */

static uint64_t xs(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Block contents are (file, block, version) spelled out: a wrong block
 * says whose it is. */
static void fill(uint8_t *buf, char file, uint32_t blk, uint32_t ver)
{
	char piece[64];
	int n = snprintf(piece, sizeof(piece), "%c%04u v%08u ", file, blk, ver);
	memset(piece + n, '.', sizeof(piece) - (size_t)n);
	piece[31] = '\n';
	for (size_t i = 0; i < BS; i += 32)
		memcpy(buf + i, piece, 32);
}

static __attribute__((noreturn)) void die(const char *fmt, ...)
{
	va_list ap;
	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

static arf_client *connect_or_die(const char *url)
{
	struct arf_client_opts o;
	char err[512];
	arf_client *c;

	arf_client_opts_init(&o);
	o.spin_us = 0;
	o.attr_timeout_ms = 0;
	o.entry_timeout_ms = 0;
	o.reconnect_ms = 120000; /* outlast the restart */
	if (arf_connect(url, &o, &c, err, sizeof(err)))
		die("connect %s: %s", url, err);
	return c;
}

static void put(arf_client *c, const struct arf_stat *f, char file, uint32_t blk, uint32_t ver)
{
	uint8_t buf[BS];
	fill(buf, file, blk, ver);
	ssize_t n = arf_write(c, f->ino, f->gen, (uint64_t)blk * BS, buf, BS);
	if (n != BS)
		die("write %c block %u: %s", file, blk, n < 0 ? arf_strerror((int)n) : "short");
}

static void commit(arf_client *c, const struct arf_stat *f, const char *who)
{
	int rc = arf_fsync(c, f->ino, f->gen);
	if (rc)
		die("%s: commit: %s", who, arf_strerror(rc));
}

static void make(arf_client *c, const char *name, struct arf_stat *out)
{
	struct arf_stat root;
	int rc = arf_root(c, &root);
	if (!rc)
		rc = arf_create(c, root.ino, root.gen, name, 0644, 0, out);
	if (rc)
		die("create %s: %s", name, arf_strerror(rc));
}

static void cycle(uint32_t n)
{
	uint32_t ver = n * 100;
	/* A: blocks of a.dat, half of them committed */
	for (int i = 0; i < 8; i++) {
		uint32_t blk = (uint32_t)(xs() % BLOCKS);
		put(a, &fa, 'a', blk, ++ver);
		want_a[blk] = ver;
	}
	commit(a, &fa, "A");
	/* A writes X of s.dat, then B writes X and commits: A's write is
	 * durable (before B's COMMIT) and B's is the committed one */
	uint32_t x = (uint32_t)(xs() % BLOCKS);
	put(a, &fs, 'A', x, ++ver);
	put(b, &fs, 'B', x, ++ver);
	commit(b, &fs, "B");
	want_s[x] = ver;
	/* B creates a file: durable before its reply, though the data log has
	 * nothing new to sync (its mark is left unsynced, and lost below) */
	char name[32];
	struct arf_stat made;
	snprintf(name, sizeof(name), "c%u.dat", n);
	make(b, name, &made);
	created = n;
	/* A: more blocks of a.dat (and of s.dat other than X), not committed */
	for (int i = 0; i < 6; i++) {
		uint32_t blk = (uint32_t)(xs() % BLOCKS);
		put(a, &fa, 'a', blk, ++ver);
		want_a[blk] = ver;
	}
	uint32_t y = (uint32_t)((x + 1 + xs() % (BLOCKS - 1)) % BLOCKS);
	put(a, &fs, 'A', y, ++ver);
	want_s[y] = ver;
}

static void verify(arf_client *c, const struct arf_stat *f, char file, char other,
		   const uint32_t *want)
{
	static uint8_t got[BLOCKS * BS];
	uint8_t exp[BS], alt[BS];
	ssize_t n = arf_read(c, f->ino, f->gen, 0, got, sizeof(got));
	if (n < 0)
		die("read %c: %s", file, arf_strerror((int)n));
	for (uint32_t blk = 0; blk < BLOCKS; blk++) {
		if (!want[blk])
			continue;
		/* the shared file's blocks are A's or B's: its want says whose
		 * by the version, so try both spellings */
		fill(exp, file, blk, want[blk]);
		fill(alt, other, blk, want[blk]);
		const uint8_t *at = got + (size_t)blk * BS;
		if ((size_t)n < (size_t)(blk + 1) * BS ||
		    (memcmp(at, exp, BS) && memcmp(at, alt, BS)))
			die("%s block %u: want version %u, found \"%.24s\"",
			    file == 'a' ? "a.dat" : "s.dat", blk, want[blk],
			    (size_t)n >= (size_t)(blk + 1) * BS ? (const char *)at : "(short file)");
	}
}

static void check(const char *url)
{
	/* A's commit reconnects: libarf re-sends what the crash lost first */
	commit(a, &fa, "A after restart");
	arf_client *c = connect_or_die(url);
	struct arf_stat root, st0;
	int rc = arf_root(c, &root);
	for (uint32_t i = 1; i <= created && !rc; i++) {
		char name[32];
		snprintf(name, sizeof(name), "c%u.dat", i);
		if ((rc = arf_lookup(c, root.ino, root.gen, name, &st0)))
			die("%s, created before the crash: %s", name, arf_strerror(rc));
	}
	if (rc)
		die("root: %s", arf_strerror(rc));
	verify(c, &fa, 'a', 'a', want_a);
	verify(c, &fs, 'A', 'B', want_s);
	arf_close(c);
	struct arf_client_stats st;
	arf_stats(a, &st);
	printf("ok %" PRIu64 " %" PRIu64 "\n", st.resent_bytes, st.unstable_bytes);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char line[128];
	uint32_t cycles = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: arf-powerloss URL (commands on stdin)\n");
		return 2;
	}
	a = connect_or_die(argv[1]);
	b = connect_or_die(argv[1]);
	make(a, "a.dat", &fa);
	make(a, "s.dat", &fs);
	while (fgets(line, sizeof(line), stdin)) {
		unsigned n;
		if (sscanf(line, "cycle %u", &n) == 1) {
			cycle(n + 1);
			cycles++;
			printf("crash\n");
		} else if (!strncmp(line, "check", 5)) {
			check(argv[1]);
		} else if (!strncmp(line, "quit", 4)) {
			struct arf_client_stats st;
			arf_stats(a, &st);
			printf("done %u cycles, A re-sent %" PRIu64 " bytes, %" PRIu64 " commits\n",
			       cycles, st.resent_bytes, st.commits);
			arf_close(a);
			arf_close(b);
			return 0;
		}
	}
	return 1;
}

/* SPDX-License-Identifier: MIT */
/*
 * arf-asynctest — libarf's asynchronous API (arf_submit / arf_reap)
 * against a real arfd, started and stopped by tests/integration/
 * test_async.py.
 *
 *   arf-asynctest ops URL NOPS [requests]
 *       keeps 64 operations in flight on one client (reads of a file of
 *       known bytes at any offset and length, writes and read-backs of
 *       slots of a second file, getattrs, and operations that must fail)
 *       and checks every completion's status and data; "requests": a
 *       client without one-sided reads.
 *   arf-asynctest torn URL SECONDS
 *       a writer rewrites a file as new versions while one client keeps
 *       16 whole-file reads in flight: every block of every completed read
 *       must be one whole version that had been written (itest's torn
 *       check, through the asynchronous path).
 *   arf-asynctest seq URL SECONDS
 *       sequential readers (read ahead over tcp) of a file being
 *       rewritten: whole blocks only; the reader's own write seen at once;
 *       a quiet sequential pass served from data read ahead (tcp), or
 *       nothing read ahead (shm, where a read is a copy done at once).
 *   arf-asynctest silent URL N
 *       a client that gives up after 1 s without a reply and 1 s more of
 *       dialling (timeout_ms, reconnect_ms) keeps N writes in flight until
 *       one fails, then reaps the rest: the test stops arfd (SIGSTOP)
 *       meanwhile.  Every one must fail with EIO, and so must N more
 *       submitted then, all within about one bound, not one after another:
 *       each one's bound starts when it began waiting for the connection,
 *       not when the queue came to dial again for it.
 *   arf-asynctest late URL ff|ffbig|ffrestart|plain|newid
 *       a write's first sending read late by the server (arf://host:port
 *       only): the client goes through a proxy of this program's that
 *       holds back what the client sends on its first connection and then
 *       cuts it, as a server that went silent and a client that gave up on
 *       it would leave it.  The write is done again on a new connection
 *       (ff: by arf_aio_again after a fail-fast queue handed it back;
 *       ffbig: 1 MiB, which the queue sends as one piece, applied by arfd
 *       before it is done again, so the reply cache answers the second
 *       sending, which must be the same piece; ffrestart: 64 KiB applied
 *       before, then arfd restarted (the test does it when this prints
 *       "restart", and then says so on stdin): the cache's answer carries
 *       the old server's verifier, and the fsync after must still succeed;
 *       plain: by the queue itself, dialling again; newid: by arf_write,
 *       as arf-fuse did before arf_aio_again), the writer then writes the
 *       same bytes anew, and only then does the proxy hand the held first
 *       sending to arfd.  The newer bytes must stay (ff, plain: the reply
 *       cache answers the late sending, sent under the same request id);
 *       newid shows the window: exit 3 when the older bytes landed last.
 *
 * Each prints what it checked and exits 0, or prints "FAIL: reason" and
 * exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "arf.h"

#define FAIL(...)                                   \
	do {                                        \
		fprintf(stdout, "FAIL: " __VA_ARGS__); \
		fprintf(stdout, "\n");              \
		exit(1);                            \
	} while (0)

#define DEPTH 64

static arf_client *connect_or_die(const char *url, int one_sided)
{
	struct arf_client_opts o;
	char err[512];
	arf_client *c;

	arf_client_opts_init(&o);
	o.one_sided = one_sided;
	o.spin_us = 0;
	if (arf_connect(url, &o, &c, err, sizeof(err)))
		FAIL("connect %s: %s", url, err);
	return c;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* A file's name unique to this run (the last one made, for remove_file). */
static char made_name[96];

static int make_file(arf_client *c, const char *what, struct arf_stat *f)
{
	struct arf_stat root;
	char *name = made_name;
	int rc;

	snprintf(made_name, sizeof(made_name), "async-%s-%d-%llu", what, (int)getpid(),
		 (unsigned long long)(rnd() & 0xffff));
	if ((rc = arf_root(c, &root)) ||
	    (rc = arf_create(c, root.ino, root.gen, name, 0644, 1, f)))
		FAIL("create %s: %s", name, arf_strerror(rc));
	return 0;
}

/* ------------------------------------------------------------------ ops */

/* The read-only file: RO_SIZE bytes (not a whole number of blocks), each
 * byte a function of its offset. */
#define RO_SIZE ((4u << 20) + 1234u)
static uint8_t ro_byte(uint64_t o)
{
	return (uint8_t)((o ^ (o >> 8) ^ (o >> 17)) * 31u + 7u);
}

/* The written file: RW_SLOTS slots of SLOT bytes (not block-aligned), each
 * holding one version of its content at a time.  A slot's write is long
 * enough that libarf copies it for keeping while it is in flight
 * (ARF_WLOG_PRECOPY_MIN, 64 KiB): the copy re-sent after a restart. */
#define RW_SLOTS 48u
#define SLOT 70000u
static uint8_t rw_byte(uint32_t slot, uint32_t version, uint32_t i)
{
	return (uint8_t)(slot * 131u + version * 71u + i * 13u + (i >> 9));
}

enum kind { K_RO_READ, K_RW_WRITE, K_RW_READ, K_GETATTR, K_STALE, K_ISDIR, K_BADOP };

struct op {
	struct arf_aio io;
	enum kind kind;
	uint32_t slot, version;
	uint8_t *mem;
	size_t cap;
};

struct ops_state {
	struct arf_stat ro, rw, root;
	uint32_t version[RW_SLOTS];  /* last version written and acknowledged */
	int writing[RW_SLOTS];
	int reading[RW_SLOTS];
	uint32_t next_version;
	uint64_t by_kind[7], bytes_read;
};

/* Fill o with a new operation of a kind chosen at random. */
static void make_op(struct ops_state *st, struct op *o)
{
	uint64_t r = rnd() % 100;
	memset(&o->io, 0, sizeof(o->io));
	o->io.user = o;
	if (r < 50) {
		o->kind = K_RO_READ;
		o->io.op = ARF_AIO_READ;
		o->io.ino = st->ro.ino;
		o->io.gen = st->ro.gen;
		o->io.off = rnd() % (RO_SIZE + 8192);
		uint64_t l = rnd() % 4;
		o->io.len = l == 0 ? 1 + rnd() % 64 : l == 1 ? 1 + rnd() % 70000
						  : l == 2 ? (1 + rnd() % 16) * 4096 : o->cap;
		if (o->io.len > o->cap)
			o->io.len = o->cap;
		o->io.buf = o->mem;
		return;
	}
	if (r < 90) {
		/* a slot nobody writes (a write also needs nobody reading it) */
		uint32_t s = (uint32_t)(rnd() % RW_SLOTS);
		int write = r < 70;
		for (uint32_t k = 0; k < RW_SLOTS; k++, s = (s + 1) % RW_SLOTS)
			if (!st->writing[s] && (!write || !st->reading[s]))
				break;
		if (st->writing[s] || (write && st->reading[s]))
			return make_op(st, o); /* all busy: something else */
		o->slot = s;
		o->io.ino = st->rw.ino;
		o->io.gen = st->rw.gen;
		o->io.off = (uint64_t)s * SLOT;
		o->io.len = SLOT;
		o->io.buf = o->mem;
		if (write) {
			o->kind = K_RW_WRITE;
			o->io.op = ARF_AIO_WRITE;
			o->version = ++st->next_version;
			for (uint32_t i = 0; i < SLOT; i++)
				o->mem[i] = rw_byte(s, o->version, i);
			st->writing[s] = 1;
		} else {
			o->kind = K_RW_READ;
			o->io.op = ARF_AIO_READ;
			o->version = st->version[s];
			memset(o->mem, 0xee, SLOT);
			st->reading[s]++;
		}
		return;
	}
	if (r < 95) {
		o->kind = K_GETATTR;
		o->io.op = ARF_AIO_GETATTR;
		o->io.ino = st->ro.ino;
		o->io.gen = st->ro.gen;
		return;
	}
	if (r < 97) {
		o->kind = K_STALE;
		o->io.op = rnd() % 2 ? ARF_AIO_GETATTR : ARF_AIO_READ;
		o->io.ino = st->ro.ino;
		o->io.gen = st->ro.gen + 1;
		o->io.buf = o->mem;
		o->io.len = 100;
		return;
	}
	if (r < 99) {
		o->kind = K_ISDIR;
		o->io.op = ARF_AIO_READ;
		o->io.ino = st->root.ino;
		o->io.gen = st->root.gen;
		o->io.buf = o->mem;
		o->io.len = 4096;
		return;
	}
	o->kind = K_BADOP;
	o->io.op = 77;
}

/* Check a completed operation. */
static void check_op(struct ops_state *st, struct op *o)
{
	struct arf_aio *io = &o->io;
	st->by_kind[o->kind]++;
	switch (o->kind) {
	case K_RO_READ: {
		size_t want = io->off >= RO_SIZE ? 0 : RO_SIZE - io->off < io->len ? RO_SIZE - io->off
										  : io->len;
		if (io->res != (ssize_t)want)
			FAIL("read of %zu bytes at %" PRIu64 " returned %zd (%s), not %zu", io->len,
			     io->off, io->res, io->res < 0 ? arf_strerror((int)io->res) : "short",
			     want);
		for (size_t i = 0; i < want; i++)
			if (o->mem[i] != ro_byte(io->off + i))
				FAIL("read of %zu bytes at %" PRIu64 ": byte %zu is %#x, not %#x",
				     io->len, io->off, i, o->mem[i], ro_byte(io->off + i));
		st->bytes_read += want;
		return;
	}
	case K_RW_WRITE:
		if (io->res != SLOT)
			FAIL("write of slot %u returned %zd (%s)", o->slot, io->res,
			     io->res < 0 ? arf_strerror((int)io->res) : "short");
		if (io->st.ino != st->rw.ino || io->st.size < (uint64_t)(o->slot + 1) * SLOT)
			FAIL("write of slot %u: attributes after it say ino %" PRIu64 " size %" PRIu64,
			     o->slot, io->st.ino, io->st.size);
		st->version[o->slot] = o->version;
		st->writing[o->slot] = 0;
		return;
	case K_RW_READ:
		if (io->res != SLOT)
			FAIL("read of slot %u returned %zd (%s)", o->slot, io->res,
			     io->res < 0 ? arf_strerror((int)io->res) : "short");
		for (uint32_t i = 0; i < SLOT; i++)
			if (o->mem[i] != rw_byte(o->slot, o->version, i))
				FAIL("slot %u byte %u is %#x, not version %u's %#x", o->slot, i,
				     o->mem[i], o->version, rw_byte(o->slot, o->version, i));
		st->reading[o->slot]--;
		st->bytes_read += SLOT;
		return;
	case K_GETATTR:
		if (io->res != 0 || io->st.ino != st->ro.ino || io->st.gen != st->ro.gen ||
		    io->st.size != RO_SIZE || (io->st.mode & 0777) != 0644)
			FAIL("getattr returned %zd, ino %" PRIu64 " size %" PRIu64 " mode %o", io->res,
			     io->st.ino, io->st.size, io->st.mode);
		return;
	case K_STALE:
		if (io->res != -ESTALE)
			FAIL("%s with a wrong generation returned %zd, not -ESTALE",
			     io->op == ARF_AIO_READ ? "read" : "getattr", io->res);
		return;
	case K_ISDIR:
		if (io->res != -EISDIR)
			FAIL("read of a directory returned %zd, not -EISDIR", io->res);
		return;
	case K_BADOP:
		if (io->res != -EINVAL)
			FAIL("operation 77 returned %zd, not -EINVAL", io->res);
		return;
	}
}

static int cmd_ops(const char *url, long nops, int one_sided)
{
	arf_client *c = connect_or_die(url, one_sided);
	struct ops_state st;
	struct op ops[DEPTH];
	arf_queue *q;
	int rc;

	memset(&st, 0, sizeof(st));
	rng_state ^= (uint64_t)getpid() << 20;
	if ((rc = arf_root(c, &st.root)))
		FAIL("root: %s", arf_strerror(rc));
	char ro_name[sizeof(made_name)], rw_name[sizeof(made_name)];
	make_file(c, "ro", &st.ro);
	memcpy(ro_name, made_name, sizeof(ro_name));
	make_file(c, "rw", &st.rw);
	memcpy(rw_name, made_name, sizeof(rw_name));
	uint8_t *buf = malloc(RO_SIZE > RW_SLOTS * SLOT ? RO_SIZE : RW_SLOTS * SLOT);
	if (!buf)
		FAIL("out of memory");
	for (uint64_t i = 0; i < RO_SIZE; i++)
		buf[i] = ro_byte(i);
	if (arf_write(c, st.ro.ino, st.ro.gen, 0, buf, RO_SIZE) != RO_SIZE)
		FAIL("writing the read-only file");
	for (uint32_t s = 0; s < RW_SLOTS; s++)
		for (uint32_t i = 0; i < SLOT; i++)
			buf[s * SLOT + i] = rw_byte(s, 0, i);
	if (arf_write(c, st.rw.ino, st.rw.gen, 0, buf, RW_SLOTS * SLOT) != RW_SLOTS * SLOT)
		FAIL("writing the slots");

	if ((rc = arf_queue_create(c, DEPTH, &q)))
		FAIL("queue: %s", arf_strerror(rc));
	/* flags: only ARF_QUEUE_F_FAIL_FAST is known, and it is left off here,
	 * where reads ride through a restart (tests/fuse/test_fuse_aio.py
	 * tests what it does) */
	if ((rc = arf_queue_set_flags(q, ARF_QUEUE_F_FAIL_FAST << 1)) != -EINVAL)
		FAIL("queue flags 2: %d, not -EINVAL", rc);
	if ((rc = arf_queue_set_flags(q, ARF_QUEUE_F_FAIL_FAST)) ||
	    (rc = arf_queue_set_flags(q, 0)))
		FAIL("queue flags: %s", arf_strerror(rc));
	struct arf_aio *sub[DEPTH], *done[DEPTH];
	for (int i = 0; i < DEPTH; i++) {
		ops[i].cap = i < 8 ? (1u << 20) + 4096 : 128u << 10;
		ops[i].mem = malloc(ops[i].cap);
		if (!ops[i].mem)
			FAIL("out of memory");
		make_op(&st, &ops[i]);
		sub[i] = &ops[i].io;
	}
	/* more than the queue holds: it takes DEPTH, then says it is full */
	if ((rc = arf_submit(q, sub, DEPTH)) != DEPTH)
		FAIL("submitting %d operations took %d", DEPTH, rc);
	struct arf_aio extra = { .op = ARF_AIO_GETATTR, .ino = st.ro.ino, .gen = st.ro.gen };
	struct arf_aio *xp = &extra;
	unsigned max_pending = arf_queue_pending(q);
	if ((rc = arf_submit(q, &xp, 1)) != -EAGAIN)
		FAIL("a full queue took another operation (%d)", rc);
	long completed = 0, submitted = DEPTH;
	uint64_t polls = 0;
	while (completed < submitted) {
		/* now and then poll without waiting, else wait for at least one */
		int n = arf_reap(q, done, rnd() % 8 ? 1 : 0, DEPTH, rnd() % 8 ? -1 : 0);
		if (n < 0)
			FAIL("reap: %s", arf_strerror(n));
		if (n == 0)
			polls++;
		unsigned k = 0;
		for (int i = 0; i < n; i++) {
			struct op *o = done[i]->user;
			if (done[i] != &o->io)
				FAIL("reap gave back an operation never submitted");
			check_op(&st, o);
			completed++;
			if (submitted < nops) {
				make_op(&st, o);
				sub[k++] = &o->io;
				submitted++;
			}
		}
		if (k && (rc = arf_submit(q, sub, k)) != (int)k)
			FAIL("resubmitting %u took %d", k, rc);
		unsigned p = arf_queue_pending(q);
		if (p > max_pending)
			max_pending = p;
	}
	if (arf_queue_pending(q) != 0)
		FAIL("%u operations still pending after all were reaped", arf_queue_pending(q));
	if (max_pending != DEPTH)
		FAIL("at most %u operations were in flight, not %d", max_pending, DEPTH);
	arf_queue_destroy(q);

	/* the slots hold what the last acknowledged write of each put there */
	if (arf_read(c, st.rw.ino, st.rw.gen, 0, buf, RW_SLOTS * SLOT) != RW_SLOTS * SLOT)
		FAIL("reading the slots back");
	for (uint32_t s = 0; s < RW_SLOTS; s++)
		for (uint32_t i = 0; i < SLOT; i++)
			if (buf[s * SLOT + i] != rw_byte(s, st.version[s], i))
				FAIL("slot %u byte %u after the run: %#x, not version %u's", s, i,
				     buf[s * SLOT + i], st.version[s]);

	struct arf_client_stats cs;
	arf_stats(c, &cs);
	printf("ops (%s, %s): %ld operations, %d in flight at once: %" PRIu64 " reads of the "
	       "read-only file, %" PRIu64 " writes and %" PRIu64 " read-backs of slots, %" PRIu64
	       " getattrs, %" PRIu64 " stale, %" PRIu64 " directory and %" PRIu64
	       " malformed operations refused; %" PRIu64 " MiB checked byte by byte, %" PRIu64
	       " empty polls; one_sided_reads=%" PRIu64 " rounds=%" PRIu64 " requests=%" PRIu64
	       " retries=%" PRIu64 " fallbacks=%" PRIu64 "\n",
	       arf_transport(c), one_sided ? "one-sided" : "requests only", completed, DEPTH,
	       st.by_kind[K_RO_READ], st.by_kind[K_RW_WRITE], st.by_kind[K_RW_READ],
	       st.by_kind[K_GETATTR], st.by_kind[K_STALE], st.by_kind[K_ISDIR],
	       st.by_kind[K_BADOP], st.bytes_read >> 20, polls, cs.one_sided_reads, cs.rounds,
	       cs.requests, cs.retries, cs.fallbacks);
	uint64_t reads = st.by_kind[K_RO_READ] + st.by_kind[K_RW_READ];
	if (one_sided) {
		if (cs.one_sided_reads == 0)
			FAIL("no one-sided reads with region keys");
		/* each read takes a round of its own when alone; batched with the
		 * others in flight, far fewer */
		if (!strcmp(arf_transport(c), "tcp") && cs.rounds >= reads)
			FAIL("%" PRIu64 " rounds for %" PRIu64 " reads: nothing was batched",
			     cs.rounds, reads);
	} else if (cs.one_sided_reads > 16) {
		FAIL("%" PRIu64 " one-sided reads from a requests-only client", cs.one_sided_reads);
	}
	for (int i = 0; i < DEPTH; i++)
		free(ops[i].mem);
	free(buf);
	/* gone once checked, so that runs repeated against one arfd
	 * (ARF_ASYNC_ROUNDS) do not fill it */
	if ((rc = arf_unlink(c, st.root.ino, st.root.gen, ro_name)) ||
	    (rc = arf_unlink(c, st.root.ino, st.root.gen, rw_name)))
		FAIL("removing the files: %s", arf_strerror(rc));
	arf_close(c);
	return 0;
}

/* ----------------------------------------------------------------- torn */

#define TORN_BLOCKS 64u
#define TORN_SIZE (TORN_BLOCKS * 4096u)
#define TORN_WORDS (4096u / 8u)
#define TORN_MAGIC 0xa7f1ull
static int torn_stop;
static uint64_t torn_latest;

static uint64_t torn_word(uint64_t v, size_t b, size_t k)
{
	return TORN_MAGIC << 48 | (v & 0xffffffffu) << 16 | (uint64_t)(b * TORN_WORDS + k);
}

static void torn_fill(uint8_t *buf, uint64_t v)
{
	for (size_t b = 0; b < TORN_BLOCKS; b++)
		for (size_t k = 0; k < TORN_WORDS; k++) {
			uint64_t w = torn_word(v, b, k);
			memcpy(buf + b * 4096 + k * 8, &w, 8);
		}
}

struct writer {
	const char *url;
	struct arf_stat f;
	uint64_t versions;
	char fail[256];
};

static void *torn_writer(void *arg)
{
	struct writer *w = arg;
	arf_client *c = connect_or_die(w->url, 1);
	uint8_t *buf = malloc(TORN_SIZE);
	uint64_t v = __atomic_load_n(&torn_latest, __ATOMIC_ACQUIRE);

	while (!__atomic_load_n(&torn_stop, __ATOMIC_ACQUIRE)) {
		torn_fill(buf, ++v);
		ssize_t n = arf_write(c, w->f.ino, w->f.gen, 0, buf, TORN_SIZE);
		if (n != TORN_SIZE) {
			snprintf(w->fail, sizeof(w->fail), "rewrite %" PRIu64 ": %zd", v, n);
			break;
		}
		__atomic_store_n(&torn_latest, v, __ATOMIC_RELEASE);
	}
	w->versions = v;
	free(buf);
	arf_close(c);
	return NULL;
}

static int cmd_torn(const char *url, int seconds)
{
	arf_client *c = connect_or_die(url, 1);
	struct writer w = { .url = url };
	uint8_t *buf = malloc(TORN_SIZE);
	enum { QD = 16 };
	struct arf_aio ios[QD], *sub[QD], *done[QD];
	arf_queue *q;
	int rc;

	make_file(c, "torn", &w.f);
	torn_fill(buf, 1);
	if (arf_write(c, w.f.ino, w.f.gen, 0, buf, TORN_SIZE) != TORN_SIZE)
		FAIL("initial write");
	__atomic_store_n(&torn_latest, 1, __ATOMIC_RELEASE);
	pthread_t th;
	if (pthread_create(&th, NULL, torn_writer, &w))
		FAIL("pthread_create");
	if ((rc = arf_queue_create(c, QD, &q)))
		FAIL("queue: %s", arf_strerror(rc));
	for (int i = 0; i < QD; i++) {
		ios[i] = (struct arf_aio){ .op = ARF_AIO_READ, .ino = w.f.ino, .gen = w.f.gen,
					   .buf = malloc(TORN_SIZE), .len = TORN_SIZE };
		sub[i] = &ios[i];
	}
	if (arf_submit(q, sub, QD) != QD)
		FAIL("submit");
	uint64_t reads = 0, versions = 0, last_max = 0;
	time_t end = time(NULL) + seconds;
	char why[256] = "";
	while (!why[0]) {
		int n = arf_reap(q, done, 1, QD, -1);
		if (n <= 0)
			FAIL("reap: %d", n);
		uint64_t latest = __atomic_load_n(&torn_latest, __ATOMIC_ACQUIRE);
		unsigned k = 0;
		for (int i = 0; i < n && !why[0]; i++) {
			const uint8_t *b = done[i]->buf;
			if (done[i]->res != TORN_SIZE) {
				snprintf(why, sizeof(why), "read returned %zd", done[i]->res);
				break;
			}
			uint64_t vmax = 0;
			for (size_t bl = 0; bl < TORN_BLOCKS && !why[0]; bl++) {
				uint64_t w0;
				memcpy(&w0, b + bl * 4096, 8);
				uint64_t v = (w0 >> 16) & 0xffffffffu;
				if (w0 >> 48 != TORN_MAGIC || v == 0 || v > latest + 1) {
					snprintf(why, sizeof(why), "block %zu starts with %#" PRIx64
						 " (latest written %" PRIu64 ")", bl, w0, latest);
					break;
				}
				for (size_t kw = 0; kw < TORN_WORDS; kw++) {
					uint64_t x;
					memcpy(&x, b + bl * 4096 + kw * 8, 8);
					if (x != torn_word(v, bl, kw)) {
						snprintf(why, sizeof(why), "block %zu word %zu: %#" PRIx64
							 " is not version %" PRIu64 "'s (torn or foreign)",
							 bl, kw, x, v);
						break;
					}
				}
				vmax = v > vmax ? v : vmax;
			}
			if (vmax > last_max) {
				versions++;
				last_max = vmax;
			}
			reads++;
			sub[k++] = done[i];
		}
		if (time(NULL) >= end)
			break;
		if (k && arf_submit(q, sub, k) != (int)k)
			FAIL("resubmit");
	}
	__atomic_store_n(&torn_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	arf_queue_destroy(q);
	if (why[0])
		FAIL("%s", why);
	if (w.fail[0])
		FAIL("writer: %s", w.fail);
	struct arf_client_stats cs;
	arf_stats(c, &cs);
	printf("torn (%s): %" PRIu64 " versions written, %" PRIu64 " whole-file reads, %d in "
	       "flight, saw %" PRIu64 " distinct versions, every block whole and written; "
	       "one_sided_reads=%" PRIu64 " rounds=%" PRIu64 " retries=%" PRIu64
	       " fallbacks=%" PRIu64 "\n",
	       arf_transport(c), w.versions, reads, QD, versions, cs.one_sided_reads, cs.rounds,
	       cs.retries, cs.fallbacks);
	if (cs.one_sided_reads == 0)
		FAIL("no one-sided reads");
	if (cs.retries == 0)
		FAIL("the reads never met a torn or changing object");
	if (versions < 2)
		FAIL("the reads saw %" PRIu64 " version(s): nothing raced", versions);
	for (int i = 0; i < QD; i++)
		free(ios[i].buf);
	free(buf);
	arf_close(c);
	return 0;
}

/* ------------------------------------------------------------------ seq */

/* Sequential readers (arf_read, and one asynchronous read at a time) of a
 * file that a writer keeps rewriting, a range of blocks at a time, each
 * time as a new version: every block read must be one whole version that
 * had been begun, though the readers' data comes read ahead.  Then a write
 * through the reader's own client must be seen by its next read, with data
 * read ahead of the old bytes in hand. */
#define SEQ_BLOCKS 1024u
#define SEQ_CHUNK (256u << 10)

/* torn_word with room for this file's blocks: a 24-bit version and a
 * 24-bit place */
static uint64_t seq_word(uint64_t v, size_t b, size_t k)
{
	return TORN_MAGIC << 48 | (v & 0xffffffu) << 24 | (uint64_t)(b * TORN_WORDS + k);
}

static void *seq_writer(void *arg)
{
	struct writer *w = arg;
	arf_client *c = connect_or_die(w->url, 1);
	uint8_t *buf = malloc(64 * 4096);
	uint64_t v = __atomic_load_n(&torn_latest, __ATOMIC_ACQUIRE);

	while (!__atomic_load_n(&torn_stop, __ATOMIC_ACQUIRE)) {
		uint32_t b0 = (uint32_t)(rnd() % (SEQ_BLOCKS - 64)), nb = 1 + (uint32_t)(rnd() % 64);
		v++;
		for (uint32_t b = 0; b < nb; b++)
			for (size_t k = 0; k < TORN_WORDS; k++) {
				uint64_t x = seq_word(v, b0 + b, k);
				memcpy(buf + b * 4096 + k * 8, &x, 8);
			}
		ssize_t n = arf_write(c, w->f.ino, w->f.gen, (uint64_t)b0 * 4096, buf, nb * 4096);
		if (n != (ssize_t)(nb * 4096)) {
			snprintf(w->fail, sizeof(w->fail), "write %" PRIu64 ": %zd", v, n);
			break;
		}
		__atomic_store_n(&torn_latest, v, __ATOMIC_RELEASE);
		usleep(200);
	}
	w->versions = v;
	free(buf);
	arf_close(c);
	return NULL;
}

/* Every block of buf (blocks b0..) one whole version, at most latest + 1. */
static void seq_check(const uint8_t *buf, size_t len, uint32_t b0, uint64_t latest, const char *how)
{
	for (size_t bl = 0; bl < len / 4096; bl++) {
		uint64_t w0;
		memcpy(&w0, buf + bl * 4096, 8);
		uint64_t v = (w0 >> 24) & 0xffffffu;
		if (w0 >> 48 != TORN_MAGIC || v == 0 || v > latest + 1)
			FAIL("%s: block %zu starts with %#" PRIx64 " (latest written %" PRIu64 ")", how,
			     b0 + bl, w0, latest);
		for (size_t k = 0; k < TORN_WORDS; k++) {
			uint64_t x;
			memcpy(&x, buf + bl * 4096 + k * 8, 8);
			if (x != seq_word(v, b0 + bl, k))
				FAIL("%s: block %zu word %zu: %#" PRIx64 " is not version %" PRIu64
				     "'s (torn or foreign)", how, b0 + bl, k, x, v);
		}
	}
}

static int cmd_seq(const char *url, int seconds)
{
	arf_client *c = connect_or_die(url, 1);
	struct writer w = { .url = url };
	uint8_t *buf = malloc(SEQ_BLOCKS * 4096);
	arf_queue *q;
	int rc;

	make_file(c, "seq", &w.f);
	for (uint32_t b = 0; b < SEQ_BLOCKS; b++)
		for (size_t k = 0; k < TORN_WORDS; k++) {
			uint64_t x = seq_word(1, b, k);
			memcpy(buf + b * 4096 + k * 8, &x, 8);
		}
	if (arf_write(c, w.f.ino, w.f.gen, 0, buf, SEQ_BLOCKS * 4096) != SEQ_BLOCKS * 4096)
		FAIL("initial write");
	__atomic_store_n(&torn_latest, 1, __ATOMIC_RELEASE);
	if ((rc = arf_queue_create(c, 1, &q)))
		FAIL("queue: %s", arf_strerror(rc));
	pthread_t th;
	if (pthread_create(&th, NULL, seq_writer, &w))
		FAIL("pthread_create");
	uint64_t passes = 0, bytes = 0;
	time_t end = time(NULL) + seconds;
	while (time(NULL) < end) {
		/* a pass of synchronous reads, then one of asynchronous ones */
		int async = passes++ % 2;
		for (uint64_t off = 0; off < SEQ_BLOCKS * 4096; off += SEQ_CHUNK) {
			ssize_t n;
			if (async) {
				struct arf_aio io = { .op = ARF_AIO_READ, .ino = w.f.ino, .gen = w.f.gen,
						      .off = off, .buf = buf, .len = SEQ_CHUNK };
				struct arf_aio *p = &io, *d;
				if (arf_submit(q, &p, 1) != 1 || arf_reap(q, &d, 1, 1, -1) != 1)
					FAIL("submit/reap");
				n = io.res;
			} else {
				n = arf_read(c, w.f.ino, w.f.gen, off, buf, SEQ_CHUNK);
			}
			uint64_t latest = __atomic_load_n(&torn_latest, __ATOMIC_ACQUIRE);
			if (n != SEQ_CHUNK)
				FAIL("%s read at %" PRIu64 " returned %zd", async ? "async" : "sync", off, n);
			seq_check(buf, SEQ_CHUNK, (uint32_t)(off / 4096), latest, async ? "async" : "sync");
			bytes += (uint64_t)n;
		}
	}
	__atomic_store_n(&torn_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	if (w.fail[0])
		FAIL("writer: %s", w.fail);
	struct arf_client_stats cs;
	arf_stats(c, &cs);
	uint64_t ra_race = cs.readahead_bytes;

	/* this client's own write is seen at once by its next read, though
	 * the bytes after the last read are already read ahead */
	uint64_t v = 0xfff000u;
	for (uint64_t off = 0; off < 2 * SEQ_CHUNK; off += SEQ_CHUNK)
		if (arf_read(c, w.f.ino, w.f.gen, off, buf, SEQ_CHUNK) != SEQ_CHUNK)
			FAIL("read before the write");
	for (uint32_t b = 0; b < SEQ_CHUNK / 4096; b++)
		for (size_t k = 0; k < TORN_WORDS; k++) {
			uint64_t x = seq_word(v, 2 * SEQ_CHUNK / 4096 + b, k);
			memcpy(buf + b * 4096 + k * 8, &x, 8);
		}
	usleep(100000); /* the data ahead has arrived */
	if (arf_write(c, w.f.ino, w.f.gen, 2 * SEQ_CHUNK, buf, SEQ_CHUNK) != SEQ_CHUNK)
		FAIL("the write");
	memset(buf, 0, SEQ_CHUNK);
	if (arf_read(c, w.f.ino, w.f.gen, 2 * SEQ_CHUNK, buf, SEQ_CHUNK) != SEQ_CHUNK)
		FAIL("read after the write");
	uint64_t w0;
	memcpy(&w0, buf, 8);
	if (((w0 >> 24) & 0xffffffu) != (v & 0xffffffu))
		FAIL("the read after this client's write returned version %" PRIu64
		     ", not the one written (%" PRIu64 ")", (w0 >> 24) & 0xffffffu, v);
	seq_check(buf, SEQ_CHUNK, 2 * SEQ_CHUNK / 4096, v, "after the write");

	/* with nothing racing, a sequential reader's data comes read ahead */
	arf_stats(c, &cs);
	uint64_t before = cs.readahead_bytes;
	for (uint64_t off = 0; off < SEQ_BLOCKS * 4096; off += SEQ_CHUNK)
		if (arf_read(c, w.f.ino, w.f.gen, off, buf, SEQ_CHUNK) != SEQ_CHUNK)
			FAIL("quiet read");
	arf_stats(c, &cs);
	uint64_t quiet = cs.readahead_bytes - before;
	printf("seq (%s): %" PRIu64 " passes over a file rewritten %" PRIu64 " times meanwhile, "
	       "%" PRIu64 " MiB read in %u KiB reads (sync and async), every block whole and "
	       "written, %" PRIu64 " KiB of it read ahead; a write by the reader seen by its next "
	       "read; a quiet pass of %u KiB: %" PRIu64 " KiB read ahead; retries=%" PRIu64
	       " fallbacks=%" PRIu64 "\n",
	       arf_transport(c), passes, w.versions, bytes >> 20, SEQ_CHUNK >> 10, ra_race >> 10,
	       SEQ_BLOCKS * 4, quiet >> 10, cs.retries, cs.fallbacks);
	if (!strcmp(arf_transport(c), "tcp")) {
		/* all but the first two reads of the pass come from data read ahead */
		if (quiet < (uint64_t)(SEQ_BLOCKS * 4096 - 2 * SEQ_CHUNK))
			FAIL("a quiet sequential pass got %" PRIu64 " bytes from readahead", quiet);
	} else if (cs.readahead_bytes) {
		/* a read is a copy done at once: reading ahead would copy twice */
		FAIL("%" PRIu64 " bytes read ahead over %s", cs.readahead_bytes, arf_transport(c));
	}
	arf_queue_destroy(q);
	free(buf);
	arf_close(c);
	return 0;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmd_silent(const char *url, unsigned n)
{
	struct arf_client_opts o;
	struct arf_stat root, f;
	char err[512];
	arf_client *c;
	arf_queue *q;
	int rc;

	if (n < 2 || n > DEPTH)
		FAIL("N must be 2 to %d", DEPTH);
	arf_client_opts_init(&o);
	o.spin_us = 0;
	o.timeout_ms = 1000;
	o.reconnect_ms = 1000;
	if (arf_connect(url, &o, &c, err, sizeof(err)))
		FAIL("connect %s: %s", url, err);
	if ((rc = arf_root(c, &root)))
		FAIL("root: %s", arf_strerror(rc));
	char name[64];
	snprintf(name, sizeof(name), "silent.%d", (int)getpid());
	if ((rc = arf_create(c, root.ino, root.gen, name, 0644, 1, &f)))
		FAIL("create: %s", arf_strerror(rc));
	if ((rc = arf_queue_create(c, DEPTH, &q)))
		FAIL("queue: %s", arf_strerror(rc));
	static uint8_t block[4096];
	struct arf_aio io[DEPTH], *sub[DEPTH], *done[DEPTH];
	for (unsigned i = 0; i < n; i++) {
		io[i] = (struct arf_aio){ .op = ARF_AIO_WRITE, .ino = f.ino, .gen = f.gen,
					  .off = (uint64_t)i * 4096, .buf = block, .len = 4096 };
		sub[i] = &io[i];
	}
	/* 1: writes in flight, each sent again as soon as it is done, until
	 * arfd stops answering; then each ends in EIO */
	if ((rc = arf_submit(q, sub, n)) != (int)n)
		FAIL("submitting %u writes took %d", n, rc);
	unsigned inflight = n, failed = 0;
	long ok = 0;
	while (inflight) {
		int got = arf_reap(q, done, 1, n, 60000);
		if (got <= 0)
			FAIL("nothing finished within 60 s (%d)", got);
		inflight -= (unsigned)got;
		for (int k = 0; k < got; k++) {
			struct arf_aio *a = done[k];
			if (a->res == 4096 && !failed) {
				ok++;
				if ((rc = arf_submit(q, &a, 1)) != 1) /* once more, at once */
					FAIL("submitting again: %d", rc);
				inflight++;
				continue;
			}
			if (a->res != -EIO)
				FAIL("a write ended with %zd, not EIO%s", a->res,
				     a->res == 4096 ? " (after another failed)" : "");
			failed++;
		}
	}
	/* 2: n more, submitted while arfd is still silent: all end in EIO
	 * within about one bound, however many there are */
	double t1 = mono_s();
	if ((rc = arf_submit(q, sub, n)) != (int)n)
		FAIL("submitting %u writes again took %d", n, rc);
	for (inflight = n; inflight;) {
		int got = arf_reap(q, done, 1, n, 60000);
		if (got <= 0)
			FAIL("nothing finished within 60 s (%d)", got);
		inflight -= (unsigned)got;
		for (int k = 0; k < got; k++)
			if (done[k]->res != -EIO)
				FAIL("a write submitted while arfd was silent ended with %zd, not EIO",
				     done[k]->res);
	}
	double second = mono_s() - t1;
	printf("%ld writes before arfd went silent; then %u in flight failed with EIO, and %u "
	       "submitted after them failed within %.1f s\n", ok, n, n, second);
	if (second > 3.0)
		FAIL("writes submitted while arfd was silent failed one bound after another "
		     "(bounds of 1 s + 1 s)");
	arf_queue_destroy(q);
	arf_close(c);
	return 0;
}

/* ------------------------------------------------------------- late */

/* A proxy between the client and arfd: each connection relayed both ways,
 * except that what the client sends on a held one is kept back, and a cut
 * one is closed on the client's side only (arfd's side stays open: a
 * server that was silent, not gone, reading on later). */
#define PX_CONNS 16
struct px_conn {
	int cfd, sfd;            /* client's side (-1: cut), arfd's */
	int hold;
	uint8_t *held;
	size_t nheld, cap;
	size_t late;             /* bytes arfd sent after the held ones went */
	int released;
};

static struct {
	pthread_mutex_t mu;
	int lfd;
	struct sockaddr_in srv;
	struct px_conn c[PX_CONNS];
	int n;
	int stop;
} px = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void write_all(int fd, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w <= 0)
			return; /* the other side went: so does this one, when read */
		b += w;
		n -= (size_t)w;
	}
}

static void px_close(struct px_conn *k)
{
	if (k->cfd >= 0)
		close(k->cfd);
	if (k->sfd >= 0)
		close(k->sfd);
	k->cfd = k->sfd = -1;
}

static void *px_main(void *arg)
{
	(void)arg;
	static uint8_t buf[1 << 16];
	for (;;) {
		struct pollfd pf[1 + 2 * PX_CONNS];
		int who[1 + 2 * PX_CONNS], np = 0;
		pthread_mutex_lock(&px.mu);
		if (px.stop) {
			pthread_mutex_unlock(&px.mu);
			return NULL;
		}
		pf[np] = (struct pollfd){ px.lfd, POLLIN, 0 };
		who[np++] = -1;
		for (int i = 0; i < px.n; i++) {
			if (px.c[i].cfd >= 0) {
				pf[np] = (struct pollfd){ px.c[i].cfd, POLLIN, 0 };
				who[np++] = 2 * i;
			}
			if (px.c[i].sfd >= 0) {
				pf[np] = (struct pollfd){ px.c[i].sfd, POLLIN, 0 };
				who[np++] = 2 * i + 1;
			}
		}
		pthread_mutex_unlock(&px.mu);
		if (poll(pf, (nfds_t)np, 10) <= 0)
			continue;
		pthread_mutex_lock(&px.mu);
		for (int j = 0; j < np; j++) {
			if (!pf[j].revents)
				continue;
			if (who[j] < 0) {
				int cfd = accept(px.lfd, NULL, NULL);
				if (cfd < 0 || px.n == PX_CONNS) {
					if (cfd >= 0)
						close(cfd);
					continue;
				}
				int sfd = socket(AF_INET, SOCK_STREAM, 0);
				/* from a reserved port, as libarf dials as root: a
				 * root-proven peer (arfd/identity.c) */
				for (unsigned p = 1023; sfd >= 0 && p >= 600; p--) {
					struct sockaddr_in b = {
						.sin_family = AF_INET, .sin_port = htons((uint16_t)p),
						.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
					if (!bind(sfd, (struct sockaddr *)&b, sizeof(b)))
						break;
				}
				if (sfd < 0 || connect(sfd, (struct sockaddr *)&px.srv, sizeof(px.srv))) {
					close(cfd);
					if (sfd >= 0)
						close(sfd);
					continue;
				}
				px.c[px.n++] = (struct px_conn){ .cfd = cfd, .sfd = sfd };
				continue;
			}
			struct px_conn *k = &px.c[who[j] / 2];
			int from_client = !(who[j] & 1);
			int fd = from_client ? k->cfd : k->sfd;
			if (fd < 0)
				continue; /* cut meanwhile */
			ssize_t r = read(fd, buf, sizeof(buf));
			if (r <= 0) {
				px_close(k);
				continue;
			}
			if (from_client && k->hold) {
				if (k->nheld + (size_t)r > k->cap) {
					k->cap = (k->nheld + (size_t)r) * 2;
					k->held = realloc(k->held, k->cap);
					if (!k->held)
						FAIL("proxy: out of memory");
				}
				memcpy(k->held + k->nheld, buf, (size_t)r);
				k->nheld += (size_t)r;
			} else if (from_client) {
				write_all(k->sfd, buf, (size_t)r);
			} else if (k->cfd >= 0) {
				write_all(k->cfd, buf, (size_t)r);
			} else if (k->released) {
				k->late += (size_t)r; /* arfd's answer to the late sending: nobody's */
			}
		}
		pthread_mutex_unlock(&px.mu);
	}
}

/* The proxy for arf://HOST:PORT/...: its own URL in out. */
static pthread_t px_start(const char *url, char *out, size_t cap)
{
	char host[64];
	unsigned port;
	pthread_t t;

	if (sscanf(url, "arf://%63[^:]:%u", host, &port) != 2)
		FAIL("late: %s is not arf://HOST:PORT/", url);
	px.srv = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, host, &px.srv.sin_addr) != 1)
		FAIL("late: %s is not an IPv4 address", host);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	px.lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (px.lfd < 0 || bind(px.lfd, (struct sockaddr *)&a, sizeof(a)) || listen(px.lfd, 8) ||
	    getsockname(px.lfd, (struct sockaddr *)&a, &al))
		FAIL("late: proxy: %s", strerror(errno));
	snprintf(out, cap, "arf://127.0.0.1:%u/", (unsigned)ntohs(a.sin_port));
	if (pthread_create(&t, NULL, px_main, NULL))
		FAIL("late: proxy thread");
	return t;
}

/* Wait up to 10 s for what the proxy says about connection 0. */
static size_t px_wait(size_t (*what)(void), size_t want, const char *why)
{
	for (int i = 0; i < 1000; i++) {
		pthread_mutex_lock(&px.mu);
		size_t v = px.n ? what() : 0;
		pthread_mutex_unlock(&px.mu);
		if (v >= want)
			return v;
		usleep(10000);
	}
	FAIL("late: waited 10 s for %s", why);
}

static size_t px_held(void)
{
	return px.c[0].nheld;
}

static size_t px_late(void)
{
	return px.c[0].late;
}

/* Hand arfd the bytes held on connection 0, and wait for its answer
 * (which nobody gets); how many they were. */
static size_t px_release(void)
{
	pthread_mutex_lock(&px.mu);
	size_t held = px.c[0].nheld;
	px.c[0].released = 1;
	px.c[0].hold = 0;
	write_all(px.c[0].sfd, px.c[0].held, held);
	pthread_mutex_unlock(&px.mu);
	px_wait(px_late, 1, "arfd's answer to the late sending");
	return held;
}

static int cmd_late(const char *url, const char *how)
{
	int big = !strcmp(how, "ffbig"), restart = !strcmp(how, "ffrestart");
	int ff = big || restart || !strcmp(how, "ff");
	int plain = !strcmp(how, "plain"), newid = !strcmp(how, "newid");
	enum { BIG = 1 << 20 };
	static uint8_t older[BIG], newer[BIG], back[BIG];
	/* ffbig: one piece past arf_write's own (512 KiB), done again as it went */
	const ssize_t LEN = big ? BIG : 64 << 10;
	struct arf_client_opts o;
	struct arf_stat root, f;
	char err[512], purl[128];
	arf_client *c;
	arf_queue *q;
	ssize_t w;
	int rc;

	if (!ff && !plain && !newid)
		FAIL("late: say ff, ffbig, ffrestart, plain or newid");
	pthread_t t = px_start(url, purl, sizeof(purl));
	arf_client_opts_init(&o);
	o.spin_us = 0;
	o.reconnect_ms = 10000;
	if (arf_connect(purl, &o, &c, err, sizeof(err)))
		FAIL("connect %s: %s", purl, err);
	if ((rc = arf_root(c, &root)))
		FAIL("root: %s", arf_strerror(rc));
	char name[64];
	snprintf(name, sizeof(name), "late.%s.%d", how, (int)getpid());
	if ((rc = arf_create(c, root.ino, root.gen, name, 0644, 1, &f)))
		FAIL("create: %s", arf_strerror(rc));
	if ((rc = arf_queue_create(c, 4, &q)) ||
	    (rc = arf_queue_set_flags(q, plain ? 0 : ARF_QUEUE_F_FAIL_FAST)))
		FAIL("queue: %s", arf_strerror(rc));
	memset(older, 'A', LEN);
	memset(newer, 'B', LEN);

	/* the first sending: held by the proxy, then the client's side cut */
	pthread_mutex_lock(&px.mu);
	if (px.n != 1)
		FAIL("late: %d connections through the proxy, not 1", px.n);
	px.c[0].hold = 1;
	pthread_mutex_unlock(&px.mu);
	struct arf_aio io = { .op = ARF_AIO_WRITE, .ino = f.ino, .gen = f.gen, .off = 0,
			      .buf = older, .len = LEN }, *sub = &io, *done;
	if ((rc = arf_submit(q, &sub, 1)) != 1)
		FAIL("submit: %d", rc);
	px_wait(px_held, LEN, "the write's bytes at the proxy");
	pthread_mutex_lock(&px.mu);
	shutdown(px.c[0].cfd, SHUT_RDWR);
	close(px.c[0].cfd);
	px.c[0].cfd = -1;
	pthread_mutex_unlock(&px.mu);

	/* ffbig: arfd applied the first sending before it is done again (the
	 * usual way: the answer was lost), so the reply cache answers the
	 * sending again, which must be the same piece */
	if (big || restart)
		px_release();
	if (restart) {
		/* the test restarts arfd (SIGTERM: the reply cache is kept), and
		 * this client is on the new one before the write goes again: the
		 * cache's answer then carries the old verifier, so the piece must
		 * go once more under a new id, and be kept for the new server */
		char line[16];
		printf("restart\n");
		if (!fgets(line, sizeof(line), stdin))
			FAIL("late: no word that arfd was restarted");
		struct arf_statfs sf;
		if ((rc = arf_statfs(c, &sf)))
			FAIL("statfs after the restart: %s", arf_strerror(rc));
	}
	/* done again on a new connection */
	if ((rc = arf_reap(q, &done, 1, 1, 30000)) != 1)
		FAIL("reap: %d", rc);
	if (plain) {
		w = done->res;
	} else {
		if (done->res != -ENOTCONN)
			FAIL("the fail-fast queue handed the write back with %zd, not -ENOTCONN",
			     done->res);
		w = newid ? arf_write(c, f.ino, f.gen, 0, older, LEN) : arf_aio_again(q, done);
	}
	if (w != LEN)
		FAIL("the write done again: %zd", w);
	/* the writer writes there anew */
	if ((w = arf_write(c, f.ino, f.gen, 0, newer, LEN)) != LEN)
		FAIL("the newer write: %zd", w);
	if ((rc = arf_fsync(c, f.ino, f.gen)))
		FAIL("fsync: %s", arf_strerror(rc));

	/* and only now does arfd read the first sending */
	size_t held = big || restart ? px.c[0].nheld : px_release();

	/* read by a client of its own, not through the proxy */
	arf_client *c2;
	if (arf_connect(url, &o, &c2, err, sizeof(err)))
		FAIL("connect %s: %s", url, err);
	if ((w = arf_read(c2, f.ino, f.gen, 0, back, LEN)) != LEN)
		FAIL("read back: %zd", w);
	int kept = !memcmp(back, newer, LEN), lost = !memcmp(back, older, LEN);
	printf("%s: the first sending (%zu bytes held) read by arfd %s: %s\n", how, held,
	       big ? "before the write was done again (the reply cache answered that)"
		   : restart ? "and arfd restarted before the write was done again"
			     : "after the write was done again and written anew",
	       kept ? "the newer bytes stay" : lost ? "the older bytes landed last" : "mixed bytes");
	arf_unlink(c2, root.ino, root.gen, name);
	arf_close(c2);
	arf_queue_destroy(q);
	arf_close(c);
	pthread_mutex_lock(&px.mu);
	px.stop = 1;
	pthread_mutex_unlock(&px.mu);
	pthread_join(t, NULL);
	if (newid)
		return lost ? 3 : kept ? 0 : 1;
	if (!kept)
		FAIL("%s: a write's late first sending overwrote what was written after it was done "
		     "again", how);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "ops"))
		return cmd_ops(argv[2], atol(argv[3]), !(argc >= 5 && !strcmp(argv[4], "requests")));
	if (argc >= 4 && !strcmp(argv[1], "torn"))
		return cmd_torn(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "seq"))
		return cmd_seq(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "silent"))
		return cmd_silent(argv[2], (unsigned)atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "late"))
		return cmd_late(argv[2], argv[3]);
	fprintf(stderr, "usage: arf-asynctest ops URL NOPS [requests] | torn URL SECONDS | "
		"seq URL SECONDS | silent URL N | late URL ff|ffbig|ffrestart|plain|newid\n");
	return 2;
}

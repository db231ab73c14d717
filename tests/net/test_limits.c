/* SPDX-License-Identifier: MIT */
/*
 * The server's bounds (net/limits.c) against an in-process arf_net_server,
 * driven by raw sockets as a hostile client would drive it:
 *
 *   - back-pressure: with the embedder's worker held shut, a client
 *     pipelines many requests in one write; never more than the cap (count,
 *     then bytes) reach the embedder, the server counts a stall, and when
 *     the worker opens every request is answered, although the frames were
 *     already in the server's buffer and no new byte arrived to wake epoll;
 *     one request bigger than the byte cap still goes through alone;
 *   - connection limits (as root: a reserved source port is root's proof):
 *     one address gets max_conns_per_client, an unprivileged uid on the
 *     UNIX socket as many, the reserved slots go to root only, and past
 *     max_conns nothing is accepted;
 *   - timeouts: an idle handshaken connection is closed, one with a
 *     request in flight is not; half a frame is dropped after the frame
 *     timeout; a header claiming 16 MiB before the handshake is refused at
 *     once; a library connection closed for idleness fails its next call
 *     with -ECONNRESET (libarf reconnects on it: tests/security).
 *
 * Each test prints what it measured.  An alarm() bounds the program.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "arf_net.h"

#define OP_ECHO (ARF_NET_OP_REQUEST_BASE + 0) /* reply: the body's length, 8 bytes */
#define CAP_REQS  4u
#define CAP_BYTES (1u << 20)

/* ------------------------------------------------------------ the server */

struct item {
	struct arf_net_sconn *c;
	uint64_t id;
	uint16_t op;
	uint64_t len;
	struct item *next;
};

static struct {
	struct arf_net_server *srv;
	char dir[64];
	char sock[100];
	uint16_t port;
	int region_fd;          /* a memfd: shm clients get it in the handshake */
	uint8_t *region;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct item *head, *tail;
	int open;               /* the worker answers only while open */
	int stop;
	pthread_t worker;
	int worker_started;
	uint64_t received;      /* on_request calls (soft-NIC thread) */
	uint64_t answered;      /* replies sent (atomic) */
	uint64_t max_outstanding;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void on_request(void *ctx, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		       const uint8_t *body, size_t len)
{
	(void)ctx;
	(void)body;
	struct item *it = calloc(1, sizeof(*it));
	if (!it)
		return;
	arf_net_sconn_ref(c);
	it->c = c;
	it->id = h->id;
	it->op = h->op;
	it->len = len;
	uint64_t got = __atomic_add_fetch(&S.received, 1, __ATOMIC_RELAXED);
	uint64_t out = got - __atomic_load_n(&S.answered, __ATOMIC_ACQUIRE);
	if (out > __atomic_load_n(&S.max_outstanding, __ATOMIC_RELAXED))
		__atomic_store_n(&S.max_outstanding, out, __ATOMIC_RELAXED);
	pthread_mutex_lock(&S.lock);
	if (S.tail)
		S.tail->next = it;
	else
		S.head = it;
	S.tail = it;
	pthread_cond_broadcast(&S.cond);
	pthread_mutex_unlock(&S.lock);
}

static void *worker_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&S.lock);
	for (;;) {
		while (!S.stop && (!S.open || !S.head))
			pthread_cond_wait(&S.cond, &S.lock);
		if (S.stop)
			break;
		struct item *it = S.head;
		S.head = it->next;
		if (!S.head)
			S.tail = NULL;
		pthread_mutex_unlock(&S.lock);
		uint8_t b[8];
		uint64_t v = htole64(it->len);
		memcpy(b, &v, 8);
		__atomic_add_fetch(&S.answered, 1, __ATOMIC_RELEASE);
		arf_net_reply(it->c, it->id, it->op, ARF_NET_S_OK, &(struct iovec){ b, 8 }, 1);
		arf_net_sconn_unref(it->c);
		free(it);
		pthread_mutex_lock(&S.lock);
	}
	while (S.head) { /* never answered: the server is gone */
		struct item *it = S.head;
		S.head = it->next;
		arf_net_sconn_unref(it->c);
		free(it);
	}
	S.tail = NULL;
	pthread_mutex_unlock(&S.lock);
	return NULL;
}

static void gate(int open)
{
	pthread_mutex_lock(&S.lock);
	S.open = open;
	pthread_cond_broadcast(&S.cond);
	pthread_mutex_unlock(&S.lock);
}

static void server_stop(void)
{
	arf_net_server_destroy(S.srv);
	S.srv = NULL;
	if (S.worker_started) {
		pthread_mutex_lock(&S.lock);
		S.stop = 1;
		pthread_cond_broadcast(&S.cond);
		pthread_mutex_unlock(&S.lock);
		pthread_join(S.worker, NULL);
		S.worker_started = 0;
	}
	if (S.region)
		munmap(S.region, 4096);
	if (S.region_fd > 0)
		close(S.region_fd);
	S.region = NULL;
	S.region_fd = -1;
	if (S.sock[0])
		unlink(S.sock);
	if (S.dir[0])
		rmdir(S.dir);
	S.sock[0] = S.dir[0] = 0;
}

/* A server with these limits; the worker starts closed. */
static void server_start(const struct arf_net_server_opts *limits)
{
	struct arf_net_server_opts o = *limits;
	char err[256] = "";

	S.stop = S.open = 0;
	S.received = S.answered = S.max_outstanding = 0;
	snprintf(S.dir, sizeof(S.dir), "/tmp/arf-net-limits.XXXXXX");
	assert_non_null(mkdtemp(S.dir));
	chmod(S.dir, 0755); /* an unprivileged child connects too */
	snprintf(S.sock, sizeof(S.sock), "%s/s.sock", S.dir);
	o.listen_addr = "127.0.0.1";
	o.unix_path = S.sock;
	o.on_request = on_request;
	int rc = arf_net_server_create(&o, &S.srv, err, sizeof(err));
	if (rc)
		fprintf(stderr, "create: %s\n", err);
	assert_int_equal(rc, 0);
	S.region_fd = memfd_create("arf-net-limits", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(S.region_fd >= 0);
	assert_int_equal(ftruncate(S.region_fd, 4096), 0);
	S.region = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, S.region_fd, 0);
	assert_true(S.region != MAP_FAILED);
	assert_int_equal(arf_net_server_add_region(S.srv, 0, S.region, 4096, S.region_fd, 0), 0);
	assert_int_equal(pthread_create(&S.worker, NULL, worker_main, NULL), 0);
	S.worker_started = 1;
	rc = arf_net_server_start(S.srv, err, sizeof(err));
	if (rc)
		fprintf(stderr, "start: %s\n", err);
	assert_int_equal(rc, 0);
	chmod(S.sock, 0777);
	S.port = arf_net_server_port(S.srv);
}

static int teardown(void **state)
{
	(void)state;
	server_stop();
	return 0;
}

static struct arf_net_server_counters counters(void)
{
	struct arf_net_server_counters c;
	arf_net_server_counters(S.srv, &c);
	return c;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ raw client */

static void set_timeout(int fd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A tcp connection to the server from source port `from` (0 = any), or -1. */
static int raw_tcp_from(uint16_t from)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (from) {
		a.sin_port = htons(from);
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			close(fd);
			return -1;
		}
	}
	a.sin_port = htons(S.port);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	set_timeout(fd, 5000);
	return fd;
}

static int raw_unix(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	memcpy(a.sun_path, S.sock, strlen(S.sock) + 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	set_timeout(fd, 5000);
	return fd;
}

static void put_hdr(uint8_t *p, uint32_t len, uint16_t op, uint64_t id, uint32_t aux)
{
	uint32_t l = htole32(len), a = htole32(aux), st = 0;
	uint16_t o = htole16(op), f = 0;
	uint64_t i = htole64(id);
	memcpy(p, &l, 4);
	memcpy(p + 4, &o, 2);
	memcpy(p + 6, &f, 2);
	memcpy(p + 8, &i, 8);
	memcpy(p + 16, &st, 4);
	memcpy(p + 20, &a, 4);
}

static int send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int recv_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, 0);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One reply frame: its id and status; the body is read and dropped
 * (no malloc: a forked child of this threaded process calls it too). */
static int recv_reply(int fd, uint64_t *id, int32_t *status)
{
	uint8_t h[24], b[512];
	uint32_t len;
	if (recv_all(fd, h, 24))
		return -1;
	memcpy(&len, h, 4);
	len = le32toh(len);
	memcpy(id, h + 8, 8);
	*id = le64toh(*id);
	memcpy(status, h + 16, 4);
	if (len < 24 || len > (1u << 20))
		return -1;
	for (size_t left = len - 24; left;) {
		size_t n = left < sizeof(b) ? left : sizeof(b);
		if (recv_all(fd, b, n))
			return -1;
		left -= n;
	}
	return 0;
}

/* HELLO by hand; 0 when the server accepted. */
static int raw_hello(int fd)
{
	uint8_t f[24 + 5];
	uint64_t id;
	int32_t st;
	put_hdr(f, sizeof(f), ARF_NET_OP_HELLO, 1, ARF_NET_PROTO_VERSION);
	memcpy(f + 24, "hello", 5);
	if (send_all(fd, f, sizeof(f)) || recv_reply(fd, &id, &st))
		return -1;
	return st == ARF_NET_S_OK ? 0 : -1;
}

/* Did the server close fd within ms?  (EOF or reset; data is read past.) */
static int closed_within(int fd, int ms)
{
	double end = now_s() + ms / 1000.0;
	uint8_t b[4096];
	for (;;) {
		int left = (int)((end - now_s()) * 1000);
		if (left <= 0)
			return 0;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, left) <= 0)
			return 0;
		ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			return 1;
	}
}

/* Wait until cond() holds (polling), at most ms; returns whether it did. */
static int wait_for(int (*cond)(void), int ms)
{
	double end = now_s() + ms / 1000.0;
	while (now_s() < end) {
		if (cond())
			return 1;
		usleep(10000);
	}
	return cond();
}

static uint64_t received(void)
{
	return __atomic_load_n(&S.received, __ATOMIC_RELAXED);
}

static uint64_t max_outstanding(void)
{
	return __atomic_load_n(&S.max_outstanding, __ATOMIC_RELAXED);
}

static uint64_t want_received;
static int received_reached(void)
{
	return __atomic_load_n(&S.received, __ATOMIC_RELAXED) >= want_received;
}

/* ------------------------------------------------------------ back-pressure */

static const struct arf_net_server_opts caps = {
	.max_conn_requests = CAP_REQS, .max_conn_request_bytes = CAP_BYTES,
};

/* n ECHO frames of body bytes each, in one buffer sent at once. */
static void pipeline(int fd, unsigned n, size_t body)
{
	size_t fl = 24 + body;
	uint8_t *buf = calloc(n, fl);
	assert_non_null(buf);
	for (unsigned i = 0; i < n; i++)
		put_hdr(buf + i * fl, (uint32_t)fl, OP_ECHO, 100 + i, 0);
	assert_int_equal(send_all(fd, buf, n * fl), 0);
	free(buf);
}

struct sender {
	pthread_t thr;
	int fd;
	unsigned n;
	size_t body;
};

static void *sender_main(void *arg)
{
	struct sender *sd = arg;
	size_t fl = 24 + sd->body;
	uint8_t *f = calloc(1, fl);
	for (unsigned i = 0; f && i < sd->n; i++) {
		put_hdr(f, (uint32_t)fl, OP_ECHO, 100 + i, 0);
		if (send_all(sd->fd, f, fl))
			break;
	}
	free(f);
	return NULL;
}

/* The same from a thread: the server stops reading us, so our sends may
 * block until the worker opens. */
static void pipeline_async(struct sender *sd, int fd, unsigned n, size_t body)
{
	sd->fd = fd;
	sd->n = n;
	sd->body = body;
	assert_int_equal(pthread_create(&sd->thr, NULL, sender_main, sd), 0);
}

static void expect_replies(int fd, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t id;
		int32_t st;
		assert_int_equal(recv_reply(fd, &id, &st), 0);
		assert_int_equal(st, ARF_NET_S_OK);
		assert_true(id >= 100 && id < 100 + n);
	}
}

static void test_request_cap(void **state)
{
	(void)state;
	server_start(&caps);
	int fd = raw_tcp_from(0);
	assert_true(fd >= 0);
	assert_int_equal(raw_hello(fd), 0);

	/* 100 small requests in one write: all in the server's buffer at once */
	pipeline(fd, 100, 16);
	want_received = CAP_REQS;
	assert_true(wait_for(received_reached, 3000));
	usleep(300000); /* the server had time to take more, were it willing */
	struct arf_net_server_counters c = counters();
	assert_int_equal(received(), CAP_REQS);
	assert_true(c.stalls >= 1);
	assert_int_equal(c.conns_stalled, 1);

	/* open: every frame is served, though no new byte arrives */
	double t = now_s();
	gate(1);
	expect_replies(fd, 100);
	double took = now_s() - t;
	c = counters();
	assert_int_equal(received(), 100);
	assert_true(max_outstanding() <= CAP_REQS);
	assert_int_equal(c.conns_stalled, 0);
	printf("request cap: 100 pipelined requests, at most %llu in flight (cap %u), %llu stalls, "
	       "all answered %.0f ms after the worker opened\n",
	       (unsigned long long)max_outstanding(), CAP_REQS, (unsigned long long)c.stalls,
	       took * 1000);
	close(fd);
}

static void test_byte_cap(void **state)
{
	(void)state;
	server_start(&caps);
	int fd = raw_tcp_from(0);
	assert_true(fd >= 0);
	assert_int_equal(raw_hello(fd), 0);

	/* 400 KiB each: two fit in 1 MiB, a third does not */
	struct sender sd;
	pipeline_async(&sd, fd, 10, 400u << 10);
	want_received = 2;
	assert_true(wait_for(received_reached, 3000));
	usleep(300000);
	assert_int_equal(received(), 2);
	gate(1);
	expect_replies(fd, 10);
	pthread_join(sd.thr, NULL);
	assert_true(max_outstanding() <= 2);

	/* one request bigger than the whole byte cap still goes, alone */
	gate(0);
	uint64_t before = received();
	pipeline_async(&sd, fd, 2, 3u << 20);
	want_received = before + 1;
	assert_true(wait_for(received_reached, 3000));
	usleep(300000);
	assert_int_equal(received(), before + 1);
	gate(1);
	expect_replies(fd, 2);
	pthread_join(sd.thr, NULL);
	printf("byte cap: 10 x 400 KiB pipelined, at most %llu in flight (cap 1 MiB); "
	       "a 3 MiB request passes alone\n", (unsigned long long)max_outstanding());
	close(fd);
}

/* ------------------------------------------------------------ connection limits */

/* An unprivileged client (uid 65534, a child process) holding connections
 * to the UNIX socket until hold is closed. */
struct other_user {
	pid_t pid;
	int hold;               /* close to let the child go */
	int kept;               /* handshakes the server accepted */
};

static void other_user_connect(struct other_user *u, uid_t uid, int n)
{
	int res[2], hold[2];
	assert_int_equal(pipe(res), 0);
	assert_int_equal(pipe(hold), 0);
	u->pid = fork();
	assert_true(u->pid >= 0);
	if (u->pid == 0) {
		close(res[0]);
		close(hold[1]);
		if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(2);
		int kept = 0;
		for (int i = 0; i < n; i++) {
			int fd = raw_unix();
			if (fd >= 0 && raw_hello(fd) == 0)
				kept++; /* kept open until exit */
		}
		if (write(res[1], &kept, sizeof(kept)) != sizeof(kept))
			_exit(3);
		char b;
		if (read(hold[0], &b, 1) < 0) { /* EOF: the parent is done */ }
		_exit(0);
	}
	close(res[1]);
	close(hold[0]);
	u->hold = hold[1];
	if (read(res[0], &u->kept, sizeof(u->kept)) != sizeof(u->kept))
		u->kept = -1;
	close(res[0]);
}

static void other_user_release(struct other_user *u)
{
	close(u->hold);
	waitpid(u->pid, NULL, 0);
}

/* A tcp connection from 127.0.0.2 (another address of this host). */
static int raw_tcp_other_addr(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	a.sin_port = htons(S.port);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	set_timeout(fd, 5000);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static void test_conn_limits(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		printf("connection limits: skipped (needs root for reserved ports and another uid)\n");
		skip();
	}
	struct arf_net_server_opts o = { .max_conns = 10, .max_conns_per_client = 3,
					 .reserved_root_conns = 3 };
	server_start(&o);
	int fds[16], nf = 0;

	/* one address, ordinary ports: three, then refused */
	for (int i = 0; i < 3; i++) {
		fds[nf] = raw_tcp_from(0);
		assert_true(fds[nf] >= 0);
		assert_int_equal(raw_hello(fds[nf]), 0);
		nf++;
	}
	int x = raw_tcp_from(0);
	assert_true(x >= 0);
	assert_true(raw_hello(x) != 0);
	assert_true(closed_within(x, 2000));
	close(x);

	/* another loopback address is the same host, so the same client: any
	 * local user may bind 127.0.0.2 */
	int z = raw_tcp_other_addr();
	assert_true(z >= 0);
	assert_true(raw_hello(z) != 0);
	close(z);

	/* another uid on the UNIX socket is another client: three of its own */
	struct other_user u, v;
	other_user_connect(&u, 65534, 5);
	assert_int_equal(u.kept, 3);

	/* 6 open of 10, 3 reserved: one more ordinary client gets the 7th, and
	 * its 8th is refused: the rest is root's */
	other_user_connect(&v, 65533, 2);
	assert_int_equal(v.kept, 1);

	/* root (a reserved source port) takes the three reserved slots */
	int roots = 0;
	for (uint16_t p = 700; p < 1000 && roots < 4; p++) {
		int fd = raw_tcp_from(p);
		if (fd < 0)
			continue;
		if (raw_hello(fd) == 0) {
			fds[nf++] = fd;
			roots++;
		} else {
			close(fd);
			break; /* max_conns: not even root */
		}
	}
	assert_int_equal(roots, 3);
	struct arf_net_server_counters c = counters();
	assert_int_equal(c.conns_open, 10);
	assert_true(c.conns_refused_limit >= 4);
	printf("connection limits: 3 for loopback (127.0.0.2 too), 3 for uid 65534 (of 5 tried), "
	       "1 for uid 65533: the last 3 of 10 slots to root only; %llu refused by a limit\n",
	       (unsigned long long)c.conns_refused_limit);
	other_user_release(&v);
	other_user_release(&u);
	while (nf)
		close(fds[--nf]);
}

/* ------------------------------------------------------------------ timeouts */

static void test_timeouts(void **state)
{
	(void)state;
	struct arf_net_server_opts o = { .idle_timeout_ms = 1000, .frame_timeout_ms = 1000 };
	server_start(&o);

	/* a header claiming 16 MiB before the handshake: refused at once */
	int pre = raw_tcp_from(0);
	uint8_t h[24];
	put_hdr(h, ARF_NET_MAX_FRAME, ARF_NET_OP_HELLO, 1, ARF_NET_PROTO_VERSION);
	double t0 = now_s();
	assert_int_equal(send_all(pre, h, 24), 0);
	assert_true(closed_within(pre, 1000));
	double pre_s = now_s() - t0;
	close(pre);

	/* three handshaken connections: one idle, one mid-frame, one busy */
	int idle = raw_tcp_from(0), half = raw_tcp_from(0), busy = raw_tcp_from(0);
	assert_int_equal(raw_hello(idle), 0);
	assert_int_equal(raw_hello(half), 0);
	assert_int_equal(raw_hello(busy), 0);
	uint8_t part[24 + 10];
	put_hdr(part, 1000, OP_ECHO, 5, 0);
	memset(part + 24, 'x', 10);
	t0 = now_s();
	assert_int_equal(send_all(half, part, sizeof(part)), 0);
	pipeline(busy, 1, 8); /* the worker is shut: in flight throughout */

	assert_true(closed_within(half, 4000));
	double half_s = now_s() - t0;
	assert_true(closed_within(idle, 4000));
	double idle_s = now_s() - t0;
	assert_false(closed_within(busy, 1500)); /* 3.5 s and more, in flight: kept */
	gate(1);
	expect_replies(busy, 1);
	assert_true(closed_within(busy, 4000)); /* answered, then idle */

	/* a library connection closed for idleness: the next call says so */
	struct arf_net_client_opts co = { .transport = "tcp", .host = "127.0.0.1", .port = S.port,
					  .timeout_ms = 3000 };
	struct arf_net_conn *lc = NULL;
	char err[256];
	assert_int_equal(arf_net_connect(&co, &lc, err, sizeof(err)), 0);
	sleep(3);
	struct arf_net_buf resp = { 0 };
	int rc = arf_net_call(lc, OP_ECHO, &(struct iovec){ "x", 1 }, 1, &resp);
	arf_net_buf_free(&resp);
	arf_net_close(lc);
	assert_true(rc == -ECONNRESET || rc == -EPIPE);

	struct arf_net_server_counters c = counters();
	assert_true(c.preauth_oversize >= 1);
	assert_true(c.conns_closed_midframe >= 1);
	assert_true(c.conns_closed_idle >= 3);
	printf("timeouts (idle 1 s, frame 1 s): 16 MiB header before HELLO closed in %.0f ms; "
	       "half a frame dropped after %.1f s; idle connection closed after %.1f s; one with "
	       "a request in flight kept; a library call on the closed connection: %s\n",
	       pre_s * 1000, half_s, idle_s, strerror(-rc));
	close(idle);
	close(half);
	close(busy);
}

static void test_bad_limits(void **state)
{
	(void)state;
	struct arf_net_server_opts o = { .listen_addr = "127.0.0.1", .max_conns = 8,
					 .reserved_root_conns = 8 };
	struct arf_net_server *s = NULL;
	char err[256] = "";
	assert_int_equal(arf_net_server_create(&o, &s, err, sizeof(err)), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(err, "reserved_root_conns"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_request_cap, teardown),
		cmocka_unit_test_teardown(test_byte_cap, teardown),
		cmocka_unit_test_teardown(test_conn_limits, teardown),
		cmocka_unit_test_teardown(test_timeouts, teardown),
		cmocka_unit_test(test_bad_limits),
	};

	alarm(90); /* a hang is a failure, not a stuck build */
	return cmocka_run_group_tests(tests, NULL, NULL);
}

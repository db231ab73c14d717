/* SPDX-License-Identifier: MIT */
/*
 * A big request's receive buffer handed to the server's code instead of
 * copied (arf_net_sconn_take_body, arf_net_sconn_body_free).  An
 * in-process server answers each request with the FNV-1a hash of its body
 * from a worker thread, taking the buffer where it can and copying
 * otherwise, and holds every body until then; the client keeps 16 requests
 * in flight, of sizes from 5 bytes to 4 MiB mixed, over tcp and shm, and
 * checks every hash.  Both ways must have been taken, and a second take of
 * one request must be refused.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "arf_net.h"

#define OP     (ARF_NET_OP_REQUEST_BASE + 0)
#define NPOST  240
#define INFL   16

struct item {
	struct arf_net_sconn *c;
	uint64_t id;
	const uint8_t *body;
	size_t len;
	void *owned;   /* the buffer taken, or NULL */
	uint8_t *copy; /* or the copy */
	struct item *next;
};

static struct {
	struct arf_net_server *srv;
	char dir[64], sock[100];
	int fd;
	uint8_t *region;
	pthread_t worker;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct item *head;
	int stop;
	long taken, copied, second_take; /* under lock */
} B = { .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static void on_request(void *ctx, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		       const uint8_t *body, size_t len)
{
	struct item *it = calloc(1, sizeof(*it));

	(void)ctx;
	if (!it)
		return; /* the client times out: a failure */
	it->owned = arf_net_sconn_take_body(c);
	if (!it->owned) {
		it->copy = malloc(len + 1);
		if (!it->copy) {
			free(it);
			return;
		}
		memcpy(it->copy, body, len);
	}
	it->body = it->owned ? body : it->copy;
	int again = arf_net_sconn_take_body(c) != NULL;
	arf_net_sconn_ref(c);
	it->c = c;
	it->id = h->id;
	it->len = len;
	pthread_mutex_lock(&B.lock);
	B.taken += it->owned != NULL;
	B.copied += it->owned == NULL;
	B.second_take += again;
	it->next = B.head;
	B.head = it;
	pthread_cond_signal(&B.cond);
	pthread_mutex_unlock(&B.lock);
}

static void *worker_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&B.lock);
	for (;;) {
		while (!B.head && !B.stop)
			pthread_cond_wait(&B.cond, &B.lock);
		if (!B.head)
			break;
		struct item *l = B.head;
		B.head = NULL;
		pthread_mutex_unlock(&B.lock);
		while (l) {
			struct item *next = l->next;
			uint64_t hv = fnv(l->body, l->len);
			struct iovec v = { &hv, sizeof(hv) };
			arf_net_reply(l->c, l->id, OP, ARF_NET_S_OK, &v, 1);
			arf_net_sconn_body_free(l->c, l->owned);
			free(l->copy);
			arf_net_sconn_unref(l->c);
			free(l);
			l = next;
		}
		pthread_mutex_lock(&B.lock);
	}
	pthread_mutex_unlock(&B.lock);
	return NULL;
}

static int teardown(void **state)
{
	(void)state;
	arf_net_server_destroy(B.srv);
	pthread_mutex_lock(&B.lock);
	B.stop = 1;
	pthread_cond_signal(&B.cond);
	pthread_mutex_unlock(&B.lock);
	pthread_join(B.worker, NULL);
	if (B.region)
		munmap(B.region, 4096);
	if (B.fd >= 0)
		close(B.fd);
	unlink(B.sock);
	rmdir(B.dir);
	return 0;
}

static int setup(void **state)
{
	struct arf_net_server_opts o;
	char err[256] = "";

	(void)state;
	snprintf(B.dir, sizeof(B.dir), "/tmp/arf-bodies.XXXXXX");
	if (!mkdtemp(B.dir))
		return -1;
	snprintf(B.sock, sizeof(B.sock), "%s/s", B.dir);
	B.fd = memfd_create("arf-bodies", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (B.fd < 0 || ftruncate(B.fd, 4096))
		return -1;
	B.region = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, B.fd, 0);
	if (B.region == MAP_FAILED)
		return -1;
	if (pthread_create(&B.worker, NULL, worker_main, NULL))
		return -1;
	memset(&o, 0, sizeof(o));
	o.listen_addr = "127.0.0.1";
	o.unix_path = B.sock;
	o.on_request = on_request;
	if (arf_net_server_create(&o, &B.srv, err, sizeof(err)) ||
	    arf_net_server_add_region(B.srv, 1, B.region, 4096, B.fd, 0) ||
	    arf_net_server_start(B.srv, err, sizeof(err))) {
		fprintf(stderr, "setup: %s\n", err);
		return -1;
	}
	return 0;
}

struct post {
	struct arf_net_pending p;
	uint64_t want;
	int done;
};

static void posted_done(struct arf_net_pending *p)
{
	__atomic_store_n(&((struct post *)p)->done, 1, __ATOMIC_RELEASE);
}

static void run_transport(const char *transport)
{
	static const size_t sizes[] = { 10, 70000, 1u << 20, 100, 3u << 20, 65537, 200000, 5,
					4u << 20 };
	struct arf_net_client_opts co;
	struct arf_net_conn *c = NULL;
	char err[256] = "";
	struct post *ps = calloc(NPOST, sizeof(*ps));
	uint8_t *buf = malloc(5u << 20);

	assert_non_null(ps);
	assert_non_null(buf);
	for (size_t i = 0; i < (5u << 20); i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	memset(&co, 0, sizeof(co));
	co.transport = transport;
	co.host = "127.0.0.1";
	co.port = arf_net_server_port(B.srv);
	co.sock_path = B.sock;
	co.timeout_ms = 20000;
	assert_int_equal(arf_net_connect(&co, &c, err, sizeof(err)), 0);
	pthread_mutex_lock(&B.lock);
	long taken0 = B.taken, copied0 = B.copied;
	pthread_mutex_unlock(&B.lock);
	for (int i = 0; i < NPOST; i++) {
		size_t len = sizes[(size_t)i * 7 % (sizeof(sizes) / sizeof(sizes[0]))];
		size_t off = ((size_t)i * 40503u) % (1u << 20);
		struct iovec v = { buf + off, len };
		ps[i].want = fnv(buf + off, len);
		ps[i].p.done = posted_done;
		assert_int_equal(arf_net_post(c, OP, &v, 1, &ps[i].p), 0);
		if (i % INFL == INFL - 1 || i == NPOST - 1) /* INFL in flight at most */
			for (int k = i - i % INFL; k <= i; k++) {
				assert_int_equal(arf_net_wait(c, &ps[k].done, 20000), 1);
				if (ps[k].p.rc || ps[k].p.body.len != 8 ||
				    memcmp(ps[k].p.body.data, &ps[k].want, 8))
					fail_msg("%s: request %d: rc %d, a wrong hash", transport, k,
						 ps[k].p.rc);
				arf_net_buf_free(&ps[k].p.body);
			}
	}
	arf_net_close(c);
	pthread_mutex_lock(&B.lock);
	long taken = B.taken - taken0, copied = B.copied - copied0, again = B.second_take;
	pthread_mutex_unlock(&B.lock);
	print_message("%s: %ld bodies handed over, %ld copied\n", transport, taken, copied);
	assert_true(taken > 0);
	assert_true(copied > 0);
	assert_int_equal(again, 0);
	free(ps);
	free(buf);
}

static void test_bodies_tcp(void **state)
{
	(void)state;
	run_transport("tcp");
}

static void test_bodies_shm(void **state)
{
	(void)state;
	run_transport("shm");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bodies_tcp),
		cmocka_unit_test(test_bodies_shm),
	};
	alarm(120);
	return cmocka_run_group_tests(tests, setup, teardown);
}

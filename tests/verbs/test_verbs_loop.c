/* SPDX-License-Identifier: MIT */
/*
 * The verbs transport end to end, against an arf_net_server in this process
 * serving rdma only: handshake and region keys, single, batched and large
 * one-sided READs (larger than the staging buffer), refused reads (bounds,
 * key) after which the connection still works, WRITE, CAS and FAA checked
 * against the server's memory, a WRITE to the read-only region refused,
 * requests small and large (a reply many receive buffers long, so credits
 * run out and come back), many threads pipelining requests on one
 * connection, a connection granted no keys, a refused one, what the server
 * sees of its peer, and connecting and closing in a loop.
 *
 * It needs an RDMA device (hardware, or soft-RoCE: see docs/rdma.md).  When
 * ibv_get_device_list finds none it prints "verbs skipped: no RDMA device
 * (reason)" and exits 77, which meson reports as SKIP.  The address to
 * serve on is $ARF_TEST_RDMA_ADDR, else the first local IPv4 address that
 * rdma_cm can bind (the soft-RoCE interface's).
 */
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "arf_net.h"

#define RO_ID   0u
#define RW_ID   2u
#define RO_SIZE (1u << 20)
#define RW_SIZE (64u << 10)
#define OP_ECHO (ARF_NET_OP_REQUEST_BASE + 0)

static int failures;
#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
			fprintf(stderr, __VA_ARGS__);                                      \
			fprintf(stderr, "\n");                                             \
			failures++;                                                        \
		}                                                                          \
	} while (0)

static uint8_t *ro, *rw;
static struct arf_net_server *srv;
static char addr[64];
static uint16_t port;
static char last_peer[80];
static uint16_t last_peer_port = 1;

static int on_hello(void *ctx, struct arf_net_sconn *c, const struct arf_net_peer *peer,
		    const void *hello, size_t len, char *msg, size_t msglen)
{
	(void)ctx;
	snprintf(last_peer, sizeof(last_peer), "%s %s", peer->transport, peer->addr);
	last_peer_port = peer->port;
	if (len == 4 && !memcmp(hello, "deny", 4)) {
		snprintf(msg, msglen, "go away");
		return ARF_EAUTH;
	}
	if (len == 7 && !memcmp(hello, "nogrant", 7))
		arf_net_sconn_set_grant(c, 0);
	return 0;
}

/* Echo from the soft-NIC thread: reply "echo:" + body at once. */
static void on_request(void *ctx, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		       const uint8_t *body, size_t len)
{
	(void)ctx;
	struct iovec v[2] = { { (void *)"echo:", 5 }, { (void *)body, len } };
	arf_net_reply(c, h->id, h->op, ARF_NET_S_OK, v, 2);
}

static int connect_as(const char *hello, struct arf_net_conn **c, char *err, size_t errlen)
{
	struct arf_net_client_opts o = { .transport = "rdma", .host = addr, .port = port,
					 .spin_us = 20, .timeout_ms = 5000, .hello = hello,
					 .hello_len = strlen(hello) };
	return arf_net_connect(&o, c, err, errlen);
}

static int start_server(const char *a, char *err, size_t errlen)
{
	struct arf_net_server_opts so = { .rdma_addr = a, .rdma_port = 0, .spin_us = 20,
					  .on_hello = on_hello, .on_request = on_request };
	int rc = arf_net_server_create(&so, &srv, err, errlen);
	if (rc)
		return rc;
	if ((rc = arf_net_server_add_region(srv, RO_ID, ro, RO_SIZE, -1, 0)) ||
	    (rc = arf_net_server_add_region(srv, RW_ID, rw, RW_SIZE, -1,
					    ARF_NET_REGION_WRITABLE)) ||
	    (rc = arf_net_server_set_info(srv, "info!", 5)) ||
	    (rc = arf_net_server_start(srv, err, errlen))) {
		arf_net_server_destroy(srv);
		srv = NULL;
		return rc;
	}
	snprintf(addr, sizeof(addr), "%s", a);
	port = arf_net_server_rdma_port(srv);
	return 0;
}

/* An address rdma_cm can listen on. */
static int pick_address(char *err, size_t errlen)
{
	const char *env = getenv("ARF_TEST_RDMA_ADDR");
	if (env && env[0])
		return start_server(env, err, errlen);
	struct ifaddrs *ifs = NULL, *i;
	if (getifaddrs(&ifs))
		return -errno;
	int rc = -EADDRNOTAVAIL;
	for (int pass = 0; pass < 2 && rc; pass++) { /* non-loopback first */
		for (i = ifs; i && rc; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
				continue;
			char a[INET_ADDRSTRLEN];
			inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a, sizeof(a));
			if ((pass == 0) == !strncmp(a, "127.", 4))
				continue;
			rc = start_server(a, err, errlen);
		}
	}
	freeifaddrs(ifs);
	return rc;
}

static void fill(void)
{
	for (size_t i = 0; i < RO_SIZE; i++)
		ro[i] = (uint8_t)(i * 7 + (i >> 12));
	memset(rw, 0, RW_SIZE);
}

static void test_reads(struct arf_net_conn *c)
{
	size_t n;
	const struct arf_net_region_info *r = arf_net_regions(c, &n);
	CHECK(n == 2, "%zu regions", n);
	CHECK(!strcmp(arf_net_transport_name(c), "rdma"), "%s", arf_net_transport_name(c));
	size_t il;
	const void *info = arf_net_server_info(c, &il);
	CHECK(il == 5 && !memcmp(info, "info!", 5), "info");
	(void)r;

	uint8_t buf[4096];
	struct arf_net_read_op op = { .region = RO_ID, .len = 100, .off = 12345, .dst = buf };
	CHECK(arf_net_read(c, &op, 1) == 0, "single read");
	CHECK(!memcmp(buf, ro + 12345, 100), "single read bytes");

	/* a batch of 200 scattered reads, one post */
	static uint8_t dst[200][64];
	struct arf_net_read_op ops[200];
	for (int i = 0; i < 200; i++)
		ops[i] = (struct arf_net_read_op){ .region = RO_ID, .len = 1 + (uint32_t)i % 64,
						   .off = (uint64_t)i * 4099 % (RO_SIZE - 64),
						   .dst = dst[i] };
	struct arf_net_counters before, after;
	arf_net_counters(c, &before);
	CHECK(arf_net_read(c, ops, 200) == 0, "batch");
	for (int i = 0; i < 200; i++)
		CHECK(!memcmp(dst[i], ro + ops[i].off, ops[i].len), "batch read %d", i);
	arf_net_counters(c, &after);
	CHECK(after.one_sided_reads - before.one_sided_reads == 200, "counted reads");
	CHECK(after.rounds - before.rounds <= 4, "a batch is a few posts, not 200: %llu",
	      (unsigned long long)(after.rounds - before.rounds));

	/* the whole region in one read: larger than a staging buffer */
	uint8_t *big = malloc(RO_SIZE);
	op = (struct arf_net_read_op){ .region = RO_ID, .len = RO_SIZE, .off = 0, .dst = big };
	CHECK(arf_net_read(c, &op, 1) == 0, "big read");
	CHECK(!memcmp(big, ro, RO_SIZE), "big read bytes");
	free(big);

	/* refused, checked before anything is posted; the connection lives on */
	op = (struct arf_net_read_op){ .region = RO_ID, .len = 2, .off = RO_SIZE - 1, .dst = buf };
	CHECK(arf_net_read(c, &op, 1) == ARF_EKEY, "out of bounds");
	op = (struct arf_net_read_op){ .region = RO_ID, .len = 8, .off = UINT64_MAX - 3, .dst = buf };
	CHECK(arf_net_read(c, &op, 1) == ARF_EKEY, "overflow");
	op = (struct arf_net_read_op){ .region = RO_ID, .len = 8, .key = 42, .dst = buf };
	CHECK(arf_net_read(c, &op, 1) == ARF_EKEY, "wrong key");
	op = (struct arf_net_read_op){ .region = 7, .len = 8, .dst = buf };
	CHECK(arf_net_read(c, &op, 1) == ARF_EKEY, "no such region");
	op = (struct arf_net_read_op){ .region = RO_ID, .len = 8, .off = 8, .dst = buf };
	CHECK(arf_net_read(c, &op, 1) == 0, "read after refusals");
}

static void test_writes(struct arf_net_conn *c)
{
	uint8_t data[3000], back[3000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i ^ 0x5a);
	CHECK(arf_net_write(c, RW_ID, 0, 100, data, sizeof(data)) == 0, "write");
	CHECK(!memcmp(rw + 100, data, sizeof(data)), "write landed in the server's memory");
	struct arf_net_read_op op = { .region = RW_ID, .len = sizeof(back), .off = 100, .dst = back };
	CHECK(arf_net_read(c, &op, 1) == 0 && !memcmp(back, data, sizeof(data)), "read back");
	CHECK(arf_net_write(c, RO_ID, 0, 0, data, 8) == ARF_EKEY, "write to read-only");
	CHECK(arf_net_write(c, RW_ID, 0, RW_SIZE - 4, data, 8) == ARF_EKEY, "write past the end");

	uint64_t old = 1;
	uint64_t *word = (uint64_t *)(void *)(rw + 4096);
	*word = 10;
	CHECK(arf_net_cas(c, RW_ID, 0, 4096, 10, 20, &old) == 0 && old == 10, "cas hit");
	CHECK(__atomic_load_n(word, __ATOMIC_SEQ_CST) == 20, "cas stored");
	CHECK(arf_net_cas(c, RW_ID, 0, 4096, 10, 30, &old) == 0 && old == 20, "cas miss");
	CHECK(__atomic_load_n(word, __ATOMIC_SEQ_CST) == 20, "cas miss left it");
	CHECK(arf_net_faa(c, RW_ID, 0, 4096, 5, &old) == 0 && old == 20, "faa");
	CHECK(arf_net_faa(c, RW_ID, 0, 4096, UINT64_MAX, &old) == 0 && old == 25, "faa -1");
	CHECK(__atomic_load_n(word, __ATOMIC_SEQ_CST) == 24, "faa stored");
	CHECK(arf_net_faa(c, RW_ID, 0, 4097, 1, &old) == ARF_EKEY, "misaligned");
	CHECK(arf_net_cas(c, RO_ID, 0, 0, 0, 1, &old) == ARF_EKEY, "cas on read-only");
}

static void test_requests(struct arf_net_conn *c)
{
	struct arf_net_buf resp;
	struct iovec v = { (void *)"hi", 2 };
	CHECK(arf_net_call(c, OP_ECHO, &v, 1, &resp) == 0, "echo");
	CHECK(resp.len == 7 && !memcmp(resp.data, "echo:hi", 7), "echo body");
	arf_net_buf_free(&resp);

	/* 300 KB each way: many receive buffers, credits run out and return */
	size_t len = 300 * 1024;
	uint8_t *big = malloc(len);
	for (size_t i = 0; i < len; i++)
		big[i] = (uint8_t)(i * 13);
	v = (struct iovec){ big, len };
	CHECK(arf_net_call(c, OP_ECHO, &v, 1, &resp) == 0, "big echo");
	CHECK(resp.len == len + 5 && !memcmp(resp.data + 5, big, len), "big echo body");
	arf_net_buf_free(&resp);
	free(big);
}

struct worker {
	struct arf_net_conn *c;
	int id, bad;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < 200; i++) {
		char msg[32];
		int n = snprintf(msg, sizeof(msg), "w%d-%d", w->id, i);
		struct iovec v = { msg, (size_t)n };
		struct arf_net_buf resp;
		if (arf_net_call(w->c, OP_ECHO, &v, 1, &resp) || resp.len != (size_t)n + 5 ||
		    memcmp(resp.data + 5, msg, (size_t)n))
			w->bad++;
		arf_net_buf_free(&resp);
		if (i % 10 == 0) { /* one-sided work mixed in */
			uint8_t b[16];
			struct arf_net_read_op op = { .region = RO_ID, .len = 16,
						      .off = (uint64_t)i * 64, .dst = b };
			if (arf_net_read(w->c, &op, 1) || memcmp(b, ro + op.off, 16))
				w->bad++;
			uint64_t old;
			if (arf_net_faa(w->c, RW_ID, 0, 8192, 1, &old))
				w->bad++;
		}
	}
	return NULL;
}

static void test_threads(struct arf_net_conn *c)
{
	pthread_t t[8];
	struct worker w[8];
	uint64_t *ctr = (uint64_t *)(void *)(rw + 8192);
	*ctr = 0;
	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){ .c = c, .id = i };
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		CHECK(w[i].bad == 0, "worker %d: %d bad", i, w[i].bad);
	}
	CHECK(__atomic_load_n(ctr, __ATOMIC_SEQ_CST) == 8 * 20, "faa from 8 threads: %llu",
	      (unsigned long long)*ctr);
}

int main(void)
{
	char why[256], err[256];

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!arf_net_rdma_available(why, sizeof(why))) {
		printf("verbs skipped: %s\n", why[0] ? why : "no RDMA device");
		return 77;
	}
	ro = mmap(NULL, RO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	rw = mmap(NULL, RW_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED || rw == MAP_FAILED)
		return 1;
	fill();
	int rc = pick_address(err, sizeof(err));
	if (rc) {
		/* a device, but no address rdma_cm can use: not this test's fault */
		printf("verbs skipped: an RDMA device exists but no local address can listen "
		       "(%s); set ARF_TEST_RDMA_ADDR\n", err);
		return 77;
	}
	printf("serving rdma on %s:%u\n", addr, port);

	struct arf_net_conn *c = NULL;
	rc = connect_as("hello", &c, err, sizeof(err));
	CHECK(rc == 0, "connect: %s", err);
	if (rc)
		goto out;
	CHECK(!strncmp(last_peer, "rdma ", 5), "peer %s", last_peer);
	CHECK(last_peer_port == 0, "an rdma peer never claims a port: %u", last_peer_port);
	test_reads(c);
	test_writes(c);
	test_requests(c);
	test_threads(c);
	arf_net_close(c);

	/* granted no keys: one-sided refused, requests fine */
	rc = connect_as("nogrant", &c, err, sizeof(err));
	CHECK(rc == 0, "nogrant connect: %s", err);
	if (!rc) {
		size_t n;
		arf_net_regions(c, &n);
		CHECK(n == 0, "nogrant sees %zu regions", n);
		uint8_t b[8];
		struct arf_net_read_op op = { .region = RO_ID, .len = 8, .dst = b };
		CHECK(arf_net_read(c, &op, 1) == ARF_EKEY, "nogrant read");
		test_requests(c);
		arf_net_close(c);
	}

	/* refused by on_hello: the message comes through */
	rc = connect_as("deny", &c, err, sizeof(err));
	CHECK(rc == ARF_EAUTH && strstr(err, "go away"), "deny: %d %s", rc, err);

	/* connect, use, close, many times */
	for (int i = 0; i < 20; i++) {
		rc = connect_as("hello", &c, err, sizeof(err));
		CHECK(rc == 0, "reconnect %d: %s", i, err);
		if (rc)
			break;
		uint8_t b[8];
		struct arf_net_read_op op = { .region = RO_ID, .len = 8, .off = (uint64_t)i, .dst = b };
		CHECK(arf_net_read(c, &op, 1) == 0 && !memcmp(b, ro + i, 8), "reconnect read %d", i);
		arf_net_close(c);
	}
	struct arf_net_server_counters sc;
	arf_net_server_counters(srv, &sc);
	CHECK(sc.requests > 1600, "server requests %llu", (unsigned long long)sc.requests);
	CHECK(sc.one_sided_reads == 0, "RDMA reads bypass the soft-NIC (%llu served)",
	      (unsigned long long)sc.one_sided_reads);
out:
	arf_net_server_destroy(srv);
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * net/'s views (arf_net.h): one server, two sets of regions with the same
 * ids, each with its own info blob, as arfd serves its volumes.  The
 * server's on_hello puts a connection in the view its hello names ("view
 * 1"; anything else view 0; "view 99" is out of range and refused).  Over
 * tcp and shm: a connection is told of its own view's regions and info
 * alone, and its reads reach its own view's bytes; a region id of the other
 * view only is refused; a key of one connection is no good on another; and
 * each view's share of the soft-NIC's reads is counted apart.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "arf_net.h"

#define SIZE    (16u << 10)
#define ONLY_ID 7u /* a region of view 1 alone */

static struct {
	struct arf_net_server *srv;
	char dir[64], sock[100];
	uint16_t port;
	int fd[3];
	uint8_t *base[3]; /* view 0 id 1, view 1 id 1, view 1 id ONLY_ID */
} V = { .fd = { -1, -1, -1 } };

static int on_hello(void *ctx, struct arf_net_sconn *c, const struct arf_net_peer *peer,
		    const void *hello, size_t len, char *msg, size_t msglen)
{
	(void)ctx;
	(void)peer;
	if (len == 6 && !memcmp(hello, "view 1", 6))
		return arf_net_sconn_set_view(c, 1);
	if (len == 7 && !memcmp(hello, "view 99", 7)) {
		int rc = arf_net_sconn_set_view(c, 99);
		snprintf(msg, msglen, "no view 99 (%d)", rc);
		return rc ? rc : -EIO;
	}
	return 0;
}

static void on_request(void *ctx, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		       const uint8_t *body, size_t len)
{
	(void)ctx;
	(void)body;
	(void)len;
	arf_net_reply(c, h->id, h->op, ARF_NET_S_NOSYS, NULL, 0);
}

static int teardown(void **state)
{
	(void)state;
	arf_net_server_destroy(V.srv);
	for (int i = 0; i < 3; i++) {
		if (V.base[i])
			munmap(V.base[i], SIZE);
		if (V.fd[i] >= 0)
			close(V.fd[i]);
	}
	unlink(V.sock);
	rmdir(V.dir);
	return 0;
}

static int setup(void **state)
{
	struct arf_net_server_opts o;
	char err[256] = "";

	snprintf(V.dir, sizeof(V.dir), "/tmp/arf-views.XXXXXX");
	if (!mkdtemp(V.dir))
		return -1;
	snprintf(V.sock, sizeof(V.sock), "%s/s", V.dir);
	for (int i = 0; i < 3; i++) {
		V.fd[i] = memfd_create("arf-views", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (V.fd[i] < 0 || ftruncate(V.fd[i], SIZE))
			return -1;
		V.base[i] = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, V.fd[i], 0);
		if (V.base[i] == MAP_FAILED)
			return -1;
		memset(V.base[i], 'A' + i, SIZE);
	}
	memset(&o, 0, sizeof(o));
	o.listen_addr = "127.0.0.1";
	o.unix_path = V.sock;
	o.on_hello = on_hello;
	o.on_request = on_request;
	if (arf_net_server_create(&o, &V.srv, err, sizeof(err)))
		goto fail;
	if (arf_net_server_add_region(V.srv, 1, V.base[0], SIZE, V.fd[0], 0) ||
	    arf_net_server_add_region_in(V.srv, 1, 1, V.base[1], SIZE, V.fd[1], 0) ||
	    arf_net_server_add_region_in(V.srv, 1, ONLY_ID, V.base[2], SIZE, V.fd[2], 0) ||
	    arf_net_server_set_info(V.srv, "zero", 4) ||
	    arf_net_server_set_view_info(V.srv, 1, "one", 3))
		goto fail;
	/* the same id twice in one view, and views out of range, are refused */
	if (arf_net_server_add_region_in(V.srv, 1, 1, V.base[1], SIZE, V.fd[1], 0) != -EINVAL ||
	    arf_net_server_add_region_in(V.srv, ARF_NET_MAX_VIEWS, 3, V.base[1], SIZE, -1, 0) !=
		    -EINVAL ||
	    arf_net_server_set_view_info(V.srv, ARF_NET_MAX_VIEWS, "x", 1) != -EINVAL)
		goto fail;
	if (arf_net_server_start(V.srv, err, sizeof(err)))
		goto fail;
	V.port = arf_net_server_port(V.srv);
	(void)state;
	return 0;
fail:
	fprintf(stderr, "setup: %s\n", err);
	teardown(state);
	return -1;
}

static int connect_view(const char *transport, const char *hello, struct arf_net_conn **c,
			char *err, size_t errlen)
{
	struct arf_net_client_opts o;

	memset(&o, 0, sizeof(o));
	o.transport = transport;
	o.host = "127.0.0.1";
	o.port = V.port;
	o.sock_path = V.sock;
	o.timeout_ms = 5000;
	o.hello = hello;
	o.hello_len = strlen(hello);
	return arf_net_connect(&o, c, err, errlen);
}

static int read_at(struct arf_net_conn *c, uint32_t region, uint64_t key, uint8_t *buf)
{
	struct arf_net_read_op op = { .region = region, .len = 64, .off = 100, .key = key,
				      .dst = buf };
	return arf_net_read(c, &op, 1);
}

static uint64_t key_of(struct arf_net_conn *c, uint32_t id)
{
	size_t n;
	const struct arf_net_region_info *r = arf_net_regions(c, &n);
	for (size_t i = 0; i < n; i++)
		if (r[i].id == id)
			return r[i].key;
	return 0;
}

static void check_transport(const char *transport)
{
	struct arf_net_conn *c0 = NULL, *c1 = NULL;
	char err[256] = "";
	uint8_t buf[64], want[64];
	size_t n, ilen;
	uint64_t r0, b0, r1, b1, r0b, b0b, r1b, b1b;

	assert_int_equal(connect_view(transport, "view 0", &c0, err, sizeof(err)), 0);
	assert_int_equal(connect_view(transport, "view 1", &c1, err, sizeof(err)), 0);
	/* each is told of its own view: regions and info */
	arf_net_regions(c0, &n);
	assert_int_equal(n, 1);
	arf_net_regions(c1, &n);
	assert_int_equal(n, 2);
	const char *info = arf_net_server_info(c0, &ilen);
	assert_int_equal(ilen, 4);
	assert_memory_equal(info, "zero", 4);
	info = arf_net_server_info(c1, &ilen);
	assert_int_equal(ilen, 3);
	assert_memory_equal(info, "one", 3);

	arf_net_server_view_reads(V.srv, 0, &r0, &b0);
	arf_net_server_view_reads(V.srv, 1, &r1, &b1);
	/* the same region id, each view's bytes */
	assert_int_equal(read_at(c0, 1, 0, buf), 0);
	memset(want, 'A', sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(read_at(c1, 1, 0, buf), 0);
	memset(want, 'B', sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(read_at(c1, ONLY_ID, 0, buf), 0);
	memset(want, 'C', sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	if (!strcmp(transport, "tcp")) {
		/* the soft-NIC: another view's region is not there, and one
		 * connection's key is no good on another's */
		assert_int_equal(read_at(c0, ONLY_ID, key_of(c1, ONLY_ID), buf), ARF_EKEY);
		assert_int_equal(read_at(c0, 1, key_of(c1, 1), buf), ARF_EKEY);
		arf_net_server_view_reads(V.srv, 0, &r0b, &b0b);
		arf_net_server_view_reads(V.srv, 1, &r1b, &b1b);
		assert_int_equal(r0b - r0, 1);
		assert_int_equal(b0b - b0, 64);
		assert_int_equal(r1b - r1, 2);
		assert_int_equal(b1b - b1, 128);
	} else {
		/* shm maps only its own view's regions: the other id is unknown */
		assert_int_not_equal(read_at(c0, ONLY_ID, 0, buf), 0);
	}
	arf_net_close(c0);
	arf_net_close(c1);

	/* a view out of range is refused, with on_hello's message */
	assert_int_not_equal(connect_view(transport, "view 99", &c0, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "no view 99"));
}

static void test_views_tcp(void **state)
{
	(void)state;
	check_transport("tcp");
}

static void test_views_shm(void **state)
{
	(void)state;
	check_transport("shm");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_views_tcp),
		cmocka_unit_test(test_views_shm),
	};
	alarm(60);
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of libarf's URL parser (arf_url_parse) for every scheme, the
 * rdma one above all: arf+rdma://HOST[:PORT]/PATH selects the "rdma"
 * transport with its own default port, hosts and ports are checked as for
 * tcp, and malformed URLs say why.  Last, arf_connect over arf+rdma:// on a
 * machine without a device (or with a libarf built without rdma-core) fails
 * at once with -ENODEV (or -EOPNOTSUPP) and a sentence saying which.  And
 * the volume=NAME query parameter (arf_url_volume) on every scheme.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "arf.h"
#include "arf_net.h"

struct good {
	const char *url;
	const char *transport, *host;
	uint16_t port;
	const char *path, *socket;
};

static void test_parse_good(void **state)
{
	static const struct good cases[] = {
		{ "arf://h/x", "tcp", "h", ARF_DEFAULT_PORT, "/x", "" },
		{ "arf+tcp://h:7/a/b", "tcp", "h", 7, "/a/b", "" },
		{ "arf://[::1]:9/", "tcp", "::1", 9, "/", "" },
		{ "arf://10.0.0.1", "tcp", "10.0.0.1", ARF_DEFAULT_PORT, "/", "" },
		{ "arf+rdma://h/x", "rdma", "h", ARF_DEFAULT_RDMA_PORT, "/x", "" },
		{ "arf+rdma://192.168.1.10", "rdma", "192.168.1.10", ARF_DEFAULT_RDMA_PORT, "/",
		  "" },
		{ "arf+rdma://192.168.1.10:30000/p/q", "rdma", "192.168.1.10", 30000, "/p/q", "" },
		{ "arf+rdma://[fe80::1%ib0]:20491/projects", "rdma", "fe80::1%ib0", 20491,
		  "/projects", "" },
		{ "arf+rdma://[::1]/", "rdma", "::1", ARF_DEFAULT_RDMA_PORT, "/", "" },
		{ "arf+shm:///x", "shm", "", 0, "/x", ARF_DEFAULT_SOCKET },
		{ "arf+unix:///?socket=/s", "shm", "", 0, "/", "/s" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct good *g = &cases[i];
		struct arf_url u;
		char err[256] = "";
		if (arf_url_parse(g->url, &u, err, sizeof(err)))
			fail_msg("'%s' refused: %s", g->url, err);
		if (strcmp(u.transport, g->transport) || strcmp(u.host, g->host) ||
		    u.port != g->port || strcmp(u.path, g->path) || strcmp(u.socket, g->socket))
			fail_msg("'%s': got %s host '%s' port %u path '%s' socket '%s'", g->url,
				 u.transport, u.host, u.port, u.path, u.socket);
	}
	assert_int_equal(ARF_DEFAULT_RDMA_PORT, ARF_NET_DEFAULT_RDMA_PORT);
	assert_int_not_equal(ARF_DEFAULT_RDMA_PORT, ARF_DEFAULT_PORT);
}

struct bad {
	const char *url;
	const char *why;
};

static void test_parse_bad(void **state)
{
	static const struct bad cases[] = {
		{ "arf+rdma://", "missing or overlong host" },
		{ "arf+rdma:///x", "missing or overlong host" },
		{ "arf+rdma://:20491/x", "missing host" },
		{ "arf+rdma://h:0/", "bad port '0'" },
		{ "arf+rdma://h:65536/", "bad port '65536'" },
		{ "arf+rdma://h:x/", "bad port 'x'" },
		{ "arf+rdma://h:/", "bad port ''" },
		{ "arf+rdma://[::1/", "unbalanced '['" },
		{ "arf+rdma://[::1]x/", "junk after ']'" },
		{ "arf+verbs://h/", "not an ARF URL" },
		{ "arf+rdma:/h/", "not an ARF URL" },
		{ "arf://:5/", "missing host" },
		{ "nfs://h/", "arf+rdma://HOST[:PORT]/PATH" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct arf_url u;
		char err[256] = "";
		int rc = arf_url_parse(cases[i].url, &u, err, sizeof(err));
		if (rc != -EINVAL || !strstr(err, cases[i].why) || strncmp(err, cases[i].url,
									    strlen(cases[i].url)))
			fail_msg("'%s': rc %d, '%s' (want '%s')", cases[i].url, rc, err,
				 cases[i].why);
	}
}

/* ?volume=NAME (arf_url_volume): the volume apart, the rest parsed as
 * without it; a '?' that is not volume= stays in a tcp path, as before. */
static void test_volume(void **state)
{
	static const struct {
		const char *url, *vol, *path, *socket;
	} cases[] = {
		{ "arf://h/x?volume=proj", "proj", "/x", "" },
		{ "arf://h:7/?volume=a.b_c-9", "a.b_c-9", "/", "" },
		{ "arf://h/x?volume=root", "", "/x", "" },
		{ "arf://h/a?b", "", "/a?b", "" },
		{ "arf+shm:///x?socket=/s&volume=v1", "v1", "/x", "/s" },
		{ "arf+shm:///x?volume=v1&socket=/s", "v1", "/x", "/s" },
		{ "arf+shm:///?volume=v", "v", "/", ARF_DEFAULT_SOCKET },
		{ "arf+rdma://h/p?volume=r", "r", "/p", "" },
	};
	static const char *const bad[] = {
		"arf://h/?volume=", "arf://h/?volume=a/b", "arf://h/?volume=..",
		"arf://h/?volume=0123456789012345678901234567890123456789012345678901234567890123",
		"arf+shm:///?socket=/s&volume=x y",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct arf_url u;
		char vol[64], err[256] = "";
		if (arf_url_volume(cases[i].url, vol, sizeof(vol), err, sizeof(err)) ||
		    arf_url_parse(cases[i].url, &u, err, sizeof(err)))
			fail_msg("'%s' refused: %s", cases[i].url, err);
		if (strcmp(vol, cases[i].vol) || strcmp(u.path, cases[i].path) ||
		    strcmp(u.socket, cases[i].socket))
			fail_msg("'%s': volume '%s' path '%s' socket '%s'", cases[i].url, vol, u.path,
				 u.socket);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct arf_url u;
		char vol[64], err[256] = "";
		if (arf_url_volume(bad[i], vol, sizeof(vol), err, sizeof(err)) != -EINVAL ||
		    !strstr(err, "volume=NAME") || strncmp(err, bad[i], strlen(bad[i])))
			fail_msg("'%s': volume accepted or unclear: '%s'", bad[i], err);
		if (arf_url_parse(bad[i], &u, err, sizeof(err)) != -EINVAL)
			fail_msg("'%s': parsed", bad[i]);
	}
}

/* No device here: arf+rdma:// fails at once, plainly, naming the reason. */
static void test_connect_without_rdma(void **state)
{
	char why[200], err[512] = "";
	arf_client *c = NULL;
	(void)state;

	if (arf_net_rdma_available(why, sizeof(why)))
		skip(); /* a machine with RDMA: tests/verbs' loopback covers it */
	struct arf_client_opts o;
	arf_client_opts_init(&o);
	o.timeout_ms = 2000;
	o.reconnect_ms = 0;
	int rc = arf_connect("arf+rdma://127.0.0.1/", &o, &c, err, sizeof(err));
	assert_null(c);
	printf("arf_connect over arf+rdma: %d %s\n", rc, err);
	if (strstr(why, "built without rdma-core")) {
		assert_int_equal(rc, -EOPNOTSUPP);
		assert_non_null(strstr(err, "not available in this libarf"));
	} else {
		assert_int_equal(rc, -ENODEV);
		assert_non_null(strstr(err, "not available on this machine"));
	}
	assert_non_null(strstr(err, "arf+rdma://127.0.0.1/"));
	assert_non_null(strstr(err, why));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_volume),
		cmocka_unit_test(test_connect_without_rdma),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of arfd's configuration table: defaults, INI parsing with
 * file:line errors, bounds, booleans, overrides, and the dump round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"

static char tmpl[] = "/tmp/arf-conf-XXXXXX";

static const char *write_conf(const char *text)
{
	static char path[64];
	strcpy(path, tmpl);
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_defaults(void **state)
{
	struct arfd_config c;
	(void)state;
	arfd_config_defaults(&c);
	assert_string_equal(c.listen, ARFD_DEFAULT_LISTEN);
	assert_string_equal(c.data_dir, ARFD_DEFAULT_DATA_DIR);
	assert_int_equal(c.sync, 0); /* unstable writes until COMMIT, as NFSv3 */
	assert_int_equal(c.root_squash, 1); /* as NFS, once there is a file */
	assert_int_equal(c.data_blocks, 524288); /* 2 GiB: room for a 1 GiB file */
	assert_string_equal(c.clients, "127.0.0.0/8 ::1 unix");
	assert_string_equal(c.one_sided, "root"); /* keys for root on a client host only */
	/* the embedded configuration (no file) does not squash root */
	arfd_config_embedded(&c);
	assert_int_equal(c.root_squash, 0);
	/* access keys are checked at parse time, naming the bad entry */
	char err[256];
	assert_int_equal(arfd_config_set(&c, "export", "clients", "10.0.0.0/8, fd00::/8 unix *", err,
					 sizeof(err)), 0);
	assert_int_equal(arfd_config_set(&c, "export", "clients", "10.0.0.0/33", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'10.0.0.0/33' is not an address"));
	assert_int_equal(arfd_config_set(&c, "export", "clients", "", err, sizeof(err)), -1);
	assert_int_equal(arfd_config_set(&c, "export", "one_sided", "some", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "must be all, root or none"));
	/* rdma is off unless asked for; its address is checked at parse time */
	arfd_config_defaults(&c);
	assert_string_equal(c.rdma_listen, "");
	static const char *const rdma_ok[] = { ":20491", "0.0.0.0:20491", "10.1.2.3:0",
					       "[::]:20491", "[fe80::1]:7", "node1-ib:20491", "" };
	for (size_t i = 0; i < sizeof(rdma_ok) / sizeof(rdma_ok[0]); i++)
		if (arfd_config_set(&c, "server", "rdma_listen", rdma_ok[i], err, sizeof(err)))
			fail_msg("rdma_listen '%s' refused: %s", rdma_ok[i], err);
	static const char *const rdma_bad[] = { "10.1.2.3", ":", "host:x", "host:65536",
						"fe80::1:7", "[::1:7", "host:-1" };
	for (size_t i = 0; i < sizeof(rdma_bad) / sizeof(rdma_bad[0]); i++) {
		if (!arfd_config_set(&c, "server", "rdma_listen", rdma_bad[i], err, sizeof(err)))
			fail_msg("rdma_listen '%s' accepted", rdma_bad[i]);
		assert_non_null(strstr(err, "'rdma_listen' must be ADDR:PORT"));
	}
}

static void test_parse_ok(void **state)
{
	struct arfd_config c;
	char err[256];
	(void)state;
	arfd_config_defaults(&c);
	const char *p = write_conf("# comment\n[server]\nlisten = 0.0.0.0:7000\nspin_us = 0\n"
				   "[export]\nsync = no\nroot_squash = yes\n[regions]\ninodes = 0x100\n");
	assert_int_equal(arfd_config_load(&c, p, err, sizeof(err)), 0);
	assert_string_equal(c.listen, "0.0.0.0:7000");
	assert_int_equal(c.spin_us, 0);
	assert_int_equal(c.sync, 0);
	assert_int_equal(c.root_squash, 1);
	assert_int_equal(c.inodes, 256);
	unlink(p);
}

struct bad_case {
	const char *text;
	const char *expect; /* substring of the message after the path */
};

static void test_parse_errors(void **state)
{
	static const struct bad_case cases[] = {
		{ "[server]\nnope = 1\n", ":2: unknown key 'nope' in [server]" },
		{ "[server]\nspin_us = fast\n", ":2: 'spin_us' must be an integer, not 'fast'" },
		{ "[regions]\n\ninodes = 1\n", ":3: 'inodes' = 1 is out of range" },
		{ "[export]\nsync = maybe\n", ":2: 'sync' must be true or false, not 'maybe'" },
		{ "[bogus]\nx = 1\n", ":2: unknown section [bogus]" },
		{ "[server]\nthis line has no equals\n", ":2: syntax error" },
		{ "[server]\nlog_level = loud\n", ":2: 'log_level' must be error, warn, info or debug" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct arfd_config c;
		char err[512];
		arfd_config_defaults(&c);
		const char *p = write_conf(cases[i].text);
		assert_int_equal(arfd_config_load(&c, p, err, sizeof(err)), -1);
		if (!strstr(err, cases[i].expect) || strncmp(err, p, strlen(p)))
			fail_msg("case %zu: got '%s', want '%s%s'", i, err, p, cases[i].expect);
		unlink(p);
	}
}

/* Load text; 0 with the configuration in *c, or -1 with the message's
 * tail (after the path) checked against want. */
static int load_text(const char *text, struct arfd_config *c, const char *want)
{
	char err[512];
	arfd_config_defaults(c);
	const char *p = write_conf(text);
	int rc = arfd_config_load(c, p, err, sizeof(err));
	if (rc && (!want || !strstr(err, want) || strncmp(err, p, strlen(p))))
		fail_msg("got '%s', want '%s%s'", err, p, want ? want : "(accepted)");
	if (!rc && want)
		fail_msg("accepted, want '%s'", want);
	unlink(p);
	return rc;
}

/* inih reads a line into 200 bytes: a longer one is refused, never cut in
 * two (fuzz-config found "cert_file =" and 188 bytes then ';' loading as a
 * shortened value whose dump, one byte longer, did not load) */
static void test_long_lines(void **state)
{
	char text[600], a[300];
	struct arfd_config c, again;
	(void)state;
	memset(a, 'a', sizeof(a));
	/* 198 bytes: the longest line; its dump loads back the same */
	snprintf(text, sizeof(text), "[cell]\ncert_file = %.186s\n", a);
	assert_int_equal(load_text(text, &c, NULL), 0);
	assert_int_equal(strlen(c.cell_cert_file), 186);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	arfd_config_dump(&c, f);
	fclose(f);
	buf[len] = 0;
	assert_int_equal(load_text(buf, &again, NULL), 0);
	assert_string_equal(again.cell_cert_file, c.cell_cert_file);
	free(buf);
	/* 199 bytes */
	snprintf(text, sizeof(text), "[cell]\ncert_file = %.187s\n", a);
	load_text(text, &c, ":2: line longer than 198 bytes");
	/* 197 bytes, but 199 as the dump writes it */
	snprintf(text, sizeof(text), "[cell]\ncert_file=%.187s\n", a);
	load_text(text, &c, ":2: 'cert_file = ...' is longer than a line may be (198 bytes)");
	/* the fuzzer's input; and a line past getline's first buffer */
	snprintf(text, sizeof(text), "[cell]\x9c\ncert_file =%.188s;\n", a);
	load_text(text, &c, ":2: line longer than 198 bytes");
	snprintf(text, sizeof(text), "[server]\nworkers = 2\n# %.290s\n", a);
	load_text(text, &c, ":3: line longer than 198 bytes");
}

static void test_missing_file(void **state)
{
	struct arfd_config c;
	char err[256];
	(void)state;
	arfd_config_defaults(&c);
	assert_int_equal(arfd_config_load(&c, "/nonexistent/arfd.conf", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/arfd.conf: No such file"));
}

static void test_set_and_dump(void **state)
{
	struct arfd_config c, d;
	char err[256], *buf = NULL;
	size_t len = 0;
	(void)state;
	arfd_config_defaults(&c);
	assert_int_equal(arfd_config_set(&c, "server", "workers", "3", err, sizeof(err)), 0);
	assert_int_equal(arfd_config_set(&c, NULL, "data_dir", "/tmp/x", err, sizeof(err)), 0);
	assert_int_equal(arfd_config_set(&c, "server", "rdma_listen", "[::]:20491", err,
					 sizeof(err)), 0);
	assert_int_equal(arfd_config_set(&c, "server", "workers", "999", err, sizeof(err)), -1);
	assert_int_equal(c.workers, 3);
	/* dump, parse back, same values */
	FILE *f = open_memstream(&buf, &len);
	arfd_config_dump(&c, f);
	fclose(f);
	const char *p = write_conf(buf);
	arfd_config_defaults(&d);
	assert_int_equal(arfd_config_load(&d, p, err, sizeof(err)), 0);
	assert_memory_equal(&c, &d, sizeof(c));
	unlink(p);
	free(buf);
}

/* [cell]: off by default; etcd and name both or neither; names and
 * endpoints checked before arfd starts. */
static void test_cell(void **state)
{
	struct arfd_config c;
	char err[512];
	(void)state;
	arfd_config_defaults(&c);
	assert_string_equal(c.cell_etcd, "");
	assert_int_equal(c.cell_lease_ttl_s, 10);
	assert_int_equal(arfd_config_check(&c, err, sizeof(err)), 0);
	const char *conf = write_conf("[cell]\netcd = http://10.0.0.1:2379, http://10.0.0.2:2379\n"
				      "name = lab\nserver_id = s-1\nlease_ttl_s = 2\n");
	assert_int_equal(arfd_config_load(&c, conf, err, sizeof(err)), 0);
	unlink(conf);
	assert_int_equal(c.cell_lease_ttl_s, 2);
	assert_int_equal(arfd_config_check(&c, err, sizeof(err)), 0);
	assert_int_equal(arfd_config_set(&c, "cell", "lease_ttl_s", "0", err, sizeof(err)), -1);
	assert_int_equal(arfd_config_set(&c, "cell", "server_id", "s/1", err, sizeof(err)), 0);
	assert_int_equal(arfd_config_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "1 to 63 of"));
	assert_int_equal(arfd_config_set(&c, "cell", "server_id", "", err, sizeof(err)), 0);
	assert_int_equal(arfd_config_set(&c, "cell", "etcd", "10.0.0.1:2379", err, sizeof(err)), 0);
	assert_int_equal(arfd_config_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "expected http://HOST:PORT"));
	assert_int_equal(arfd_config_set(&c, "cell", "etcd", "", err, sizeof(err)), 0);
	assert_int_equal(arfd_config_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "needs both etcd and name"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_long_lines),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_set_and_dump),
		cmocka_unit_test(test_cell),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

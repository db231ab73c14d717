/* SPDX-License-Identifier: MIT */
/*
 * The etcd client (cell/arf_etcd.h) and the cell's records (cell/cell.h)
 * against a real etcd, and against a peer that answers junk.  Run by
 * test_cell_client.py, which starts both and names them in
 * ARF_TEST_ETCD_URL and ARF_TEST_JUNK_URL, and an etcd with authentication
 * in ARF_TEST_AUTH_ETCD_URL; each test uses keys under a prefix of its own.  The junk peer answers its Nth request with its Nth
 * kind of junk (JUNK_KINDS of them), so test_junk makes its calls in
 * that order.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "arf_etcd.h"
#include "cell.h"

static const char *etcd_url, *junk_url, *auth_url, *auth_pw;
static char err[1024];

static struct arf_etcd *open_etcd(void)
{
	struct arf_etcd *e = NULL;
	assert_int_equal(arf_etcd_open(&e, etcd_url, 3000, NULL, err, sizeof(err)), 0);
	return e;
}

static void put(struct arf_etcd *e, const char *key, const char *value)
{
	int rc = arf_etcd_put(e, key, value, strlen(value), 0, NULL, err, sizeof(err));
	if (rc)
		fail_msg("put %s: %s", key, err);
}

static void test_endpoints(void **state)
{
	struct arf_etcd *e = NULL;
	(void)state;
	assert_int_equal(arf_etcd_open(&e, "", 0, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "none given"));
	assert_int_equal(arf_etcd_open(&e, "127.0.0.1:2379", 0, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "expected http://HOST:PORT"));
	assert_int_equal(arf_etcd_open(&e, "ftp://x", 0, NULL, err, sizeof(err)), -EINVAL);
	/* a dead endpoint first: the call moves on to the live one */
	char list[512];
	snprintf(list, sizeof(list), "http://127.0.0.1:1, %s/", etcd_url);
	assert_int_equal(arf_etcd_open(&e, list, 2000, NULL, err, sizeof(err)), 0);
	assert_int_equal(arf_etcd_put(e, "/t-ep/k", "v", 1, 0, NULL, err, sizeof(err)), 0);
	assert_string_equal(arf_etcd_endpoint(e), etcd_url);
	arf_etcd_close(e);
	/* only dead ones: curl's reason, named */
	assert_int_equal(arf_etcd_open(&e, "http://127.0.0.1:1", 2000, NULL, err, sizeof(err)), 0);
	struct arf_etcd_kvs kvs;
	assert_int_equal(arf_etcd_get(e, "/t-ep/k", 0, &kvs, err, sizeof(err)), -ECONNREFUSED);
	assert_non_null(strstr(err, "etcd http://127.0.0.1:1/v3/kv/range: "));
	assert_non_null(strstr(err, "Could"));
	arf_etcd_close(e);
	arf_etcd_close(NULL);
}

/* a password file of mode mode holding text; its path in path */
static void password_file(char *path, size_t len, const char *text, mode_t mode)
{
	snprintf(path, len, "/tmp/arf-test-etcd-pw.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_security_rules(void **state)
{
	struct arf_etcd *e = NULL;
	char pw[64], open_pw[64], empty[64];
	(void)state;
	password_file(pw, sizeof(pw), "secret\nignored\n", 0600);
	password_file(open_pw, sizeof(open_pw), "secret\n", 0640);
	password_file(empty, sizeof(empty), "\n", 0400);
	struct arf_etcd_security sec = { .user = "arfd", .password_file = pw };
	/* loopback over http, or anything over https: the password may go */
	const char *fine[] = { "http://127.0.0.1:2379", "http://localhost:2379",
			       "http://[::1]:2379", "https://etcd1:2379, https://etcd2:2379" };
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		if (arf_etcd_open(&e, fine[i], 0, &sec, err, sizeof(err)))
			fail_msg("%s: %s", fine[i], err);
		arf_etcd_close(e);
	}
	/* not in clear to another host, even as one endpoint of several */
	assert_int_equal(arf_etcd_open(&e, "https://a:1,http://127.0.0.2:1,http://localhostx:1", 0,
				       &sec, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "http://localhostx:1: the password of user 'arfd' would cross"));
	/* the file: private to its owner, a first line */
	sec.password_file = open_pw;
	assert_int_equal(arf_etcd_open(&e, "http://127.0.0.1:1", 0, &sec, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "(mode 0640)"));
	assert_non_null(strstr(err, "chmod 600"));
	/* ... which arf_etcd_check does not read */
	assert_int_equal(arf_etcd_check("http://127.0.0.1:1", &sec, err, sizeof(err)), 0);
	sec.password_file = empty;
	assert_int_equal(arf_etcd_open(&e, "http://127.0.0.1:1", 0, &sec, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "empty first line"));
	sec.password_file = "/nonexistent/pw";
	assert_int_equal(arf_etcd_open(&e, "http://127.0.0.1:1", 0, &sec, err, sizeof(err)), -ENOENT);
	sec.password_file = NULL;
	assert_int_equal(arf_etcd_open(&e, "http://127.0.0.1:1", 0, &sec, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "a user needs a password file"));
	/* TLS files need https:// */
	struct arf_etcd_security tls = { .ca_file = "/etc/ssl/certs/ca-certificates.crt" };
	assert_int_equal(arf_etcd_open(&e, "http://127.0.0.1:1", 0, &tls, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "needs https://"));
	tls = (struct arf_etcd_security){ .key_file = "k.pem" };
	assert_int_equal(arf_etcd_open(&e, "https://x:1", 0, &tls, err, sizeof(err)), -EINVAL);
	/* nothing at all, or all empty: as without */
	tls = (struct arf_etcd_security){ .user = "", .password_file = "" };
	assert_int_equal(arf_etcd_open(&e, "http://x:1", 0, &tls, err, sizeof(err)), 0);
	arf_etcd_close(e);
	unlink(pw);
	unlink(open_pw);
	unlink(empty);
}

static void test_put_get_range_delete(void **state)
{
	struct arf_etcd *e = open_etcd();
	struct arf_etcd_kvs kvs;
	int64_t rev = 0, n = 0;
	(void)state;

	/* bytes, not text: a NUL and 0xff in a value survive base64 */
	static const char bin[] = { 'a', 0, (char)0xff, 'z' };
	assert_int_equal(arf_etcd_put(e, "/t-kv/bin", bin, sizeof(bin), 0, &rev, err, sizeof(err)), 0);
	assert_true(rev > 0);
	assert_int_equal(arf_etcd_get(e, "/t-kv/bin", 0, &kvs, err, sizeof(err)), 0);
	assert_int_equal(kvs.n, 1);
	assert_int_equal(kvs.kv[0].value_len, sizeof(bin));
	assert_memory_equal(kvs.kv[0].value, bin, sizeof(bin));
	assert_int_equal(kvs.kv[0].mod_revision, rev);
	assert_int_equal(kvs.kv[0].create_revision, rev);
	assert_int_equal(kvs.kv[0].version, 1);
	assert_int_equal(kvs.kv[0].lease, 0);
	arf_etcd_kvs_free(&kvs);
	/* a second put: version 2, a later mod_revision */
	put(e, "/t-kv/bin", "x");
	assert_int_equal(arf_etcd_get(e, "/t-kv/bin", 0, &kvs, err, sizeof(err)), 0);
	assert_int_equal(kvs.kv[0].version, 2);
	assert_true(kvs.kv[0].mod_revision > rev);
	assert_string_equal(kvs.kv[0].value, "x");
	arf_etcd_kvs_free(&kvs);
	/* absent key: none, not an error */
	assert_int_equal(arf_etcd_get(e, "/t-kv/none", 0, &kvs, err, sizeof(err)), 0);
	assert_int_equal(kvs.n, 0);
	assert_true(kvs.revision >= rev);
	arf_etcd_kvs_free(&kvs);
	/* prefix ranges: in key order, nothing outside the prefix ("/t-kv/r"
	 * must not pick up "/t-kv/s" nor "/t-kv/r" itself's sibling "/t-kv/q") */
	put(e, "/t-kv/r/b", "2");
	put(e, "/t-kv/r/a", "1");
	put(e, "/t-kv/r/c", "3");
	put(e, "/t-kv/s", "out");
	put(e, "/t-kv/q", "out");
	assert_int_equal(arf_etcd_get(e, "/t-kv/r/", 1, &kvs, err, sizeof(err)), 0);
	assert_int_equal(kvs.n, 3);
	assert_string_equal(kvs.kv[0].key, "/t-kv/r/a");
	assert_string_equal(kvs.kv[1].key, "/t-kv/r/b");
	assert_string_equal(kvs.kv[2].key, "/t-kv/r/c");
	assert_string_equal(kvs.kv[2].value, "3");
	arf_etcd_kvs_free(&kvs);
	/* delete one, then the prefix */
	assert_int_equal(arf_etcd_delete(e, "/t-kv/r/b", 0, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_int_equal(arf_etcd_delete(e, "/t-kv/r/", 1, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(arf_etcd_get(e, "/t-kv/r/", 1, &kvs, err, sizeof(err)), 0);
	assert_int_equal(kvs.n, 0);
	arf_etcd_kvs_free(&kvs);
	assert_int_equal(arf_etcd_get(e, "/t-kv/s", 0, &kvs, err, sizeof(err)), 0);
	assert_int_equal(kvs.n, 1);
	arf_etcd_kvs_free(&kvs);
	/* an empty key is refused here, before etcd */
	assert_int_equal(arf_etcd_get(e, "", 0, &kvs, err, sizeof(err)), -EINVAL);
	arf_etcd_close(e);
}

static void test_txn_cas(void **state)
{
	struct arf_etcd *e = open_etcd();
	struct arf_etcd_kvs got;
	int ok = -1;
	(void)state;

	arf_etcd_delete(e, "/t-txn/", 1, NULL, err, sizeof(err));
	/* create if absent: succeeds once, then fails and reads what is there */
	struct arf_etcd_cmp absent = { .key = "/t-txn/k", .target = ARF_ETCD_CREATE, .number = 0 };
	struct arf_etcd_op put1 = { .kind = ARF_ETCD_OP_PUT, .key = "/t-txn/k", .value = "one", .value_len = 3 };
	struct arf_etcd_op put2 = { .kind = ARF_ETCD_OP_PUT, .key = "/t-txn/k", .value = "two", .value_len = 3 };
	struct arf_etcd_op get = { .kind = ARF_ETCD_OP_GET, .key = "/t-txn/k" };
	assert_int_equal(arf_etcd_txn(e, &absent, 1, &put1, 1, &get, 1, &ok, &got, err, sizeof(err)), 0);
	assert_int_equal(ok, 1);
	assert_int_equal(got.n, 0);
	int64_t rev1 = got.revision;
	arf_etcd_kvs_free(&got);
	assert_int_equal(arf_etcd_txn(e, &absent, 1, &put2, 1, &get, 1, &ok, &got, err, sizeof(err)), 0);
	assert_int_equal(ok, 0);
	assert_int_equal(got.n, 1);
	assert_string_equal(got.kv[0].value, "one");
	assert_int_equal(got.kv[0].mod_revision, rev1);
	arf_etcd_kvs_free(&got);
	/* CAS on mod_revision: the stale revision loses, the current one wins */
	struct arf_etcd_cmp mod = { .key = "/t-txn/k", .target = ARF_ETCD_MOD, .number = rev1 - 1 };
	assert_int_equal(arf_etcd_txn(e, &mod, 1, &put2, 1, NULL, 0, &ok, NULL, err, sizeof(err)), 0);
	assert_int_equal(ok, 0);
	mod.number = rev1;
	assert_int_equal(arf_etcd_txn(e, &mod, 1, &put2, 1, NULL, 0, &ok, NULL, err, sizeof(err)), 0);
	assert_int_equal(ok, 1);
	/* ... and the same revision again loses (the key moved on) */
	assert_int_equal(arf_etcd_txn(e, &mod, 1, &put1, 1, NULL, 0, &ok, NULL, err, sizeof(err)), 0);
	assert_int_equal(ok, 0);
	/* CAS on version and on value */
	struct arf_etcd_cmp ver = { .key = "/t-txn/k", .target = ARF_ETCD_VERSION, .number = 2 };
	struct arf_etcd_cmp val = { .key = "/t-txn/k", .target = ARF_ETCD_VALUE, .value = "two", .value_len = 3 };
	struct arf_etcd_cmp both[] = { ver, val };
	assert_int_equal(arf_etcd_txn(e, both, 2, &put1, 1, NULL, 0, &ok, NULL, err, sizeof(err)), 0);
	assert_int_equal(ok, 1);
	assert_int_equal(arf_etcd_txn(e, &val, 1, &put1, 1, NULL, 0, &ok, NULL, err, sizeof(err)), 0);
	assert_int_equal(ok, 0); /* the value is "one" now */
	val.result = ARF_ETCD_NOT_EQUAL;
	ver.result = ARF_ETCD_GREATER;
	struct arf_etcd_cmp both2[] = { ver, val };
	struct arf_etcd_op del = { .kind = ARF_ETCD_OP_DELETE, .key = "/t-txn/k" };
	assert_int_equal(arf_etcd_txn(e, both2, 2, &del, 1, NULL, 0, &ok, NULL, err, sizeof(err)), 0);
	assert_int_equal(ok, 1);
	assert_int_equal(arf_etcd_get(e, "/t-txn/k", 0, &got, err, sizeof(err)), 0);
	assert_int_equal(got.n, 0);
	arf_etcd_kvs_free(&got);
	arf_etcd_close(e);
}

static void sleep_ms(int ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&t, NULL);
}

static void test_lease(void **state)
{
	struct arf_etcd *e = open_etcd();
	struct arf_etcd_kvs kvs;
	int64_t id = 0, ttl = 0, left = 0;
	(void)state;

	assert_int_equal(arf_etcd_lease_grant(e, 2, &id, &ttl, err, sizeof(err)), 0);
	assert_true(id != 0);
	assert_int_equal(ttl, 2);
	assert_int_equal(arf_etcd_put(e, "/t-lease/k", "v", 1, id, NULL, err, sizeof(err)), 0);
	assert_int_equal(arf_etcd_get(e, "/t-lease/k", 0, &kvs, err, sizeof(err)), 0);
	assert_int_equal(kvs.n, 1);
	assert_int_equal(kvs.kv[0].lease, id);
	arf_etcd_kvs_free(&kvs);
	/* kept alive past its TTL, the key stays */
	for (int i = 0; i < 5; i++) {
		sleep_ms(700);
		assert_int_equal(arf_etcd_lease_keepalive(e, id, &left, err, sizeof(err)), 0);
		assert_int_equal(left, 2);
	}
	assert_int_equal(arf_etcd_get(e, "/t-lease/k", 0, &kvs, err, sizeof(err)), 0);
	assert_int_equal(kvs.n, 1);
	arf_etcd_kvs_free(&kvs);
	/* left alone, it expires and takes the key along */
	int gone = 0;
	for (int i = 0; i < 60 && !gone; i++) {
		sleep_ms(100);
		assert_int_equal(arf_etcd_get(e, "/t-lease/k", 0, &kvs, err, sizeof(err)), 0);
		gone = kvs.n == 0;
		arf_etcd_kvs_free(&kvs);
	}
	assert_true(gone);
	assert_int_equal(arf_etcd_lease_keepalive(e, id, &left, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "has expired or was revoked"));
	/* a put on a dead lease: etcd's own message, its gRPC code as -errno */
	assert_int_equal(arf_etcd_put(e, "/t-lease/k", "v", 1, id, NULL, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "requested lease not found"));
	assert_non_null(strstr(err, "HTTP 404"));
	/* revoke removes the keys at once */
	assert_int_equal(arf_etcd_lease_grant(e, 60, &id, NULL, err, sizeof(err)), 0);
	assert_int_equal(arf_etcd_put(e, "/t-lease/k2", "v", 1, id, NULL, err, sizeof(err)), 0);
	assert_int_equal(arf_etcd_lease_revoke(e, id, err, sizeof(err)), 0);
	assert_int_equal(arf_etcd_get(e, "/t-lease/k2", 0, &kvs, err, sizeof(err)), 0);
	assert_int_equal(kvs.n, 0);
	arf_etcd_kvs_free(&kvs);
	assert_int_equal(arf_etcd_lease_revoke(e, id, err, sizeof(err)), -ENOENT);
	arf_etcd_close(e);
}

/* what a watch saw, for the test thread */
struct seen {
	pthread_mutex_t lock;
	char log[4096];
	int events;
};

static void on_event(void *arg, const struct arf_etcd_event *ev)
{
	struct seen *s = arg;
	pthread_mutex_lock(&s->lock);
	size_t l = strlen(s->log);
	snprintf(s->log + l, sizeof(s->log) - l, "%s %s=%s;",
		 ev->kind == ARF_ETCD_EV_PUT ? "PUT" : ev->kind == ARF_ETCD_EV_DELETE ? "DEL" : "ERR",
		 ev->kind == ARF_ETCD_EV_ERROR ? "" : ev->kv.key,
		 ev->kind == ARF_ETCD_EV_PUT ? ev->kv.value : "");
	s->events++;
	pthread_mutex_unlock(&s->lock);
}

static int wait_events(struct seen *s, int n)
{
	for (int i = 0; i < 100; i++) {
		pthread_mutex_lock(&s->lock);
		int have = s->events;
		pthread_mutex_unlock(&s->lock);
		if (have >= n)
			return have;
		sleep_ms(50);
	}
	return -1;
}

static void test_watch(void **state)
{
	struct arf_etcd *e = open_etcd();
	struct arf_etcd_watch *w = NULL;
	struct seen s = { .lock = PTHREAD_MUTEX_INITIALIZER };
	(void)state;

	put(e, "/t-watch/before", "old"); /* before the watch: not seen */
	assert_int_equal(arf_etcd_watch_start(e, "/t-watch/", 1, 0, on_event, &s, &w, err,
					      sizeof(err)), 0);
	put(e, "/t-watch/a", "1");
	put(e, "/t-other", "x"); /* outside the prefix: not seen */
	put(e, "/t-watch/a", "2");
	assert_int_equal(arf_etcd_delete(e, "/t-watch/a", 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(wait_events(&s, 3), 3);
	arf_etcd_watch_stop(w);
	assert_string_equal(s.log, "PUT /t-watch/a=1;PUT /t-watch/a=2;DEL /t-watch/a=;");
	/* from a past revision: the history is replayed */
	struct arf_etcd_kvs kvs;
	assert_int_equal(arf_etcd_get(e, "/t-watch/before", 0, &kvs, err, sizeof(err)), 0);
	int64_t rev = kvs.kv[0].mod_revision;
	arf_etcd_kvs_free(&kvs);
	memset(s.log, 0, sizeof(s.log));
	s.events = 0;
	assert_int_equal(arf_etcd_watch_start(e, "/t-watch/before", 0, rev, on_event, &s, &w, err,
					      sizeof(err)), 0);
	assert_int_equal(wait_events(&s, 1), 1);
	arf_etcd_watch_stop(w);
	assert_string_equal(s.log, "PUT /t-watch/before=old;");
	arf_etcd_close(e);
	/* nobody there: the start fails with curl's reason */
	assert_int_equal(arf_etcd_open(&e, "http://127.0.0.1:1", 1000, NULL, err, sizeof(err)), 0);
	assert_int_equal(arf_etcd_watch_start(e, "/k", 0, 0, on_event, &s, &w, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "etcd http://127.0.0.1:1/v3/watch: "));
	arf_etcd_close(e);
}

/* against the etcd with authentication (tokens of 1 s) that
 * test_cell_client.py starts: user "arfd" may write /arf/t-auth/ only */
static void test_auth(void **state)
{
	struct arf_etcd_security sec = { .user = "arfd", .password_file = auth_pw };
	struct arf_etcd *e = NULL;
	struct arf_etcd_watch *w = NULL;
	struct seen s = { .lock = PTHREAD_MUTEX_INITIALIZER };
	(void)state;
	if (!auth_url)
		skip();
	assert_int_equal(arf_etcd_open(&e, auth_url, 3000, &sec, err, sizeof(err)), 0);
	put(e, "/arf/t-auth/a", "1");
	assert_int_equal(arf_etcd_put(e, "/t-auth-outside", "x", 1, 0, NULL, err, sizeof(err)),
			 -EPERM);
	assert_non_null(strstr(err, "permission denied (gRPC code 7)"));
	/* the token expires while unused: a call takes a new one */
	sleep_ms(1500);
	put(e, "/arf/t-auth/a", "2");
	/* ... and so does a watch that starts with a stale one */
	sleep_ms(1500);
	assert_int_equal(arf_etcd_watch_start(e, "/arf/t-auth/", 1, 0, on_event, &s, &w, err,
					      sizeof(err)), 0);
	put(e, "/arf/t-auth/b", "3");
	assert_int_equal(wait_events(&s, 1), 1);
	arf_etcd_watch_stop(w);
	assert_string_equal(s.log, "PUT /arf/t-auth/b=3;");
	arf_etcd_close(e);
	/* another's password: refused, named */
	sec.user = "reader";
	assert_int_equal(arf_etcd_open(&e, auth_url, 3000, &sec, err, sizeof(err)), 0);
	struct arf_etcd_kvs kvs;
	assert_int_equal(arf_etcd_get(e, "/arf/t-auth/a", 0, &kvs, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "etcd user 'reader' could not authenticate: "));
	assert_int_equal(arf_etcd_watch_start(e, "/arf/t-auth/", 1, 0, on_event, &s, &w, err,
					      sizeof(err)), -EIO);
	assert_non_null(strstr(err, "could not authenticate"));
	arf_etcd_close(e);
	/* no user at all: etcd's refusal */
	assert_int_equal(arf_etcd_open(&e, auth_url, 3000, NULL, err, sizeof(err)), 0);
	assert_int_equal(arf_etcd_get(e, "/arf/t-auth/a", 0, &kvs, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "user name is empty"));
	arf_etcd_close(e);
}

static void test_records(void **state)
{
	struct arf_etcd *e = open_etcd();
	char key[ARF_CELL_KEY_MAX];
	(void)state;

	assert_true(arf_cell_name_ok("s-1.a_b"));
	assert_false(arf_cell_name_ok(""));
	assert_false(arf_cell_name_ok(".."));
	assert_false(arf_cell_name_ok("a/b"));
	assert_false(arf_cell_name_ok("a b"));
	assert_int_equal(arf_cell_key(key, sizeof(key), "c1", "volumes", "v"), 0);
	assert_string_equal(key, "/arf/c1/volumes/v");
	assert_int_equal(arf_cell_key(key, sizeof(key), "c/1", "volumes", "v"), -EINVAL);

	/* servers under leases: listed while alive, one holder per id */
	int64_t l1, l2;
	assert_int_equal(arf_etcd_lease_grant(e, 30, &l1, NULL, err, sizeof(err)), 0);
	assert_int_equal(arf_etcd_lease_grant(e, 30, &l2, NULL, err, sizeof(err)), 0);
	struct arf_cell_server a = { .id = "a", .address = "127.0.0.1", .port = 20490,
				     .incarnation = UINT64_MAX, .software = "0.1.0" };
	struct arf_cell_server b = { .id = "b", .address = "::1", .port = 7, .rdma_port = 9,
				     .incarnation = 5, .software = "0.1.0" };
	assert_int_equal(arf_cell_server_register(e, "t-rec", &a, l1, err, sizeof(err)), 0);
	assert_int_equal(arf_cell_server_register(e, "t-rec", &a, l1, err, sizeof(err)), 0);
	assert_int_equal(arf_cell_server_register(e, "t-rec", &b, l2, err, sizeof(err)), 0);
	struct arf_cell_server a2 = a;
	a2.port = 1;
	assert_int_equal(arf_cell_server_register(e, "t-rec", &a2, l2, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "held in cell 't-rec' by another live server (127.0.0.1 port 20490"));
	struct arf_cell_server *list;
	size_t n;
	assert_int_equal(arf_cell_servers_list(e, "t-rec", &list, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(list[0].id, "a");
	assert_int_equal(list[0].port, 20490);
	assert_true(list[0].incarnation == UINT64_MAX);
	assert_int_equal(list[0].lease, l1);
	assert_string_equal(list[1].address, "::1");
	assert_int_equal(list[1].rdma_port, 9);
	free(list);
	assert_int_equal(arf_etcd_lease_revoke(e, l1, err, sizeof(err)), 0);
	assert_int_equal(arf_cell_servers_list(e, "t-rec", &list, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0].id, "b");
	free(list);
	arf_etcd_lease_revoke(e, l2, err, sizeof(err));

	/* volumes: create once, CAS updates */
	struct arf_cell_volume v = { .name = "root", .server = "a", .state = ARF_CELL_VOL_ONLINE };
	assert_int_equal(arf_cell_volume_create(e, "t-rec", &v, err, sizeof(err)), 0);
	assert_int_equal(v.version, 1);
	struct arf_cell_volume dup = { .name = "root", .server = "b", .state = ARF_CELL_VOL_ONLINE };
	assert_int_equal(arf_cell_volume_create(e, "t-rec", &dup, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "already exists"));
	struct arf_cell_volume r1, r2;
	assert_int_equal(arf_cell_volume_read(e, "t-rec", "root", &r1, err, sizeof(err)), 0);
	assert_string_equal(r1.server, "a");
	assert_int_equal(r1.mod_revision, v.mod_revision);
	r2 = r1;
	snprintf(r1.server, sizeof(r1.server), "b");
	assert_int_equal(arf_cell_volume_update(e, "t-rec", &r1, err, sizeof(err)), 0);
	assert_int_equal(r1.version, 2);
	/* the second writer read the same revision: it loses */
	snprintf(r2.state, sizeof(r2.state), ARF_CELL_VOL_OFFLINE);
	assert_int_equal(arf_cell_volume_update(e, "t-rec", &r2, err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "changed since it was read"));
	struct arf_cell_volume *vl;
	assert_int_equal(arf_cell_volumes_list(e, "t-rec", &vl, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_string_equal(vl[0].server, "b");
	assert_string_equal(vl[0].state, "online");
	assert_int_equal(vl[0].version, 2);
	free(vl);
	assert_int_equal(arf_cell_volume_read(e, "t-rec", "nope", &r1, err, sizeof(err)), -ENOENT);
	/* a record someone else wrote badly: an error naming its key */
	put(e, "/arf/t-rec/volumes/bad", "{\"name\":\"bad\",\"server\":\"a\",\"state\":\"lost\",\"version\":1}");
	assert_int_equal(arf_cell_volumes_list(e, "t-rec", &vl, &n, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "/arf/t-rec/volumes/bad: volume record: 'state'"));
	put(e, "/arf/t-rec/volumes/bad", "not json");
	assert_int_equal(arf_cell_volume_read(e, "t-rec", "bad", &r1, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "not a JSON object"));
	arf_etcd_close(e);
}

/* Membership: registered while the thread runs, gone when it stops. */
static void test_member(void **state)
{
	struct arf_etcd *e = open_etcd();
	struct arf_cell_member *m = NULL;
	struct arf_cell_server s = { .id = "m1", .address = "127.0.0.1", .port = 1, .software = "t" };
	struct arf_cell_server *list;
	size_t n = 0;
	(void)state;

	assert_int_equal(arf_cell_member_start(etcd_url, NULL, "t-mem", &s, 2, NULL, NULL, &m, err,
					       sizeof(err)), 0);
	for (int i = 0; i < 100 && !arf_cell_member_registered(m); i++)
		sleep_ms(50);
	assert_true(arf_cell_member_registered(m));
	sleep_ms(3000); /* past the TTL: kept alive */
	assert_int_equal(arf_cell_servers_list(e, "t-mem", &list, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	free(list);
	arf_cell_member_stop(m); /* revokes: gone at once */
	assert_int_equal(arf_cell_servers_list(e, "t-mem", &list, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	assert_int_equal(arf_cell_member_start(etcd_url, NULL, "bad/cell", &s, 2, NULL, NULL, &m, err,
					       sizeof(err)), -EINVAL);
	arf_etcd_close(e);
}

/* The junk peer, call by call (tests/cell/test_cell_client.py's JUNK). */
static void test_junk(void **state)
{
	struct arf_etcd *e = NULL;
	struct arf_etcd_kvs kvs;
	int64_t id, left;
	int ok;
	(void)state;

	if (!junk_url)
		skip();
	assert_int_equal(arf_etcd_open(&e, junk_url, 3000, NULL, err, sizeof(err)), 0);
	static const struct {
		int rc;
		const char *says;
	} want[] = {
		{ -EPROTO, "the reply is not a JSON object" },          /* plain text */
		{ -EPROTO, "another JSON value" },                      /* an array */
		{ -EPROTO, "bytes after it" },                          /* {}{} */
		{ -EPROTO, "the reply is not a JSON object" },          /* "{" cut short */
		{ -EPROTO, "does not have the fields etcd's has" },     /* kvs a string */
		{ -EPROTO, "does not have the fields etcd's has" },     /* bad base64 */
		{ -EPROTO, "does not have the fields etcd's has" },     /* revision "abc" */
		{ -EPROTO, "does not have the fields etcd's has" },     /* mod_revision an object */
		{ -EPROTO, "HTTP 500: '<html>oops</html>'" },           /* an HTML error page */
		{ -EPROTO, "is it etcd >= 3.4, serving its JSON gateway" }, /* 404 Not Found */
		{ -EPROTO, "HTTP 503 with an unexpected reply" },       /* JSON, not etcd's error */
		{ -EPERM, "HTTP 403: no (gRPC code 7)" },               /* etcd's error shape */
		{ -EPROTO, "does not have the fields etcd's has" },     /* two kvs for one key */
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		err[0] = 0;
		int rc = arf_etcd_get(e, "/k", 0, &kvs, err, sizeof(err));
		if (rc != want[i].rc || !strstr(err, want[i].says))
			fail_msg("junk %zu: rc %d (want %d), '%s' (want '%s')", i, rc, want[i].rc, err,
				 want[i].says);
		assert_non_null(strstr(err, junk_url)); /* which peer said it */
	}
	/* the other calls on junk: no crash, a message */
	assert_int_equal(arf_etcd_lease_grant(e, 5, &id, NULL, err, sizeof(err)), -EPROTO);
	assert_int_equal(arf_etcd_lease_keepalive(e, 1, &left, err, sizeof(err)), -EPROTO);
	struct arf_etcd_cmp c = { .key = "/k", .target = ARF_ETCD_VERSION };
	assert_int_equal(arf_etcd_txn(e, &c, 1, NULL, 0, NULL, 0, &ok, &kvs, err, sizeof(err)), -EPROTO);
	struct arf_etcd_watch *w = NULL;
	struct seen s = { .lock = PTHREAD_MUTEX_INITIALIZER };
	assert_int_equal(arf_etcd_watch_start(e, "/k", 0, 0, on_event, &s, &w, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "not a JSON object"));
	/* a reply over the limit is cut off, not swallowed whole */
	assert_int_equal(arf_etcd_get(e, "/k", 0, &kvs, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "reply over"));
	arf_etcd_close(e);
}

int main(void)
{
	etcd_url = getenv("ARF_TEST_ETCD_URL");
	junk_url = getenv("ARF_TEST_JUNK_URL");
	auth_url = getenv("ARF_TEST_AUTH_ETCD_URL");     /* with authentication on */
	auth_pw = getenv("ARF_TEST_AUTH_PASSWORD_FILE"); /* user arfd's password */
	if (!etcd_url) {
		fprintf(stderr, "SKIP: ARF_TEST_ETCD_URL is not set (tests/cell/test_cell_client.py "
			"starts etcd and sets it)\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_security_rules),
		cmocka_unit_test(test_put_get_range_delete),
		cmocka_unit_test(test_txn_cas),
		cmocka_unit_test(test_lease),
		cmocka_unit_test(test_watch),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_member),
		cmocka_unit_test(test_junk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the mount options table and mount.arf's SPEC parser: NFS
 * cache options and their bounds, generic mount(8) options accepted or
 * passed to the kernel, unknown options refused (or dropped when sloppy),
 * transport options folded into the URL, and HOST[:PORT]:/PATH forms.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arf_fuse.h"

static struct arf_fuse_opts *opts_for(const char *url, const char *optstr, int *rc, char *err,
				      size_t errlen)
{
	static struct arf_fuse_opts o;
	arf_fuse_opts_init(&o);
	snprintf(o.url, sizeof(o.url), "%s", url);
	*rc = arf_fuse_opts_parse(&o, optstr, err, errlen);
	if (!*rc)
		*rc = arf_fuse_opts_finish(&o, err, errlen);
	return &o;
}

static void test_defaults_are_nfs(void **state)
{
	char err[256];
	int rc;
	(void)state;
	struct arf_fuse_opts *o = opts_for("arf://h/", "", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(o->ac, 1);
	assert_int_equal(o->acregmin, 3);
	assert_int_equal(o->acregmax, 60);
	assert_int_equal(o->acdirmin, 30);
	assert_int_equal(o->acdirmax, 60);
	assert_string_equal(o->url, "arf://h:20490/");
}

static void test_cache_options(void **state)
{
	char err[256];
	int rc;
	(void)state;
	struct arf_fuse_opts *o = opts_for("arf://h/", "actimeo=7", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(o->acregmin + o->acregmax + o->acdirmin + o->acdirmax, 28);
	o = opts_for("arf://h/", "acregmin=10,acregmax=5,acdirmin=1,acdirmax=2", &rc, err,
		     sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(o->acregmax, 10); /* max raised to min */
	assert_int_equal(o->acdirmin, 1);
	assert_int_equal(o->acdirmax, 2);
	o = opts_for("arf://h/", "actimeo=5,noac", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(o->ac, 0);
	assert_int_equal(o->acregmin + o->acregmax + o->acdirmin + o->acdirmax, 0);
	o = opts_for("arf://h/", "noac,ac", &rc, err, sizeof(err));
	assert_int_equal(o->ac, 1);
	/* failed lookups are not cached unless asked for (lookupcache=all) */
	o = opts_for("arf://h/", "", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(o->neg_cache, 0);
	o = opts_for("arf://h/", "lookupcache=all", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(o->neg_cache, 1);
	o = opts_for("arf://h/", "lookupcache=none", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(o->neg_cache, 0);
}

static void test_generic_options(void **state)
{
	char err[256];
	int rc;
	(void)state;
	struct arf_fuse_opts *o = opts_for(
		"arf://h/",
		"rw,defaults,_netdev,nofail,noauto,auto,user,users,nouser,exec,noexec,suid,nosuid,"
		"dev,nodev,sync,async,noatime,relatime,x-systemd.automount,comment=hi there,"
		"user=alice,writeback,debug,secret=abc,spin_us=0,rsize=65536,wsize=131072",
		&rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_string_equal(o->kernel, "rw,exec,noexec,suid,nosuid,dev,nodev,sync,async");
	assert_int_equal(o->writeback, 1);
	assert_int_equal(o->debug, 1);
	assert_string_equal(o->secret, "abc");
	assert_int_equal(o->spin_set, 1);
	assert_int_equal(o->spin_us, 0);
	assert_int_equal(o->rsize, 65536);
	assert_int_equal(o->wsize, 131072);
	o = opts_for("arf://h/", "", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(o->rsize, 1 << 20);
	assert_int_equal(o->wsize, 1 << 20);
}

struct bad {
	const char *opts;
	const char *why;
};

static void test_bad_options(void **state)
{
	static const struct bad cases[] = {
		{ "bogus", "unknown option 'bogus'" },
		{ "acregmin=x", "option 'acregmin': 'x' is not a number" },
		{ "acregmin=-1", "is not a number" },
		{ "actimeo=99999999", "is not a number" },
		{ "port=0", "option 'port'" },
		{ "port=65536", "option 'port'" },
		{ "port", "needs a value" },
		{ "noac=1", "takes no value" },
		{ "lookupcache=some", "lookupcache=some: expected all, positive or none" },
		{ "transport=rdma", "not tcp or shm" },
		{ "wsize=1024", "option 'wsize'" },
		{ "rsize=2097152", "option 'rsize'" },
		{ "transport=tcp,socket=/s", "socket= is for transport=shm" },
		{ "transport=shm,port=5", "port= is for transport=tcp" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[256] = "";
		int rc;
		opts_for("arf://h/", cases[i].opts, &rc, err, sizeof(err));
		if (rc != -EINVAL || !strstr(err, cases[i].why))
			fail_msg("'%s': rc %d, '%s' (want '%s')", cases[i].opts, rc, err,
				 cases[i].why);
	}
}

static void test_sloppy(void **state)
{
	struct arf_fuse_opts o;
	char err[256];
	(void)state;
	arf_fuse_opts_init(&o);
	o.sloppy = 1;
	assert_int_equal(arf_fuse_opts_parse(&o, "bogus,noac", err, sizeof(err)), 0);
	assert_int_equal(o.ac, 0);
}

static void test_transport_into_url(void **state)
{
	char err[256];
	int rc;
	(void)state;
	struct arf_fuse_opts *o = opts_for("arf://10.0.0.1/exp", "port=7000", &rc, err,
					   sizeof(err));
	assert_int_equal(rc, 0);
	assert_string_equal(o->url, "arf://10.0.0.1:7000/exp");
	o = opts_for("arf://h:9/exp", "transport=shm", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_string_equal(o->url, "arf+shm:///exp?socket=" ARF_DEFAULT_SOCKET);
	o = opts_for("arf://h/", "socket=/tmp/s.sock", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_string_equal(o->url, "arf+shm:///?socket=/tmp/s.sock");
	o = opts_for("arf://[::1]:5/x", "", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_string_equal(o->url, "arf://[::1]:5/x");
	o = opts_for("arf+shm:///?socket=/a", "", &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_string_equal(o->url, "arf+shm:///?socket=/a");
	opts_for("nfs://h/", "", &rc, err, sizeof(err));
	assert_int_equal(rc, -EINVAL);
}

struct spec_case {
	const char *spec, *url;
};

static void test_spec(void **state)
{
	static const struct spec_case ok[] = {
		{ "server:/", "arf://server/" },
		{ "server:/exp/dir", "arf://server/exp/dir" },
		{ "127.0.0.1:7000:/", "arf://127.0.0.1:7000/" },
		{ "[fe80::1]:/x", "arf://[fe80::1]/x" },
		{ "[::1]:99:/", "arf://[::1]:99/" },
		{ "arf://h:1/p", "arf://h:1/p" },
		{ "arf+shm:///?socket=/s", "arf+shm:///?socket=/s" },
	};
	static const char *const bad[] = { "server", "server:", "server:exp", ":/", "h:0:/",
					   "h:70000:/", "h:12", "[::1/", "[]:/", "h:1x:/" };
	char url[512], err[256];
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(arf_fuse_spec_to_url(ok[i].spec, url, sizeof(url), err,
						      sizeof(err)), 0);
		assert_string_equal(url, ok[i].url);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (arf_fuse_spec_to_url(bad[i], url, sizeof(url), err, sizeof(err)) != -EINVAL)
			fail_msg("'%s' accepted as %s", bad[i], url);
}

static void test_help_lists_options(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	(void)state;
	FILE *f = open_memstream(&buf, &len);
	arf_fuse_opts_help(f);
	fclose(f);
	static const char *const names[] = { "port=N", "transport=tcp|shm", "socket=PATH", "noac",
					     "actimeo=N", "acregmin=N", "acregmax=N", "acdirmin=N",
					     "acdirmax=N", "secret=FILE", "writeback", "spin_us=N",
					     "rsize=N", "wsize=N",
					     "debug", "_netdev", "x-*", "comment=*" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strstr(buf, names[i]))
			fail_msg("--help lacks %s", names[i]);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_are_nfs),
		cmocka_unit_test(test_cache_options),
		cmocka_unit_test(test_generic_options),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_sloppy),
		cmocka_unit_test(test_transport_into_url),
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_help_lists_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * arf-fptest — what a one-sided reader sees of a path, for the fail-stop
 * tests (tests/integration/test_failpaths.py).
 *
 *   arf-fptest see URL PATH
 *
 * Connects as libarf does, then resolves PATH from the root with
 * one-sided reads only (libarf's own readers, arfclient/onesided.c: the
 * hash chains, then the inode), never a request and never a shipped
 * program, and prints one line:
 *   "visible INO GEN SIZE"  every entry and the inode validate
 *   "torn WHAT"             an object on the way stays odd or fails its
 *                           checksum (after libarf's retries)
 *   "absent WHAT"           a name is not in its directory
 * and exits 0; a failed connection or bad arguments exit 2.
 *
 *   arf-fptest missed URL NAME
 *
 * A write kept under an incarnation no replay covered (libarf keeps none:
 * arf_cl_keep_current sends such a write again instead): creates NAME in
 * the root, writes 4 KiB of 'a' at 0 (kept under the server's
 * incarnation), puts in the write log 4 KiB of 'm' at 4096 under an
 * earlier incarnation, and fsyncs twice.  Prints
 *   "fsync RC resent BYTES kept HOLDS again RC2 data a only|both|WRONG"
 * (kept: the log still holds writes of the file after the first fsync;
 * again: the second fsync's result; data: what reads back).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client_int.h"

/* A client of url as libarf's defaults make it, without spinning; NULL
 * (said on stderr) when it cannot connect. */
static arf_client *open_client(const char *url)
{
	struct arf_client_opts o;
	char err[512];
	arf_client *c;

	arf_client_opts_init(&o);
	o.spin_us = 0;
	if (arf_connect(url, &o, &c, err, sizeof(err))) {
		fprintf(stderr, "arf-fptest: connect %s: %s\n", url, err);
		return NULL;
	}
	return c;
}

static int see(const char *url, const char *path)
{
	char name[256];
	arf_client *c;

	if (!(c = open_client(url)))
		return 2;
	uint64_t ino = ARF_ROOT_INO;
	uint32_t gen = 0;
	uint8_t type;
	const char *p = path;
	int rc = 0;
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (!n)
			break;
		if (n >= sizeof(name)) {
			fprintf(stderr, "arf-fptest: name too long\n");
			arf_close(c);
			return 2;
		}
		memcpy(name, p, n);
		name[n] = 0;
		rc = arf_os_lookup(c, ino, name, n, &ino, &gen, &type);
		if (rc == -ENOENT) {
			printf("absent %s\n", name);
			goto out;
		}
		if (rc == 1) {
			printf("torn entry %s (a chain longer than the hop limit)\n", name);
			goto out;
		}
		if (rc) {
			printf("torn entry %s (%s)\n", name, arf_strerror(rc));
			goto out;
		}
		p += n;
	}
	struct arf_meta_inode in;
	if (ino == ARF_ROOT_INO) {
		rc = arf_os_read_obj(c, ARF_REGION_META, arf_meta_inode_off(&c->sb, ino), &in,
				     sizeof(in));
	} else {
		rc = arf_os_inode(c, ino, gen, &in);
	}
	if (rc)
		printf("torn inode %llu (%s)\n", (unsigned long long)ino, arf_strerror(rc));
	else
		printf("visible %llu %u %llu\n", (unsigned long long)in.ino, in.gen,
		       (unsigned long long)in.size);
out:
	arf_close(c);
	return 0;
}

static int missed(const char *url, const char *name)
{
	struct arf_client_stats s0, s1;
	struct arf_proto_cred pc;
	struct arf_stat st;
	static uint8_t a[4096], m[4096], back[8192];
	arf_client *c;

	if (!(c = open_client(url)))
		return 2;
	memset(a, 'a', sizeof(a));
	memset(m, 'm', sizeof(m));
	struct arf_stat root;
	int rc = arf_resolve(c, "/", &root);
	if (!rc)
		rc = arf_create(c, root.ino, root.gen, name, 0644, 1, &st);
	if (!rc && arf_write(c, st.ino, st.gen, 0, a, sizeof(a)) != (ssize_t)sizeof(a))
		rc = -EIO;
	if (rc) {
		fprintf(stderr, "arf-fptest: create and write %s: %s\n", name, arf_strerror(rc));
		arf_close(c);
		return 2;
	}
	arf_req_process_cred(&pc);
	arf_wlog_keep(c, &pc, st.ino, st.gen, sizeof(a), m, sizeof(m), c->info.incarnation ^ 0x5a5a,
		      1);
	arf_stats(c, &s0);
	rc = arf_fsync(c, st.ino, st.gen);
	arf_stats(c, &s1);
	int holds = arf_wlog_holds(c, st.ino);
	int again = arf_fsync(c, st.ino, st.gen);
	ssize_t got = arf_read(c, st.ino, st.gen, 0, back, sizeof(back));
	const char *data = "WRONG";
	if (got == (ssize_t)sizeof(a) && !memcmp(back, a, sizeof(a)))
		data = "a only";
	else if (got == (ssize_t)sizeof(back) && !memcmp(back, a, sizeof(a)) &&
		 !memcmp(back + sizeof(a), m, sizeof(m)))
		data = "both";
	printf("fsync %d resent %llu kept %d again %d data %s\n", rc,
	       (unsigned long long)(s1.resent_bytes - s0.resent_bytes), holds, again, data);
	arf_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "see"))
		return see(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "missed"))
		return missed(argv[2], argv[3]);
	fprintf(stderr, "usage: arf-fptest see URL PATH\n       arf-fptest missed URL NAME\n");
	return 2;
}

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
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client_int.h"

static int see(const char *url, const char *path)
{
	struct arf_client_opts o;
	char err[512], name[256];
	arf_client *c;

	arf_client_opts_init(&o);
	o.spin_us = 0;
	if (arf_connect(url, &o, &c, err, sizeof(err))) {
		fprintf(stderr, "arf-fptest: connect %s: %s\n", url, err);
		return 2;
	}
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

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "see"))
		return see(argv[2], argv[3]);
	fprintf(stderr, "usage: arf-fptest see URL PATH\n");
	return 2;
}

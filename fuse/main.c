/* SPDX-License-Identifier: MIT */
/*
 * arf-fuse: mount an ARF export with FUSE.
 *
 *   arf-fuse URL MOUNTPOINT [-o OPTS] [-f] [-d]
 *
 * Without -f it returns once the mount is up (or has failed, non-zero),
 * leaving the daemon in the background; unmount with umount(8) or
 * fusermount3 -u.  mount.arf execs it after turning mount(8)'s arguments
 * into these.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf_fuse.h"
#include "arf_malloc.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: arf-fuse URL MOUNTPOINT [-o OPT[,OPT...]] [-f] [-d]\n"
		"       arf-fuse --help | --version\n"
		"\n"
		"Mount the ARF export URL (arf://HOST[:PORT]/PATH, or\n"
		"arf+shm:///PATH?socket=SOCK for arfd on this host) on MOUNTPOINT.\n"
		"\n"
		"    -o OPTS        mount options, below\n"
		"    -f             stay in the foreground\n"
		"    -d             foreground, and log every request (-o debug)\n"
		"    -h, --help     this text\n"
		"    -V, --version  the version\n"
		"\n");
	arf_fuse_opts_help(f);
	fprintf(f,
		"\nConsistency is NFS's close-to-open: open() revalidates with the server;\n"
		"attributes and names are cached by the ac* timeouts only.  Mounts are hard:\n"
		"they wait for a restarted arfd, and only SIGKILL ends a wait (soft: EIO after\n"
		"timeo x (retrans + 1)).  fcntl and flock locks are local to one mount.  An\n"
		"unlinked file stays usable through descriptors open on the same mount (as\n"
		".arf-hidden-INO-N until closed).\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct arf_fuse_opts opts; /* large: not on the stack */
	struct arf_fuse_opts *o = &opts;
	char err[512];
	int c;

	arf_daemon_malloc(); /* a request's buffers from the heap, reused */
	arf_fuse_opts_init(o);
	while ((c = getopt_long(argc, argv, "+o:fdhV", longopts, NULL)) != -1 ||
	       optind < argc) {
		if (c == -1) { /* a positional argument; options may follow it */
			const char *arg = argv[optind++];
			if (!o->url[0])
				snprintf(o->url, sizeof(o->url), "%s", arg);
			else if (!o->mountpoint[0])
				snprintf(o->mountpoint, sizeof(o->mountpoint), "%s", arg);
			else {
				fprintf(stderr, "arf-fuse: unexpected argument '%s'\n", arg);
				return 1;
			}
			continue;
		}
		switch (c) {
		case 'o':
			if (arf_fuse_opts_parse(o, optarg, err, sizeof(err))) {
				fprintf(stderr, "arf-fuse: %s\n", err);
				return 1;
			}
			break;
		case 'f':
			o->foreground = 1;
			break;
		case 'd':
			o->foreground = 1;
			o->debug = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("arf-fuse %s (libfuse %s)\n", ARF_VERSION, fuse_pkgversion());
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (!o->url[0] || !o->mountpoint[0]) {
		usage(stderr);
		return 1;
	}
	if (arf_fuse_opts_finish(o, err, sizeof(err))) {
		fprintf(stderr, "arf-fuse: %s\n", err);
		return 1;
	}
	int ready_fd = -1;
	if (!o->foreground) {
		ready_fd = arf_fuse_daemonize(); /* only the daemon returns */
		if (ready_fd < 0) {
			fprintf(stderr, "arf-fuse: fork: %s\n", strerror(-ready_fd));
			return 1;
		}
	}
	return arf_fuse_run(o, ready_fd) ? 1 : 0;
}

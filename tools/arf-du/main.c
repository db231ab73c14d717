/* SPDX-License-Identifier: MIT */
/*
 * arf-du: GNU du's command line and output, with the walk and the sums
 * done next to the data.  An operand on an ARF mount (or an arf:// URL)
 * is listed by the du program on its server (remote.c): per directory
 * only the sums of its plain files and the few children the walk must see
 * (subdirectories, files with several links, -a's entries, children it
 * could not stat) cross.  Anything else is listed here (list.c).
 *
 * The walk is GNU du's (coreutils du.c over gnulib fts): depth first,
 * children in listing order, a directory printed after its children, each
 * (dev, ino) of a file with several links counted once (every (dev, ino)
 * when there are several operands), a directory that cannot be read
 * counted with its own size and reported, a child that cannot be stat'ed
 * reported and skipped.  Exit status 1 after any such error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arf.h"
#include "du_int.h"
#include "arf_tool.h"

static const char *prog = "arf-du";

struct walk {
	struct du_opts o;
	int status;
	/* the (dev, ino) pairs seen: open addressing, 0 empty */
	struct { uint64_t dev, ino; } *set;
	size_t nset, capset;
};

/* ---- (dev, ino) set ------------------------------------------------------ */

static uint64_t mix(uint64_t dev, uint64_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull ^ (dev + 0x632be59bd9b4e019ull);

	return h ^ (h >> 31);
}

/* 1 when (dev, ino) is new (now inserted), 0 when seen before. */
static int seen_insert(struct walk *w, uint64_t dev, uint64_t ino)
{
	if (2 * (w->nset + 1) > w->capset) {
		size_t nc = w->capset ? 2 * w->capset : 1024;
		__typeof__(w->set) ns = calloc(nc, sizeof(*ns));

		if (!ns) {
			fprintf(stderr, "%s: memory exhausted\n", prog);
			exit(1);
		}
		for (size_t i = 0; i < w->capset; i++) {
			if (!w->set[i].ino && !w->set[i].dev)
				continue;
			size_t j = mix(w->set[i].dev, w->set[i].ino) & (nc - 1);

			while (ns[j].ino || ns[j].dev)
				j = (j + 1) & (nc - 1);
			ns[j] = w->set[i];
		}
		free(w->set);
		w->set = ns;
		w->capset = nc;
	}
	uint64_t kd = dev, ki = ino ? ino : UINT64_MAX; /* (0, 0) marks empty */
	size_t j = mix(kd, ki) & (w->capset - 1);

	while (w->set[j].ino || w->set[j].dev) {
		if (w->set[j].dev == kd && w->set[j].ino == ki)
			return 0;
		j = (j + 1) & (w->capset - 1);
	}
	w->set[j].dev = kd;
	w->set[j].ino = ki;
	w->nset++;
	return 1;
}

/* ---- output ---------------------------------------------------------------- */

static void print_size(struct walk *w, uint64_t v, const char *path)
{
	char buf[64];

	fputs(du_human(v, &w->o, buf, sizeof(buf)), stdout);
	putchar('\t');
	fputs(path, stdout);
	putchar(w->o.nul ? '\0' : '\n');
}

static void error_at(struct walk *w, const char *what, const char *path, int err)
{
	fflush(stdout);
	fprintf(stderr, "%s: %s", prog, what);
	arf_tool_quote(stderr, path, ARF_TOOL_QUOTE_ALWAYS);
	fprintf(stderr, ": %s\n", err <= -1000 ? arf_strerror(err) : strerror(-err));
	w->status = 1;
}

static uint64_t val(const struct du_opts *o, uint64_t blocks, uint64_t size)
{
	if (o->inodes)
		return 1;
	return o->apparent ? size : blocks * 512;
}

/* fts's name for a child: the parent's, one '/', the name. */
static char *child_path(const char *dir, const char *name)
{
	size_t n = strlen(dir);
	char *p;

	if (n && dir[n - 1] == '/')
		n--;
	p = malloc(n + strlen(name) + 2);
	if (!p) {
		fprintf(stderr, "%s: memory exhausted\n", prog);
		exit(1);
	}
	memcpy(p, dir, n);
	p[n] = '/';
	strcpy(p + n + 1, name);
	return p;
}

/* ---- the walk --------------------------------------------------------------- */

struct where {
	struct du_src src;
	int by_url;                  /* no local path to fall back on */
	unsigned vols[DU_VOL_CHAIN]; /* the volumes of the path, by number */
	unsigned nvols;
};

/* -ELOOP when volume key is on at's path already (a mount point
 * leading back to a volume it is in) or the path crossed too many; else it
 * joins the path of vol (a copy of at). */
static int vol_enter(const struct where *at, struct where *vol, unsigned key)
{
	for (unsigned i = 0; i < at->nvols; i++)
		if (at->vols[i] == key)
			return -ELOOP;
	if (at->nvols == DU_VOL_CHAIN)
		return -ELOOP;
	vol->vols[vol->nvols++] = key;
	return 0;
}


/* Walks directory path (its own value self), prints what -a/-d ask, and
 * returns the subtree's total. */
static uint64_t walk_dir(struct walk *w, struct where *at, const char *path, uint64_t ino,
			 uint32_t gen, size_t level, uint64_t self)
{
	struct du_list l;
	uint64_t tot = self;
	int r = -ENOSYS;

	if (at->src.conn) {
		r = du_remote_list(&w->o, at->src.conn, ino, gen, &l);
		if (r < 0 && at->by_url) {
			r = du_remote_list_plain(at->src.conn, ino, gen, &l);
			if (r < 0) {
				fprintf(stderr, "%s: memory exhausted\n", prog);
				exit(1);
			}
		}
	}
	if (r < 0 && du_list_local(path, &l) < 0) {
		fprintf(stderr, "%s: memory exhausted\n", prog);
		exit(1);
	}
	if (at->src.conn && r == 0)
		for (size_t i = 0; i < l.n; i++)
			if (!l.e[i].err && S_ISDIR(l.e[i].mode))
				du_remote_hint(at->src.conn, l.e[i].ino, l.e[i].gen);
	if (l.err && !l.n && !l.count) {
		error_at(w, "cannot read directory ", path, l.err);
		du_list_free(&l);
		goto print;
	}
	tot += w->o.inodes ? l.count : w->o.apparent ? l.bytes : l.blocks * 512;
	for (size_t i = 0; i < l.n; i++) {
		struct du_ent *e = &l.e[i];
		char *cp = child_path(path, e->name ? e->name : "?");

		struct where vol = *at;
		struct du_ent vroot;
		unsigned vnum = 0;
		int mp = 0;

		if (!e->err && at->src.conn && r == 0 && S_ISLNK(e->mode) &&
		    (e->mode & 0777) != 0777) {
			/* a volume's mount point, crossed as the mount crosses it */
			mp = du_remote_cross(&w->o, at->src.conn, ino, gen, e->name ? e->name : "",
					     cp, at->by_url, &vol.src.conn, &vroot, &vnum);
			if (mp > 0 && vol_enter(at, &vol, vnum))
				mp = -ELOOP; /* back into a volume of its path */
			if (mp < 0) {
				e->err = mp;
			} else if (mp) {
				/* a volume unreadable by us is listed through the mount */
				vol.src.dev = vol.src.conn ? du_remote_dev(vol.src.conn) : 0;
				vroot.name = e->name; /* the volume's root, by the name here */
				*e = vroot;
			}
		}
		if (e->err) {
			error_at(w, "cannot access ", cp, e->err);
		} else if (!w->o.count_all &&
			   (w->o.hash_all || (!S_ISDIR(e->mode) && e->nlink > 1)) &&
			   !seen_insert(w, vol.src.dev, e->ino)) {
			/* counted already */
		} else if (S_ISDIR(e->mode)) {
			tot += walk_dir(w, &vol, cp, e->ino, e->gen, level + 1,
					val(&w->o, e->blocks, e->size));
		} else {
			uint64_t v = val(&w->o, e->blocks, e->size);

			tot += v;
			if (w->o.all && level + 1 <= w->o.max_depth)
				print_size(w, v, cp);
		}
		free(cp);
	}
	if (l.err)
		error_at(w, "cannot read directory ", path, l.err);
	du_list_free(&l);
print:
	if (level <= w->o.max_depth)
		print_size(w, tot, path);
	return tot;
}

static int is_url(const char *s)
{
	return !strncmp(s, "arf://", 6) || !strncmp(s, "arf+", 4);
}

/* One operand; its total (0 when it could not be had). */
static uint64_t operand(struct walk *w, const char *arg)
{
	struct where at = { { NULL, 0 }, 0, { 0 }, 1 };
	struct du_ent root;
	struct stat st;
	char err[512];
	char *path = strdup(arg);
	size_t len = strlen(path);
	uint64_t tot = 0;

	if (!path)
		exit(1);
	if (len > 2 && path[len - 1] == '/') /* fts_open: trailing slashes cut to one */
		while (len > 1 && path[len - 2] == '/')
			path[--len] = 0;
	memset(&root, 0, sizeof(root));
	if (is_url(arg) && !w->o.local_only) {
		if (du_remote_url(&w->o, arg, &at.src.conn, &root, err, sizeof(err)) < 0) {
			fflush(stdout);
			fprintf(stderr, "%s: cannot access ", prog);
			arf_tool_quote(stderr, path, ARF_TOOL_QUOTE_ALWAYS);
			fprintf(stderr, ": %s\n", err);
			w->status = 1;
			goto out;
		}
		at.by_url = 1;
		at.src.dev = du_remote_dev(at.src.conn);
	} else {
		if (lstat(path, &st) < 0) {
			error_at(w, "cannot access ", path, -errno);
			goto out;
		}
		root.ino = st.st_ino;
		root.mode = st.st_mode;
		root.nlink = (uint32_t)st.st_nlink;
		root.blocks = (uint64_t)st.st_blocks;
		root.size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
		at.src.dev = st.st_dev;
		at.vols[0] = (unsigned)((uint64_t)st.st_ino >> 48); /* its volume (0: by URL) */
		if (S_ISDIR(st.st_mode) && !w->o.local_only) {
			int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
			uint64_t ino;
			uint32_t gen;

			if (fd >= 0) {
				/* behind a mount point st_ino has the volume in its
				 * top 16 bits, the handle does not (docs/volumes.md) */
				if (du_remote_fd(&w->o, fd, &at.src.conn, &ino, &gen, err, sizeof(err)) == 0 &&
				    ino == (root.ino & ((UINT64_C(1) << 48) - 1))) {
					root.gen = gen;
					if (ino != root.ino) { /* one set of numbers per volume */
						root.ino = ino;
						at.src.dev = du_remote_dev(at.src.conn);
					}
				} else {
					at.src.conn = NULL;
				}
				close(fd);
			}
		}
	}
	if (!w->o.count_all && (w->o.hash_all || (!S_ISDIR(root.mode) && root.nlink > 1)) &&
	    !seen_insert(w, at.src.dev, root.ino))
		goto out;
	if (S_ISDIR(root.mode))
		tot = walk_dir(w, &at, path, root.ino, root.gen, 0, val(&w->o, root.blocks, root.size));
	else
		print_size(w, tot = val(&w->o, root.blocks, root.size), path);
out:
	free(path);
	return tot;
}

/* ---- command line ------------------------------------------------------------ */

static void usage(int status)
{
	if (status) {
		fprintf(stderr, "Try '%s --help' for more information.\n", prog);
		exit(status);
	}
	printf("Usage: %s [OPTION]... [FILE]...\n"
	       "Summarize device usage of the set of FILEs, recursively for directories;\n"
	       "on an ARF mount or at an arf:// URL the walk runs on the server.\n\n"
	       "  -0, --null            end each output line with NUL, not newline\n"
	       "  -a, --all             write counts for all files, not just directories\n"
	       "      --apparent-size   print apparent sizes rather than device usage\n"
	       "  -B, --block-size=SIZE  scale sizes by SIZE before printing them\n"
	       "  -b, --bytes           equivalent to '--apparent-size --block-size=1'\n"
	       "  -c, --total           produce a grand total\n"
	       "  -d, --max-depth=N     print the total for a directory only if it is N or\n"
	       "                          fewer levels below the command line argument\n"
	       "  -h, --human-readable  print sizes in human readable format (e.g., 1K 234M 2G)\n"
	       "      --inodes          list inode usage information instead of block usage\n"
	       "  -k                    like --block-size=1K\n"
	       "  -l, --count-links     count sizes many times if hard linked\n"
	       "  -m                    like --block-size=1M\n"
	       "  -s, --summarize       display only a total for each argument\n"
	       "      --si              like -h, but use powers of 1000 not 1024\n"
	       "      --stats           print the client's counters to stderr at the end\n"
	       "      --no-remote       walk through the kernel, never on the server\n"
	       "      --help            display this help and exit\n"
	       "      --version         output version information and exit\n",
	       prog);
	exit(0);
}

enum { OPT_APPARENT = 256, OPT_INODES, OPT_SI, OPT_STATS, OPT_NO_REMOTE, OPT_HELP, OPT_VERSION };

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "null", no_argument, NULL, '0' },
		{ "all", no_argument, NULL, 'a' },
		{ "apparent-size", no_argument, NULL, OPT_APPARENT },
		{ "block-size", required_argument, NULL, 'B' },
		{ "bytes", no_argument, NULL, 'b' },
		{ "total", no_argument, NULL, 'c' },
		{ "max-depth", required_argument, NULL, 'd' },
		{ "human-readable", no_argument, NULL, 'h' },
		{ "inodes", no_argument, NULL, OPT_INODES },
		{ "count-links", no_argument, NULL, 'l' },
		{ "summarize", no_argument, NULL, 's' },
		{ "si", no_argument, NULL, OPT_SI },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "no-remote", no_argument, NULL, OPT_NO_REMOTE },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	struct walk w;
	int c, ok = 1, depth_given = 0;
	uint64_t total = 0;

	memset(&w, 0, sizeof(w));
	if (argv[0] && *argv[0]) {
		const char *s = strrchr(argv[0], '/');

		prog = s ? s + 1 : argv[0];
	}
	w.o.block_size = 1024;
	w.o.max_depth = SIZE_MAX;
	while ((c = getopt_long(argc, argv, "0abd:chklmsB:", longs, NULL)) != -1) {
		switch (c) {
		case '0': w.o.nul = 1; break;
		case 'a': w.o.all = 1; break;
		case OPT_APPARENT: w.o.apparent = 1; break;
		case 'b':
			w.o.apparent = 1;
			w.o.human = 0;
			w.o.block_size = 1;
			w.o.suffix[0] = 0;
			break;
		case 'c': w.o.total = 1; break;
		case 'd': {
			char *end;

			errno = 0;
			long long d = strtoll(optarg, &end, 0);

			if (errno || end == optarg || *end || d < 0) {
				fprintf(stderr, "%s: invalid maximum depth ", prog);
				arf_tool_quote(stderr, optarg, ARF_TOOL_QUOTE_ALWAYS);
				fputc('\n', stderr);
				ok = 0;
			} else {
				w.o.max_depth = (size_t)d;
				depth_given = 1;
			}
			break;
		}
		case 'h': w.o.human = 1024; w.o.suffix[0] = 0; break;
		case OPT_SI: w.o.human = 1000; w.o.suffix[0] = 0; break;
		case 'k': w.o.human = 0; w.o.block_size = 1024; w.o.suffix[0] = 0; break;
		case 'm': w.o.human = 0; w.o.block_size = 1024 * 1024; w.o.suffix[0] = 0; break;
		case 'B':
			if (du_block_size(optarg, &w.o) < 0) {
				fprintf(stderr, "%s: invalid %s argument ", prog,
					argv[optind - 1][1] == '-' ? "--block-size" : "-B");
				arf_tool_quote(stderr, optarg, ARF_TOOL_QUOTE_ALWAYS);
				fputc('\n', stderr);
				exit(1);
			}
			break;
		case 'l': w.o.count_all = 1; break;
		case 's': w.o.summarize = 1; break;
		case OPT_INODES: w.o.inodes = 1; break;
		case OPT_STATS: w.o.stats = 1; break;
		case OPT_NO_REMOTE: w.o.local_only = 1; break;
		case OPT_HELP: usage(0); break;
		case OPT_VERSION:
			printf("%s (ARF) %s\n", prog, ARF_VERSION);
			return 0;
		default:
			usage(1);
		}
	}
	if (!ok)
		usage(1);
	if (w.o.all && w.o.summarize) {
		fprintf(stderr, "%s: cannot both summarize and show all entries\n", prog);
		usage(1);
	}
	if (w.o.summarize && depth_given && w.o.max_depth == 0) {
		fprintf(stderr, "%s: warning: summarizing is the same as using --max-depth=0\n", prog);
	} else if (w.o.summarize && depth_given) {
		fprintf(stderr, "%s: warning: summarizing conflicts with --max-depth=%zu\n", prog,
			w.o.max_depth);
		usage(1);
	}
	if (w.o.summarize)
		w.o.max_depth = 0;
	if (w.o.inodes) {
		if (w.o.apparent)
			fprintf(stderr, "%s: warning: options --apparent-size and -b are ineffective "
				"with --inodes\n", prog);
		w.o.block_size = 1;
		w.o.suffix[0] = 0;
	}
	w.o.hash_all = optind + 1 < argc;
	if (optind >= argc) {
		total += operand(&w, ".");
	} else {
		for (int i = optind; i < argc; i++)
			total += operand(&w, argv[i]);
	}
	if (w.o.total)
		print_size(&w, total, "total");
	du_remote_finish(&w.o);
	free(w.set);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: write error\n", prog);
		return 1;
	}
	return w.status;
}

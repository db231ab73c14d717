/* SPDX-License-Identifier: MIT */
/*
 * The walk: starting points recognised on their server, their subtrees
 * listed by arfd's find walker (mobilecode/progs/find.c) in runs.
 *
 * A path is on ARF when arf-fuse answers ARF_IOC_CRED on it (or, for what
 * cannot be opened -- a symbolic link, a directory the user may not read
 * -- on its parent, followed by a lookup of its name): the URL of the
 * server, the handle, and a credential token for the user the kernel says
 * runs us, presented on a connection of our own (one per server, from
 * tools/common/conn.c), so that the walk lists exactly what that user may
 * list.  An arf:// URL is reached with arf_connect and arf_resolve,
 * anonymously as every URL connection without a proof is.
 *
 * The client keeps the queue of directories still to list (FIFO: the
 * order is not GNU find's, the set is); each run takes the queue's head
 * (as many items as fit in the argument), and the records that come back
 * say which items were listed to their end, where the last one stopped,
 * and the entries, which are evaluated here with the whole expression
 * (eval.c).  A run stopped by the server's instruction or wall-clock budget
 * is sent again with half the entries (max_ents); one stopped by the output
 * limit with half the output.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arf.h"
#include "arf_common.h"
#include "arf_progs.h"
#include "arf_tool.h"
#include "find_int.h"

/* ---- connections, one per server ------------------------------------------ */

/* A failed connect is tried again for the next starting point on that
 * server: one not reached is walked by GNU find through the mount. */
static const struct arf_tool_conn_type conn_type = { sizeof(struct arf_tool_conn),
						     ARF_TOOL_CONN_RETRY, NULL, NULL };
static struct arf_tool_conns conns = { &conn_type, NULL, 0 };

static arf_client *conn_get(const char *url, const uint8_t *token, char *err, size_t errlen)
{
	struct arf_tool_conn *k;

	return arf_tool_conn_get(&conns, url, token, &k, err, errlen) == 0 ? k->c : NULL;
}

static void conns_close(struct find_run *run)
{
	fflush(stdout);
	arf_tool_conns_close(&conns, "arf-find", run->o.stats);
}

/* ---- starting points ---------------------------------------------------------- */

struct start {
	const char *arg;           /* as given */
	int err;                   /* -errno to report instead of walking */
	arf_client *c;
	struct arf_stat st;
	int mount;                 /* a path on a mount (not a URL) */
	uint64_t vbits;            /* st_ino's volume bits (VOL_BITS) */
	int noenter;               /* -errno: a volume's root that could not be opened */
};

/* The top 16 bits of an ino as a mount (or libarf) shows it name the
 * volume behind a mount point (docs/volumes.md); a connection of the
 * volume's own gives the bits below only. */
#define VOL_BITS(ino) ((ino) & ~((UINT64_C(1) << 48) - 1))

static arf_client *cred_of(const char *path, int flags, uint64_t *ino, uint32_t *gen)
{
	struct arf_tool_conn *k;
	char err[256];
	int fd = open(path, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK), r;

	if (fd < 0)
		return NULL;
	r = arf_tool_conn_fd(&conns, fd, &k, ino, gen, err, sizeof(err));
	close(fd);
	return r == 0 ? k->c : NULL;
}

/* 1: on ARF (s->c, s->st), 0: not, and s->err when it does not exist. */
static int start_path(struct start *s)
{
	struct stat st;
	uint64_t ino;
	uint32_t gen;

	if (lstat(s->arg, &st) < 0) {
		s->err = -errno;
		return 1; /* reported by us, as GNU find would */
	}
	s->mount = 1;
	s->vbits = VOL_BITS((uint64_t)st.st_ino);
	if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
		s->c = cred_of(s->arg, O_RDONLY | O_NOFOLLOW, &ino, &gen);
		if (s->c && arf_getattr(s->c, ino, gen, &s->st) == 0)
			return 1;
	}
	/* a link, a device, a directory we may not open: by its parent */
	char *copy = strdup(s->arg), *sl;
	const char *parent, *base;
	size_t l;
	int ok = 0;

	if (!copy)
		return 0;
	l = strlen(copy);
	while (l > 1 && copy[l - 1] == '/')
		copy[--l] = 0;
	sl = strrchr(copy, '/');
	if (!sl) {
		parent = ".";
		base = copy;
	} else if (sl == copy) {
		parent = "/";
		base = copy + 1;
	} else {
		*sl = 0;
		parent = copy;
		base = sl + 1;
	}
	s->c = cred_of(parent, O_RDONLY | O_DIRECTORY, &ino, &gen);
	if (s->c && base[0] && arf_lookup(s->c, ino, gen, base, &s->st) == 0)
		ok = 1;
	/* a volume's root behind a mount point, which we may not open: its
	 * attributes are libarf's crossing (numbered as the mount numbers
	 * them), and it is not entered (its handle is its own server's) */
	if (ok && VOL_BITS(s->st.ino) && S_ISDIR(s->st.mode))
		s->noenter = -EACCES;
	free(copy);
	return ok;
}

static int start_url(struct start *s, struct find_run *run)
{
	struct arf_url u;
	char err[256];
	int r;

	if (arf_url_parse(s->arg, &u, err, sizeof(err)) < 0 ||
	    !(s->c = conn_get(s->arg, NULL, err, sizeof(err)))) {
		fflush(stdout);
		fprintf(stderr, "%s: ", run->prog);
		arf_tool_quote_locale(stderr, s->arg);
		fprintf(stderr, ": %s\n", err);
		run->status = 1;
		s->err = 1;
		return 1;
	}
	r = arf_resolve(s->c, u.path, &s->st);
	if (r == 0) {
		s->vbits = VOL_BITS(s->st.ino);
		char vurl[4352];
		r = arf_tool_volume_url(s->c, &s->st.ino, vurl, sizeof(vurl));
		if (r > 0) { /* behind a mount point: that volume's own connection */
			arf_client *v = conn_get(vurl, NULL, err, sizeof(err));
			r = v ? 0 : -ECONNREFUSED;
			if (v)
				s->c = v;
		}
	}
	if (r < 0)
		s->err = r;
	return 1;
}

/* ---- the queue and the runs --------------------------------------------------- */

#define VOL_CHAIN 16 /* volumes on one path at most (mount points crossed + 1) */

struct dir {
	uint64_t ino, cookie;      /* ino: as c knows it */
	uint32_t gen, depth;
	size_t start_len;
	char *path;
	arf_client *c;             /* the connection to its volume */
	uint64_t vbits;            /* the volume's bits in printed inode numbers */
	int mount;                 /* under a starting point on a mount */
	uint16_t vols[VOL_CHAIN];  /* the volumes of its path (their numbers) */
	unsigned nvols;
};

struct walk {
	struct find_run *run;
	const uint8_t *elf;
	size_t elf_len;
	struct arf_find_node *nodes;
	uint32_t nn, str_len;
	char *str;
	struct dir **q;
	size_t head, tail, cap;
	uint32_t max_ents, max_out;
	uint8_t *arg, *out;
	char *ld_path;             /* mount_lists_dir's directory, and the names the */
	char **ld_names;           /* mount lists as directories there */
	size_t ld_n;
};

#define ARG_MAX_BYTES 65536u
#define OUT_CAP (1u << 20)
#define BATCH_SLACK (64u << 10)    /* one dir_read batch's records and their headers */

static int push(struct walk *w, struct dir *d)
{
	if (w->tail == w->cap) {
		if (w->head > w->cap / 2) {
			memmove(w->q, w->q + w->head, (w->tail - w->head) * sizeof(*w->q));
			w->tail -= w->head;
			w->head = 0;
		} else {
			size_t nc = w->cap ? 2 * w->cap : 256;
			struct dir **q = realloc(w->q, nc * sizeof(*q));

			if (!q)
				return -ENOMEM;
			w->q = q;
			w->cap = nc;
		}
	}
	w->q[w->tail++] = d;
	return 0;
}

static int want_descend(const struct find_run *run, unsigned depth)
{
	return run->o.maxdepth < 0 || (int)depth < run->o.maxdepth;
}

static int min_ok(const struct find_run *run, unsigned depth)
{
	return run->o.mindepth < 0 || (int)depth >= run->o.mindepth;
}

static void attr_of_arf(struct arf_prog_attr *a, const struct arf_stat *st)
{
	memset(a, 0, sizeof(*a));
	a->ino = st->ino;
	a->gen = st->gen;
	a->mode = st->mode;
	a->nlink = st->nlink;
	a->uid = st->uid;
	a->gid = st->gid;
	a->size = st->size;
	a->blocks = st->blocks;
	a->atime_ns = st->atime_ns;
	a->mtime_ns = st->mtime_ns;
	a->ctime_ns = st->ctime_ns;
	a->rdev = st->rdev;
}

/* ARF_FIND_EMPTY_YES or _NO for directory (ino, gen) on c, or -errno. */
static int dir_empty(arf_client *c, uint64_t ino, uint32_t gen)
{
	struct arf_dirent *de = malloc(sizeof(*de));
	size_t n = 0;
	int eof = 0, r;

	r = de ? arf_readdir(c, ino, gen, 0, de, 1, &n, &eof) : -ENOMEM;
	free(de);
	return r < 0 ? r : n ? ARF_FIND_EMPTY_NO : ARF_FIND_EMPTY_YES;
}

/* -ELOOP when the volume of vbits is on into's path already (a mount point
 * leading back to a volume it is in) or the path crossed too many; else
 * it joins the path. */
static int vol_enter(const struct dir *parent, struct dir *into, uint64_t vbits)
{
	unsigned k = (unsigned)(vbits >> 48);

	for (unsigned i = 0; i < parent->nvols; i++)
		if (parent->vols[i] == k)
			return -ELOOP;
	if (parent->nvols == VOL_CHAIN)
		return -ELOOP;
	memcpy(into->vols, parent->vols, sizeof(into->vols));
	into->vols[parent->nvols] = (uint16_t)k;
	into->nvols = parent->nvols + 1;
	return 0;
}

/*
 * A symbolic link not of mode 0777, which may be a volume's mount point
 * (docs/volumes.md): 0 when it is a plain link (e untouched); 1 when it
 * is a mount point, with e's attributes the volume root's, as the mount
 * shows them, and *into the root to walk (into->c NULL and *open_err when
 * it cannot be entered); or -errno, for a mount point that cannot be
 * crossed (no such volume, its server down).
 *
 * Under a starting point on a mount, the mount crosses it: its lstat
 * gives the attributes and inode number GNU find sees, and ARF_IOC_CRED
 * the volume's server, handle and a token for our user there.  By URL,
 * libarf crosses it (arf_lookup) and the volume is reached anonymously,
 * as every URL is.
 */
static int cross(const struct dir *parent, struct find_ent *e, const char *name,
		 struct dir *into, int enter, int *open_err)
{
	char err[256];

	*open_err = 0;
	into->c = NULL;
	if (parent->mount) {
		struct arf_tool_conn *k;
		struct stat st;
		int fd;

		if (lstat(e->path, &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return 0;
		memset(&e->at, 0, sizeof(e->at));
		e->at.ino = (uint64_t)st.st_ino;
		e->at.mode = st.st_mode;
		e->at.nlink = (uint32_t)st.st_nlink;
		e->at.uid = st.st_uid;
		e->at.gid = st.st_gid;
		e->at.size = (uint64_t)st.st_size;
		e->at.blocks = (uint64_t)st.st_blocks;
		e->at.atime_ns = (int64_t)st.st_atim.tv_sec * 1000000000 + st.st_atim.tv_nsec;
		e->at.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		e->at.ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
		e->at.rdev = (uint64_t)st.st_rdev;
		into->vbits = VOL_BITS((uint64_t)st.st_ino);
		if (vol_enter(parent, into, into->vbits))
			return -ELOOP;
		if (!enter)
			return 1;
		fd = open(e->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0) {
			*open_err = -errno;
			return 1;
		}
		*open_err = arf_tool_conn_fd(&conns, fd, &k, &into->ino, &into->gen, err,
					     sizeof(err));
		close(fd);
		if (*open_err == 0)
			into->c = k->c;
		return 1;
	}

	struct arf_stat st;
	char vurl[4352];
	uint64_t ino;
	int r = arf_lookup(parent->c, parent->ino, parent->gen, name, &st);

	if (r < 0)
		return r;
	if (!S_ISDIR(st.mode))
		return 0;
	attr_of_arf(&e->at, &st);
	into->vbits = VOL_BITS(st.ino);
	if (vol_enter(parent, into, into->vbits))
		return -ELOOP;
	if (!enter)
		return 1;
	ino = st.ino;
	r = arf_tool_volume_url(parent->c, &ino, vurl, sizeof(vurl));
	if (r < 0)
		return r;
	into->ino = ino;
	into->gen = st.gen;
	into->c = r ? conn_get(vurl, NULL, err, sizeof(err)) : parent->c;
	if (!into->c)
		*open_err = -ECONNREFUSED;
	return 1;
}

static void ld_free(struct walk *w)
{
	for (size_t i = 0; i < w->ld_n; i++)
		free(w->ld_names[i]);
	free(w->ld_names);
	free(w->ld_path);
	w->ld_names = NULL;
	w->ld_path = NULL;
	w->ld_n = 0;
}

/* Whether the mount lists name in directory path as a directory: a mount
 * point does (in a directory we may read but not search, its entry comes
 * from the server without attributes, as a link).  The directory's names
 * are read once through the mount, for the entries of one directory. */
static int mount_lists_dir(struct walk *w, const char *path, const char *name)
{
	if (!w->ld_path || strcmp(w->ld_path, path)) {
		DIR *dd = opendir(path);
		struct dirent *de;
		size_t cap = 0;

		ld_free(w);
		if (!(w->ld_path = strdup(path)))
			return 0;
		while (dd && (de = readdir(dd)))
			if (de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
				if (w->ld_n == cap) {
					char **nn = realloc(w->ld_names,
							    (cap = cap ? 2 * cap : 16) * sizeof(*nn));
					if (!nn)
						break;
					w->ld_names = nn;
				}
				if (!(w->ld_names[w->ld_n] = strdup(de->d_name)))
					break;
				w->ld_n++;
			}
		if (dd)
			closedir(dd);
	}
	for (size_t i = 0; i < w->ld_n; i++)
		if (!strcmp(w->ld_names[i], name))
			return 1;
	return 0;
}

/* One entry that came back: evaluated, and queued when it is a directory
 * to enter. */
static int entry(struct walk *w, struct dir *parent, const struct arf_find_rec *rec,
		 const uint8_t *p)
{
	struct find_run *run = w->run;
	struct arf_prog_dirent d;
	struct find_ent e;
	size_t at = sizeof(d), plen = strlen(parent->path);
	char name[256], *path, *link = NULL;

	memcpy(&d, p, sizeof(d));
	memset(&e, 0, sizeof(e));
	if (d.has_attr) {
		if (at + sizeof(e.at) > rec->len)
			return -EPROTO;
		memcpy(&e.at, p + at, sizeof(e.at));
		at += sizeof(e.at);
	}
	if (at + d.namelen > rec->len)
		return -EPROTO;
	memcpy(name, p + at, d.namelen);
	name[d.namelen] = 0;
	at += (d.namelen + 7u) & ~7u;
	if (d.has_link) {
		uint32_t ll;

		if (at + 8 > rec->len)
			return -EPROTO;
		memcpy(&ll, p + at, 4);
		if (at + 8 + ll > rec->len)
			return -EPROTO;
		link = strndup((const char *)p + at + 8, ll);
	}
	path = malloc(plen + d.namelen + 2);
	if (!path) {
		free(link);
		return -ENOMEM;
	}
	memcpy(path, parent->path, plen);
	if (plen && parent->path[plen - 1] != '/')
		path[plen++] = '/';
	memcpy(path + plen, name, (size_t)d.namelen + 1);
	e.path = path;
	e.name = path + plen;
	e.start_len = parent->start_len;
	e.depth = parent->depth + 1;
	e.has_attr = d.has_attr;
	e.type = d.type;
	e.link = link;
	e.empty = rec->err;
	int real_attr = d.has_attr;

	if (!d.has_attr && rec->cookie == 1) {
		/* left out on request: names and types are all we need */
		e.has_attr = 1;
		e.at.ino = d.ino;
		e.at.gen = d.gen;
		e.at.mode = (uint32_t)d.type << 12;
	}
	/* the directory to enter, if it is one: by default in parent's volume */
	struct dir into = { .ino = e.at.ino, .gen = e.at.gen, .c = parent->c,
			    .vbits = parent->vbits, .mount = parent->mount,
			    .nvols = parent->nvols };
	int open_err = 0;

	memcpy(into.vols, parent->vols, sizeof(into.vols));

	e.at.ino |= parent->vbits; /* as the mount numbers it */
	if (!e.has_attr) {
		/* the parent may be read but not searched: as GNU find, the
		 * entry is evaluated with its name and the type its entry
		 * gives, and every test that needs more fails (eval.c); a
		 * directory, which fts must stat, has no type and is reported
		 * at once, and is not entered */
		int isdir = d.type == DT_DIR ||
			    (d.type == DT_LNK && parent->mount &&
			     mount_lists_dir(w, parent->path, name)); /* a mount point */

		run->nostat_said = 0;
		if (isdir) {
			e.type = 0;
			find_err(run, path, -EACCES);
			run->nostat_said = 1;
		}
		if (min_ok(run, e.depth))
			find_eval(run, run->expr, &e);
		free(path);
		free(link);
		return 0;
	}
	if (real_attr && S_ISLNK(e.at.mode) && (e.at.mode & 0777) != 0777) {
		int r = cross(parent, &e, name, &into,
			      want_descend(run, e.depth) || run->o.need_empty, &open_err);

		if (r < 0) {
			/* the mount lists it as a directory it cannot stat: as
			 * for a directory without attributes below, reported and
			 * evaluated on its name alone */
			e.has_attr = 0;
			e.type = 0;
			e.link = NULL;
			find_err(run, path, r);
			run->nostat_said = 1;
			if (min_ok(run, e.depth))
				find_eval(run, run->expr, &e);
			free(path);
			free(link);
			return 0;
		}
		if (r == 1) {
			free(link);
			link = NULL;
			e.link = NULL;
			if (run->o.need_empty)
				e.empty = into.c ? dir_empty(into.c, into.ino, into.gen)
						 : open_err ? open_err : -EACCES;
		}
	}
	run->pruned = 0;
	if (min_ok(run, e.depth))
		find_eval(run, run->expr, &e);
	if (S_ISDIR(e.at.mode) && want_descend(run, e.depth) && !run->pruned) {
		struct dir *nd;

		if (!into.c) { /* a mount point we could not enter */
			find_err(run, path, open_err ? open_err : -EACCES);
			free(path);
			free(link);
			return 0;
		}
		nd = calloc(1, sizeof(*nd));
		if (!nd || push(w, nd) < 0) {
			free(nd);
			free(path);
			free(link);
			return -ENOMEM;
		}
		*nd = into;
		nd->cookie = 0;
		nd->depth = e.depth;
		nd->start_len = e.start_len;
		nd->path = path;
		path = NULL;
	}
	free(path);
	free(link);
	return 0;
}

/* One run over the head of the queue. */
static int run_once(struct walk *w)
{
	struct find_run *run = w->run;
	struct arf_find_arg *a = (struct arf_find_arg *)w->arg;
	size_t fixed = sizeof(*a) + w->nn * sizeof(struct arf_find_node) + w->str_len;
	size_t n = w->tail - w->head, room = (ARG_MAX_BYTES - fixed) / sizeof(struct arf_find_item);
	struct arf_exec_result res;
	struct arf_find_item *it;
	struct dir *h = w->q[w->head];
	int r;

	if (n > room)
		n = room;
	if (n > 1024)
		n = 1024;
	for (size_t i = 1; i < n; i++) /* one run: one volume's directories */
		if (w->q[w->head + i]->c != h->c || w->q[w->head + i]->vbits != h->vbits) {
			n = i;
			break;
		}
	memset(a, 0, sizeof(*a));
	a->nitems = (uint32_t)n;
	a->nnodes = w->nn;
	a->str_len = w->str_len;
	a->flags = (run->o.need_links ? ARF_FIND_F_LINKS : 0) |
		   (run->o.need_empty ? ARF_FIND_F_EMPTY : 0) |
		   (run->o.names_only ? ARF_FIND_F_NOATTR : 0);
	a->maxdepth = run->o.maxdepth < 0 ? UINT32_MAX : (uint32_t)run->o.maxdepth;
	a->mindepth = run->o.mindepth < 0 ? 0 : (uint32_t)run->o.mindepth;
	a->max_out = w->max_out;
	a->max_ents = w->max_ents;
	it = (struct arf_find_item *)(a + 1);
	for (size_t i = 0; i < n; i++) {
		struct dir *d = w->q[w->head + i];

		memset(&it[i], 0, sizeof(it[i]));
		it[i].ino = d->ino;
		it[i].gen = d->gen;
		it[i].cookie = d->cookie;
		it[i].depth = d->depth;
		it[i].id = (uint32_t)i;
	}
	uint8_t *tail = (uint8_t *)(it + n);

	memcpy(tail, w->nodes, w->nn * sizeof(struct arf_find_node));
	if (h->vbits) {
		/* the walker sees the inode numbers of the volume's own server:
		 * -inum is decided here, on the numbers the mount shows */
		struct arf_find_node *nd = (struct arf_find_node *)tail;

		for (uint32_t i = 0; i < w->nn; i++)
			if (nd[i].op == ARF_FIND_INUM)
				nd[i].op = ARF_FIND_UNKNOWN;
	}
	if (w->str_len)
		memcpy(tail + w->nn * sizeof(struct arf_find_node), w->str, w->str_len);
	size_t arg_len = sizeof(*a) + n * sizeof(*it) + fixed - sizeof(*a);

	r = arf_exec(h->c, w->elf, w->elf_len, a, arg_len, w->out, OUT_CAP, &res);
	if (r == ARF_EBUDGET && w->max_ents > 16) {
		w->max_ents /= 2;
		return 0;
	}
	if (r == ARF_EOUTPUT && w->max_out > 2 * BATCH_SLACK) {
		w->max_out /= 2;
		return 0;
	}
	if (r < 0 || res.r0 < 0) {
		fflush(stdout);
		fprintf(stderr, "%s: ", run->prog);
		arf_tool_quote_locale(stderr, w->q[w->head]->path);
		fprintf(stderr, ": the server could not run the walk: %s%s%s\n",
			arf_strerror(r < 0 ? r : (int)res.r0), res.msg[0] ? ": " : "", res.msg);
		run->status = 1;
		return r < 0 ? r : (int)res.r0;
	}
	size_t at = 0, done = 0;
	int progress = 0;

	while (at + sizeof(struct arf_find_rec) <= res.out_len) {
		struct arf_find_rec rec;

		memcpy(&rec, w->out + at, sizeof(rec));
		at += sizeof(rec);
		if (rec.id >= n || (rec.kind == ARF_FIND_REC_ENT && rec.len > res.out_len - at))
			return -EPROTO;
		struct dir *d = w->q[w->head + rec.id];

		if (rec.kind == ARF_FIND_REC_ENT) {
			if (rec.len < sizeof(struct arf_prog_dirent))
				return -EPROTO;
			r = entry(w, d, &rec, w->out + at);
			if (r < 0)
				return r;
			at += rec.len;
			progress = 1;
		} else if (rec.kind == ARF_FIND_REC_DIR) {
			if (rec.id != done)
				return -EPROTO;
			if (rec.err < 0)
				find_err(run, d->path, rec.err);
			progress = 1;
			if (rec.len) {
				done++;
			} else {
				d->cookie = rec.cookie;
				break;
			}
		} else {
			return -EPROTO;
		}
	}
	for (size_t i = 0; i < done; i++) {
		free(w->q[w->head + i]->path);
		free(w->q[w->head + i]);
	}
	w->head += done;
	return progress ? 0 : -EPROTO;
}

/* One starting point: evaluated, then its subtree. */
static int walk_start(struct walk *w, struct start *s)
{
	struct find_run *run = w->run;
	struct find_ent e;
	char *name, link[4096];
	const char *a = s->arg;
	size_t l = strlen(a);
	int r = 0;

	if (s->err) {
		if (s->err < 0)
			find_err(run, a, s->err);
		return 0;
	}
	/* gnulib's base_name: the last component, one trailing slash kept */
	const char *b = a + l;

	while (b > a && b[-1] == '/')
		b--;
	if (b == a) {
		name = strndup(a, l ? 1 : 0);
	} else {
		const char *end = b;

		while (b > a && b[-1] != '/')
			b--;
		name = strndup(b, (size_t)(end - b) + (*end == '/'));
	}
	if (!name)
		return -ENOMEM;
	memset(&e, 0, sizeof(e));
	e.path = a;
	e.name = name;
	e.start_len = l;
	e.depth = 0;
	e.has_attr = 1;
	attr_of_arf(&e.at, &s->st);
	e.at.ino |= s->vbits;
	if (S_ISLNK(s->st.mode) && run->o.need_links) {
		int k = arf_readlink(s->c, s->st.ino, s->st.gen, link, sizeof(link) - 1);

		if (k >= 0) {
			link[k < (int)sizeof(link) - 1 ? k : (int)sizeof(link) - 1] = 0;
			e.link = link;
		}
	}
	if (S_ISDIR(s->st.mode) && run->o.need_empty)
		e.empty = dir_empty(s->c, s->st.ino, s->st.gen);
	if (s->noenter && run->o.need_empty)
		e.empty = s->noenter;
	run->pruned = 0;
	if (min_ok(run, 0))
		find_eval(run, run->expr, &e);
	free(name);
	if (!S_ISDIR(s->st.mode) || !want_descend(run, 0) || run->pruned)
		return 0;
	if (s->noenter) {
		find_err(run, a, s->noenter);
		return 0;
	}

	struct dir *d = calloc(1, sizeof(*d));

	if (!d || !(d->path = strdup(a)) || push(w, d) < 0) {
		if (d)
			free(d->path);
		free(d);
		return -ENOMEM;
	}
	d->ino = s->st.ino;
	d->gen = s->st.gen;
	d->start_len = l;
	d->c = s->c;
	d->vbits = s->vbits;
	d->mount = s->mount;
	d->vols[0] = (uint16_t)(s->vbits >> 48);
	d->nvols = 1;
	while (w->head < w->tail) {
		r = run_once(w);
		if (r == -ENOMEM || r == -EPROTO)
			break;
		if (r < 0) {
			/* that volume's server could not run the walk (said): its
			 * directories are left, the other volumes' walked on */
			arf_client *bad = w->q[w->head]->c;
			size_t k = w->head;

			for (size_t i = w->head; i < w->tail; i++)
				if (w->q[i]->c == bad) {
					free(w->q[i]->path);
					free(w->q[i]);
				} else {
					w->q[k++] = w->q[i];
				}
			w->tail = k;
			r = 0;
		}
	}
	while (w->head < w->tail) { /* after an error: what was left */
		free(w->q[w->head]->path);
		free(w->q[w->head]);
		w->head++;
	}
	w->head = w->tail = 0;
	if (r == -EPROTO) {
		fflush(stdout);
		fprintf(stderr, "%s: malformed output from the server's walk\n", run->prog);
		run->status = 1;
	}
	return r < 0 ? r : 0;
}

int find_walk(struct find_run *run, char **args, int nargs)
{
	const struct arf_std_prog_image *im = &arf_std_progs[ARF_STD_PROG_FIND];
	struct start *s = calloc((size_t)nargs + 1, sizeof(*s));
	struct walk w;
	int urls = 0, foreign = 0, ret = 0;

	memset(&w, 0, sizeof(w));
	if (!s)
		return -ENOMEM;
	for (int i = 0; i < nargs; i++) {
		s[i].arg = args[i];
		if (!strncmp(args[i], "arf://", 6))
			urls = 1;
	}
	if (!im->len)
		foreign = 1; /* built without clang: no walker to ship */
	for (int i = 0; i < nargs && !foreign; i++)
		if (strncmp(args[i], "arf://", 6) && !start_path(&s[i]))
			foreign = 1;
	if (foreign && !urls) {
		free(s);
		conns_close(run);
		return 1; /* GNU find, through the mount */
	}
	if (foreign) {
		fprintf(stderr, "%s: a starting point is not on ARF (or no walker was built), and "
			"GNU find cannot reach arf:// URLs\n", run->prog);
		free(s);
		conns_close(run);
		run->status = 1;
		return 0;
	}
	w.run = run;
	w.elf = im->elf;
	w.elf_len = im->len;
	w.max_ents = 8192;
	w.max_out = OUT_CAP - BATCH_SLACK;
	if (getenv("ARF_FIND_MAX_ENTS")) /* tests: many small runs */
		w.max_ents = (uint32_t)strtoul(getenv("ARF_FIND_MAX_ENTS"), NULL, 0);
	if (!w.max_ents)
		w.max_ents = 1;
	w.arg = malloc(ARG_MAX_BYTES);
	w.out = malloc(OUT_CAP);
	if (!w.arg || !w.out || find_filter(run, &w.nodes, &w.nn, &w.str, &w.str_len) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nargs; i++) {
		if (!strncmp(args[i], "arf://", 6))
			start_url(&s[i], run);
		int r = walk_start(&w, &s[i]);

		if (r == -ENOMEM) {
			ret = r;
			break;
		}
	}
out:
	if (ret == -ENOMEM) {
		fprintf(stderr, "%s: out of memory\n", run->prog);
		run->status = 1;
	}
	fflush(stdout);
	conns_close(run);
	ld_free(&w);
	free(w.q);
	free(w.arg);
	free(w.out);
	free(w.nodes);
	free(w.str);
	free(s);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * arf-du on ARF servers: connections, and listings by the du program.
 *
 * An operand is on ARF when arf-fuse answers ARF_IOC_CRED on it (the
 * server's URL, the directory's handle and a credential token for the user
 * the kernel says runs us: the walk then has exactly that user's rights),
 * or when it is an arf:// URL (anonymous unless the connection proves
 * more).  One connection per server, kept to the end (tools/common/conn.c).
 *
 * The walk (main.c) asks for one directory at a time, depth first; this
 * file keeps the queue of directories the walk named as coming
 * (du_remote_hint) and sends the one asked for together with up to
 * DU_BATCH of the queue in one run of the du program
 * (mobilecode/progs/du.c), keeping the listings until they are asked for.
 * A run stops before its output could pass out_max, or after max_entries
 * entries, and says where; the next run goes on from there.  A run that
 * the server stops for its instruction budget or wall clock is run again
 * with half the entries, one stopped for its output with half the output.
 * When the server cannot run the program at all (mobile code disabled, a
 * server without the helpers) the connection is marked, and the walk
 * lists through the mount instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arf.h"
#include "arf_common.h"
#include "arf_prog_abi.h"
#include "arf_prog_dusum.h"
#include "arf_progs.h"
#include "arf_tool.h"
#include "du_int.h"

#define DU_BATCH      256u             /* directories per run at most */
#define DU_OUT_MAX    (768u << 10)     /* output per run (arfd's default limit: 1 MiB) */
#define DU_ENTRIES0   (1u << 20)       /* entries per run before any run ran out */
#define DU_ENTRIES_MIN 1u

struct cached {
	uint64_t ino;
	uint32_t gen;
	int done;
	struct du_list l;
	struct cached *next;
};

struct du_conn {
	struct arf_tool_conn k;        /* first: the cache's entry (url, c, idx) */
	int broken;
	uint64_t out_max, max_entries;
	struct cached *cache;
	struct du_dir_q { uint64_t ino; uint32_t gen; } *q;
	size_t qhead, qlen, qcap;
};

static void conn_init(struct arf_tool_conn *base)
{
	struct du_conn *k = (struct du_conn *)base;

	k->out_max = DU_OUT_MAX;
	k->max_entries = DU_ENTRIES0;
}

static void conn_fini(struct arf_tool_conn *base)
{
	struct du_conn *k = (struct du_conn *)base;

	while (k->cache) {
		struct cached *x = k->cache;

		k->cache = x->next;
		du_list_free(&x->l);
		free(x);
	}
	free(k->q);
}

static const struct arf_tool_conn_type conn_type = {
	sizeof(struct du_conn), 0, conn_init, conn_fini,
};
static struct arf_tool_conns conns = { &conn_type, NULL, 0 };

static int conn_get(const char *url, const uint8_t *token, struct du_conn **out, char *err,
		    size_t errlen)
{
	struct arf_tool_conn *k = NULL;
	int r = arf_tool_conn_get(&conns, url, token, &k, err, errlen);

	if (k)
		*out = (struct du_conn *)k;
	return r;
}

int du_remote_fd(const struct du_opts *o, int fd, struct du_conn **conn, uint64_t *ino,
		 uint32_t *gen, char *err, size_t errlen)
{
	struct arf_tool_conn *k = NULL;
	int r = arf_tool_conn_fd(&conns, fd, &k, ino, gen, err, errlen);

	(void)o;
	if (k)
		*conn = (struct du_conn *)k;
	return r;
}

/* A directory's entry from its attributes (no name). */
static void ent_of(struct du_ent *e, const struct arf_stat *st)
{
	memset(e, 0, sizeof(*e));
	e->ino = st->ino;
	e->gen = st->gen;
	e->mode = st->mode;
	e->nlink = st->nlink;
	e->blocks = st->blocks;
	e->size = st->size;
}

int du_remote_url(const struct du_opts *o, const char *url, struct du_conn **conn,
		  struct du_ent *root, char *err, size_t errlen)
{
	struct arf_url u;
	struct arf_stat st;
	int r;

	(void)o;
	r = arf_url_parse(url, &u, err, errlen);
	if (r < 0)
		return r;
	r = conn_get(url, NULL, conn, err, errlen);
	if (r < 0)
		return r;
	r = arf_resolve((*conn)->k.c, u.path, &st);
	if (r < 0) {
		snprintf(err, errlen, "%s", arf_strerror(r));
		return r;
	}
	char vurl[4352];
	r = arf_tool_volume_url((*conn)->k.c, &st.ino, vurl, sizeof(vurl));
	if (r > 0) /* behind a mount point: that volume's own connection */
		r = conn_get(vurl, NULL, conn, err, errlen);
	else if (r < 0)
		snprintf(err, errlen, "%s", arf_strerror(r));
	if (r < 0)
		return r;
	ent_of(root, &st);
	return 0;
}

int du_remote_cross(const struct du_opts *o, struct du_conn *conn, uint64_t dir, uint32_t dgen,
		    const char *name, const char *path, int by_url, struct du_conn **out,
		    struct du_ent *root, unsigned *vnum)
{
	char err[256], vurl[4352];
	int r;

	memset(root, 0, sizeof(*root));
	if (!by_url) {
		/* the mount crosses it: its attributes as du through the mount
		 * sees them, the volume's server, handle and our user's token
		 * from ARF_IOC_CRED */
		struct stat st;
		int fd;

		if (lstat(path, &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return 0;
		root->mode = st.st_mode;
		root->nlink = (uint32_t)st.st_nlink;
		root->blocks = (uint64_t)st.st_blocks;
		root->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
		root->ino = (uint64_t)st.st_ino;
		*vnum = (unsigned)(root->ino >> 48);
		*out = NULL;
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) /* walked through the mount: "cannot read directory", as du */
			return 1;
		r = du_remote_fd(o, fd, out, &root->ino, &root->gen, err, sizeof(err));
		close(fd);
		if (r < 0) { /* the same, through the mount */
			*out = NULL;
			root->ino = (uint64_t)st.st_ino;
		}
		return 1;
	}

	struct arf_stat st;

	r = arf_lookup(conn->k.c, dir, dgen, name, &st);
	if (r < 0)
		return r;
	if (!S_ISDIR(st.mode))
		return 0;
	*vnum = (unsigned)(st.ino >> 48);
	r = arf_tool_volume_url(conn->k.c, &st.ino, vurl, sizeof(vurl));
	if (r < 0)
		return r;
	*out = conn;
	if (r > 0 && (r = conn_get(vurl, NULL, out, err, sizeof(err))) < 0)
		return r;
	ent_of(root, &st);
	return 1;
}

uint64_t du_remote_dev(struct du_conn *conn)
{
	return 0xA2F0000000000000ull | (uint64_t)conn->k.idx;
}

void du_remote_hint(struct du_conn *k, uint64_t ino, uint32_t gen)
{
	if (k->broken)
		return;
	if (k->qlen == k->qcap) {
		size_t nc = k->qcap ? 2 * k->qcap : 256;
		struct du_dir_q *nq = malloc(nc * sizeof(*nq));

		if (!nq)
			return; /* only a hint */
		for (size_t i = 0; i < k->qlen; i++)
			nq[i] = k->q[(k->qhead + i) % k->qcap];
		free(k->q);
		k->q = nq;
		k->qcap = nc;
		k->qhead = 0;
	}
	k->q[(k->qhead + k->qlen++) % k->qcap] = (struct du_dir_q){ ino, gen };
}

static struct cached *cache_find(struct du_conn *k, uint64_t ino, uint32_t gen)
{
	for (struct cached *x = k->cache; x; x = x->next)
		if (x->ino == ino && x->gen == gen)
			return x;
	return NULL;
}

static void cache_drop(struct du_conn *k, struct cached *x)
{
	for (struct cached **pp = &k->cache; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			du_list_free(&x->l);
			free(x);
			return;
		}
}

/* Parses one run's output into the batch's listings from b[*at] on. */
static int take(struct cached **b, size_t nb, size_t *at, uint64_t *cookie,
		const uint8_t *out, size_t len)
{
	size_t p = 0;

	while (p + 8 <= len && *at < nb) {
		struct cached *x = b[*at];

		if (out[p] == ARF_DU_CHILD) {
			struct arf_du_rec r;
			struct du_ent e;

			if (p + sizeof(r) > len)
				return -EPROTO;
			memcpy(&r, out + p, sizeof(r));
			p += sizeof(r);
			memset(&e, 0, sizeof(e));
			size_t pad = ((size_t)r.namelen + 7) & ~(size_t)7;

			if (r.namelen > 255 || p + pad > len)
				return -EPROTO;
			if (r.namelen) {
				e.name = strndup((const char *)out + p, r.namelen);
				if (!e.name)
					return -ENOMEM;
			}
			p += pad;
			e.ino = r.ino;
			e.gen = r.gen;
			e.mode = r.mode;
			e.nlink = r.nlink;
			e.blocks = r.blocks;
			e.size = r.size;
			e.err = r.has_attr ? 0 : -EACCES;
			if (du_list_add(&x->l, &e) < 0) {
				free(e.name);
				return -ENOMEM;
			}
		} else if (out[p] == ARF_DU_END) {
			struct arf_du_end d;

			if (p + sizeof(d) > len)
				return -EPROTO;
			memcpy(&d, out + p, sizeof(d));
			p += sizeof(d);
			x->l.blocks += d.blocks;
			x->l.bytes += d.bytes;
			x->l.count += d.count;
			if (d.done) {
				x->l.err = d.err;
				x->done = 1;
				*cookie = 0;
				(*at)++;
			} else {
				*cookie = d.cookie;
				return 0;
			}
		} else {
			return -EPROTO;
		}
	}
	return p == len ? 0 : -EPROTO;
}

/* Runs the program until every directory of the batch is listed. */
static int run_batch(const struct du_opts *o, struct du_conn *k, struct cached **b, size_t nb)
{
	const struct arf_std_prog_image *img = &arf_std_progs[ARF_STD_PROG_DU];
	size_t at = 0, arg_len = sizeof(struct arf_du_arg) + nb * sizeof(struct arf_du_dir_ref);
	uint8_t *arg = calloc(1, arg_len), *out = NULL;
	uint64_t cookie = 0;
	int r = 0;

	if (!img->len)
		r = -ENOSYS;
	if (!arg)
		r = -ENOMEM;
	while (r == 0 && at < nb) {
		struct arf_du_arg a = { 0 };
		struct arf_exec_result res;
		size_t cap = k->out_max + ARF_DU_BATCH_WORST + (nb + 1) * sizeof(struct arf_du_end);

		if (!out && !(out = malloc(cap))) {
			r = -ENOMEM;
			break;
		}
		a.ndirs = (uint32_t)(nb - at);
		a.flags = (o->all || o->hash_all ? ARF_DU_ALL : 0) | (o->all ? ARF_DU_NAMES : 0);
		a.cookie = cookie;
		a.out_max = k->out_max;
		a.max_entries = k->max_entries;
		memcpy(arg, &a, sizeof(a));
		for (size_t i = at; i < nb; i++) {
			struct arf_du_dir_ref d = { b[i]->ino, b[i]->gen, 0 };

			memcpy(arg + sizeof(a) + (i - at) * sizeof(d), &d, sizeof(d));
		}
		r = arf_exec(k->k.c, img->elf, img->len, arg,
			     sizeof(a) + (nb - at) * sizeof(struct arf_du_dir_ref), out, cap, &res);
		if (r == ARF_EBUDGET && k->max_entries > DU_ENTRIES_MIN) {
			k->max_entries /= 4;
			r = 0;
			continue;
		}
		if (r == ARF_EOUTPUT && k->out_max > 2 * ARF_DU_BATCH_WORST) {
			k->out_max /= 2;
			r = 0;
			continue;
		}
		if (r == 0 && res.r0 < 0)
			r = (int)res.r0;
		if (r == 0)
			r = take(b, nb, &at, &cookie, out, res.out_len);
	}
	free(arg);
	free(out);
	return r;
}

int du_remote_list(const struct du_opts *o, struct du_conn *k, uint64_t ino, uint32_t gen,
		   struct du_list *l)
{
	struct cached *b[DU_BATCH], *x;
	size_t nb = 0;
	int r;

	if (k->broken || !k->k.c)
		return -ENOSYS;
	x = cache_find(k, ino, gen);
	if (!x) {
		if (!(x = calloc(1, sizeof(*x))))
			return -ENOMEM;
		x->ino = ino;
		x->gen = gen;
		x->next = k->cache;
		k->cache = x;
		b[nb++] = x;
		while (nb < DU_BATCH && k->qlen) {
			struct du_dir_q q = k->q[k->qhead];
			struct cached *y;

			k->qhead = (k->qhead + 1) % k->qcap;
			k->qlen--;
			if (cache_find(k, q.ino, q.gen))
				continue;
			if (!(y = calloc(1, sizeof(*y))))
				break;
			y->ino = q.ino;
			y->gen = q.gen;
			y->next = k->cache;
			k->cache = y;
			b[nb++] = y;
		}
		r = run_batch(o, k, b, nb);
		if (r < 0) {
			for (size_t i = 0; i < nb; i++)
				cache_drop(k, b[i]);
			k->broken = 1;
			return r;
		}
	}
	*l = x->l;
	memset(&x->l, 0, sizeof(x->l));
	cache_drop(k, x);
	return 0;
}

int du_remote_list_plain(struct du_conn *k, uint64_t ino, uint32_t gen, struct du_list *l)
{
	struct arf_dirent ents[64];
	struct arf_stat st[64];
	uint64_t cookie = 0;
	int eof = 0;

	memset(l, 0, sizeof(*l));
	if (!k->k.c)
		return -ENOTCONN;
	while (!eof) {
		size_t n = 0;
		int r = arf_readdirplus(k->k.c, ino, gen, cookie, ents, st, 64, &n, &eof);

		if (r < 0) {
			l->err = r;
			return 0;
		}
		for (size_t i = 0; i < n; i++) {
			struct du_ent e;
			struct arf_stat s = st[i];

			cookie = ents[i].cookie;
			memset(&e, 0, sizeof(e));
			if (!(e.name = strdup(ents[i].name)))
				goto nomem;
			if (s.ino == 0 && (r = arf_lookup(k->k.c, ino, gen, ents[i].name, &s)) < 0) {
				e.err = r;
			} else {
				e.ino = s.ino;
				e.gen = s.gen;
				e.mode = s.mode;
				e.nlink = s.nlink;
				e.blocks = s.blocks;
				e.size = s.size;
			}
			if (du_list_add(l, &e) < 0) {
				free(e.name);
				goto nomem;
			}
		}
	}
	return 0;
nomem:
	du_list_free(l);
	return -ENOMEM;
}

void du_remote_finish(const struct du_opts *o)
{
	arf_tool_conns_close(&conns, "arf-du", o->stats);
}

/* SPDX-License-Identifier: MIT */
/*
 * libarf read path: the policy between one-sided reads and requests.
 *
 * Reads go one-sided when the server handed out region keys and the client
 * allows it: an inode costs one read, a name one read of the bucket head
 * plus one per chain hop, a file's bytes one round (all extents' blocks and
 * tags posted together).  A copy that does not validate is re-read up to
 * `retries` times; a chain longer than `max_hops`, or objects that keep
 * changing, are answered by a request instead, and the counters say why.
 * The thresholds come from c->pol: the options, with those left to libarf
 * set for the transport at connect (client.c, policy_resolve).  Each
 * fallback is counted by reason (arf_fallback).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client_int.h"

void arf_fallback(arf_client *c, int reason)
{
	ARF_CTR_ADD(c, fallbacks, 1);
	ARF_CTR_ADD(c, fallbacks_by_reason[reason], 1);
}

static int use_os(arf_client *c)
{
	return c->opts.one_sided && c->have_regions;
}

/* A validated inode, from the cache or one-sided; fresh forces a re-read. */
static int get_inode(arf_client *c, uint64_t ino, uint32_t gen, struct arf_meta_inode *in, int fresh)
{
	if (!fresh && arf_icache_get(c, ino, gen, in) == 0)
		return 0;
	int rc = arf_os_inode(c, ino, gen, in);
	if (!rc)
		arf_icache_put(c, in);
	return rc;
}

int arf_v_getattr(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out)
{
	/* a validated copy, or the attributes the last reply about it carried */
	if (arf_icache_get_stat(c, ino, gen, out) == 0)
		return 0;
	if (use_os(c)) {
		struct arf_meta_inode in;
		int rc = get_inode(c, ino, gen, &in, 0);
		if (!rc) {
			arf_stat_from_inode(&in, out);
			return 0;
		}
		if (rc != ARF_ERETRY)
			return rc;
		arf_fallback(c, ARF_FALLBACK_TORN);
	}
	return arf_req_getattr(c, ino, gen, out);
}

int arf_root(arf_client *c, struct arf_stat *out)
{
	return arf_v_getattr(c, ARF_ROOT_INO, c->info.root_gen, out);
}

/* Resolve one name to (child, gen, type) without reading the child's inode. */
static int lookup_entry(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, size_t len,
			uint64_t *child, uint32_t *cgen, uint8_t *type, struct arf_stat *st,
			int *have_st)
{
	*have_st = 0;
	if (len > ARF_NAME_MAX)
		return -ENAMETOOLONG;
	if (arf_ecache_get(c, dir, name, len, child, cgen, type) == 0)
		return 0;
	if (use_os(c)) {
		int rc = arf_os_lookup(c, dir, name, len, child, cgen, type);
		if (rc == 0) {
			arf_ecache_put(c, dir, name, len, *child, *cgen, *type);
			return 0;
		}
		if (rc == -ENOENT)
			return rc;
		arf_fallback(c, rc == 1 ? ARF_FALLBACK_HOPS : ARF_FALLBACK_TORN);
		if (rc != 1 && rc != ARF_ERETRY)
			return rc;
		if (rc == 1 && c->opts.shipped_lookup) {
			/* a long chain: walk the rest of it next to the data, in one
			 * run that also brings the child's attributes */
			rc = arf_prog_lookup(c, dir, name, len, child, cgen, type, st, have_st);
			if (rc == 0)
				arf_ecache_put(c, dir, name, len, *child, *cgen, *type);
			if (rc <= 0)
				return rc;
		}
	}
	int rc = arf_req_lookup(c, dir, dgen, name, len, st);
	if (rc)
		return rc;
	*child = st->ino;
	*cgen = st->gen;
	*type = (uint8_t)IFTODT(st->mode);
	*have_st = 1;
	arf_ecache_put(c, dir, name, len, *child, *cgen, *type);
	return 0;
}

int arf_v_lookup(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, struct arf_stat *out)
{
	uint64_t child;
	uint32_t cgen;
	uint8_t type;
	int have, rc;
	size_t len = strlen(name);

	if (len == 0)
		return -ENOENT;
	if (!strcmp(name, "."))
		return arf_v_getattr(c, dir, dgen, out);
	if (!strcmp(name, "..")) {
		if (use_os(c)) {
			struct arf_meta_inode in, pin;
			rc = get_inode(c, dir, dgen, &in, 0);
			if (!rc && !S_ISDIR(in.mode))
				return -ENOTDIR;
			if (!rc && in.parent &&
			    (in.parent == dir || (rc = arf_os_read_obj(c, ARF_REGION_META,
								       arf_meta_inode_off(&c->sb, in.parent),
								       &pin, sizeof(pin))) == 0)) {
				if (in.parent == dir)
					pin = in;
				if (pin.ino == in.parent) {
					arf_stat_from_inode(&pin, out);
					return 0;
				}
			}
			if (rc && rc != ARF_ERETRY)
				return rc;
			arf_fallback(c, ARF_FALLBACK_TORN);
		}
		return arf_req_lookup(c, dir, dgen, name, len, out);
	}
	rc = lookup_entry(c, dir, dgen, name, len, &child, &cgen, &type, out, &have);
	if (rc || have)
		return rc;
	rc = arf_v_getattr(c, child, cgen, out);
	if (rc == -ESTALE) {
		/* the cached or walked entry went away meanwhile: ask the server */
		arf_ecache_drop(c, dir, name, len);
		return arf_req_lookup(c, dir, dgen, name, len, out);
	}
	return rc;
}

/* A link is a mount point by its mode and its target (read only when the
 * mode says it may be one). */
static int is_mount_point(const struct arf_stat *st, const char *target)
{
	char name[ARF_PROTO_VOLUME_MAX];
	return arf_mount_point_mode(st->mode) && arf_mount_target(target, name, sizeof(name));
}

/* Hand the rest of a walk back to volumes.c: the walk met a mount point,
 * ".." at the root of a volume reached through one, or an absolute
 * symbolic link there (which starts again at the top volume's root).  rest
 * is what is left of the path (for a symbolic link: its target, then the
 * rest).  1, or -ENOMEM. */
static int hand_back(struct arf_handback *hb, int kind, uint64_t ino, uint32_t gen, uint64_t dir,
		     uint32_t dgen, const char *rest)
{
	hb->kind = kind;
	hb->ino = ino;
	hb->gen = gen;
	hb->dir = dir;
	hb->dgen = dgen;
	hb->rest = strdup(rest);
	return hb->rest ? 1 : -ENOMEM;
}

int arf_v_resolve_at(arf_client *c, uint64_t dir, uint32_t dgen, const char *path,
		     struct arf_stat *out, struct arf_handback *hb)
{
	char *buf = malloc(2 * ARF_PATH_MAX + 2), *p;
	uint8_t dtype = DT_DIR;
	int links = 0, rc = 0;

	memset(hb, 0, sizeof(*hb));
	if (!buf)
		return -ENOMEM;
	if (strlen(path) > ARF_PATH_MAX) {
		free(buf);
		return -ENAMETOOLONG;
	}
	if (dir == ARF_ROOT_INO && use_os(c)) {
		/* a deep path the entry cache does not know: one run resolves it */
		rc = arf_prog_resolve(c, path, out);
		if (rc < 0 || (rc == 0 && !arf_mount_point_mode(out->mode))) {
			free(buf);
			return rc;
		}
		rc = 0; /* walked here, a mount point at the end handed back */
	}
	strcpy(buf, path);
	p = buf;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p) /* the whole path was consumed: dir is the answer */
			break;
		char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char *after = p + len;
		while (*after == '/')
			after++;
		int last = *after == 0;
		if (dtype != DT_DIR) {
			rc = -ENOTDIR;
			goto out;
		}
		char name[ARF_NAME_MAX + 1];
		if (len > ARF_NAME_MAX) {
			rc = -ENAMETOOLONG;
			goto out;
		}
		memcpy(name, p, len);
		name[len] = 0;
		struct arf_stat st;
		uint64_t child;
		uint32_t cgen;
		uint8_t type;
		int have;
		if (!strcmp(name, ".")) {
			p = after;
			continue;
		}
		if (!strcmp(name, "..")) {
			if (c->vol_index && dir == ARF_ROOT_INO) {
				/* out of a volume reached through a mount point */
				rc = hand_back(hb, ARF_HB_DOTDOT, 0, 0, dir, dgen, after);
				goto out;
			}
			if ((rc = arf_v_lookup(c, dir, dgen, "..", &st)))
				goto out;
			dir = st.ino;
			dgen = st.gen;
			p = after;
			continue;
		}
		if ((rc = lookup_entry(c, dir, dgen, name, len, &child, &cgen, &type, &st, &have)))
			goto out;
		if (type == DT_LNK && !last) {
			/* follow a symbolic link in the middle of the path */
			char target[ARF_PATH_MAX + 1];
			if (++links > 40) {
				rc = -ELOOP;
				goto out;
			}
			if (!have && (rc = arf_v_getattr(c, child, cgen, &st)))
				goto out;
			int n = arf_v_readlink(c, child, cgen, target, sizeof(target));
			if (n < 0) {
				rc = n;
				goto out;
			}
			if (is_mount_point(&st, target)) {
				rc = hand_back(hb, ARF_HB_MOUNT, child, cgen, dir, dgen, after);
				goto out;
			}
			size_t rest = strlen(after);
			if ((size_t)n + 1 + rest > 2 * ARF_PATH_MAX) {
				rc = -ENAMETOOLONG;
				goto out;
			}
			char *nb = malloc(2 * ARF_PATH_MAX + 2);
			if (!nb) {
				rc = -ENOMEM;
				goto out;
			}
			memcpy(nb, target, (size_t)n);
			nb[n] = '/';
			memcpy(nb + n + 1, after, rest + 1);
			free(buf);
			buf = p = nb;
			if (target[0] == '/' && c->vol_index) {
				/* "/" is the top volume's root, not this one's */
				rc = hand_back(hb, ARF_HB_ABS, 0, 0, 0, 0, nb);
				goto out;
			}
			if (target[0] == '/') {
				dir = ARF_ROOT_INO;
				dgen = c->info.root_gen;
			}
			dtype = DT_DIR;
			continue;
		}
		if (type == DT_LNK && last) {
			char target[ARF_PATH_MAX + 1];
			if (!have && (rc = arf_v_getattr(c, child, cgen, &st)))
				goto out;
			if (arf_mount_point_mode(st.mode) &&
			    (rc = arf_v_readlink(c, child, cgen, target, sizeof(target))) < 0)
				goto out;
			rc = 0;
			if (is_mount_point(&st, target)) {
				rc = hand_back(hb, ARF_HB_MOUNT, child, cgen, dir, dgen, "");
				goto out;
			}
		}
		dir = child;
		dgen = cgen;
		dtype = type;
		p = after;
	}
	rc = arf_v_getattr(c, dir, dgen, out);
out:
	free(buf);
	return rc;
}

/* The one-sided read of [off+done, off+len) through in, with arf_read's
 * retries and fallback: the total count, or an error when done is 0. */
static ssize_t read_os(arf_client *c, uint64_t ino, uint32_t gen, struct arf_meta_inode *in,
		       uint64_t off, void *buf, size_t len, size_t done)
{
	uint32_t tries = 0;
	int rc;

	while (done < len) {
		size_t chunk = len - done > c->info.max_io ? c->info.max_io : len - done;
		ssize_t n = arf_os_read(c, in, off + done, (char *)buf + done, chunk);
		if (n >= 0) {
			done += (size_t)n;
			if ((size_t)n < chunk)
				break;
			continue;
		}
		if (n != ARF_ECSUM && n != ARF_ETORN && n != ARF_ETAG && n != ARF_ERETRY)
			return done ? (ssize_t)done : n;
		/* torn or stale: re-read the inode (its map may have changed) and retry */
		int why = n == ARF_ETAG ? ARF_FALLBACK_TAG : ARF_FALLBACK_TORN;

		if (++tries <= c->opts.retries) {
			ARF_CTR_ADD(c, retries, 1);
			rc = get_inode(c, ino, gen, in, 1);
			if (!rc)
				continue;
			if (rc != ARF_ERETRY)
				return done ? (ssize_t)done : rc;
			/* the inode itself kept changing: what get_inode left in `in`
			 * is a torn copy, whose map may lack blocks that would then
			 * read as holes, so never read through it */
			why = ARF_FALLBACK_TORN;
		}
		arf_fallback(c, why);
		ssize_t r = arf_req_read(c, ino, gen, off + done, (char *)buf + done, len - done);
		return r < 0 ? (done ? (ssize_t)done : r) : (ssize_t)(done + (size_t)r);
	}
	return (ssize_t)done;
}

ssize_t arf_v_read(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, void *buf, size_t len)
{
	if (!use_os(c))
		return arf_req_read(c, ino, gen, off, buf, len);
	struct arf_meta_inode in;
	int rc = get_inode(c, ino, gen, &in, 0);
	if (rc == ARF_ERETRY) {
		arf_fallback(c, ARF_FALLBACK_TORN);
		return arf_req_read(c, ino, gen, off, buf, len);
	}
	if (rc)
		return rc;
	if (S_ISDIR(in.mode))
		return -EISDIR;
	/* a sequential reader's bytes may have been read ahead (readahead.c) */
	ssize_t ra = arf_ra_take(c, &in, off, buf, len, NULL, NULL);
	size_t from = ra > 0 ? (size_t)ra : 0;
	if (from == len)
		return (ssize_t)from;
	ssize_t n = read_os(c, ino, gen, &in, off, buf, len, from);
	if (n > (ssize_t)from)
		arf_ra_note(c, &in, off + from, (size_t)n - from, len);
	return n;
}

/* READDIR, or READDIRPLUS when st is given (each child's attributes
 * with its entry; st[i] zeroed for a child gone meanwhile). */
static int req_readdir(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		       struct arf_dirent *ents, struct arf_stat *st, size_t max, size_t *n, int *eof)
{
	struct arf_proto_wr w;
	struct arf_net_buf resp;
	struct arf_proto_fh fh = { dir, dgen };

	arf_proto_wr_init(&w);
	arf_proto_put_fh(&w, &fh);
	arf_proto_put_u64(&w, cookie);
	arf_proto_put_u32(&w, (uint32_t)(max > ARF_PROTO_MAX_READDIR ? ARF_PROTO_MAX_READDIR : max));
	int rc = arf_req(c, st ? ARF_OP_READDIRPLUS : ARF_OP_READDIR, &w, &resp);
	arf_proto_wr_free(&w);
	*n = 0;
	*eof = 0;
	if (!rc) {
		struct arf_proto_rd r;
		arf_proto_rd_init(&r, resp.data, resp.len);
		uint32_t cnt = arf_proto_get_u32(&r);
		*eof = (int)arf_proto_get_u32(&r);
		for (uint32_t i = 0; i < cnt && !r.err && *n < max; i++) {
			struct arf_dirent *d = &ents[*n];
			uint32_t nl = 0;
			d->ino = arf_proto_get_u64(&r);
			d->gen = arf_proto_get_u32(&r);
			d->type = (uint8_t)arf_proto_get_u32(&r);
			d->cookie = arf_proto_get_u64(&r);
			const uint8_t *nm = arf_proto_get_bytes(&r, ARF_NAME_MAX, &nl);
			if (r.err)
				break;
			memcpy(d->name, nm, nl);
			d->name[nl] = 0;
			if (st) {
				struct arf_proto_attr a;
				memset(&st[*n], 0, sizeof(st[*n]));
				uint32_t has = arf_proto_get_u32(&r);
				if (has > 1)
					r.err = ARF_EPROTO;
				if (has == 1) {
					arf_proto_get_attr(&r, &a);
					/* another file's attributes: none (stat it) */
					if (!r.err && a.ino == d->ino && a.gen == d->gen)
						arf_stat_from_proto(&a, &st[*n]);
				}
				if (r.err)
					break;
			}
			(*n)++;
		}
		if (*n < cnt)
			*eof = 0; /* more than max came: the rest is not the end */
		if (r.err)
			rc = ARF_EPROTO;
	}
	arf_net_buf_free(&resp);
	return rc;
}

/* READDIRPLUS; -ENOSYS for good once an arfd without it said so. */
static int req_readdirplus(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
			   struct arf_dirent *ents, struct arf_stat *st, size_t max, size_t *n,
			   int *eof)
{
	if (__atomic_load_n(&c->no_readdirplus, __ATOMIC_RELAXED))
		return -ENOSYS;
	int rc = req_readdir(c, dir, dgen, cookie, ents, st, max, n, eof);
	if (rc == -ENOSYS)
		__atomic_store_n(&c->no_readdirplus, 1, __ATOMIC_RELAXED);
	return rc;
}

static int readdir_any(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		       struct arf_dirent *ents, struct arf_stat *st, size_t max, size_t *n, int *eof)
{
	if (use_os(c)) {
		/* with attributes the program saves a round per child; without, less */
		uint32_t exec_min = st ? c->pol.readdirplus_exec_min : c->pol.readdir_exec_min;
		struct arf_meta_inode in;
		int rc = 0, by_request = 0;
		for (uint32_t tries = 0; tries <= c->opts.retries; tries++) {
			rc = get_inode(c, dir, dgen, &in, tries > 0);
			if (!rc && !S_ISDIR(in.mode))
				return -ENOTDIR;
			if (!rc && tries == 0 && exec_min && in.size >= exec_min && st &&
			    (c->pol.from_transport & ARF_POLICY_READDIR_EXEC)) {
				/* a large directory with attributes, the policy left to
				 * the transport: READDIRPLUS, one request per batch, where
				 * arfd reads the entries and inodes in place (the program
				 * copies and checks each) */
				int qrc = req_readdirplus(c, dir, dgen, cookie, ents, st, max, n, eof);
				if (qrc != -ENOSYS)
					return qrc;
			}
			if (!rc && tries == 0 && exec_min && in.size >= exec_min) {
				/* a large directory: one run per batch instead of a read per entry */
				int prc = arf_prog_readdir(c, dir, dgen, cookie, ents, st, max, n, eof);
				if (prc <= 0)
					return prc;
			}
			if (!rc && tries == 0 && c->pol.readdir_req_min &&
			    in.size >= c->pol.readdir_req_min) {
				/* a READDIR reply carries names, where the one-sided listing
				 * copies whole entries and walks the pages from the first */
				arf_fallback(c, ARF_FALLBACK_POLICY);
				by_request = 1;
				break;
			}
			if (!rc && st) {
				/* one-sided listing, then each child's inode */
				rc = arf_os_readdir(c, &in, cookie, ents, max, n, eof);
				for (size_t i = 0; !rc && i < *n; i++)
					if (arf_v_getattr(c, ents[i].ino, ents[i].gen, &st[i]))
						memset(&st[i], 0, sizeof(st[i]));
				if (rc != ARF_ERETRY)
					return rc;
				ARF_CTR_ADD(c, retries, 1);
				continue;
			}
			if (!rc)
				rc = arf_os_readdir(c, &in, cookie, ents, max, n, eof);
			if (rc != ARF_ERETRY)
				break;
			ARF_CTR_ADD(c, retries, 1);
		}
		if (!by_request) {
			if (rc != ARF_ERETRY)
				return rc;
			arf_fallback(c, ARF_FALLBACK_TORN);
		}
	}
	if (st) {
		int qrc = req_readdirplus(c, dir, dgen, cookie, ents, st, max, n, eof);
		if (qrc != -ENOSYS)
			return qrc;
	}
	int rc = req_readdir(c, dir, dgen, cookie, ents, NULL, max, n, eof);
	for (size_t i = 0; st && !rc && i < *n; i++)
		if (arf_v_getattr(c, ents[i].ino, ents[i].gen, &st[i]))
			memset(&st[i], 0, sizeof(st[i]));
	return rc;
}

int arf_v_readdir(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		struct arf_dirent *ents, size_t max, size_t *n, int *eof)
{
	return readdir_any(c, dir, dgen, cookie, ents, NULL, max, n, eof);
}

int arf_v_readdirplus(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		    struct arf_dirent *ents, struct arf_stat *st, size_t max, size_t *n, int *eof)
{
	return readdir_any(c, dir, dgen, cookie, ents, st, max, n, eof);
}

int arf_v_readlink(arf_client *c, uint64_t ino, uint32_t gen, char *buf, size_t cap)
{
	if (use_os(c)) {
		struct arf_meta_inode in;
		int rc = get_inode(c, ino, gen, &in, 0);
		if (!rc) {
			if (!S_ISLNK(in.mode))
				return -EINVAL;
			if (in.size >= cap)
				return -ENAMETOOLONG;
			ssize_t n = arf_v_read(c, ino, gen, 0, buf, (size_t)in.size);
			if (n >= 0) {
				buf[n] = 0;
				return (int)n;
			}
			return (int)n;
		}
		if (rc != ARF_ERETRY)
			return rc;
		arf_fallback(c, ARF_FALLBACK_TORN);
	}
	return arf_req_readlink(c, ino, gen, buf, cap);
}

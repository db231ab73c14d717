/* SPDX-License-Identifier: MIT */
/*
 * libarf requests: every mutation, and the fallback for reads, is one
 * request carrying the caller's credentials, counted by kind.
 */
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_int.h"

static __thread int tls_cred_set;
static __thread struct arf_cred tls_cred;

void arf_set_thread_cred(const struct arf_cred *cred)
{
	if (!cred) {
		tls_cred_set = 0;
		return;
	}
	tls_cred = *cred;
	if (tls_cred.ngroups > 16)
		tls_cred.ngroups = 16;
	tls_cred_set = 1;
}

static void fill_cred(struct arf_proto_cred *pc)
{
	memset(pc, 0, sizeof(*pc));
	if (tls_cred_set) {
		pc->uid = tls_cred.uid;
		pc->gid = tls_cred.gid;
		pc->ngroups = tls_cred.ngroups;
		memcpy(pc->groups, tls_cred.groups, pc->ngroups * sizeof(pc->groups[0]));
		return;
	}
	arf_req_process_cred(pc);
}

void arf_req_process_cred(struct arf_proto_cred *pc)
{
	gid_t groups[64];
	memset(pc, 0, sizeof(*pc));
	pc->uid = (uint32_t)geteuid();
	pc->gid = (uint32_t)getegid();
	int n = getgroups(64, groups);
	for (int i = 0; i < n && pc->ngroups < ARF_PROTO_NGROUPS; i++)
		pc->groups[pc->ngroups++] = (uint32_t)groups[i];
}

int arf_req(arf_client *c, uint16_t op, const struct arf_proto_wr *args, struct arf_net_buf *resp)
{
	return arf_req_resent(c, op, args, resp, NULL);
}

int arf_req_resent(arf_client *c, uint16_t op, const struct arf_proto_wr *args,
		   struct arf_net_buf *resp, int *resent)
{
	return arf_req_as(c, op, args, resp, resent, NULL);
}

int arf_req_as(arf_client *c, uint16_t op, const struct arf_proto_wr *args,
	       struct arf_net_buf *resp, int *resent, const struct arf_proto_cred *as)
{
	struct arf_proto_wr w;
	struct arf_proto_cred pc;
	struct iovec iov[2];
	int rc;

	arf_proto_wr_init(&w);
	if (as)
		pc = *as;
	else
		fill_cred(&pc);
	arf_proto_put_cred(&w, &pc);
	if (w.err)
		return w.err;
	if (args && args->err) {
		arf_proto_wr_free(&w);
		return args->err;
	}
	iov[0].iov_base = w.buf;
	iov[0].iov_len = w.len;
	iov[1].iov_base = args ? args->buf : NULL;
	iov[1].iov_len = args ? args->len : 0;
	int idx = arf_proto_op_index(op);
	if (op != ARF_OP_PROG_LOAD && op != ARF_OP_PROG_EXEC) /* counted by progs.c */
		ARF_CTR_ADD(c, requests_by_kind[idx < 0 ? ARF_NKINDS - 1 : idx], 1);
	memset(resp, 0, sizeof(*resp));
	rc = arf_cl_call(c, op, iov, iov[1].iov_len ? 2 : 1, resp, resent);
	arf_proto_wr_free(&w);
	return rc;
}

/*
 * A mutation sent again after the connection broke (arfd restarted) may
 * have been applied by the server that went away, its reply lost; arfd
 * keeps no reply cache across restarts (NFS's duplicate request cache does
 * not survive a reboot either).  So, as NFS clients do, the sent-again
 * request's "already done" answer counts as the first one's success:
 * ENOENT from UNLINK, RMDIR or RENAME; EEXIST from an exclusive CREATE,
 * MKDIR, MKNOD, SYMLINK or LINK, once a lookup of the name finds an object
 * of the kind asked for.  replay_name (NULL: none) is that name.
 */
struct replay_name {
	uint64_t dir;
	uint32_t dgen;
	const char *name;
	uint32_t mode; /* S_IFMT of what was made; 0 = any */
	uint64_t ino;  /* LINK: the inode linked; 0 = any */
};

static int replay_done(arf_client *c, uint16_t op, int rc, const struct replay_name *rn,
		       struct arf_stat *out)
{
	struct arf_stat st;
	switch (op) {
	case ARF_OP_UNLINK:
	case ARF_OP_RMDIR:
	case ARF_OP_RENAME:
		return rc == -ENOENT;
	case ARF_OP_CREATE:
	case ARF_OP_MKDIR:
	case ARF_OP_MKNOD:
	case ARF_OP_SYMLINK:
	case ARF_OP_LINK:
		if (rc != -EEXIST || !rn || arf_req_lookup(c, rn->dir, rn->dgen, rn->name,
							   strlen(rn->name), &st))
			return 0;
		if ((rn->mode && (st.mode & S_IFMT) != rn->mode) || (rn->ino && st.ino != rn->ino))
			return 0;
		if (out)
			*out = st;
		return 1;
	default:
		return 0;
	}
}

/* A request whose reply is an attr (or nothing); rn: see replay_done. */
static int req_attr_rn(arf_client *c, uint16_t op, struct arf_proto_wr *w, struct arf_stat *out,
		       const struct replay_name *rn)
{
	struct arf_net_buf resp;
	int resent = 0;
	int rc = arf_req_resent(c, op, w, &resp, &resent);
	arf_proto_wr_free(w);
	if (rc && resent && replay_done(c, op, rc, rn, out)) {
		arf_log_msg(1, "request %u sent again after a reconnect: already done", op);
		arf_net_buf_free(&resp);
		return 0;
	}
	if (!rc && out) {
		struct arf_proto_rd r;
		struct arf_proto_attr a;
		arf_proto_rd_init(&r, resp.data, resp.len);
		arf_proto_get_attr(&r, &a);
		if (r.err)
			rc = ARF_EPROTO;
		else {
			arf_stat_from_proto(&a, out);
			arf_icache_update_stat(c, out);
		}
	}
	arf_net_buf_free(&resp);
	return rc;
}

static int req_attr(arf_client *c, uint16_t op, struct arf_proto_wr *w, struct arf_stat *out)
{
	return req_attr_rn(c, op, w, out, NULL);
}

static void put_fh(struct arf_proto_wr *w, uint64_t ino, uint32_t gen)
{
	struct arf_proto_fh fh = { ino, gen };
	arf_proto_put_fh(w, &fh);
}

static int name_ok(const char *name, size_t *len)
{
	*len = strlen(name);
	return *len == 0 ? -ENOENT : 0;
}

/* Start w, a request that changes name in (dir, dgen): the handle and the
 * name, and the directory's cached inode dropped (the change alters it).
 * -ENOENT for an empty name, w then untouched. */
static int dir_name_begin(arf_client *c, struct arf_proto_wr *w, uint64_t dir, uint32_t dgen,
			  const char *name, size_t *len)
{
	int rc = name_ok(name, len);
	if (rc)
		return rc;
	arf_proto_wr_init(w);
	put_fh(w, dir, dgen);
	arf_proto_put_bytes(w, name, (uint32_t)*len);
	arf_icache_drop(c, dir);
	return 0;
}

int arf_req_getattr(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out)
{
	struct arf_proto_wr w;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	return req_attr(c, ARF_OP_GETATTR, &w, out);
}

int arf_req_lookup(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, size_t len,
		   struct arf_stat *out)
{
	struct arf_proto_wr w;
	arf_proto_wr_init(&w);
	put_fh(&w, dir, dgen);
	arf_proto_put_bytes(&w, name, (uint32_t)len);
	return req_attr(c, ARF_OP_LOOKUP, &w, out);
}

ssize_t arf_req_read(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		struct arf_proto_wr w;
		struct arf_net_buf resp;
		uint32_t chunk = (uint32_t)(len - done > c->info.max_io ? c->info.max_io : len - done);
		arf_proto_wr_init(&w);
		put_fh(&w, ino, gen);
		arf_proto_put_u64(&w, off + done);
		arf_proto_put_u32(&w, chunk);
		int rc = arf_req(c, ARF_OP_READ, &w, &resp);
		arf_proto_wr_free(&w);
		if (rc) {
			arf_net_buf_free(&resp);
			return done ? (ssize_t)done : rc;
		}
		size_t got = resp.len > chunk ? chunk : resp.len;
		memcpy((char *)buf + done, resp.data, got);
		arf_net_buf_free(&resp);
		done += got;
		if (got < chunk)
			break;
	}
	return (ssize_t)done;
}

ssize_t arf_write(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, const void *buf,
		  size_t len)
{
	size_t done = 0;

	do {
		struct arf_proto_wr w;
		struct arf_net_buf resp;
		uint32_t chunk = (uint32_t)(len - done > c->info.max_io ? c->info.max_io : len - done);
		arf_proto_wr_init(&w);
		put_fh(&w, ino, gen);
		arf_proto_put_u64(&w, off + done);
		arf_proto_put_bytes(&w, (const char *)buf + done, chunk);
		int rc = arf_req(c, ARF_OP_WRITE, &w, &resp);
		arf_proto_wr_free(&w);
		if (rc) {
			arf_net_buf_free(&resp);
			arf_icache_drop(c, ino);
			return done ? (ssize_t)done : rc;
		}
		struct arf_proto_rd r;
		struct arf_proto_attr a;
		struct arf_stat st;
		arf_proto_rd_init(&r, resp.data, resp.len);
		uint32_t written = arf_proto_get_u32(&r);
		arf_proto_get_attr(&r, &a);
		arf_net_buf_free(&resp);
		if (r.err || written > chunk) {
			arf_icache_drop(c, ino);
			return done ? (ssize_t)done : ARF_EPROTO;
		}
		arf_stat_from_proto(&a, &st);
		arf_icache_update_stat(c, &st);
		done += written;
		if (written < chunk)
			break;
	} while (done < len);
	return (ssize_t)done;
}

int arf_create(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	       int exclusive, struct arf_stat *out)
{
	struct arf_proto_wr w;
	size_t len;
	int rc = dir_name_begin(c, &w, dir, dgen, name, &len);
	if (rc)
		return rc;
	arf_proto_put_u32(&w, mode);
	arf_proto_put_u32(&w, exclusive ? 1 : 0);
	struct replay_name rn = { dir, dgen, name, S_IFREG, 0 };
	return req_attr_rn(c, ARF_OP_CREATE, &w, out, exclusive ? &rn : NULL);
}

int arf_mkdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      struct arf_stat *out)
{
	struct arf_proto_wr w;
	size_t len;
	int rc = dir_name_begin(c, &w, dir, dgen, name, &len);
	if (rc)
		return rc;
	arf_proto_put_u32(&w, mode);
	struct replay_name rn = { dir, dgen, name, S_IFDIR, 0 };
	return req_attr_rn(c, ARF_OP_MKDIR, &w, out, &rn);
}

int arf_mknod(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      uint64_t rdev, struct arf_stat *out)
{
	struct arf_proto_wr w;
	size_t len;
	int rc = dir_name_begin(c, &w, dir, dgen, name, &len);
	if (rc)
		return rc;
	arf_proto_put_u32(&w, mode);
	arf_proto_put_u64(&w, rdev);
	struct replay_name rn = { dir, dgen, name, mode & S_IFMT, 0 };
	return req_attr_rn(c, ARF_OP_MKNOD, &w, out, &rn);
}

static int req_dir_name(arf_client *c, uint16_t op, uint64_t dir, uint32_t dgen, const char *name)
{
	struct arf_proto_wr w;
	size_t len;
	int rc = dir_name_begin(c, &w, dir, dgen, name, &len);
	if (rc)
		return rc;
	arf_ecache_drop(c, dir, name, len);
	return req_attr(c, op, &w, NULL);
}

int arf_unlink(arf_client *c, uint64_t dir, uint32_t dgen, const char *name)
{
	uint64_t child;
	uint32_t cgen;
	uint8_t type;
	if (arf_ecache_get(c, dir, name, strlen(name), &child, &cgen, &type) == 0)
		arf_icache_drop(c, child);
	return req_dir_name(c, ARF_OP_UNLINK, dir, dgen, name);
}

int arf_rmdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name)
{
	return req_dir_name(c, ARF_OP_RMDIR, dir, dgen, name);
}

int arf_rename(arf_client *c, uint64_t odir, uint32_t ogen, const char *oname, uint64_t ndir,
	       uint32_t ngen, const char *nname, unsigned flags)
{
	struct arf_proto_wr w;
	size_t olen, nlen;
	int rc;
	if ((rc = name_ok(oname, &olen)) || (rc = name_ok(nname, &nlen)))
		return rc;
	arf_proto_wr_init(&w);
	put_fh(&w, odir, ogen);
	arf_proto_put_bytes(&w, oname, (uint32_t)olen);
	put_fh(&w, ndir, ngen);
	arf_proto_put_bytes(&w, nname, (uint32_t)nlen);
	arf_proto_put_u32(&w, flags);
	arf_icache_drop(c, odir);
	arf_icache_drop(c, ndir);
	arf_ecache_drop(c, odir, oname, olen);
	arf_ecache_drop(c, ndir, nname, nlen);
	return req_attr(c, ARF_OP_RENAME, &w, NULL);
}

int arf_link(arf_client *c, uint64_t ino, uint32_t gen, uint64_t dir, uint32_t dgen,
	     const char *name, struct arf_stat *out)
{
	struct arf_proto_wr w;
	size_t len;
	int rc = name_ok(name, &len);
	if (rc)
		return rc;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	put_fh(&w, dir, dgen);
	arf_proto_put_bytes(&w, name, (uint32_t)len);
	arf_icache_drop(c, dir);
	arf_icache_drop(c, ino);
	struct replay_name rn = { dir, dgen, name, 0, ino };
	return req_attr_rn(c, ARF_OP_LINK, &w, out, &rn);
}

int arf_symlink(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, const char *target,
		struct arf_stat *out)
{
	struct arf_proto_wr w;
	size_t len;
	int rc = dir_name_begin(c, &w, dir, dgen, name, &len);
	if (rc)
		return rc;
	arf_proto_put_bytes(&w, target, (uint32_t)strlen(target));
	struct replay_name rn = { dir, dgen, name, S_IFLNK, 0 };
	return req_attr_rn(c, ARF_OP_SYMLINK, &w, out, &rn);
}

int arf_setattr(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_setattr *sa,
		struct arf_stat *out)
{
	struct arf_proto_wr w;
	struct arf_proto_setattr ps = { sa->valid, sa->mode, sa->uid, sa->gid, sa->size,
					sa->atime_ns, sa->mtime_ns };
	struct arf_stat tmp;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	arf_proto_put_setattr(&w, &ps);
	arf_icache_drop(c, ino);
	return req_attr(c, ARF_OP_SETATTR, &w, out ? out : &tmp);
}

int arf_fsync(arf_client *c, uint64_t ino, uint32_t gen)
{
	struct arf_proto_wr w;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	return req_attr(c, ARF_OP_FSYNC, &w, NULL);
}

int arf_access(arf_client *c, uint64_t ino, uint32_t gen, int mask)
{
	struct arf_proto_wr w;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	arf_proto_put_u32(&w, (uint32_t)mask);
	return req_attr(c, ARF_OP_ACCESS, &w, NULL);
}

int arf_statfs(arf_client *c, struct arf_statfs *out)
{
	struct arf_net_buf resp;
	int rc = arf_req(c, ARF_OP_STATFS, NULL, &resp);
	if (!rc) {
		struct arf_proto_rd r;
		struct arf_proto_statfs s;
		arf_proto_rd_init(&r, resp.data, resp.len);
		arf_proto_get_statfs(&r, &s);
		if (r.err)
			rc = ARF_EPROTO;
		else {
			out->bsize = s.bsize;
			out->blocks = s.blocks;
			out->bfree = s.bfree;
			out->files = s.files;
			out->ffree = s.ffree;
			out->namemax = s.namemax;
		}
	}
	arf_net_buf_free(&resp);
	return rc;
}

int arf_server_status(arf_client *c, char **json)
{
	struct arf_net_buf resp;
	int rc = arf_req(c, ARF_OP_STATUS, NULL, &resp);
	*json = NULL;
	if (!rc) {
		*json = malloc(resp.len + 1);
		if (!*json)
			rc = -ENOMEM;
		else {
			memcpy(*json, resp.data, resp.len);
			(*json)[resp.len] = 0;
		}
	}
	arf_net_buf_free(&resp);
	return rc;
}

int arf_req_readlink(arf_client *c, uint64_t ino, uint32_t gen, char *buf, size_t cap)
{
	struct arf_proto_wr w;
	struct arf_net_buf resp;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	int rc = arf_req(c, ARF_OP_READLINK, &w, &resp);
	arf_proto_wr_free(&w);
	if (!rc) {
		if (resp.len >= cap)
			rc = -ENAMETOOLONG;
		else {
			memcpy(buf, resp.data, resp.len);
			buf[resp.len] = 0;
			rc = (int)resp.len;
		}
	}
	arf_net_buf_free(&resp);
	return rc;
}

int arf_cred_token(arf_client *c, uint8_t token[ARF_TOKEN_SIZE], uint32_t *ttl_s)
{
	struct arf_net_buf resp;
	struct arf_proto_rd r;
	uint32_t n = 0;
	int rc = arf_req(c, ARF_OP_CRED_MINT, NULL, &resp);

	if (!rc) {
		arf_proto_rd_init(&r, resp.data, resp.len);
		const uint8_t *t = arf_proto_get_bytes(&r, ARF_TOKEN_SIZE, &n);
		uint32_t ttl = arf_proto_get_u32(&r);
		if (!arf_proto_rd_done(&r) || n != ARF_TOKEN_SIZE) {
			rc = ARF_EPROTO;
		} else {
			memcpy(token, t, ARF_TOKEN_SIZE);
			if (ttl_s)
				*ttl_s = ttl;
		}
	}
	arf_net_buf_free(&resp);
	return rc;
}

int arf_req_thread_cred(struct arf_proto_cred *pc)
{
	if (!tls_cred_set)
		return 0;
	fill_cred(pc);
	return 1;
}

/* SPDX-License-Identifier: MIT */
/*
 * The filesystem request protocol: names of request kinds and the
 * little-endian encoder/decoder of message bodies (see arf_proto.h).
 * The decoder is the first code to touch untrusted bytes from a peer: it
 * checks every length before reading and latches ARF_EPROTO.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arf_proto.h"

static const struct {
	uint16_t op;
	const char *name;
} op_names[ARF_PROTO_NKINDS] = {
	{ ARF_OP_GETATTR, "getattr" },   { ARF_OP_LOOKUP, "lookup" },
	{ ARF_OP_READDIR, "readdir" },   { ARF_OP_READ, "read" },
	{ ARF_OP_READLINK, "readlink" }, { ARF_OP_STATFS, "statfs" },
	{ ARF_OP_ACCESS, "access" },     { ARF_OP_CREATE, "create" },
	{ ARF_OP_MKDIR, "mkdir" },       { ARF_OP_MKNOD, "mknod" },
	{ ARF_OP_UNLINK, "unlink" },     { ARF_OP_RMDIR, "rmdir" },
	{ ARF_OP_RENAME, "rename" },     { ARF_OP_LINK, "link" },
	{ ARF_OP_SYMLINK, "symlink" },   { ARF_OP_SETATTR, "setattr" },
	{ ARF_OP_WRITE, "write" },       { ARF_OP_FSYNC, "fsync" },
	{ ARF_OP_STATUS, "status" },     { ARF_OP_PROG_LOAD, "prog_load" },
	{ ARF_OP_PROG_EXEC, "prog_exec" }, { ARF_OP_CRED_MINT, "cred_mint" },
	{ ARF_OP_CREATE_WRITE, "create_write" }, { ARF_OP_COPY, "copy" },
	{ ARF_OP_COMMIT, "commit" },
	{ ARF_OP_APPEND, "append" },     { ARF_OP_FALLOCATE, "fallocate" },
	{ ARF_OP_SEEK, "seek" },
	{ ARF_OP_LOCK, "lock" },         { ARF_OP_UNLOCK, "unlock" },
	{ ARF_OP_LOCK_RENEW, "lock_renew" }, { ARF_OP_LOCK_CANCEL, "lock_cancel" },
	{ ARF_OP_XATTR_GET, "xattr_get" }, { ARF_OP_XATTR_SET, "xattr_set" },
	{ ARF_OP_XATTR_LIST, "xattr_list" }, { ARF_OP_XATTR_REMOVE, "xattr_remove" },
	/* libarf counts the kinds above by index (ARF_NKINDS - 1 of them: the
	 * length is in its ABI, struct arf_client_stats) and those below as
	 * "other"; arfd counts every one */
	{ ARF_OP_READDIRPLUS, "readdirplus" }, { ARF_OP_LOCATE, "locate" },
	{ ARF_OP_VOLUME_IN, "volume_in" },
	{ 0, "other" },
};

const char *arf_proto_kind_name(int i)
{
	return i >= 0 && i < ARF_PROTO_NKINDS ? op_names[i].name : "unknown";
}

int arf_proto_op_index(uint16_t op)
{
	for (int i = 0; i < ARF_PROTO_NKINDS - 1; i++)
		if (op_names[i].op == op)
			return i;
	return -1;
}

const char *arf_proto_op_name(uint16_t op)
{
	int i = arf_proto_op_index(op);
	return i < 0 ? "unknown" : op_names[i].name;
}

/* ---- encoder ---- */

void arf_proto_wr_init(struct arf_proto_wr *w)
{
	memset(w, 0, sizeof(*w));
}

void arf_proto_wr_free(struct arf_proto_wr *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

void arf_proto_put(struct arf_proto_wr *w, const void *p, size_t n)
{
	if (w->err)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->len + n)
			cap *= 2;
		uint8_t *nb = realloc(w->buf, cap);
		if (!nb) {
			w->err = -ENOMEM;
			return;
		}
		w->buf = nb;
		w->cap = cap;
	}
	if (n)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

void arf_proto_put_bytes(struct arf_proto_wr *w, const void *p, uint32_t n)
{
	arf_proto_put_u32(w, n);
	arf_proto_put(w, p, n);
}

void arf_proto_put_cred(struct arf_proto_wr *w, const struct arf_proto_cred *c)
{
	uint32_t ng = c->ngroups > ARF_PROTO_NGROUPS ? ARF_PROTO_NGROUPS : c->ngroups;
	arf_proto_put_u32(w, c->uid);
	arf_proto_put_u32(w, c->gid);
	arf_proto_put_u32(w, ng);
	for (uint32_t i = 0; i < ng; i++)
		arf_proto_put_u32(w, c->groups[i]);
}

void arf_proto_put_fh(struct arf_proto_wr *w, const struct arf_proto_fh *fh)
{
	arf_proto_put_u64(w, fh->ino);
	arf_proto_put_u32(w, fh->gen);
}

void arf_proto_put_attr(struct arf_proto_wr *w, const struct arf_proto_attr *a)
{
	arf_proto_put_u64(w, a->ino);
	arf_proto_put_u32(w, a->gen);
	arf_proto_put_u32(w, a->mode);
	arf_proto_put_u32(w, a->nlink);
	arf_proto_put_u32(w, a->uid);
	arf_proto_put_u32(w, a->gid);
	arf_proto_put_u64(w, a->size);
	arf_proto_put_u64(w, a->blocks);
	arf_proto_put_u64(w, (uint64_t)a->atime_ns);
	arf_proto_put_u64(w, (uint64_t)a->mtime_ns);
	arf_proto_put_u64(w, (uint64_t)a->ctime_ns);
	arf_proto_put_u64(w, a->rdev);
}

void arf_proto_put_setattr(struct arf_proto_wr *w, const struct arf_proto_setattr *s)
{
	arf_proto_put_u32(w, s->valid);
	arf_proto_put_u32(w, s->mode);
	arf_proto_put_u32(w, s->uid);
	arf_proto_put_u32(w, s->gid);
	arf_proto_put_u64(w, s->size);
	arf_proto_put_u64(w, (uint64_t)s->atime_ns);
	arf_proto_put_u64(w, (uint64_t)s->mtime_ns);
}

void arf_proto_put_statfs(struct arf_proto_wr *w, const struct arf_proto_statfs *s)
{
	arf_proto_put_u64(w, s->bsize);
	arf_proto_put_u64(w, s->blocks);
	arf_proto_put_u64(w, s->bfree);
	arf_proto_put_u64(w, s->files);
	arf_proto_put_u64(w, s->ffree);
	arf_proto_put_u64(w, s->namemax);
}

void arf_proto_put_wcc(struct arf_proto_wr *w, const struct arf_proto_wcc *v, uint32_t n)
{
	arf_proto_put_u32(w, n);
	for (uint32_t i = 0; i < n; i++) {
		arf_proto_put_fh(w, &v[i].dir);
		arf_proto_put_u64(w, (uint64_t)v[i].pre_ctime_ns);
		arf_proto_put_attr(w, &v[i].post);
	}
}

void arf_proto_put_info(struct arf_proto_wr *w, const struct arf_proto_info *i)
{
	arf_proto_put_u32(w, i->version);
	arf_proto_put_u32(w, i->flags);
	arf_proto_put_u64(w, i->incarnation);
	arf_proto_put_u32(w, i->max_io);
	arf_proto_put_u32(w, i->root_gen);
	arf_proto_put(w, i->export_name, sizeof(i->export_name));
	arf_proto_put(w, i->super, sizeof(i->super));
}

void arf_proto_put_hello(struct arf_proto_wr *w, const struct arf_proto_hello *h)
{
	arf_proto_put_u32(w, h->version);
	arf_proto_put_u32(w, h->flags);
	arf_proto_put(w, h->path, sizeof(h->path));
	if (h->flags & ARF_PROTO_HELLO_TOKEN)
		arf_proto_put(w, h->token, sizeof(h->token));
	if (h->flags & ARF_PROTO_HELLO_CLIENT)
		arf_proto_put(w, h->client, sizeof(h->client));
	if (h->flags & ARF_PROTO_HELLO_VOLUME)
		arf_proto_put(w, h->volume, sizeof(h->volume));
}

static void put_str(struct arf_proto_wr *w, const char *s, size_t max)
{
	arf_proto_put_bytes(w, s, (uint32_t)strnlen(s, max - 1));
}

void arf_proto_put_location(struct arf_proto_wr *w, const struct arf_proto_location *l)
{
	arf_proto_put_u32(w, l->flags);
	put_str(w, l->server, sizeof(l->server));
	put_str(w, l->address, sizeof(l->address));
	arf_proto_put_u32(w, l->port);
	arf_proto_put_u32(w, l->rdma_port);
	put_str(w, l->state, sizeof(l->state));
	arf_proto_put_u64(w, l->version);
}

void arf_proto_put_prog_result(struct arf_proto_wr *w, const struct arf_proto_prog_result *r)
{
	arf_proto_put_u64(w, r->r0);
	arf_proto_put_u64(w, r->insns);
	arf_proto_put_bytes(w, r->out, r->out_len);
}

void arf_proto_put_prog_error(struct arf_proto_wr *w, const struct arf_proto_prog_error *e)
{
	size_t n = strnlen(e->msg, sizeof(e->msg) - 1);
	arf_proto_put_u32(w, e->pc);
	arf_proto_put_u64(w, e->insns);
	arf_proto_put_bytes(w, e->msg, (uint32_t)n);
}

/* ---- decoder ---- */

void arf_proto_get(struct arf_proto_rd *r, void *p, size_t n)
{
	if (r->err || n > r->len - r->pos) {
		r->err = ARF_EPROTO;
		memset(p, 0, n);
		return;
	}
	memcpy(p, r->p + r->pos, n);
	r->pos += n;
}

const uint8_t *arf_proto_get_bytes(struct arf_proto_rd *r, uint32_t max, uint32_t *n)
{
	uint32_t len = arf_proto_get_u32(r);
	*n = 0;
	if (r->err || len > max || len > r->len - r->pos) {
		r->err = ARF_EPROTO;
		return NULL;
	}
	const uint8_t *p = r->p + r->pos;
	r->pos += len;
	*n = len;
	return p;
}

void arf_proto_get_cred(struct arf_proto_rd *r, struct arf_proto_cred *c)
{
	memset(c, 0, sizeof(*c));
	c->uid = arf_proto_get_u32(r);
	c->gid = arf_proto_get_u32(r);
	c->ngroups = arf_proto_get_u32(r);
	if (c->ngroups > ARF_PROTO_NGROUPS) {
		r->err = ARF_EPROTO;
		c->ngroups = 0;
		return;
	}
	for (uint32_t i = 0; i < c->ngroups; i++)
		c->groups[i] = arf_proto_get_u32(r);
}

void arf_proto_get_fh(struct arf_proto_rd *r, struct arf_proto_fh *fh)
{
	fh->ino = arf_proto_get_u64(r);
	fh->gen = arf_proto_get_u32(r);
}

void arf_proto_get_attr(struct arf_proto_rd *r, struct arf_proto_attr *a)
{
	a->ino = arf_proto_get_u64(r);
	a->gen = arf_proto_get_u32(r);
	a->mode = arf_proto_get_u32(r);
	a->nlink = arf_proto_get_u32(r);
	a->uid = arf_proto_get_u32(r);
	a->gid = arf_proto_get_u32(r);
	a->size = arf_proto_get_u64(r);
	a->blocks = arf_proto_get_u64(r);
	a->atime_ns = (int64_t)arf_proto_get_u64(r);
	a->mtime_ns = (int64_t)arf_proto_get_u64(r);
	a->ctime_ns = (int64_t)arf_proto_get_u64(r);
	a->rdev = arf_proto_get_u64(r);
}

void arf_proto_get_setattr(struct arf_proto_rd *r, struct arf_proto_setattr *s)
{
	s->valid = arf_proto_get_u32(r);
	s->mode = arf_proto_get_u32(r);
	s->uid = arf_proto_get_u32(r);
	s->gid = arf_proto_get_u32(r);
	s->size = arf_proto_get_u64(r);
	s->atime_ns = (int64_t)arf_proto_get_u64(r);
	s->mtime_ns = (int64_t)arf_proto_get_u64(r);
}

void arf_proto_get_statfs(struct arf_proto_rd *r, struct arf_proto_statfs *s)
{
	s->bsize = arf_proto_get_u64(r);
	s->blocks = arf_proto_get_u64(r);
	s->bfree = arf_proto_get_u64(r);
	s->files = arf_proto_get_u64(r);
	s->ffree = arf_proto_get_u64(r);
	s->namemax = arf_proto_get_u64(r);
}

uint32_t arf_proto_get_wcc(struct arf_proto_rd *r, struct arf_proto_wcc *v, uint32_t max)
{
	if (r->err || r->pos == r->len)
		return 0;
	uint32_t n = arf_proto_get_u32(r);
	if (n > max) {
		r->err = ARF_EPROTO;
		return 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		arf_proto_get_fh(r, &v[i].dir);
		v[i].pre_ctime_ns = (int64_t)arf_proto_get_u64(r);
		arf_proto_get_attr(r, &v[i].post);
	}
	return r->err ? 0 : n;
}

void arf_proto_get_info(struct arf_proto_rd *r, struct arf_proto_info *i)
{
	i->version = arf_proto_get_u32(r);
	i->flags = arf_proto_get_u32(r);
	i->incarnation = arf_proto_get_u64(r);
	i->max_io = arf_proto_get_u32(r);
	i->root_gen = arf_proto_get_u32(r);
	arf_proto_get(r, i->export_name, sizeof(i->export_name));
	i->export_name[sizeof(i->export_name) - 1] = 0;
	arf_proto_get(r, i->super, sizeof(i->super));
}

void arf_proto_get_hello(struct arf_proto_rd *r, struct arf_proto_hello *h)
{
	h->version = arf_proto_get_u32(r);
	h->flags = arf_proto_get_u32(r);
	arf_proto_get(r, h->path, sizeof(h->path));
	h->path[sizeof(h->path) - 1] = 0;
	if (h->flags & ARF_PROTO_HELLO_TOKEN)
		arf_proto_get(r, h->token, sizeof(h->token));
	else
		memset(h->token, 0, sizeof(h->token));
	if (h->flags & ARF_PROTO_HELLO_CLIENT)
		arf_proto_get(r, h->client, sizeof(h->client));
	else
		memset(h->client, 0, sizeof(h->client));
	if (h->flags & ARF_PROTO_HELLO_VOLUME)
		arf_proto_get(r, h->volume, sizeof(h->volume));
	else
		memset(h->volume, 0, sizeof(h->volume));
	h->volume[sizeof(h->volume) - 1] = 0;
}

/* bytes of at most max - 1 into a NUL-terminated buf of max */
static void get_str(struct arf_proto_rd *r, char *buf, size_t max)
{
	uint32_t n = 0;
	const uint8_t *p = arf_proto_get_bytes(r, (uint32_t)max - 1, &n);
	if (p)
		memcpy(buf, p, n);
	buf[p ? n : 0] = 0;
}

void arf_proto_get_location(struct arf_proto_rd *r, struct arf_proto_location *l)
{
	l->flags = arf_proto_get_u32(r);
	get_str(r, l->server, sizeof(l->server));
	get_str(r, l->address, sizeof(l->address));
	l->port = arf_proto_get_u32(r);
	l->rdma_port = arf_proto_get_u32(r);
	get_str(r, l->state, sizeof(l->state));
	l->version = arf_proto_get_u64(r);
}

const char *arf_proto_get_name(struct arf_proto_rd *r, uint32_t *n)
{
	const uint8_t *p = arf_proto_get_bytes(r, 4096, n);
	if (p && *n == 0)
		r->err = ARF_EPROTO;
	return (const char *)p;
}

void arf_proto_get_prog_result(struct arf_proto_rd *r, struct arf_proto_prog_result *res)
{
	res->r0 = arf_proto_get_u64(r);
	res->insns = arf_proto_get_u64(r);
	res->out = arf_proto_get_bytes(r, UINT32_MAX, &res->out_len);
}

void arf_proto_get_prog_error(struct arf_proto_rd *r, struct arf_proto_prog_error *e)
{
	uint32_t n = 0;
	e->pc = arf_proto_get_u32(r);
	e->insns = arf_proto_get_u64(r);
	const uint8_t *m = arf_proto_get_bytes(r, UINT32_MAX, &n);
	if (n >= sizeof(e->msg))
		n = sizeof(e->msg) - 1;
	if (m)
		memcpy(e->msg, m, n);
	e->msg[m ? n : 0] = 0;
}

/* ---- locks ---- */

void arf_proto_put_lock_req(struct arf_proto_wr *w, const struct arf_proto_lock_req *l)
{
	arf_proto_put_u64(w, l->client);
	arf_proto_put_u64(w, l->lease);
	arf_proto_put_u64(w, l->owner);
	arf_proto_put_u32(w, l->pid);
	arf_proto_put_u32(w, l->kind);
	arf_proto_put_u32(w, l->type);
	arf_proto_put_u32(w, l->flags);
	arf_proto_put_u64(w, l->start);
	arf_proto_put_u64(w, l->end);
	arf_proto_put_u64(w, l->wait_id);
	arf_proto_put_u32(w, l->wait_ms);
}

void arf_proto_get_lock_req(struct arf_proto_rd *r, struct arf_proto_lock_req *l)
{
	l->client = arf_proto_get_u64(r);
	l->lease = arf_proto_get_u64(r);
	l->owner = arf_proto_get_u64(r);
	l->pid = arf_proto_get_u32(r);
	l->kind = arf_proto_get_u32(r);
	l->type = arf_proto_get_u32(r);
	l->flags = arf_proto_get_u32(r);
	l->start = arf_proto_get_u64(r);
	l->end = arf_proto_get_u64(r);
	l->wait_id = arf_proto_get_u64(r);
	l->wait_ms = arf_proto_get_u32(r);
}

void arf_proto_put_lock_hdr(struct arf_proto_wr *w, const struct arf_proto_lock_hdr *h)
{
	arf_proto_put_u32(w, h->result);
	arf_proto_put_u64(w, h->lease);
	arf_proto_put_u32(w, h->lease_ms);
	arf_proto_put_u64(w, h->seq);
}

void arf_proto_get_lock_hdr(struct arf_proto_rd *r, struct arf_proto_lock_hdr *h)
{
	h->result = arf_proto_get_u32(r);
	h->lease = arf_proto_get_u64(r);
	h->lease_ms = arf_proto_get_u32(r);
	h->seq = arf_proto_get_u64(r);
}

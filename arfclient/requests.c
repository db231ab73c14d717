/* SPDX-License-Identifier: MIT */
/*
 * libarf requests: every mutation, and the fallback for reads, is one
 * request carrying the caller's credentials, counted by kind.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_int.h"

static __thread int tls_cred_set;
static __thread struct arf_cred tls_cred;
static __thread int tls_umask = -1;

void arf_set_thread_umask(int umask)
{
	tls_umask = umask < 0 ? -1 : umask & 0777;
}

/* A create's optional last field: the umask the server applies unless the
 * directory has a default ACL (the file inherits that instead). */
static void put_umask(struct arf_proto_wr *w)
{
	if (tls_umask >= 0)
		arf_proto_put_u32(w, (uint32_t)tls_umask);
}

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
		ARF_CTR_ADD(c, requests_by_kind[arf_kind_slot(idx)], 1);
	memset(resp, 0, sizeof(*resp));
	rc = arf_cl_call(c, op, iov, iov[1].iov_len ? 2 : 1, resp, resent);
	arf_proto_wr_free(&w);
	return rc;
}

/*
 * A mutation sent again after the connection broke (arfd restarted) may
 * have been applied by the server that went away, its reply lost.  It is
 * sent again with the request id it had (conn.c), and arfd answers it from
 * its reply cache, which it writes in the mutation's own RocksDB batch
 * (arfd/replies.c): the first reply, not ENOENT from an unlink or EEXIST
 * from an exclusive create done twice.  So an error here is the server's
 * real answer, and is never taken for "already done" as NFS clients
 * guess (a name another client removed meanwhile is not this call's).
 */
/* The calling thread's last change of names (arf_last_dir_change). */
static __thread const arf_client *tls_change_c;
static __thread struct arf_dir_change tls_change;

const arf_client *arf_change_client(void)
{
	return tls_change_c;
}

int arf_v_last_dir_change(arf_client *c, struct arf_dir_change *out)
{
	if (tls_change_c != c || !tls_change.n) {
		memset(out, 0, sizeof(*out));
		return -ENOENT;
	}
	*out = tls_change;
	return 0;
}

void arf_change_begin(arf_client *c)
{
	tls_change_c = c;
	tls_change.n = 0;
}

void arf_change_wcc(arf_client *c, struct arf_proto_rd *r)
{
	struct arf_proto_wcc v[ARF_PROTO_MAX_WCC];
	uint32_t n = arf_proto_get_wcc(r, v, ARF_PROTO_MAX_WCC);

	tls_change_c = c;
	tls_change.n = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct arf_stat st;
		arf_stat_from_proto(&v[i].post, &st);
		if (st.ino != v[i].dir.ino || st.gen != v[i].dir.gen)
			continue; /* not the directory it names: believe none of it */
		tls_change.dir[tls_change.n].pre_ctime_ns = v[i].pre_ctime_ns;
		tls_change.dir[tls_change.n].post = st;
		tls_change.n++;
		/* the kernel asks for a changed directory's attributes next: have them */
		arf_icache_update_stat(c, &st);
	}
}

/* The objs part after a wcc (UNLINK, RMDIR, RENAME): what became of the
 * files the names named, dropped from the cache or refreshed in it. */
static void change_objs(arf_client *c, struct arf_proto_rd *r)
{
	if (r->err || r->pos == r->len)
		return; /* an older server */
	uint32_t n = arf_proto_get_u32(r);
	for (uint32_t i = 0; i < n && i < ARF_PROTO_MAX_WCC && !r->err; i++) {
		struct arf_proto_fh fh;
		struct arf_proto_attr a = { 0 };
		struct arf_stat st;
		arf_proto_get_fh(r, &fh);
		uint32_t live = arf_proto_get_u32(r);
		if (live)
			arf_proto_get_attr(r, &a);
		if (r->err)
			break;
		arf_stat_from_proto(&a, &st);
		if (live && st.ino == fh.ino && st.gen == fh.gen)
			arf_icache_update_stat(c, &st);
		else
			arf_icache_drop(c, fh.ino);
	}
}

/* A request whose reply is an attr (when out is given), then the wcc of a
 * change of names (when wcc). */
static int req_attr_wcc(arf_client *c, uint16_t op, struct arf_proto_wr *w, struct arf_stat *out,
			int wcc)
{
	struct arf_net_buf resp;
	if (wcc)
		arf_change_begin(c);
	int rc = arf_req(c, op, w, &resp);
	arf_proto_wr_free(w);
	if (!rc && (out || wcc)) {
		struct arf_proto_rd r;
		struct arf_proto_attr a;
		arf_proto_rd_init(&r, resp.data, resp.len);
		if (out)
			arf_proto_get_attr(&r, &a);
		if (r.err) {
			rc = ARF_EPROTO;
		} else if (out) {
			arf_stat_from_proto(&a, out);
			arf_icache_update_stat(c, out);
		}
		if (!rc && wcc)
			arf_change_wcc(c, &r);
		if (!rc && (op == ARF_OP_UNLINK || op == ARF_OP_RMDIR || op == ARF_OP_RENAME))
			change_objs(c, &r);
	}
	arf_net_buf_free(&resp);
	return rc;
}

static int req_attr(arf_client *c, uint16_t op, struct arf_proto_wr *w, struct arf_stat *out)
{
	return req_attr_wcc(c, op, w, out, 0);
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

/* A request that makes name in dir: its reply names the new entry, which
 * the entry cache keeps (the kernel looks a rename's target up again,
 * and a name just made is often used at once).  tmp: out's stand-in. */
static int req_made(arf_client *c, uint16_t op, struct arf_proto_wr *w, struct arf_stat *out,
		    uint64_t dir, const char *name, size_t len)
{
	struct arf_stat tmp;
	struct arf_stat *st = out ? out : &tmp;
	int rc = req_attr_wcc(c, op, w, st, 1);
	if (!rc)
		arf_ecache_put(c, dir, name, len, st->ino, st->gen, (uint8_t)IFTODT(st->mode));
	return rc;
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

/* COMMIT: everything this server applied so far durable (fh may be 0, 0);
 * the kept writes it covers are dropped.  Then a re-send's failure for ino
 * (0: any), if one waits. */
static int commit_send(arf_client *c, uint64_t ino, uint32_t gen, struct arf_wlog_commit *cm,
		       uint64_t *dropped)
{
	struct arf_proto_wr w;
	struct arf_net_buf resp;

	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	arf_proto_put_u64(&w, 0);
	int rc = arf_req(c, ARF_OP_COMMIT, &w, &resp);
	arf_proto_wr_free(&w);
	if (!rc)
		rc = arf_wlog_commit_reply(&resp, cm);
	arf_net_buf_free(&resp);
	if (!rc) {
		ARF_CTR_ADD(c, commits, 1);
		*dropped = arf_wlog_committed(c, cm->verifier, cm->durable);
	}
	return rc;
}

int64_t arf_v_commit_behind(arf_client *c)
{
	struct arf_wlog_commit cm;
	uint64_t dropped = 0;
	int rc = commit_send(c, 0, 0, &cm, &dropped);
	return rc ? rc : (int64_t)dropped;
}

static int commit(arf_client *c, uint64_t ino, uint32_t gen)
{
	struct arf_wlog_commit cm;
	uint64_t dropped;
	int rc = commit_send(c, ino, gen, &cm, &dropped);

	if (!rc) {
		/* durable means all of it.  A write kept under an incarnation
		 * that no replay covered cannot be sent now (a newer write may
		 * have gone over it since): keeps are checked against the
		 * incarnation (arf_cl_keep_current), so none should be here;
		 * if one is, the commit says its data may be lost */
		if (arf_wlog_stale(c, cm.verifier) && arf_cl_drop_stale(c, cm.verifier)) {
			arf_log_msg(0, "COMMIT: writes kept under an earlier incarnation of arfd were "
				    "never re-sent: reporting EIO");
			rc = -EIO;
		}
	}
	int err = arf_wlog_error(c, ino);
	return rc ? rc : err;
}

/* A write longer than PIECE goes as pieces of PIECE bytes, up to
 * ARF_CL_PIECES_MAX of them in flight together: arfd applies one while the
 * next arrives.  On an export whose writes are unstable a piece of at
 * least PRECOPY_MIN bytes is copied for keeping while it is in flight, a
 * shorter one after its reply.  A 1 MiB write through the mount (queue
 * depth 1, 2 cores, interleaved runs): 1,116 writes/s whole and copied
 * after the reply, 1,336 in two pieces, 1,379 with the copy made in flight. */
#define PIECE (512u << 10)
#define PRECOPY_MIN ARF_WLOG_PRECOPY_MIN

struct wpiece {
	struct arf_proto_wr h, w;
	struct iovec iov[3];
	const uint8_t *src;
	uint32_t chunk;
	struct arf_wlog_ent *keep; /* prepared for keeping, or NULL */
	uint32_t written;          /* out (piece_done) */
	int rc;                    /* out (piece_done) */
};

struct wround {
	arf_client *c;
	const struct arf_proto_cred *cred;
	uint64_t ino;
	uint32_t gen;
	int full;                  /* a keep reached the bound, or failed: commit */
	struct arf_cl_piece cp[ARF_CL_PIECES_MAX];
	struct wpiece p[ARF_CL_PIECES_MAX];
	size_t n;
};

static void precopy(void *arg)
{
	struct wround *r = arg;
	for (size_t i = 0; i < r->n; i++)
		if (r->p[i].keep)
			memcpy(arf_wlog_prepared_data(r->p[i].keep), r->p[i].src, r->p[i].chunk);
}

/* Piece i's kept copy, put in the write log (under the connection's lock:
 * arf_cl_call_pieces or arf_cl_keep_current). */
struct pkeep {
	struct wround *r;
	struct wpiece *p;
	const struct arf_wlog_write *wr;
	int full;
};

static void piece_keep(void *arg)
{
	struct pkeep *k = arg;
	struct wround *r = k->r;
	struct wpiece *p = k->p;

	k->full = p->keep ? arf_wlog_keep_prepared(r->c, p->keep, r->cred, r->ino, r->gen,
						   k->wr->off, p->written, k->wr->verifier,
						   k->wr->seq)
			  : arf_wlog_keep(r->c, r->cred, r->ino, r->gen, k->wr->off, p->src,
					  p->written, k->wr->verifier, k->wr->seq);
	p->keep = NULL;
}

/* Piece i's answer: its reply's attributes taken, its bytes kept when the
 * write is unstable.  arf_cl_call_pieces calls it for every piece that has
 * its answer before it sends any piece again, so that the reconnection's
 * replay finds every write this server applied in the log; a piece sent
 * again is kept only if its server is still the connection's, else sent
 * once more (arf_cl_keep_current). */
static void piece_done(void *arg, size_t i)
{
	struct wround *r = arg;
	struct wpiece *p = &r->p[i];
	arf_client *c = r->c;
	struct arf_proto_attr a;
	struct arf_wlog_write wr;
	int rc = r->cp[i].rc;

	for (;;) {
		p->written = 0;
		if (!rc)
			rc = arf_wlog_write_reply(&r->cp[i].resp, &p->written, &a, &wr);
		arf_net_buf_free(&r->cp[i].resp);
		if (!rc && p->written > p->chunk)
			rc = ARF_EPROTO;
		p->rc = rc;
		if (rc) {
			p->written = 0;
			arf_wlog_discard(c, p->keep);
			arf_icache_drop(c, r->ino);
			return;
		}
		struct arf_stat st;
		arf_stat_from_proto(&a, &st);
		arf_icache_update_stat(c, &st);
		if (!p->written || (wr.flags & ARF_PROTO_WRITE_STABLE)) {
			arf_wlog_discard(c, p->keep);
			return;
		}
		struct pkeep k = { r, p, &wr, 0 };
		if (!r->cp[i].unlocked) {
			piece_keep(&k); /* under the read side already */
		} else if (!arf_cl_keep_current(c, wr.verifier, piece_keep, &k)) {
			rc = arf_cl_call(c, ARF_OP_WRITE, r->cp[i].iov, r->cp[i].iovcnt,
					 &r->cp[i].resp, NULL);
			continue; /* its server restarted after answering: once more */
		}
		r->full |= k.full != 0;
		return;
	}
}

/*
 * Writes are unstable on a default export (NFSv3's): the server applies
 * them at once and answers before they are durable, with its verifier and
 * the write's sequence; the client keeps each one (wlog.c) until a COMMIT
 * covers it, and re-sends it if the server restarts first.  The bytes go as
 * a separate piece of the request, not copied into it.  Of pieces in flight
 * together, every one the server applied is kept, and the bytes counted
 * written are those up to the first that failed or came short.
 */
ssize_t arf_v_write(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, const void *buf,
		  size_t len)
{
	return arf_v_write_again(c, ino, gen, off, buf, len, 0, 0, NULL);
}

ssize_t arf_v_write_again(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off,
			  const void *buf, size_t len, uint64_t first_id, size_t first_len,
			  const struct arf_proto_cred *cred)
{
	struct arf_proto_cred pc;
	const int unstable = !(c->info.flags & ARF_PROTO_INFO_SYNC);
	struct wround r = { .c = c, .cred = &pc, .ino = ino, .gen = gen };
	size_t done = 0;
	int err = 0, stop = 0;

	if (cred)
		pc = *cred;
	else
		fill_cred(&pc);
	do {
		size_t at = done;
		r.n = 0;
		do {
			struct wpiece *p = &r.p[r.n];
			size_t left = len - at;
			p->chunk = (uint32_t)(left > c->info.max_io ? c->info.max_io : left);
			if (p->chunk > PIECE && left > PIECE)
				p->chunk = PIECE;
			if (first_id && !r.n && first_len && first_len <= left)
				p->chunk = (uint32_t)first_len; /* as it went the first time */
			p->src = (const uint8_t *)buf + at;
			p->keep = NULL;
			arf_proto_wr_init(&p->h);
			arf_proto_put_cred(&p->h, &pc);
			arf_proto_wr_init(&p->w);
			put_fh(&p->w, ino, gen);
			arf_proto_put_u64(&p->w, off + at);
			arf_proto_put_u32(&p->w, p->chunk); /* bytes(): the length, then the data */
			p->iov[0] = (struct iovec){ p->h.buf, p->h.len };
			p->iov[1] = (struct iovec){ p->w.buf, p->w.len };
			p->iov[2] = (struct iovec){ (void *)p->src, p->chunk };
			r.cp[r.n] = (struct arf_cl_piece){ .iov = p->iov, .iovcnt = p->chunk ? 3 : 2 };
			if (p->h.err || p->w.err) {
				arf_proto_wr_free(&p->h);
				arf_proto_wr_free(&p->w);
				if (!r.n)
					err = p->h.err ? p->h.err : p->w.err;
				break;
			}
			if (unstable && p->chunk >= PRECOPY_MIN)
				p->keep = arf_wlog_prepare(c, p->chunk);
			at += p->chunk;
			r.n++;
		} while (r.n < ARF_CL_PIECES_MAX && at < len);
		if (!r.n)
			break;
		ARF_CTR_ADD(c, requests_by_kind[arf_proto_op_index(ARF_OP_WRITE)], r.n);
		arf_cl_call_pieces(c, ARF_OP_WRITE, first_id, r.cp, r.n, precopy, piece_done, &r);
		first_id = 0;
		for (size_t i = 0; i < r.n; i++) {
			struct wpiece *p = &r.p[i];
			arf_proto_wr_free(&p->h);
			arf_proto_wr_free(&p->w);
			if (stop)
				continue; /* applied or not, past what is counted */
			if (p->rc) {
				err = p->rc;
				stop = 1;
				continue;
			}
			done += p->written;
			if (p->written < p->chunk)
				stop = 1;
		}
	} while (!stop && !err && done < len);
	if (err && !done) {
		if (r.full)
			commit(c, 0, 0);
		return err;
	}
	if (r.full) {
		int rc = commit(c, 0, 0);
		if (rc && !err)
			return rc; /* what was written may not last: say so now */
	}
	return (ssize_t)done;
}

int arf_v_create(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	       int exclusive, struct arf_stat *out)
{
	struct arf_proto_wr w;
	size_t len;
	int rc = dir_name_begin(c, &w, dir, dgen, name, &len);
	if (rc)
		return rc;
	arf_proto_put_u32(&w, mode);
	arf_proto_put_u32(&w, exclusive ? 1 : 0);
	put_umask(&w);
	return req_made(c, ARF_OP_CREATE, &w, out, dir, name, len);
}

int arf_v_mkdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      struct arf_stat *out)
{
	struct arf_proto_wr w;
	size_t len;
	int rc = dir_name_begin(c, &w, dir, dgen, name, &len);
	if (rc)
		return rc;
	arf_proto_put_u32(&w, mode);
	put_umask(&w);
	return req_made(c, ARF_OP_MKDIR, &w, out, dir, name, len);
}

int arf_v_mknod(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      uint64_t rdev, struct arf_stat *out)
{
	struct arf_proto_wr w;
	size_t len;
	int rc = dir_name_begin(c, &w, dir, dgen, name, &len);
	if (rc)
		return rc;
	arf_proto_put_u32(&w, mode);
	arf_proto_put_u64(&w, rdev);
	put_umask(&w);
	return req_made(c, ARF_OP_MKNOD, &w, out, dir, name, len);
}

static int req_dir_name(arf_client *c, uint16_t op, uint64_t dir, uint32_t dgen, const char *name)
{
	struct arf_proto_wr w;
	size_t len;
	int rc = dir_name_begin(c, &w, dir, dgen, name, &len);
	if (rc)
		return rc;
	arf_ecache_drop(c, dir, name, len);
	return req_attr_wcc(c, op, &w, NULL, 1);
}

int arf_v_unlink(arf_client *c, uint64_t dir, uint32_t dgen, const char *name)
{
	uint64_t child;
	uint32_t cgen;
	uint8_t type;
	if (arf_ecache_get(c, dir, name, strlen(name), &child, &cgen, &type) == 0)
		arf_icache_drop(c, child);
	return req_dir_name(c, ARF_OP_UNLINK, dir, dgen, name);
}

int arf_v_rmdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name)
{
	return req_dir_name(c, ARF_OP_RMDIR, dir, dgen, name);
}

int arf_v_rename(arf_client *c, uint64_t odir, uint32_t ogen, const char *oname, uint64_t ndir,
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
	uint64_t child = 0;
	uint32_t cgen = 0;
	uint8_t type = 0;
	int moved = arf_ecache_get(c, odir, oname, olen, &child, &cgen, &type) == 0;
	arf_ecache_drop(c, odir, oname, olen);
	arf_ecache_drop(c, ndir, nname, nlen);
	rc = req_attr_wcc(c, ARF_OP_RENAME, &w, NULL, 1);
	if (!rc && moved && !(flags & ~ARF_RENAME_NOREPLACE)) /* not an exchange */
		arf_ecache_put(c, ndir, nname, nlen, child, cgen, type); /* the name moved with it */
	return rc;
}

int arf_v_link(arf_client *c, uint64_t ino, uint32_t gen, uint64_t dir, uint32_t dgen,
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
	return req_made(c, ARF_OP_LINK, &w, out, dir, name, len);
}

int arf_v_symlink(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, const char *target,
		struct arf_stat *out)
{
	struct arf_proto_wr w;
	size_t len;
	int rc = dir_name_begin(c, &w, dir, dgen, name, &len);
	if (rc)
		return rc;
	arf_proto_put_bytes(&w, target, (uint32_t)strlen(target));
	return req_made(c, ARF_OP_SYMLINK, &w, out, dir, name, len);
}

int arf_v_setattr(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_setattr *sa,
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
	return req_attr_wcc(c, ARF_OP_SETATTR, &w, out ? out : &tmp, 1);
}

int arf_v_fsync(arf_client *c, uint64_t ino, uint32_t gen)
{
	return commit(c, ino, gen);
}

int arf_v_flush(arf_client *c, uint64_t ino, uint32_t gen)
{
	/* nothing of the file waits for a commit: no round trip */
	if (!arf_wlog_holds(c, ino))
		return 0;
	return commit(c, ino, gen);
}

int arf_v_access(arf_client *c, uint64_t ino, uint32_t gen, int mask)
{
	struct arf_proto_wr w;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	arf_proto_put_u32(&w, (uint32_t)mask);
	return req_attr(c, ARF_OP_ACCESS, &w, NULL);
}

int arf_v_statfs(arf_client *c, struct arf_statfs *out)
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

int arf_locate(arf_client *c, const char *volume, struct arf_location *out)
{
	struct arf_proto_wr w;
	struct arf_net_buf resp;
	size_t len = strlen(volume);

	memset(out, 0, sizeof(*out));
	if (!len || len >= sizeof(out->server))
		return -EINVAL;
	arf_proto_wr_init(&w);
	arf_proto_put_bytes(&w, volume, (uint32_t)len);
	memset(&resp, 0, sizeof(resp));
	int rc = w.err ? w.err : arf_req(c, ARF_OP_LOCATE, &w, &resp);
	arf_proto_wr_free(&w);
	if (rc) {
		arf_net_buf_free(&resp); /* an error's body */
		return rc;
	}
	struct arf_proto_rd r;
	struct arf_proto_location l;
	arf_proto_rd_init(&r, resp.data, resp.len);
	arf_proto_get_location(&r, &l);
	if (!arf_proto_rd_done(&r))
		rc = -EIO; /* a malformed reply */
	arf_net_buf_free(&resp);
	if (rc)
		return rc;
	out->here = !!(l.flags & ARF_PROTO_LOC_HERE);
	out->in_cell = !!(l.flags & ARF_PROTO_LOC_CELL);
	out->live = !!(l.flags & ARF_PROTO_LOC_LIVE);
	memcpy(out->server, l.server, sizeof(out->server));
	memcpy(out->address, l.address, sizeof(out->address));
	out->port = (uint16_t)l.port;
	out->rdma_port = (uint16_t)l.rdma_port;
	memcpy(out->state, l.state, sizeof(out->state));
	out->version = l.version;
	return 0;
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

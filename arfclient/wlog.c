/* SPDX-License-Identifier: MIT */
/*
 * libarf's uncommitted writes, kept for re-sending, as an NFSv3 client
 * keeps its unstable pages.
 *
 * arfd answers a WRITE before it is durable, with its write verifier (its
 * incarnation) and the write's sequence; a COMMIT answers how far
 * everything is durable.  So every write this client made is kept here --
 * its handle, offset, bytes and credentials -- until a COMMIT with the same
 * verifier covers its sequence.  When the connection comes back on a
 * server that restarted (another verifier), conn.c calls arf_wlog_replay
 * before anything else is sent on it: it asks the server how far each
 * earlier incarnation was durable through (a COMMIT naming it), drops what
 * survived, re-sends the rest in the order the server applied it, and
 * commits.  A write that survived is never sent again, so a re-send never
 * lands over another client's later committed write: that write's COMMIT
 * made everything before it, this one included, durable.  A write is kept
 * only while its server is the connection's (conn.c arf_cl_keep_current,
 * under the connection lock's read side, which the replay's reconnection
 * needs for writing): one answered by a server that restarted before it
 * was kept is sent again instead, before its caller hears of it.  So a
 * COMMIT never finds a write of an earlier incarnation that no replay
 * covered; if it did, it would report EIO (arf_wlog_drop_stale) rather
 * than re-send it over a newer write.
 *
 * The bytes kept are bounded (opts.unstable_max_mib): a write past the
 * bound is followed by a COMMIT (requests.c), and from half of it one is
 * sent behind the writes (arf_wlog_behind_due, behind.c).  An entry's memory, once its
 * write is committed, is kept for a later write of its size class (powers
 * of two from 4 KiB to 4 MiB), up to that bound too: a fresh malloc of a
 * 1 MiB entry is an mmap whose 256 pages fault and are cleared as the copy
 * fills them, and its free an munmap (a quarter of arf-fuse's CPU for 1 MiB
 * writes went there).  A re-send that fails is
 * remembered for its file and reported by the next arf_fsync or arf_flush
 * of it (close() on a mount), except ESTALE: the file is gone, and its
 * data with it.
 *
 * Layering: below conn.c (which calls the replay with the new connection,
 * under its write lock) and above the net transport only; requests.c
 * keeps and releases entries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

struct arf_wlog_ent {
	struct arf_wlog_ent *prev, *next;
	uint64_t verifier, seq;     /* the server's answer to the last send */
	uint64_t ino, off;
	uint32_t gen, len;
	int cls;                    /* size class of data[] (-1: none, freed at once) */
	struct arf_proto_cred cred;
	uint8_t data[];
};

#define SPARE_MIN_SHIFT 12          /* classes: 4 KiB << 0 .. 4 KiB << 10 (4 MiB) */
#define SPARE_CLASSES 11

/* A re-send's failure, waiting for its file's next commit. */
struct wlog_err {
	uint64_t ino;
	int err;
};

struct arf_wlog {
	pthread_mutex_t lock;
	struct arf_wlog_ent *head, *tail; /* by (verifier, seq) */
	uint64_t bytes, writes;           /* kept now */
	struct wlog_err errs[16];
	size_t nerrs;
	struct arf_wlog_ent *spare[SPARE_CLASSES]; /* committed entries' memory, by class */
	uint64_t spare_bytes;
	int behind;                       /* a COMMIT behind the writes is due or on its way */
};

/* The size class whose entries hold len bytes, or -1 past the largest. */
static int size_class(uint32_t len)
{
	for (int k = 0; k < SPARE_CLASSES; k++)
		if (len <= (1u << (SPARE_MIN_SHIFT + k)))
			return k;
	return -1;
}

/* Memory for an entry of len bytes: a spare one of its class, or new. */
static struct arf_wlog_ent *ent_alloc(struct arf_wlog *l, uint32_t len)
{
	int k = size_class(len);
	struct arf_wlog_ent *e = NULL;

	if (k >= 0) {
		pthread_mutex_lock(&l->lock);
		if ((e = l->spare[k])) {
			l->spare[k] = e->next;
			l->spare_bytes -= 1u << (SPARE_MIN_SHIFT + k);
		}
		pthread_mutex_unlock(&l->lock);
	}
	if (!e && (e = malloc(sizeof(*e) + (k >= 0 ? 1u << (SPARE_MIN_SHIFT + k) : len))))
		e->cls = k;
	return e;
}

/* An entry's memory back: kept for reuse while the spares stay under the
 * bound of kept bytes, freed otherwise.  Under l->lock. */
static void ent_release(arf_client *c, struct arf_wlog *l, struct arf_wlog_ent *e)
{
	uint64_t size = e->cls >= 0 ? 1u << (SPARE_MIN_SHIFT + e->cls) : 0;

	if (!size || l->spare_bytes + size > (uint64_t)c->opts.unstable_max_mib << 20) {
		free(e);
		return;
	}
	e->next = l->spare[e->cls];
	l->spare[e->cls] = e;
	l->spare_bytes += size;
}

static int before(const struct arf_wlog_ent *a, uint64_t verifier, uint64_t seq)
{
	return a->verifier < verifier || (a->verifier == verifier && a->seq < seq);
}

int arf_wlog_init(arf_client *c)
{
	c->wlog = calloc(1, sizeof(*c->wlog));
	if (!c->wlog)
		return -ENOMEM;
	pthread_mutex_init(&c->wlog->lock, NULL);
	return 0;
}

static void unlink_ent(arf_client *c, struct arf_wlog *l, struct arf_wlog_ent *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		l->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		l->tail = e->prev;
	l->bytes -= e->len;
	l->writes--;
	ent_release(c, l, e);
}

void arf_wlog_free(arf_client *c)
{
	struct arf_wlog *l = c->wlog;

	if (!l)
		return;
	while (l->head)
		unlink_ent(c, l, l->head);
	for (int k = 0; k < SPARE_CLASSES; k++)
		for (struct arf_wlog_ent *e = l->spare[k], *n; e; e = n) {
			n = e->next;
			free(e);
		}
	pthread_mutex_destroy(&l->lock);
	free(l);
	c->wlog = NULL;
}

/* Insert e in (verifier, seq) order: writes mostly come in order, so the
 * walk starts at the tail. */
static void insert(struct arf_wlog *l, struct arf_wlog_ent *e)
{
	struct arf_wlog_ent *p = l->tail;

	while (p && !before(p, e->verifier, e->seq))
		p = p->prev;
	e->prev = p;
	e->next = p ? p->next : l->head;
	if (e->next)
		e->next->prev = e;
	else
		l->tail = e;
	if (p)
		p->next = e;
	else
		l->head = e;
	l->bytes += e->len;
	l->writes++;
}

struct arf_wlog_ent *arf_wlog_prepare(arf_client *c, uint32_t len)
{
	struct arf_wlog_ent *e = ent_alloc(c->wlog, len);
	if (e)
		e->len = len;
	return e;
}

void *arf_wlog_prepared_data(struct arf_wlog_ent *e)
{
	return e->data;
}

void arf_wlog_discard(arf_client *c, struct arf_wlog_ent *e)
{
	struct arf_wlog *l = c->wlog;

	if (!e)
		return;
	pthread_mutex_lock(&l->lock);
	ent_release(c, l, e);
	pthread_mutex_unlock(&l->lock);
}

int arf_wlog_keep_prepared(arf_client *c, struct arf_wlog_ent *e,
			   const struct arf_proto_cred *cred, uint64_t ino, uint32_t gen,
			   uint64_t off, uint32_t len, uint64_t verifier, uint64_t seq)
{
	struct arf_wlog *l = c->wlog;

	e->verifier = verifier;
	e->seq = seq;
	e->ino = ino;
	e->gen = gen;
	e->off = off;
	e->len = len; /* at most what was prepared: a short write keeps its start */
	e->cred = *cred;
	pthread_mutex_lock(&l->lock);
	insert(l, e);
	int full = l->bytes >= (uint64_t)c->opts.unstable_max_mib << 20;
	pthread_mutex_unlock(&l->lock);
	return full;
}

int arf_wlog_behind_due(arf_client *c)
{
	struct arf_wlog *l = c->wlog;
	int due = 0;

	pthread_mutex_lock(&l->lock);
	if (!l->behind && c->opts.unstable_max_mib &&
	    l->bytes >= (uint64_t)c->opts.unstable_max_mib << 19)
		due = l->behind = 1;
	pthread_mutex_unlock(&l->lock);
	return due;
}

void arf_wlog_behind_done(arf_client *c)
{
	pthread_mutex_lock(&c->wlog->lock);
	c->wlog->behind = 0;
	pthread_mutex_unlock(&c->wlog->lock);
}

int arf_wlog_keep(arf_client *c, const struct arf_proto_cred *cred, uint64_t ino, uint32_t gen,
		  uint64_t off, const void *data, uint32_t len, uint64_t verifier, uint64_t seq)
{
	struct arf_wlog_ent *e = arf_wlog_prepare(c, len);

	if (!e)
		return -ENOMEM;
	memcpy(e->data, data, len);
	return arf_wlog_keep_prepared(c, e, cred, ino, gen, off, len, verifier, seq);
}

uint64_t arf_wlog_committed(arf_client *c, uint64_t verifier, uint64_t durable)
{
	struct arf_wlog *l = c->wlog;
	uint64_t dropped = 0;

	pthread_mutex_lock(&l->lock);
	for (struct arf_wlog_ent *e = l->head, *n; e; e = n) {
		n = e->next;
		if (e->verifier == verifier && e->seq <= durable) {
			dropped += e->len;
			unlink_ent(c, l, e);
		}
	}
	pthread_mutex_unlock(&l->lock);
	return dropped;
}

int arf_wlog_holds(arf_client *c, uint64_t ino)
{
	struct arf_wlog *l = c->wlog;
	int found = 0;

	pthread_mutex_lock(&l->lock);
	for (struct arf_wlog_ent *e = l->head; e && !found; e = e->next)
		found = ino == 0 || e->ino == ino;
	for (size_t i = 0; i < l->nerrs && !found; i++)
		found = ino == 0 || l->errs[i].ino == ino;
	pthread_mutex_unlock(&l->lock);
	return found;
}

int arf_wlog_error(arf_client *c, uint64_t ino)
{
	struct arf_wlog *l = c->wlog;
	int err = 0;

	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->nerrs; i++)
		if (ino == 0 || l->errs[i].ino == ino) {
			err = l->errs[i].err;
			l->errs[i] = l->errs[--l->nerrs];
			break;
		}
	pthread_mutex_unlock(&l->lock);
	return err;
}

int arf_wlog_stale(arf_client *c, uint64_t verifier)
{
	struct arf_wlog *l = c->wlog;
	int stale = 0;

	pthread_mutex_lock(&l->lock);
	for (struct arf_wlog_ent *e = l->head; e && !stale; e = e->next)
		stale = e->verifier != verifier;
	pthread_mutex_unlock(&l->lock);
	return stale;
}

static void note_error(struct arf_wlog *l, uint64_t ino, int err);

int arf_wlog_drop_stale(arf_client *c, uint64_t verifier)
{
	struct arf_wlog *l = c->wlog;
	int dropped = 0;

	pthread_mutex_lock(&l->lock);
	for (struct arf_wlog_ent *e = l->head, *n; e; e = n) {
		n = e->next;
		if (e->verifier == verifier)
			continue;
		note_error(l, e->ino, -EIO);
		unlink_ent(c, l, e);
		dropped++;
	}
	pthread_mutex_unlock(&l->lock);
	return dropped;
}

void arf_wlog_counts(arf_client *c, uint64_t *bytes, uint64_t *writes)
{
	struct arf_wlog *l = c->wlog;

	pthread_mutex_lock(&l->lock);
	*bytes = l->bytes;
	*writes = l->writes;
	pthread_mutex_unlock(&l->lock);
}

/* One request on conn: the credentials, then body. */
static int call(arf_client *c, struct arf_net_conn *conn, uint16_t op,
		const struct arf_proto_cred *cred, const struct arf_proto_wr *body,
		const void *data, uint32_t len, struct arf_net_buf *resp)
{
	struct arf_proto_wr w;
	struct iovec iov[3];
	int rc;

	arf_proto_wr_init(&w);
	arf_proto_put_cred(&w, cred);
	if (w.err || body->err) {
		arf_proto_wr_free(&w);
		return w.err ? w.err : body->err;
	}
	iov[0] = (struct iovec){ w.buf, w.len };
	iov[1] = (struct iovec){ body->buf, body->len };
	iov[2] = (struct iovec){ (void *)data, len };
	int idx = arf_proto_op_index(op);
	ARF_CTR_ADD(c, requests_by_kind[arf_kind_slot(idx)], 1);
	memset(resp, 0, sizeof(*resp));
	rc = arf_net_call(conn, op, iov, len ? 3 : 2, resp);
	arf_proto_wr_free(&w);
	return rc;
}

int arf_wlog_commit_reply(const struct arf_net_buf *resp, struct arf_wlog_commit *out)
{
	struct arf_proto_rd r;

	arf_proto_rd_init(&r, resp->data, resp->len);
	out->verifier = arf_proto_get_u64(&r);
	out->durable = arf_proto_get_u64(&r);
	out->old_through = arf_proto_get_u64(&r);
	out->old_known = arf_proto_get_u32(&r);
	return r.err ? ARF_EPROTO : 0;
}

/* COMMIT on conn, asking how far old (0: none) was durable through. */
static int commit_on(arf_client *c, struct arf_net_conn *conn, uint64_t old,
		     struct arf_wlog_commit *out)
{
	struct arf_proto_wr w;
	struct arf_proto_cred cred;
	struct arf_proto_fh fh = { 0, 0 };
	struct arf_net_buf resp;
	int rc;

	memset(&cred, 0, sizeof(cred));
	arf_proto_wr_init(&w);
	arf_proto_put_fh(&w, &fh);
	arf_proto_put_u64(&w, old);
	rc = call(c, conn, ARF_OP_COMMIT, &cred, &w, NULL, 0, &resp);
	arf_proto_wr_free(&w);
	if (!rc)
		rc = arf_wlog_commit_reply(&resp, out);
	arf_net_buf_free(&resp);
	return rc;
}

int arf_wlog_write_reply(const struct arf_net_buf *resp, uint32_t *written,
			 struct arf_proto_attr *attr, struct arf_wlog_write *out)
{
	struct arf_proto_rd r;

	arf_proto_rd_init(&r, resp->data, resp->len);
	*written = arf_proto_get_u32(&r);
	arf_proto_get_attr(&r, attr);
	if (r.err)
		return ARF_EPROTO;
	if (r.pos == r.len) {
		/* an arfd that answers writes once durable says nothing more */
		memset(out, 0, sizeof(*out));
		out->flags = ARF_PROTO_WRITE_STABLE;
		return 0;
	}
	out->verifier = arf_proto_get_u64(&r);
	out->seq = arf_proto_get_u64(&r);
	out->off = arf_proto_get_u64(&r);
	out->flags = arf_proto_get_u32(&r);
	return r.err ? ARF_EPROTO : 0;
}

/* Remember err for ino's next commit (the table keeps the first 16). */
static void note_error(struct arf_wlog *l, uint64_t ino, int err)
{
	for (size_t i = 0; i < l->nerrs; i++)
		if (l->errs[i].ino == ino)
			return;
	if (l->nerrs < sizeof(l->errs) / sizeof(l->errs[0]))
		l->errs[l->nerrs++] = (struct wlog_err){ ino, err };
}

/* Is rc the connection failing, or the wait given up (the replay is over,
 * every entry still kept; the caller dials again or gives up)? */
static int broken(int rc)
{
	return rc == -ECONNRESET || rc == -EPIPE || rc == -ENOTCONN || rc == -ETIMEDOUT ||
	       rc == -ECONNABORTED || rc == -EBADF || rc == -ECANCELED || rc == -EINTR;
}

int arf_wlog_replay(arf_client *c, struct arf_net_conn *conn, uint64_t verifier)
{
	struct arf_wlog *l = c->wlog;
	struct arf_wlog_commit cm;
	int rc = 0;

	pthread_mutex_lock(&l->lock);
	/* 1. each earlier incarnation: what of it survived */
	for (;;) {
		uint64_t old = 0;
		for (struct arf_wlog_ent *e = l->head; e; e = e->next)
			if (e->verifier != verifier && !(e->seq & (1ull << 63))) {
				old = e->verifier;
				break;
			}
		if (!old)
			break;
		if ((rc = commit_on(c, conn, old, &cm)))
			goto out;
		for (struct arf_wlog_ent *e = l->head, *n; e; e = n) {
			n = e->next;
			if (e->verifier != old)
				continue;
			if (cm.old_known && e->seq <= cm.old_through)
				unlink_ent(c, l, e); /* durable before the restart */
			else
				e->seq |= 1ull << 63; /* to re-send; a mark, in order still */
		}
	}
	/* 2. re-send the rest, in the order the servers applied it */
	for (struct arf_wlog_ent *e = l->head, *n; e; e = n) {
		n = e->next;
		if (e->verifier == verifier)
			continue;
		struct arf_proto_wr w;
		struct arf_proto_fh fh = { e->ino, e->gen };
		struct arf_net_buf resp;
		arf_proto_wr_init(&w);
		arf_proto_put_fh(&w, &fh);
		arf_proto_put_u64(&w, e->off);
		arf_proto_put_u32(&w, e->len); /* bytes(): the length, then the data */
		rc = call(c, conn, ARF_OP_WRITE, &e->cred, &w, e->data, e->len, &resp);
		arf_proto_wr_free(&w);
		if (broken(rc)) {
			e->seq &= ~(1ull << 63);
			arf_net_buf_free(&resp);
			goto out;
		}
		uint32_t written = 0;
		struct arf_proto_attr a;
		struct arf_wlog_write wr;
		if (!rc)
			rc = arf_wlog_write_reply(&resp, &written, &a, &wr);
		arf_net_buf_free(&resp);
		if (!rc && written < e->len)
			rc = -ENOSPC; /* what did not fit is lost: say so at the commit */
		if (!rc)
			ARF_CTR_ADD(c, resent_bytes, e->len);
		if (rc && rc != -ESTALE) /* a file that is gone took its data along */
			note_error(l, e->ino, rc);
		if (rc || (wr.flags & ARF_PROTO_WRITE_STABLE)) {
			unlink_ent(c, l, e);
			continue;
		}
		/* kept under the new incarnation, after what it already holds
		 * (those were sent later: none overlaps, or its own order says) */
		struct arf_wlog_ent *m = e;
		if (m->prev)
			m->prev->next = m->next;
		else
			l->head = m->next;
		if (m->next)
			m->next->prev = m->prev;
		else
			l->tail = m->prev;
		l->bytes -= m->len;
		l->writes--;
		m->verifier = wr.verifier;
		m->seq = wr.seq;
		insert(l, m);
	}
	rc = 0;
	/* 3. and commit them */
	if (l->head) {
		if ((rc = commit_on(c, conn, 0, &cm)))
			goto out;
		for (struct arf_wlog_ent *e = l->head, *n; e; e = n) {
			n = e->next;
			if (e->verifier == cm.verifier && e->seq <= cm.durable)
				unlink_ent(c, l, e);
		}
	}
out:
	for (struct arf_wlog_ent *e = l->head; e; e = e->next)
		e->seq &= ~(1ull << 63);
	pthread_mutex_unlock(&l->lock);
	return rc;
}

int arf_unstable_full(arf_client *c)
{
	struct arf_wlog *l = c ? c->wlog : NULL;

	if (!l)
		return 0;
	pthread_mutex_lock(&l->lock);
	int full = l->bytes >= (uint64_t)c->opts.unstable_max_mib << 20;
	pthread_mutex_unlock(&l->lock);
	return full;
}

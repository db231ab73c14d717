/* SPDX-License-Identifier: MIT */
/*
 * arfd/dispatch — requests from the soft-NIC to ops/ hooks and back.
 *
 * The soft-NIC thread copies each request into a job and queues it; a worker
 * polls the queue adaptively (spins up to spin_us, then sleeps), decodes the
 * body (untrusted: every field bounds-checked), runs the hook under the
 * filesystem lock inside a transaction, writes the transaction to RocksDB in
 * that same lock (so batches land in commit order) and replies — at once on
 * an async export or for a read, after the group commit on a sync export.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arf_ops.h"
#include "arf_proto.h"
#include "arfd.h"
#include "log.h"

struct arfd_job {
	struct arfd_job *next;
	struct arfd *d;
	struct arf_net_sconn *c;   /* referenced */
	uint64_t id;
	uint16_t op;
	size_t len;
	uint8_t body[];
};

void arfd_on_request(void *ctx, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		     const uint8_t *body, size_t len)
{
	struct arfd *d = ctx;
	struct arfd_job *j = malloc(sizeof(*j) + len);

	if (!j) {
		arf_net_reply(c, h->id, h->op, arf_net_status_from_err(-ENOMEM), NULL, 0);
		return;
	}
	j->next = NULL;
	j->d = d;
	j->c = c;
	arf_net_sconn_ref(c);
	j->id = h->id;
	j->op = h->op;
	j->len = len;
	memcpy(j->body, body, len);
	pthread_mutex_lock(&d->q_lock);
	if (d->q_tail)
		d->q_tail->next = j;
	else
		d->q_head = j;
	d->q_tail = j;
	__atomic_add_fetch(&d->q_len, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&d->q_cond);
	pthread_mutex_unlock(&d->q_lock);
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Adaptive wait: spin on the queue length, then sleep on the condition. */
static struct arfd_job *next_job(struct arfd *d)
{
	uint64_t deadline = d->cfg.spin_us ? now_us() + (uint64_t)d->cfg.spin_us : 0;

	while (d->cfg.spin_us && !__atomic_load_n(&d->q_len, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE) && now_us() < deadline)
		__builtin_ia32_pause();
	pthread_mutex_lock(&d->q_lock);
	while (!d->q_head && !__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&d->q_cond, &d->q_lock);
	struct arfd_job *j = d->q_head;
	if (j) {
		d->q_head = j->next;
		if (!d->q_head)
			d->q_tail = NULL;
		__atomic_sub_fetch(&d->q_len, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&d->q_lock);
	return j;
}

static void to_proto_attr(const struct arf_ops_attr *a, struct arf_proto_attr *p)
{
	p->ino = a->ino;
	p->gen = a->gen;
	p->mode = a->mode;
	p->nlink = a->nlink;
	p->uid = a->uid;
	p->gid = a->gid;
	p->size = a->size;
	p->blocks = a->blocks;
	p->atime_ns = a->atime_ns;
	p->mtime_ns = a->mtime_ns;
	p->ctime_ns = a->ctime_ns;
	p->rdev = a->rdev;
}

static void put_attr(struct arf_proto_wr *w, const struct arf_ops_attr *a)
{
	struct arf_proto_attr p;
	to_proto_attr(a, &p);
	arf_proto_put_attr(w, &p);
}

static int is_mutation(uint16_t op)
{
	return op >= ARF_OP_CREATE && op <= ARF_OP_WRITE;
}

/* Does the request name a file handle (whose generation could be guessed)? */
static int names_handle(uint16_t op)
{
	return op != ARF_OP_STATFS && op != ARF_OP_STATUS && op != ARF_OP_CRED_MINT;
}

/* Server status as a JSON object (ARF_OP_STATUS). */
void arfd_status_json(struct arfd *d, struct arf_proto_wr *w)
{
	char buf[2048];
	struct timespec now;
	struct arf_ops_statfs sf;
	struct arf_net_server_counters nc;

	clock_gettime(CLOCK_MONOTONIC, &now);
	arf_ops_statfs(&d->fs, &sf);
	arf_net_server_counters(d->net, &nc);
	uint64_t reqs = 0;
	for (int i = 0; i < ARF_PROTO_NKINDS; i++)
		reqs += d->ctr.requests[i];
	int n = snprintf(buf, sizeof(buf),
		"{\"version\":\"%s\",\"incarnation\":%llu,\"uptime_s\":%lld,"
		"\"export\":{\"name\":\"%s\",\"sync\":%s,\"read_only\":%s,\"root_squash\":%s},"
		"\"regions\":{\"meta_bytes\":%llu,\"data_bytes\":%llu,\"scratch_bytes\":%llu},"
		"\"inodes\":{\"total\":%llu,\"free\":%llu},"
		"\"blocks\":{\"size\":%llu,\"total\":%llu,\"free\":%llu},"
		"\"clients\":%llu,\"requests\":%llu,\"mutations\":%llu,\"syncs\":%llu,"
		"\"one_sided_reads\":%llu,\"one_sided_bytes\":%llu}",
		ARF_VERSION, (unsigned long long)d->incarnation,
		(long long)(now.tv_sec - d->started.tv_sec), d->cfg.export_name,
		d->cfg.sync ? "true" : "false", d->cfg.read_only ? "true" : "false",
		d->cfg.root_squash ? "true" : "false", (unsigned long long)d->meta_size,
		(unsigned long long)d->data_size, (unsigned long long)d->scratch_size,
		(unsigned long long)sf.files, (unsigned long long)sf.ffree,
		(unsigned long long)sf.bsize, (unsigned long long)sf.blocks,
		(unsigned long long)sf.bfree,
		(unsigned long long)__atomic_load_n(&d->clients, __ATOMIC_RELAXED),
		(unsigned long long)reqs, (unsigned long long)d->ctr.mutations,
		(unsigned long long)d->ctr.syncs, (unsigned long long)nc.one_sided_reads,
		(unsigned long long)nc.one_sided_bytes);
	arf_proto_put(w, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Decode and run one request.  Returns 0 or -errno / ARF code; the reply body
 * goes to w.  Called with fs_lock held. */
static int run_op(struct arfd *d, uint16_t op, struct arf_proto_rd *r, const struct arf_cred *cr,
		  struct arf_proto_wr *w)
{
	struct arf_meta_fs *fs = &d->fs;
	struct arf_proto_fh fh, fh2;
	struct arf_ops_attr a;
	uint32_t nlen = 0, nlen2 = 0;
	const char *name, *name2;
	int rc;

	switch (op) {
	case ARF_OP_GETATTR:
		arf_proto_get_fh(r, &fh);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		rc = arf_ops_getattr(fs, fh.ino, fh.gen, &a);
		if (!rc)
			put_attr(w, &a);
		return rc;
	case ARF_OP_LOOKUP:
		arf_proto_get_fh(r, &fh);
		name = arf_proto_get_name(r, &nlen);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		rc = arf_ops_lookup(fs, cr, fh.ino, fh.gen, name, nlen, &a);
		if (!rc)
			put_attr(w, &a);
		return rc;
	case ARF_OP_READDIR: {
		arf_proto_get_fh(r, &fh);
		uint64_t cookie = arf_proto_get_u64(r);
		uint32_t max = arf_proto_get_u32(r);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		if (max == 0 || max > ARF_PROTO_MAX_READDIR)
			max = ARF_PROTO_MAX_READDIR;
		struct arf_ops_dirent *ents = malloc(max * sizeof(*ents));
		size_t n = 0;
		int eof = 0;
		if (!ents)
			return -ENOMEM;
		rc = arf_ops_readdir(fs, cr, fh.ino, fh.gen, cookie, ents, max, &n, &eof);
		if (!rc) {
			arf_proto_put_u32(w, (uint32_t)n);
			arf_proto_put_u32(w, (uint32_t)eof);
			for (size_t i = 0; i < n; i++) {
				arf_proto_put_u64(w, ents[i].ino);
				arf_proto_put_u32(w, ents[i].gen);
				arf_proto_put_u32(w, ents[i].type);
				arf_proto_put_u64(w, ents[i].cookie);
				arf_proto_put_bytes(w, ents[i].name, ents[i].namelen);
			}
		}
		free(ents);
		return rc;
	}
	case ARF_OP_READ: {
		arf_proto_get_fh(r, &fh);
		uint64_t off = arf_proto_get_u64(r);
		uint32_t len = arf_proto_get_u32(r);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		if (len > ARF_PROTO_MAX_IO)
			return -EINVAL;
		uint8_t *buf = malloc(len ? len : 1);
		size_t got = 0;
		if (!buf)
			return -ENOMEM;
		rc = arf_ops_read(fs, cr, fh.ino, fh.gen, off, buf, len, &got);
		if (!rc)
			arf_proto_put(w, buf, got);
		free(buf);
		return rc;
	}
	case ARF_OP_READLINK: {
		char buf[ARF_PATH_MAX];
		size_t got = 0;
		arf_proto_get_fh(r, &fh);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		rc = arf_ops_readlink(fs, fh.ino, fh.gen, buf, sizeof(buf), &got);
		if (!rc)
			arf_proto_put(w, buf, got);
		return rc;
	}
	case ARF_OP_STATFS: {
		struct arf_ops_statfs s;
		struct arf_proto_statfs p;
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		rc = arf_ops_statfs(fs, &s);
		if (!rc) {
			p.bsize = s.bsize;
			p.blocks = s.blocks;
			p.bfree = s.bfree;
			p.files = s.files;
			p.ffree = s.ffree;
			p.namemax = s.namemax;
			arf_proto_put_statfs(w, &p);
		}
		return rc;
	}
	case ARF_OP_ACCESS: {
		arf_proto_get_fh(r, &fh);
		uint32_t mask = arf_proto_get_u32(r);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		return arf_ops_access(fs, cr, fh.ino, fh.gen, (int)mask);
	}
	case ARF_OP_STATUS:
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		arfd_status_json(d, w);
		return 0;
	case ARF_OP_FSYNC:
		arf_proto_get_fh(r, &fh);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		return arf_ops_getattr(fs, fh.ino, fh.gen, &a);
	}

	/* mutations */
	if (d->cfg.read_only)
		return -EROFS;
	switch (op) {
	case ARF_OP_CREATE: {
		arf_proto_get_fh(r, &fh);
		name = arf_proto_get_name(r, &nlen);
		uint32_t mode = arf_proto_get_u32(r), excl = arf_proto_get_u32(r);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		rc = arf_ops_create(fs, cr, fh.ino, fh.gen, name, nlen, mode, (int)excl, &a);
		break;
	}
	case ARF_OP_MKDIR: {
		arf_proto_get_fh(r, &fh);
		name = arf_proto_get_name(r, &nlen);
		uint32_t mode = arf_proto_get_u32(r);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		rc = arf_ops_mkdir(fs, cr, fh.ino, fh.gen, name, nlen, mode, &a);
		break;
	}
	case ARF_OP_MKNOD: {
		arf_proto_get_fh(r, &fh);
		name = arf_proto_get_name(r, &nlen);
		uint32_t mode = arf_proto_get_u32(r);
		uint64_t rdev = arf_proto_get_u64(r);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		rc = arf_ops_mknod(fs, cr, fh.ino, fh.gen, name, nlen, mode, rdev, &a);
		break;
	}
	case ARF_OP_UNLINK:
	case ARF_OP_RMDIR:
		arf_proto_get_fh(r, &fh);
		name = arf_proto_get_name(r, &nlen);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		return op == ARF_OP_UNLINK ? arf_ops_unlink(fs, cr, fh.ino, fh.gen, name, nlen)
					   : arf_ops_rmdir(fs, cr, fh.ino, fh.gen, name, nlen);
	case ARF_OP_RENAME: {
		arf_proto_get_fh(r, &fh);
		name = arf_proto_get_name(r, &nlen);
		arf_proto_get_fh(r, &fh2);
		name2 = arf_proto_get_name(r, &nlen2);
		uint32_t flags = arf_proto_get_u32(r);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		return arf_ops_rename(fs, cr, fh.ino, fh.gen, name, nlen, fh2.ino, fh2.gen, name2,
				      nlen2, flags);
	}
	case ARF_OP_LINK:
		arf_proto_get_fh(r, &fh);
		arf_proto_get_fh(r, &fh2);
		name = arf_proto_get_name(r, &nlen);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		rc = arf_ops_link(fs, cr, fh.ino, fh.gen, fh2.ino, fh2.gen, name, nlen, &a);
		break;
	case ARF_OP_SYMLINK: {
		arf_proto_get_fh(r, &fh);
		name = arf_proto_get_name(r, &nlen);
		uint32_t tlen = 0;
		const uint8_t *target = arf_proto_get_bytes(r, ARF_PATH_MAX, &tlen);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		rc = arf_ops_symlink(fs, cr, fh.ino, fh.gen, name, nlen, (const char *)target, tlen,
				     &a);
		break;
	}
	case ARF_OP_SETATTR: {
		struct arf_proto_setattr ps;
		struct arf_ops_setattr sa;
		arf_proto_get_fh(r, &fh);
		arf_proto_get_setattr(r, &ps);
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		sa.valid = ps.valid;
		sa.mode = ps.mode;
		sa.uid = ps.uid;
		sa.gid = ps.gid;
		sa.size = ps.size;
		sa.atime_ns = ps.atime_ns;
		sa.mtime_ns = ps.mtime_ns;
		rc = arf_ops_setattr(fs, cr, fh.ino, fh.gen, &sa, &a);
		break;
	}
	case ARF_OP_WRITE: {
		arf_proto_get_fh(r, &fh);
		uint64_t off = arf_proto_get_u64(r);
		uint32_t len = 0;
		const uint8_t *data = arf_proto_get_bytes(r, ARF_PROTO_MAX_IO, &len);
		size_t written = 0;
		if (!arf_proto_rd_done(r))
			return ARF_EPROTO;
		rc = arf_ops_write(fs, cr, fh.ino, fh.gen, off, data, len, &written);
		if (rc)
			return rc;
		if (d->cfg.test_torn_delay_us) {
			/* test hook: hold the written blocks odd a while */
			struct timespec ts = { 0, (long)d->cfg.test_torn_delay_us * 1000 };
			nanosleep(&ts, NULL);
		}
		arf_proto_put_u32(w, (uint32_t)written);
		rc = arf_ops_getattr(fs, fh.ino, fh.gen, &a);
		if (!rc)
			put_attr(w, &a);
		return rc;
	}
	default:
		return -ENOSYS;
	}
	if (!rc)
		put_attr(w, &a);
	return rc;
}

uint64_t arfd_txn_commit(struct arfd *d, int *rc)
{
	const struct arf_meta_dirty *list;
	char err[256];
	size_t n = arf_meta_txn_end(&d->fs, &list);

	if (!n)
		return 0;
	uint64_t seq = ++d->applied_seq;
	if (arfd_store_put_txn(d->store, &d->fs, list, n, err, sizeof(err))) {
		/* The change is in memory but not in RocksDB: say so loudly; the
		 * client gets EIO and must not assume durability. */
		arfd_log(ARFD_LOG_ERROR, "%s", err);
		*rc = -EIO;
	}
	d->ctr.mutations++;
	d->ctr.objects_written += n;
	if (d->cfg.sync)
		arfd_pending_add_txn(d->pending, seq, list, n);
	return seq;
}

static void handle(struct arfd *d, struct arfd_job *j)
{
	struct arf_proto_rd r;
	struct arf_proto_cred pc;
	struct arf_cred cr;
	struct arf_proto_wr w;
	int rc, mut = is_mutation(j->op), deferred = 0;

	arf_proto_wr_init(&w);
	arf_proto_rd_init(&r, j->body, j->len);
	arf_proto_get_cred(&r, &pc);

	struct arfd_conn *ac = arf_net_sconn_udata(j->c);
	int guarded = names_handle(j->op);
	pthread_mutex_lock(&d->fs_lock);
	arfd_identity_cred(d, ac, &pc, &cr, NULL); /* under the lock: SIGHUP may change the export */
	int idx = arf_proto_op_index(j->op);
	d->ctr.requests[idx < 0 ? ARF_PROTO_NKINDS - 1 : idx]++;
	if (r.err) {
		rc = ARF_EPROTO;
	} else if (guarded && arfd_identity_stale_check(d, ac)) {
		rc = -ESTALE; /* too many stale handles: a guesser; not looked at */
		guarded = 0;
	} else if (j->op == ARF_OP_CRED_MINT) {
		rc = arf_proto_rd_done(&r) ? arfd_identity_mint(d, ac, &cr, &w) : ARF_EPROTO;
	} else if (mut && !d->cfg.read_only) {
		arf_meta_txn_begin(&d->fs);
		rc = run_op(d, j->op, &r, &cr, &w);
		if (arfd_txn_commit(d, &rc) && d->cfg.sync)
			deferred = 1;
	} else {
		rc = run_op(d, j->op, &r, &cr, &w);
		if (j->op == ARF_OP_FSYNC && !rc && d->applied_seq > d->durable_seq)
			deferred = 1; /* durable on every export, as NFS COMMIT */
	}
	if (rc == ARF_EPROTO)
		d->ctr.bad_requests++;
	if (rc)
		d->ctr.errors++;
	if (rc == -ESTALE && guarded)
		arfd_identity_stale(d, ac);
	if (deferred) {
		/* reply after the group commit that makes applied_seq durable */
		void *body = w.buf;
		size_t blen = w.len;
		if (rc) {
			free(body);
			body = NULL;
			blen = 0;
		}
		arfd_pending_add_reply(d->pending, d->applied_seq, j->c, j->id, j->op,
				       arf_net_status_from_err(rc), body, blen);
		w.buf = NULL;
		if (d->sync_wanted < d->applied_seq)
			d->sync_wanted = d->applied_seq;
		pthread_cond_signal(&d->commit_cond);
	}
	pthread_mutex_unlock(&d->fs_lock);

	if (!deferred) {
		struct iovec iov = { w.buf, w.len };
		if (rc == ARF_EPROTO)
			arfd_log_limited(ARFD_LOG_WARN, "malformed %s request from %s",
					 arf_proto_op_name(j->op), arf_net_sconn_peer(j->c)->addr);
		arf_net_reply(j->c, j->id, j->op, arf_net_status_from_err(rc), &iov,
			      rc || !w.len ? 0 : 1);
	}
	arf_proto_wr_free(&w);
}

void *arfd_worker_main(void *arg)
{
	struct arfd *d = arg;
	struct arfd_job *j;

	while ((j = next_job(d))) {
		if (j->op == ARF_OP_PROG_LOAD || j->op == ARF_OP_PROG_EXEC)
			arfd_prog_request(d, j->c, j->id, j->op, j->body, j->len); /* not under fs_lock */
		else
			handle(d, j);
		arf_net_sconn_unref(j->c);
		free(j);
	}
	arfd_prog_thread_exit();
	return NULL;
}

void *arfd_committer_main(void *arg)
{
	struct arfd *d = arg;
	char err[256];

	pthread_mutex_lock(&d->fs_lock);
	for (;;) {
		while (d->sync_wanted <= d->durable_seq && !__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE))
			pthread_cond_wait(&d->commit_cond, &d->fs_lock);
		if (d->sync_wanted <= d->durable_seq && __atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE))
			break;
		uint64_t target = d->applied_seq; /* everything written so far */
		pthread_mutex_unlock(&d->fs_lock);
		int rc = arfd_store_sync(d->store, err, sizeof(err));
		pthread_mutex_lock(&d->fs_lock);
		if (rc) {
			arfd_log(ARFD_LOG_ERROR, "%s", err);
			/* keep trying: acknowledging without durability is not an option */
			pthread_mutex_unlock(&d->fs_lock);
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
			pthread_mutex_lock(&d->fs_lock);
			continue;
		}
		d->ctr.syncs++;
		d->ctr.synced_txns += target - d->durable_seq;
		d->durable_seq = target;
		struct arfd_reply *rep = arfd_pending_commit(d->pending, &d->fs, target);
		pthread_mutex_unlock(&d->fs_lock);
		arfd_pending_send(rep);
		pthread_mutex_lock(&d->fs_lock);
	}
	pthread_mutex_unlock(&d->fs_lock);
	return NULL;
}

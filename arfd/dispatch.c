/* SPDX-License-Identifier: MIT */
/*
 * arfd/dispatch — requests from the soft-NIC to ops/ hooks and back.
 *
 * The soft-NIC thread copies each request into a job and queues it in its
 * lane (lanes.c); a request worker takes it, looks the request's kind up in
 * the procedure table (procs.c), and does around the
 * procedure what every request shares: the credentials it acts with
 * (identity.c), the counters, the stale-handle limits, and for a mutation
 * the transaction, written to RocksDB under the filesystem lock (so batches
 * land in commit order); then it replies — at once on an async export or for
 * a read, after the group commit on a sync export.
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

void arfd_request(struct arfd *d, struct arf_net_sconn *c, uint64_t id, uint16_t op,
		  const uint8_t *body, size_t len)
{
	const struct arfd_proc *proc = arfd_proc_find(op);
	struct arf_proto_rd r;
	struct arf_proto_cred pc;
	struct arf_cred cr;
	struct arf_proto_wr w;
	struct arfd_req q = { .d = d, .r = &r, .cr = &cr, .w = &w };
	int rc, deferred = 0;

	arf_proto_wr_init(&w);
	arf_proto_rd_init(&r, body, len);
	arf_proto_get_cred(&r, &pc);

	struct arfd_conn *ac = arf_net_sconn_udata(c);
	int guarded = (proc->flags & ARFD_PROC_HANDLE) != 0;
	q.ac = ac;
	pthread_mutex_lock(&d->fs_lock);
	arfd_identity_cred(d, ac, &pc, &cr, NULL); /* under the lock: SIGHUP may change the export */
	int idx = arf_proto_op_index(op);
	d->ctr.requests[idx < 0 ? ARF_PROTO_NKINDS - 1 : idx]++;
	if (r.err) {
		rc = ARF_EPROTO;
	} else if (guarded && arfd_identity_stale_check(d, ac)) {
		rc = -ESTALE; /* too many stale handles: a guesser; not looked at */
		guarded = 0;
	} else if (proc->flags & ARFD_PROC_MUTATES) {
		if (d->cfg.read_only) {
			rc = -EROFS;
		} else {
			arf_meta_txn_begin(&d->fs);
			rc = proc->run(&q);
			if (arfd_txn_commit(d, &rc) && d->cfg.sync)
				deferred = 1;
		}
	} else {
		rc = proc->run(&q);
		if ((proc->flags & ARFD_PROC_DURABLE) && !rc && d->applied_seq > d->durable_seq)
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
		void *rbody = w.buf;
		size_t blen = w.len;
		if (rc) {
			free(rbody);
			rbody = NULL;
			blen = 0;
		}
		arfd_pending_add_reply(d->pending, d->applied_seq, c, id, op,
				       arf_net_status_from_err(rc), rbody, blen);
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
					 arf_proto_op_name(op), arf_net_sconn_peer(c)->addr);
		arf_net_reply(c, id, op, arf_net_status_from_err(rc), &iov, rc || !w.len ? 0 : 1);
	}
	arf_proto_wr_free(&w);
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

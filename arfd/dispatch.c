/* SPDX-License-Identifier: MIT */
/*
 * arfd/dispatch — requests from the soft-NIC to ops/ hooks and back.
 *
 * The soft-NIC thread copies each request into a job and queues it; a worker
 * polls the queue adaptively (spins up to spin_us, then sleeps), looks the
 * request's kind up in the procedure table (procs.c), and does around the
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

void *arfd_worker_main(void *arg)
{
	struct arfd *d = arg;
	struct arfd_job *j;

	while ((j = next_job(d))) {
		if (arfd_proc_find(j->op)->lane == ARFD_LANE_PROGRAM)
			arfd_prog_request(d, j->c, j->id, j->op, j->body, j->len); /* not under fs_lock */
		else
			arfd_request(d, j->c, j->id, j->op, j->body, j->len);
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

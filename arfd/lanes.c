/* SPDX-License-Identifier: MIT */
/*
 * arfd/lanes — who serves a request, and in what order.
 *
 * Two lanes, each a queue with workers of its own, so that programs never
 * occupy the workers that plain requests need: the request lane ([server]
 * workers threads) serves every kind whose procedure says so (procs.c),
 * short work under the filesystem lock; the program lane ([programs]
 * workers threads, at a lower CPU priority: [programs] nice) serves
 * PROG_LOAD and PROG_EXEC, whose verification, compilation and runs may
 * take up to max_wall_ms each.  A stat waits behind other stats, never
 * behind a program.
 *
 * Each queue is fair, not first-come first-served: jobs wait in flows
 * keyed by (connection, uid), and workers take one job from each flow in
 * turn (round robin, as a stochastic-fairness queue without the hashing
 * collisions).  arf-fuse carries every local user on one connection, so
 * the uid counts too: on a connection whose claims are believed it is the
 * uid the request's body claims -- cheap to read before any decoding, and
 * it only decides the order, never what the request may do (identity.c
 * decides that); elsewhere the connection's own identity (flow_uid).  So
 * one user who queues 200 runs delays another user's request by at most
 * one run per worker, not 200.
 *
 * Within a flow the order is kept; across flows and across lanes it is
 * not (as with NFS, requests in flight together carry no order).  The
 * soft-NIC thread serves a short request itself only while the request
 * lane has nothing queued and nothing in service (serve_inline), so that
 * neither the order nor the fairness changes.
 *
 * Stopping (arfd_lanes_stop, after the transport is gone): the request lane
 * drains what is queued; the program lane drops what is queued (arfd_stop
 * has set the abort flag that the runs in progress stop at) and its
 * workers end at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arf_spin.h"

#include "arfd.h"
#include "log.h"

#define FLOW_BUCKETS 256u

struct arfd_job {
	struct arfd_job *next;
	struct arf_net_sconn *c;   /* referenced */
	uint64_t id;
	uint16_t op;
	size_t len;
	const uint8_t *body;       /* in owned, or in copy */
	void *owned;               /* a big request's receive buffer, taken from the
				    * soft-NIC (given back at job_free), or NULL */
	uint8_t copy[];
};

/* The jobs of one (connection, uid), while it has any. */
struct flow {
	struct flow *hnext;        /* in its hash bucket */
	struct flow *rnext;        /* in the round */
	const struct arf_net_sconn *c;
	uint32_t uid;
	struct arfd_job *head, *tail;
};

struct arfd_lane {
	struct arfd *d;
	const char *name;          /* "request" or "program", for messages */
	int drop_on_stop;          /* the program lane: queued jobs are dropped at stop */
	struct arf_spin spin;      /* poll up to spin.max_us before sleeping (0: never) */
	int nice;                  /* workers' niceness (0: as the daemon) */
	pthread_mutex_t lock;      /* everything below */
	pthread_cond_t cond;       /* a job arrived, or stopping */
	struct flow *bucket[FLOW_BUCKETS];
	struct flow *round, *round_tail; /* flows with jobs; the head is served next */
	unsigned len;              /* jobs queued (read without the lock by spinners) */
	unsigned busy;             /* jobs being served, by workers or inline */
	pthread_t workers[64];
	int nworkers;
};

static unsigned flow_hash(const struct arf_net_sconn *c, uint32_t uid)
{
	uint64_t h = (uint64_t)(uintptr_t)c * 0x9e3779b97f4a7c15ull ^ (uint64_t)uid * 0xff51afd7ed558ccdull;

	return (unsigned)(h >> 56) % FLOW_BUCKETS;
}

/* Under l->lock: queue j at the end of its flow; a new flow joins the
 * round last.  0 or -ENOMEM. */
static int lane_put(struct arfd_lane *l, struct arfd_job *j, uint32_t uid)
{
	unsigned b = flow_hash(j->c, uid);
	struct flow *f = l->bucket[b];

	while (f && (f->c != j->c || f->uid != uid))
		f = f->hnext;
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return -ENOMEM;
		f->c = j->c;
		f->uid = uid;
		f->hnext = l->bucket[b];
		l->bucket[b] = f;
		if (l->round_tail)
			l->round_tail->rnext = f;
		else
			l->round = f;
		l->round_tail = f;
	}
	if (f->tail)
		f->tail->next = j;
	else
		f->head = j;
	f->tail = j;
	__atomic_add_fetch(&l->len, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Under l->lock, with a job queued: the first job of the flow whose turn
 * it is; the flow goes to the end of the round, or away when empty. */
static struct arfd_job *lane_take(struct arfd_lane *l)
{
	struct flow *f = l->round;
	struct arfd_job *j = f->head;

	f->head = j->next;
	j->next = NULL;
	l->round = f->rnext;
	f->rnext = NULL;
	if (!l->round)
		l->round_tail = NULL;
	if (f->head) {
		if (l->round_tail)
			l->round_tail->rnext = f;
		else
			l->round = f;
		l->round_tail = f;
	} else {
		struct flow **pp = &l->bucket[flow_hash(f->c, f->uid)];

		while (*pp != f)
			pp = &(*pp)->hnext;
		*pp = f->hnext;
		free(f);
	}
	__atomic_sub_fetch(&l->len, 1, __ATOMIC_RELEASE);
	return j;
}

static void job_free(struct arfd_job *j)
{
	arf_net_sconn_body_free(j->c, j->owned);
	arf_net_sconn_unref(j->c);
	free(j);
}

/*
 * The uid part of a request's flow.  Where the connection's claims are
 * believed (root proven: arf-fuse, carrying every local user; an insecure
 * export), the uid its body claims, first in every body: read before any
 * decoding, it orders and never grants.  Elsewhere a connection is one
 * identity whatever it claims, so claiming many uids must not buy it many
 * turns: its own pinned uid, or none.
 */
static uint32_t flow_uid(const struct arfd_conn *ac, const uint8_t *body, size_t len)
{
	if (!ac)
		return 0;
	switch (ac->trust) {
	case ARFD_TRUST_ROOT:
	case ARFD_TRUST_CLAIMED:
		return len >= 4 ? (uint32_t)body[0] | (uint32_t)body[1] << 8 |
				  (uint32_t)body[2] << 16 | (uint32_t)body[3] << 24 : 0;
	case ARFD_TRUST_PINNED:
		return ac->id.uid;
	default:
		return UINT32_MAX;
	}
}

/*
 * Run to completion.  Handing a request to a worker costs a thread switch
 * each way, and on a small machine the switch is most of a 4 KiB write's
 * cost.  So the soft-NIC thread serves a request itself when that can
 * neither reorder a flow nor wait for long: the request lane has nothing
 * queued and no job in service (so nothing of any flow is ahead of it),
 * and the request is an unstable data write of up to 64 KiB, which never
 * waits for a sync and whose reply is a few dozen bytes, or a brief read
 * (ARFD_PROC_BRIEF: GETATTR, LOOKUP, ACCESS, READLINK, XATTR_GET -- constant
 * work, a short reply), or, while syncs are quick and none is in progress
 * (arfd_commit_quick: the data directory on tmpfs or a disk with a
 * write-back cache), a change of names or attributes that copies no data
 * and frees little (ARFD_PROC_NAMING: CREATE, MKDIR, MKNOD, SYMLINK, LINK,
 * XATTR_SET and XATTR_REMOVE; UNLINK, RMDIR, RENAME and SETATTR when what
 * they free or truncate holds at most 1 MiB: procs.c), whose group commit
 * it then runs itself with the lock kept (commit.c): a create cost a
 * worker's wake-up and, woken under the lane's lock, a second one.  READ and READDIR stay with the workers: a 256 KiB
 * reply, or a walk of a big directory, is work the soft-NIC would do while
 * every other connection waits.  Nor does it wait for
 * the filesystem lock: held by a program, the lock lane or a control
 * command, the request is queued.  Everything else, and everything while
 * the lane is busy, is queued as before.  Returns 1 when it was served.
 */
#define INLINE_MAX ((64u << 10) + 1024u) /* a 64 KiB write and its header */

static int serve_inline(struct arfd *d, struct arfd_lane *l, const struct arfd_proc *proc,
			struct arf_net_sconn *c, const struct arf_net_hdr *h, const uint8_t *body,
			size_t len)
{
	int quick = ((proc->flags & ARFD_PROC_UNSTABLE) && !d->cfg.sync) ||
		    (proc->flags & ARFD_PROC_BRIEF) ||
		    ((proc->flags & ARFD_PROC_NAMING) && arfd_commit_quick(d));

	if (l != d->lanes[ARFD_LANE_REQUEST] || !quick || len > INLINE_MAX ||
	    __atomic_load_n(&d->ctl_waiting, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&l->lock);
	int mine = !l->len && !l->busy;
	if (mine)
		l->busy++;
	pthread_mutex_unlock(&l->lock);
	if (!mine)
		return 0;
	int served = arfd_request_try(d, c, h->id, h->op, body, len);
	if (served)
		__atomic_fetch_add(&d->ctr.inline_requests, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&l->lock);
	l->busy--;
	pthread_mutex_unlock(&l->lock);
	return served;
}

void arfd_on_request(void *ctx, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		     const uint8_t *body, size_t len)
{
	struct arfd_conn *ac = arf_net_sconn_udata(c);
	struct arfd *d = ac ? ac->d : ctx; /* the volume the connection chose (server.c) */
	const struct arfd_proc *proc = arfd_proc_find(h->op);
	struct arfd_lane *l = d->lanes[proc->lane];

	if (serve_inline(d, l, proc, c, h, body, len))
		return;
	/* a big body (a 1 MiB WRITE) is not copied: the job takes the
	 * soft-NIC's receive buffer (the copy was a tenth of arfd's CPU) */
	void *owned = arf_net_sconn_take_body(c);
	struct arfd_job *j = malloc(sizeof(*j) + (owned ? 0 : len));
	uint32_t uid = 0;
	int rc = -ENOMEM;

	if (!j) {
		arf_net_sconn_body_free(c, owned);
	} else {
		j->next = NULL;
		j->c = c;
		arf_net_sconn_ref(c);
		j->id = h->id;
		j->op = h->op;
		j->len = len;
		j->owned = owned;
		j->body = owned ? body : j->copy;
		if (!owned)
			memcpy(j->copy, body, len);
		uid = flow_uid(arf_net_sconn_udata(c), body, len);
		pthread_mutex_lock(&l->lock);
		rc = lane_put(l, j, uid);
		pthread_mutex_unlock(&l->lock);
		/* after the unlock: a worker woken while the lock is still held
		 * would sleep again on the mutex, a second wake-up */
		if (!rc)
			pthread_cond_signal(&l->cond);
		if (rc)
			job_free(j);
		else /* its reply comes from a worker: the soft-NIC polls less */
			arf_net_server_handed_off();
	}
	if (rc)
		arf_net_reply(c, h->id, h->op, arf_net_status_from_err(rc), NULL, 0);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The next job to serve, or NULL when the lane stops.  Adaptive wait:
 * spin on the queue's length (common/arf_spin.h: less while such spins
 * catch nothing), then sleep on the condition. */
static struct arfd_job *lane_next(struct arfd_lane *l)
{
	struct arfd *d = l->d;
	uint32_t spin = __atomic_load_n(&l->len, __ATOMIC_ACQUIRE) ? 0 : arf_spin_budget(&l->spin);
	uint64_t deadline = spin ? now_us() + spin : 0;
	struct arfd_job *j = NULL;

	while (spin && !__atomic_load_n(&l->len, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE) && now_us() < deadline)
		__builtin_ia32_pause();
	if (spin)
		arf_spin_done(&l->spin, spin, __atomic_load_n(&l->len, __ATOMIC_ACQUIRE) != 0);
	pthread_mutex_lock(&l->lock);
	for (;;) {
		int stopping = __atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE);

		if (l->round && !(stopping && l->drop_on_stop)) {
			j = lane_take(l);
			l->busy++; /* until served (lane_main) */
			break;
		}
		if (stopping)
			break;
		pthread_cond_wait(&l->cond, &l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	return j;
}

static void *lane_main(void *arg)
{
	struct arfd_lane *l = arg;
	struct arfd *d = l->d;
	struct arfd_job *j;

	if (l->nice && setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), l->nice) < 0)
		arfd_log(ARFD_LOG_WARN, "%s worker: cannot lower its priority (nice %d): %s", l->name,
			 l->nice, strerror(errno));
	while ((j = lane_next(l))) {
		if (l == d->lanes[ARFD_LANE_PROGRAM])
			arfd_prog_request(d, j->c, j->id, j->op, j->body, j->len); /* not under fs_lock */
		else
			arfd_request(d, j->c, j->id, j->op, j->body, j->len);
		job_free(j);
		pthread_mutex_lock(&l->lock);
		l->busy--;
		pthread_mutex_unlock(&l->lock);
	}
	arfd_prog_thread_exit();
	return NULL;
}

static struct arfd_lane *lane_create(struct arfd *d, const char *name)
{
	struct arfd_lane *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->d = d;
	l->name = name;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	return l;
}

int arfd_lanes_start(struct arfd *d, char *err, size_t errlen)
{
	struct arfd_lane *rq = lane_create(d, "request"), *pg = lane_create(d, "program");
	int rc;

	d->lanes[ARFD_LANE_REQUEST] = rq;
	d->lanes[ARFD_LANE_PROGRAM] = pg;
	if (!rq || !pg) {
		snprintf(err, errlen, "worker queues: out of memory");
		return -ENOMEM;
	}
	arf_spin_init(&rq->spin, (uint32_t)d->cfg.spin_us);
	pg->nice = d->cfg.prog_nice;
	pg->drop_on_stop = 1;
	struct {
		struct arfd_lane *l;
		int n;
	} want[2] = { { rq, d->cfg.workers }, { pg, d->cfg.prog_workers } };
	for (int k = 0; k < 2; k++) {
		struct arfd_lane *l = want[k].l;

		for (int i = 0; i < want[k].n && i < 64; i++) {
			if ((rc = pthread_create(&l->workers[i], NULL, lane_main, l))) {
				snprintf(err, errlen, "%s worker thread: %s", l->name, strerror(rc));
				return -rc;
			}
			l->nworkers++;
		}
	}
	return 0;
}

void arfd_lanes_stop(struct arfd *d)
{
	/* d->stopping is set: wake every worker, join them, free what is left */
	for (int k = 0; k < 2; k++) {
		struct arfd_lane *l = d->lanes[k];

		if (!l)
			continue;
		pthread_mutex_lock(&l->lock);
		pthread_cond_broadcast(&l->cond);
		pthread_mutex_unlock(&l->lock);
	}
	for (int k = 0; k < 2; k++) {
		struct arfd_lane *l = d->lanes[k];

		if (!l)
			continue;
		for (int i = 0; i < l->nworkers; i++)
			pthread_join(l->workers[i], NULL);
		while (l->round)
			job_free(lane_take(l));
		pthread_mutex_destroy(&l->lock);
		pthread_cond_destroy(&l->cond);
		free(l);
		d->lanes[k] = NULL;
	}
}

unsigned arfd_lane_queued(struct arfd *d, enum arfd_lane_id lane)
{
	struct arfd_lane *l = d->lanes[lane];

	return l ? __atomic_load_n(&l->len, __ATOMIC_ACQUIRE) : 0;
}

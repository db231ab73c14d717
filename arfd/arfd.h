/* SPDX-License-Identifier: MIT */
/*
 * arfd — the server: one export's regions, its store (RocksDB and the data
 * log), the transport server (soft-NIC) and the workers, put together.
 *
 * Threads: the soft-NIC thread(s) of net/ serve one-sided operations and
 * queue requests in two lanes (lanes.c); [server] workers threads take
 * plain requests, run ops/ hooks under the filesystem lock and write each
 * mutation to the store inside that lock (so batches land in commit
 * order); [programs] workers threads, at a lower priority, load and run
 * programs (progs.c), never holding up the request workers; the committer
 * thread syncs the data log and the write-ahead log for every group of
 * waiting mutations and COMMITs (group commit), seals the objects they
 * changed (every change but an unstable write stays invisible to one-sided
 * readers until then), sends their replies, and reclaims the data log.
 */
#ifndef ARFD_H
#define ARFD_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "access.h"
#include "arf_proto.h"
#include "identity.h"
#include "arf_meta_fs.h"
#include "arf_net.h"
#include "config.h"
#include "store.h"

struct arfd_lane;
struct arfd_locks;
struct arfd_xattrs;
struct arfd_progs;
struct arfd_pending;
struct arf_cred;
struct arf_proto_cred;
struct arfd_control;
struct arf_proto_wr;
struct arfd_replies;
struct arf_cell_view;

/* Server-side counters (monotonic). */
struct arfd_counters {
	uint64_t requests[ARF_PROTO_NKINDS]; /* by arf_proto_op_index; last = other */
	uint64_t errors;         /* requests answered with a failure status */
	uint64_t mutations;      /* transactions persisted */
	uint64_t unstable_writes;/* WRITEs answered before they were durable (until a COMMIT) */
	uint64_t stable_writes;  /* WRITEs answered once durable ([export] sync) */
	uint64_t commits;        /* COMMITs answered (everything before them durable) */
	uint64_t reclaims;       /* data log segments copied out by reclamation */
	uint64_t objects_written;/* objects in those transactions */
	uint64_t syncs;          /* WAL syncs (group commits) */
	uint64_t synced_txns;    /* transactions made durable by those syncs */
	uint64_t bad_requests;   /* undecodable request bodies */
	uint64_t inline_requests;/* requests the soft-NIC thread served itself (lanes.c) */
	uint64_t prog_loads;     /* programs verified and cached */
	uint64_t prog_jitted;    /* of those, compiled to native code */
	uint64_t prog_jit_failed;/* of those, left to the interpreter by a JIT failure */
	uint64_t prog_load_hits; /* loads answered from the cache */
	uint64_t prog_rejected;  /* loads refused by the loader or verifier */
	uint64_t prog_evictions; /* programs dropped from the full cache */
	uint64_t prog_execs;     /* program runs */
	uint64_t prog_insns;     /* instructions those runs executed */
	uint64_t prog_failures;  /* runs that failed (budget, fault, output, helper) */
	uint64_t prog_budget_stops; /* runs stopped at the instruction or wall-clock limit */
};

struct arf_cell_member;
struct arfd_move_in;
struct arfd_conn;
/* A volume's data region filled before its opening (vol move, move_in.c):
 * its memfd and mapping, and for each block the data log record its image
 * came from (arfd_datalog_fill). */
struct arfd_prefill {
	char name[64];
	int fd;
	void *data;
	uint64_t size;
	uint32_t nblocks;
	uint64_t *inc, *seq;
};
struct arfd_req;

struct arfd {
	/* A volume (issue 18): the root one is this struct itself, which also
	 * holds what the server shares (the transport, the control socket, the
	 * pid file); each [volume NAME] is one more struct arfd, with its own
	 * regions, store, locks, workers and committer, that shares net. */
	struct arfd *host;                   /* the root volume's; NULL in the root itself */
	char volume[ARFD_VOLUME_NAME_MAX];   /* "root" or the [volume NAME] */
	uint32_t view;                       /* its regions' net view (0 for the root) */
	struct arfd *vols[ARFD_MAX_VOLUMES]; /* in the root: the others, nvols of them
					      * (nvols atomic: arfctl vol create adds one
					      * while on_hello looks them up) */
	int nvols;
	uint32_t next_view;                  /* in the root: the next volume's net view */
	pthread_mutex_t vol_lock;            /* in the root: making a volume, and cell below
					      * (arfd_start makes it) */
	struct arf_cell_member *cell;        /* in the root: its membership while serving */
	int serving;                         /* in the root: the transport started (atomic) */
	int removed;                         /* a volume vol rm removed (seq_cst atomic):
					      * found by no name, in no walk of vols */
	struct arf_cell_view *cellview;      /* in the root, in a cell: its copy of the cell's
					      * records for LOCATE (locate.c; atomic) */
	char cell_id[64];                    /* in the root, in a cell: its server id */
	struct arfd_config cfg;
	struct arfd_store *store;
	struct arf_meta_fs fs;
	int meta_fd, data_fd, scratch_fd;   /* memfds, passed to shm clients */
	void *meta, *data, *scratch;
	uint64_t meta_size, data_size, scratch_size;
	uint64_t incarnation;
	struct timespec started;
	struct arf_net_server *net;
	int stopping;                        /* set by arfd_stop once the transport is gone */
	int prog_abort;                      /* set first by arfd_stop: program runs in progress
					      * stop at their next look at the clock (atomic) */

	pthread_mutex_t fs_lock;             /* serialises ops/ and meta/ changes (arfd_fs_lock) */
	pthread_rwlock_t fs_rw;              /* held for writing with fs_lock, for reading by the
					      * procedures and helpers that only read (arfd_fs_rdlock) */
	int ctl_waiting;                     /* control commands waiting for fs_lock (atomic):
					      * request workers let them go first */
	struct arfd_lane *lanes[2];          /* by enum arfd_lane_id: queues and workers (lanes.c) */
	int committer_started;

	/* group commit (under fs_lock) */
	uint64_t applied_seq;                /* last transaction applied and written; sequences
					      * go on across restarts (store.h) */
	uint64_t durable_seq;                /* last transaction whose data log and WAL are synced */
	uint64_t sync_wanted;                /* highest seq someone waits to see durable */
	int sync_forced;                     /* reclamation needs one more sync (commit.c) */
	int syncing;                         /* a group commit is in progress (commit.c) */
	int test_hold_armed;                 /* a COMMIT came: [server] test_commit_hold_ms applies */
	int sync_failed;                     /* a sync failed: nothing becomes durable any more */
	uint64_t sync_ns_avg;                /* recent syncs' mean duration (commit.c) */
	uint64_t sync_ns_last;               /* the last sync's (commit.c) */
	int reclaim_due;                     /* a round on the transport's thread left the
					      * data log's reclamation to the committer */
	struct arfd_pending *pending;        /* deferred seals and waiting replies */
	pthread_cond_t commit_cond;          /* wakes the committer */
	pthread_t committer;
	int failed;                          /* fail-stop (commit.c): set once, under fs_lock
					      * (read atomically outside it) */
	char failure[256];                   /* why, once failed (log, arfctl status) */
	int pid_file_written;                /* ours to remove at stop (it holds our pid) */

	struct arfd_counters ctr;            /* under fs_lock; requests, errors and bad_requests
					      * atomically (shared procedures count too) */
	uint64_t clients;                    /* connections open (atomic) */
	struct arfd_control *control;        /* management socket (control.c) */
	struct arfd_progs *progs;            /* program cache and helpers (progs.c) */
	struct arfd_nets nets;               /* [export] clients, parsed (under fs_lock) */
	struct arfd_identity *identity;      /* token key, stale-handle counts (identity.c) */
	struct arfd_locks *locks;            /* advisory locks, leases, grace (locks.c) */
	struct arfd_xattrs *xattrs;          /* extended attributes and ACLs (xattr.c) */
	struct arfd_replies *replies;        /* the reply cache (replies.c; under fs_lock) */
	uint8_t auth_key[ARF_NET_AUTH_KEY_BYTES]; /* from secret_file */
	int has_auth_key;
	uint8_t move_key[ARF_NET_AUTH_KEY_BYTES]; /* in the root: [cell] move_secret_file's */
	int has_move_key;
	char moved_to[320];                  /* a volume vol move sent away: "volume 'X' is on
					      * server 'Y': arf://HOST:PORT/", written before
					      * moved is set */
	int moving;                          /* vol move is sending it (under the root's
					      * vol_lock): vol rm and release refuse it */
	pthread_mutex_t out_lock;            /* in the root: held by the one vol move out, and
					      * by arfd's stop */
	int moved;                           /* (atomic, release/acquire) sent away: hellos
					      * are sent on, requests refused */
	char arriving[ARFD_VOLUME_NAME_MAX]; /* in the root: a volume received and served,
					      * its record not yet flipped here (move_in.c):
					      * its hellos are told to try again */
	int arriving_set;                    /* (atomic) arriving is meant */
	struct arfd_prefill *prefill;        /* in the root, while vol move's receiver serves
					      * a volume: its data region, filled already
					      * (move_in.c; server.c takes it over) */
	int move_threads, move_stopping;     /* in the root (atomic): sessions being ended on
					      * threads of their own; arfd_stop began */
	struct arfd_move_in *move_in;        /* in the root: the volume being received
					      * (move_in.c; under move_lock) */
	pthread_mutex_t move_lock;
};

/* Start everything from d->cfg: regions, store (format or load), transport,
 * workers.  Returns 0 or a negative error with a one-line reason in err. */
int arfd_start(struct arfd *d, char *err, size_t errlen);
/* Stop serving, drain, sync and free everything.  Safe after a failed start. */
void arfd_stop(struct arfd *d);
/* The volume named name on root's server ("" and "root": root itself), or NULL. */
struct arfd *arfd_volume_find(struct arfd *root, const char *name);
/* Open and serve one more volume of root's server, named name, configured
 * by vcfg (arfd_config_volume's): 0, or -errno with the reason in err.
 * Called by the start, then only by the control thread (volumes.c). */
int arfd_volume_add(struct arfd *root, const char *name, const struct arfd_config *vcfg,
		    char *err, size_t errlen);
/* Close a volume that vol rm removed (its removed flag set, no client
 * left): its workers drained, store synced and closed, regions unmapped,
 * its net view retired.  The struct stays in its root's vols (skipped by every
 * walk of them) until arfd_stop. */
void arfd_volume_retire(struct arfd *v);
/* volumes.c: the volumes arfctl vol create made, served at each start
 * after the [volume NAME] sections; and the control command that makes
 * one ("volume-create NAME [KEY=VALUE ...]"). */
int arfd_volumes_made_start(struct arfd *root, char *err, size_t errlen);
struct json_object *arfd_volume_create(struct arfd *root, const char *args);
/* "volume-remove NAME [force]": a made volume with no client removed. */
struct json_object *arfd_volume_remove(struct arfd *root, const char *args);
/* "volume-release NAME": NAME's read-only replica NAME.readonly made (or
 * made again) from a snapshot of it, on this server (AFS's vos release). */
struct json_object *arfd_volume_release(struct arfd *root, const char *args);
/* vol move's ends (volumes.c).  movable: 0 when v, named name, is one
 * vol move may send (made by vol create: not the root, a replica or an
 * arfd.conf section), else -EINVAL with err.  admit: a volume called name
 * with settings (volume.conf's KEY=VALUE lines) could be taken here (v and
 * vc filled): 0, or -errno with err.  install: the received directory dir
 * made volume v (its volume.conf written, saying how; renamed into
 * DATA_DIR/volumes; served; recorded): 0 or -errno with err.  let_go: v,
 * sent away, found by no hello, its connections closed and waited for
 * (10 s), then closed and its files deleted.  remove_dir: a staging
 * directory deleted (0 when absent). */
int arfd_volume_movable(struct arfd *root, struct arfd *v, const char *name, char *err,
			size_t errlen);
int arfd_volume_admit(struct arfd *root, const char *name, const char *settings,
		      struct arfd_volume_cfg *v, struct arfd_config *vc, char *err, size_t errlen);
/* A replica (NAME.readonly) sent here by vol release NAME SERVER: admit as
 * above, an existing one vol release made allowed (*replace set); and
 * replace_out: that one made unreachable, its clients let go (10 s),
 * closed and deleted, before the new one is installed.  0 or -errno with
 * err. */
int arfd_volume_admit_replica(struct arfd *root, const char *name, const char *settings,
			      struct arfd_volume_cfg *v, struct arfd_config *vc, int *replace,
			      char *err, size_t errlen);
int arfd_volume_replace_out(struct arfd *root, const char *name, char *err, size_t errlen);
/* volume.conf's first line in a replica vol release made ("...NAME ..."). */
#define ARFD_REPLICA_MARK "a read-only replica of "
int arfd_volume_install(struct arfd *root, const char *dir, const struct arfd_volume_cfg *v,
			const struct arfd_config *vc, const char *how, char *err, size_t errlen);
void arfd_volume_let_go(struct arfd *root, struct arfd *v, const char *what);
int arfd_volume_remove_dir(const char *dir);
/* A region's memory: a sealable memfd of size bytes, mapped shared (server.c). */
int arfd_map_region(const char *name, uint64_t size, int *fd, void **base, char *err,
		    size_t errlen);
/* A control command's refusal: {"error": the message}. */
struct json_object *arfd_volume_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "volume-release NAME SERVER" (move_out.c): NAME's replica made on
 * another server of the cell. */
struct json_object *arfd_volume_release_to(struct arfd *root, const char *name, const char *to);
/* "volume-move NAME SERVER" (move_out.c, arfctl vol move). */
struct json_object *arfd_volume_move(struct arfd *root, const char *args);
/* ARF_OP_VOLUME_IN (move_in.c): a volume sent here; and the connection's
 * session ended (on_close). */
int arfd_proc_volume_in(struct arfd_req *q);
void arfd_move_in_closed(struct arfd *root, struct arfd_conn *ac);
/* arfd_stop's first step: later sessions end where their connection
 * closes, and those being ended elsewhere are waited for. */
void arfd_move_in_stop(struct arfd *root);
/* How many more volumes this run of arfd can serve (server.c: places and
 * net views are not used again until a restart). */
int arfd_volume_room(const struct arfd *root);


/*
 * Request procedures (procs.c): one entry per request kind, as nfsd's
 * procedure tables.  dispatch.c does what all share around proc->run.
 */
enum arfd_lane_id {
	ARFD_LANE_REQUEST = 0,   /* short requests under fs_lock: the request workers */
	ARFD_LANE_PROGRAM = 1,   /* PROG_LOAD/PROG_EXEC (progs.c): the program workers */
};
#define ARFD_PROC_MUTATES 1u    /* changes the filesystem: a transaction; EROFS on read-only */
#define ARFD_PROC_HANDLE  2u    /* may name a file handle: stale-handle limits apply */
#define ARFD_PROC_DURABLE 4u    /* replies once everything applied before it is durable */
#define ARFD_PROC_UNSTABLE 8u   /* a data write: answered before it is durable (NFSv3's
				 * UNSTABLE) unless [export] sync; every other mutation
				 * replies once durable */
#define ARFD_PROC_SHARED  16u   /* only reads: runs with the lock shared (arfd_fs_rdlock) */
#define ARFD_PROC_BRIEF   32u   /* a read of constant cost and a short reply: may be
				 * served by the transport's thread (lanes.c) */
#define ARFD_PROC_NAMING 128u  /* a change of names or attributes of bounded cost (no
				 * data copied, little freed: arfd_proc.small): served by
				 * the transport's thread while syncs are quick (lanes.c) */
#define ARFD_PROC_UNLOCKED 64u  /* touches no filesystem state: runs without the lock and
				 * without credentials (move_in.c, which takes its own) */
#define ARFD_PROC_BASE    ARF_OP_GETATTR /* the lowest request kind */
#define ARFD_PROC_LATER   1      /* a procedure's return: it kept the request and will
				  * answer it itself (arf_net_reply), later */

/* One request as its procedure sees it (fs_lock held). */
struct arfd_req {
	struct arfd *d;
	struct arfd_conn *ac;        /* the connection it came on */
	struct arf_proto_rd *r;      /* the body after the credentials (untrusted) */
	const struct arf_cred *cr;   /* the credentials it acts with (identity.c) */
	struct arf_proto_wr *w;      /* the reply body */
	struct arf_net_sconn *c;     /* where the reply goes, for ARFD_PROC_LATER */
	uint64_t id;                 /* the request's id, likewise */
	uint16_t op;                 /* its kind */
};

struct arfd_proc {
	uint16_t op;                 /* request kind (0: the entry for unknown kinds) */
	unsigned flags;              /* ARFD_PROC_* */
	enum arfd_lane_id lane;      /* who serves it */
	/* decodes the rest of the body and serves it: 0, -errno or an ARF code;
	 * NULL for the program lane's kinds (progs.c serves those) */
	int (*run)(struct arfd_req *q);
	/* ARFD_PROC_NAMING kinds that may free data (unlink, rmdir, rename,
	 * setattr): does this request free little?  A peek at the body (a copy
	 * of the reader) under the lock, before anything changes; NULL: always */
	int (*small)(struct arfd_req *q);
};

/* The procedure of a request kind; an unknown kind's answers ENOSYS.  Never NULL. */
const struct arfd_proc *arfd_proc_find(uint16_t op);
/* File space (procs_space.c): APPEND, FALLOCATE, SEEK. */
int arfd_proc_append(struct arfd_req *q);
int arfd_proc_fallocate(struct arfd_req *q);
int arfd_proc_seek(struct arfd_req *q);

/* procs_compound.c: the directories a change of names changes, as the
 * reply's wcc (arf_proto.h): arfd_wcc_pre notes each directory's ctime
 * before the hook runs (a and b, b NULL or the same for one directory);
 * arfd_wcc_reply, after it, appends their attributes when rc is 0 and
 * returns rc. */
struct arfd_wcc {
	uint32_t n;
	struct arf_proto_fh fh[2];
	int64_t pre[2];
	int objs;                    /* the reply has an objs part (UNLINK, RMDIR, RENAME) */
	uint32_t nobj;
	struct arf_proto_fh obj[2];  /* the files the names named before the change */
};
void arfd_wcc_pre(struct arfd_req *q, struct arfd_wcc *x, const struct arf_proto_fh *a,
		  const struct arf_proto_fh *b);
/* Also report, after the wcc, what becomes of the file name names in dir
 * now (an objs part: arf_proto.h); call once per name, after arfd_wcc_pre. */
void arfd_wcc_obj(struct arfd_req *q, struct arfd_wcc *x, const struct arf_proto_fh *dir,
		  const char *name, uint32_t nlen);
int arfd_wcc_reply(struct arfd_req *q, int rc, const struct arfd_wcc *x);
/* LOCATE (locate.c). */
int arfd_proc_locate(struct arfd_req *q);
/* CREATE_WRITE and COPY (the table's entries for them). */
int arfd_proc_create_write(struct arfd_req *q);
int arfd_proc_copy(struct arfd_req *q);

/*
 * Lanes (lanes.c): the soft-NIC's callback queues a request in its kind's
 * lane, fairly by (connection, claimed uid); each lane's workers serve it.
 * arfd_lanes_start starts [server] workers request workers and [programs]
 * workers program workers: 0, or -errno with the reason in err (call
 * arfd_lanes_stop all the same).  arfd_lanes_stop, once d->stopping is
 * set: joins the workers (the request lane drains its queue first, the
 * program lane drops its own) and frees the lanes.
 */
void arfd_on_request(void *ctx, struct arf_net_sconn *c, const struct arf_net_hdr *h,
		     const uint8_t *body, size_t len);
int arfd_lanes_start(struct arfd *d, char *err, size_t errlen);
void arfd_lanes_stop(struct arfd *d);
/* Jobs waiting in a lane now. */
unsigned arfd_lane_queued(struct arfd *d, enum arfd_lane_id lane);
/* Serve one request of the request lane (dispatch.c): decode, run, count, reply. */
void arfd_request(struct arfd *d, struct arf_net_sconn *c, uint64_t id, uint16_t op,
		  const uint8_t *body, size_t len);
/* the same, only if the filesystem lock is free at once; 0 (nothing done)
 * when it is not, else 1 (lanes.c, serve_inline) */
int arfd_request_try(struct arfd *d, struct arf_net_sconn *c, uint64_t id, uint16_t op,
		     const uint8_t *body, size_t len);

/*
 * Transactions, the group commit and fail-stop (commit.c).  Requests and
 * programs' hooks alike, with fs_lock held: arfd_txn_begin, an ops/ hook,
 * arfd_txn_commit.
 */
/* Start a transaction: 0, or -EIO on an export that has failed (nothing
 * may change then: the caller answers EIO). */
int arfd_txn_begin(struct arfd *d);
/*
 * End the transaction, write it to the store (in the lock, so batches land
 * in commit order: applied_seq + 1 is its sequence) and make it visible:
 * an unstable one (a data write, not on a sync export) is sealed at once,
 * any other is sealed by the group commit that makes it durable.  Returns
 * its sequence number (0: nothing changed, or it failed; unless unstable,
 * the reply must wait for durable_seq >= it).  When the store refuses the
 * write, or the change could not be recorded (out of memory), the export
 * fails (arfd_fail) and *rc becomes -EIO.
 */
uint64_t arfd_txn_commit(struct arfd *d, int unstable, int *rc);

/*
 * The filesystem lock (dispatch.c), in two parts.  Whatever changes ops/
 * and meta/ state, the export's settings, the counters' non-atomic parts
 * or the group commit's sequences holds it exclusively: arfd_fs_lock takes
 * fs_lock (the mutex commit_cond waits with) and then fs_rw for writing.
 * What only reads the filesystem -- GETATTR, LOOKUP, READDIR, READ,
 * READLINK, ACCESS, STATFS, SEEK, XATTR_GET and XATTR_LIST
 * (ARFD_PROC_SHARED) and the helpers that look or copy (lookup,
 * file_view, dir_read, file_digest) -- holds fs_rw for reading alone, so
 * those run on as many workers at once as there are.  fs_rw prefers
 * writers: a stream of reads never starves a change.  Lock order: fs_lock,
 * then fs_rw; a reader never takes fs_lock, and never fs_rw twice.
 */
void arfd_fs_lock(struct arfd *d);
void arfd_fs_unlock(struct arfd *d);
/* With the lock held exclusively: release it, wait on cv, take it again. */
void arfd_fs_wait(struct arfd *d, pthread_cond_t *cv);
void arfd_fs_rdlock(struct arfd *d);
void arfd_fs_rdunlock(struct arfd *d);
/* Initialised and destroyed with the server (server.c). */
int arfd_fs_lock_init(struct arfd *d);
void arfd_fs_lock_destroy(struct arfd *d);

/* The lock, exclusively, for the control socket: taken ahead of the request
 * workers, which would otherwise take it back between requests for as long
 * as their queue lasts (a mutex is not fair), leaving `arfctl stats`
 * unanswered under load.  Released with arfd_fs_unlock. */
void arfd_lock_for_control(struct arfd *d);
/* Under the control lock: wait until everything applied is durable
 * (control.c; the lock is let go while the committer works). */
void arfd_quiesce(struct arfd *d);
/* The committer thread: group commits (WAL sync, seals, waiting replies). */
void *arfd_committer_main(void *arg);
/* Under fs_lock, once a reply waits for applied_seq to be durable: the
 * group commit, run by the caller itself when that is quicker than waking
 * the committer (commit.c); returns under fs_lock, which the transport's
 * thread (`transport`: lanes.c's serve_inline) keeps throughout. */
void arfd_commit_wanted(struct arfd *d, int transport);
/* What syncs are taken to cost before any was timed: 1 ms (about 17 timed
 * syncs bring a tmpfs's average under the 100 us that commit.c wants). */
#define ARFD_SYNC_NS_UNKNOWN 1000000u
/* Have the recent group commits been quick enough for the transport's
 * thread to serve a change that waits for one (lanes.c)?  Read without the
 * lock: a hint. */
int arfd_commit_quick(struct arfd *d);
/* Fail-stop (fs_lock held): mark the export failed for the reason why
 * (once; later calls keep the first reason), log it, seal nothing more and
 * wake the committer to answer the replies waiting for a sync. */
void arfd_fail(struct arfd *d, const char *why);
/* Has the export failed?  Without fs_lock: a request that looked before
 * taking the lock must look again in it. */
static inline int arfd_failed(const struct arfd *d)
{
	return __atomic_load_n(&d->failed, __ATOMIC_ACQUIRE);
}

/*
 * The reply cache (replies.c), under fs_lock: the replies of the last
 * mutations, each written in its mutation's RocksDB batch, so that a call
 * sent again after a reconnection (same client id and request id) is
 * answered as the first time instead of being applied twice.
 * start loads it from the store (0 or -errno with err); find puts a
 * recorded reply's body in w and its transaction in *txn (0: durable
 * already) and returns 1, or returns 0; stage records w as the reply to
 * the mutation in progress (if the call is keyed and it fits), written
 * with its transaction; done says which transaction that was (0: none,
 * the record goes too).
 */
int arfd_replies_start(struct arfd *d, char *err, size_t errlen);
void arfd_replies_stop(struct arfd *d);
int arfd_replies_find(struct arfd *d, const struct arfd_conn *ac, uint64_t id, uint32_t uid,
		      struct arf_proto_wr *w, uint64_t *txn);
void arfd_replies_stage(struct arfd *d, const struct arfd_conn *ac, uint64_t id, uint32_t uid,
			const struct arf_proto_wr *w);
void arfd_replies_done(struct arfd *d, uint64_t txn);
/* Calls answered from the cache so far. */
uint64_t arfd_replies_replayed(const struct arfd *d);

/* Mobile code (progs.c): the program cache, start to stop. */
int arfd_progs_start(struct arfd *d, char *err, size_t errlen);
void arfd_progs_stop(struct arfd *d);
/* PROG_LOAD / PROG_EXEC, on a program worker, without fs_lock (a program
 * runs while the request workers serve requests; its hooks take the lock). */
void arfd_prog_request(struct arfd *d, struct arf_net_sconn *c, uint64_t id, uint16_t op,
		       const uint8_t *body, size_t len);
/* A worker ends: free its vm (if it ran programs). */
void arfd_prog_thread_exit(void);

/* One cached program as the control socket shows it (arfctl progs). */
struct arfd_prog_info {
	uint8_t hash[32];        /* BLAKE2b-256 of the bytes as loaded (ARF_PROTO_PROG_HASH) */
	uint64_t bytes;          /* size as loaded: raw bytecode or ELF object */
	uint64_t insns;          /* instructions once loaded (relocated, for ELF) */
	uint64_t entry;          /* instruction where runs start */
	uint64_t rodata;         /* read-only data bytes (an ELF object's data sections) */
	int elf;                 /* loaded from an ELF object */
	int native;              /* runs as native code from the JIT (else interpreted) */
	uint64_t native_bytes;   /* size of that code */
	uint64_t loads;          /* PROG_LOADs of these bytes, the first included */
	uint64_t runs;           /* runs, failed ones included */
	uint64_t failures;       /* runs that failed (budget, fault, output, helper) */
	uint64_t insns_run;      /* instructions its runs executed */
	unsigned running;        /* runs in progress when the snapshot was taken */
	int64_t loaded_at;       /* CLOCK_REALTIME seconds of its first load */
	int64_t last_used;       /* CLOCK_REALTIME seconds of its last load or run */
	uint64_t lru;            /* the cache's clock at that use: larger = more recent */
	uint32_t owner_uid;      /* the identity whose quota it counts against */
};

/*
 * A snapshot of the program cache, most recently used first: *out
 * (malloc'd, the caller frees; NULL when empty), *n programs, *cap the
 * cache's size.  Takes the cache lock briefly.  0 or -ENOMEM.
 */
int arfd_progs_list(struct arfd *d, struct arfd_prog_info **out, size_t *n, size_t *cap);
/*
 * The one cached program whose hash, in hex, starts with prefix (1 to 64
 * hex digits, either case): its info, and when text is not NULL its
 * disassembly (*text malloc'd, the caller frees; mobilecode's syntax).
 * Returns 0, or with the reason in err: -EINVAL (not a hex prefix),
 * -ENOENT (no program matches), -ENOTUNIQ (several do), -ENOMEM, or the
 * disassembler's -EINVAL.
 */
int arfd_progs_show(struct arfd *d, const char *prefix, struct arfd_prog_info *info, char **text,
		    char *err, size_t errlen);
/*
 * Drops the program that prefix names (as arfd_progs_show) from the cache,
 * its last counters in *info.  A run in progress finishes with its copy; a
 * later PROG_EXEC of the hash answers ARF_ENOPROG and the client loads it
 * again.  Same errors as arfd_progs_show, less the disassembler's.
 */
int arfd_progs_unload(struct arfd *d, const char *prefix, struct arfd_prog_info *info, char *err,
		      size_t errlen);

/* The server's status as a JSON object, appended to w (caller holds fs_lock). */
void arfd_status_json(struct arfd *d, struct arf_proto_wr *w);
/* The same summary as a json-c object, NULL when out of memory; the caller
 * owns it (json_object_put).  Caller holds fs_lock (status.c). */
struct json_object;
struct json_object *arfd_status_object(struct arfd *d);
/* {"volumes": [...]}: each volume's status object (root first) with its
 * data_dir, each under its own lock; only one when only is not NULL (an
 * {"error": ...} object when it names none).  NULL when out of memory. */
struct json_object *arfd_volumes_object(struct arfd *root, const char *only);

/* The management socket (control.c): start after the transport, stop
 * first.  Returns 0 or -errno with the reason in err. */
int arfd_control_start(struct arfd *d, char *err, size_t errlen);
/* The control socket's path from the configuration ("auto": beside the
 * UNIX socket).  Returns 0, or -1 when there is none. */
int arfd_control_path(const struct arfd_config *cfg, char *out, size_t cap);
void arfd_control_stop(struct arfd *d);

/* Deferred seals and waiting replies (pending.c). */
struct arfd_pending *arfd_pending_create(void);
void arfd_pending_destroy(struct arfd_pending *p);
/* Record that transaction seq changed these objects (their seal waits). */
int arfd_pending_add_txn(struct arfd_pending *p, uint64_t seq, const struct arf_meta_dirty *list,
			 size_t n);
/* Queue a reply to send once seq is durable. */
int arfd_pending_add_reply(struct arfd_pending *p, uint64_t seq, struct arf_net_sconn *c,
			   uint64_t id, uint16_t op, int32_t status, void *body, size_t len);
/* seq is durable: seal the objects whose last change is <= seq (caller holds
 * fs_lock) and detach the replies to send (send them after unlocking). */
struct arfd_reply *arfd_pending_commit(struct arfd_pending *p, struct arf_meta_fs *fs, uint64_t seq);
/* The export failed: later commits detach replies but seal nothing. */
void arfd_pending_freeze(struct arfd_pending *p);
/* Nothing will become durable: drop the waiting transactions unsealed and
 * detach every waiting reply, turned into an EIO without a body. */
struct arfd_reply *arfd_pending_fail(struct arfd_pending *p);
/* List a, then list b (either may be NULL). */
struct arfd_reply *arfd_pending_join(struct arfd_reply *a, struct arfd_reply *b);
void arfd_pending_send(struct arfd_reply *r);

#endif

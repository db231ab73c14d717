/* SPDX-License-Identifier: MIT */
/*
 * libarf internals: the client structure, the caches and what the
 * library's files lend each other.  Not installed.
 *
 * The files form layers, and calls go only downwards (no file calls one
 * above it, so there is no circle to hide a lock-order bug in):
 *
 *   client.c                 arf_connect/arf_close/arf_stats, the policy
 *   api.c                    the read path: one-sided or shipped or request
 *   progs.c                  mobile code: arf_exec and the standard programs
 *   async.c                  arf_queue: the same operations, in flight together
 *   readahead.c              data posted ahead for sequential readers
 *   locks.c  xattr.c         advisory locks (lease, reclaim); extended attributes
 *   behind.c                 COMMITs sent behind the writes, by a thread
 *   requests.c  onesided.c   requests (mutations, fallbacks); one-sided reads
 *   conn.c                   the connection and its reconnection
 *   wlog.c                   uncommitted writes, re-sent after a server restart
 *   cache.c                  inode and entry caches
 *   url.c attr.c errors.c util.c   parsing, conversions, texts, clock and log
 */
#ifndef ARF_CLIENT_INT_H
#define ARF_CLIENT_INT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#include "arf.h"
#include "arf_meta.h"
#include "arf_net.h"
#include "arf_proto.h"

#define ARF_ICACHE_SIZE 4096   /* inode cache slots (direct-mapped) */
#define ARF_ECACHE_SIZE 4096   /* entry cache slots (direct-mapped) */

struct arf_icache_ent {
	uint64_t ino;                /* 0 = empty */
	uint64_t stamp_ms;           /* when validated */
	int attrs_only;              /* only st holds: attributes a reply carried, no
				      * block map or listing fields (arf_getattr's alone) */
	struct arf_stat st;          /* attrs_only: the attributes */
	struct arf_meta_inode inode; /* !attrs_only: validated copy */
	int fresh;                   /* a change's reply just carried these, not yet
				      * handed out by arf_reply_attr */
};

struct arf_ecache_ent {
	uint64_t dir;                /* 0 = empty */
	uint32_t hash;
	uint8_t namelen;
	char name[256];
	uint64_t child;
	uint32_t child_gen;
	uint8_t type;                /* DT_* of the child */
	uint64_t stamp_ms;
};

struct arf_client {
	/* The connection, replaced by conn.c's reconnect (write lock) while
	 * operations use it under the read lock. */
	pthread_rwlock_t conn_lock;
	struct arf_net_conn *conn;
	uint64_t conn_gen;            /* bumped at every reconnect */
	struct arf_url url;           /* where to reconnect (written by conn.c's redirect
				       * under url_lock; others copy it under it) */
	pthread_mutex_t url_lock;
	char volume[ARF_PROTO_VOLUME_MAX]; /* the URL's ?volume=, "" for the root one */
	uint64_t moved;               /* connections sent elsewhere: "moved" (conn.c; atomic) */
	uint8_t *hello;               /* the handshake bytes */
	size_t hello_len;
	uint8_t auth_key[32];         /* from secret_file */
	int has_auth_key;
	struct arf_net_counters base; /* counters of the connections before this one */
	uint64_t reconnects;
	pthread_mutex_t dial_lock;    /* who dials a new connection (conn.c) ... */
	pthread_cond_t dial_cond;     /* ... and the wait of the others for it */
	int dialing;                  /* a thread is dialling (under dial_lock) */
	uint64_t down_ms;             /* when the connection was closed to dial again (0: up;
				       * atomic) */
	int not_responding;           /* "not responding" was said (atomic) */
	uint64_t next_xid;            /* request ids (atomic; net/'s ARF_NET_ID_CALLER range) */
	uint8_t client_id[ARF_PROTO_CLIENT_ID]; /* random, in the hello: the reply cache's key */
	struct arf_progstate *progs;  /* mobile code (progs.c), made on first use */
	struct arf_lockstate *locks;  /* advisory locks and the lease (locks.c) */
	struct arf_client_opts opts;
	struct arf_client_policy pol; /* opts' thresholds, ARF_OPT_AUTO resolved by transport */
	struct arf_proto_info info;
	struct arf_meta_super sb;     /* validated copy from the handshake */
	int have_regions;             /* server handed out region keys */
	int std_progs_blind;          /* the standard programs found no regions (the server
				       * lends them only to root proven on this connection):
				       * the one-sided walk and requests do their work */
	int no_readdirplus;           /* the server answered READDIRPLUS with ENOSYS (an arfd
				       * older than it): the shipped program lists (atomic) */
	uint8_t token[ARF_PROTO_TOKEN_SIZE]; /* credential token presented at every dial */
	int has_token;

	pthread_mutex_t cache_lock;
	struct arf_icache_ent *icache;
	struct arf_ecache_ent *ecache;

	struct arf_wlog *wlog;        /* uncommitted writes (wlog.c) */
	struct arf_behind *behind;    /* COMMITs behind the writes (behind.c) */

	/* counters (atomic) */
	uint64_t resent_bytes, commits;
	uint64_t requests_by_kind[ARF_NKINDS];
	uint64_t fallbacks_by_reason[ARF_FALLBACK_NREASONS];
	uint64_t retries, fallbacks, execs;
	uint64_t cache_hits, cache_misses;
	uint64_t readahead_bytes;

	struct arf_ra *ra;            /* readahead.c; NULL: opts.readahead 0 */

	/* volumes.c: the volumes reached through mount points.  A client the
	 * caller connected has the table (vols) and vol_index 0; each volume
	 * it crossed into has a client of its own, made by volumes.c, with
	 * vols NULL and the volume's number. */
	struct arf_vols *vols;
	unsigned vol_index;
};

#define ARF_CTR_ADD(c, field, n) __atomic_add_fetch(&(c)->field, (n), __ATOMIC_RELAXED)
/* requests_by_kind's slot of arf_proto_op_index's index: libarf's list is
 * the first ARF_NKINDS - 1 kinds of net/proto.c's, then "other" */
static inline int arf_kind_slot(int idx)
{
	return idx < 0 || idx >= ARF_NKINDS - 1 ? ARF_NKINDS - 1 : idx;
}

/* util.c: the monotonic clock in milliseconds, and the embedder's log sink
 * (nothing when none was set). */
uint64_t arf_now_ms(void);
/* Take a URL's volume=NAME query parameter out of url: rest gets the URL
 * without it (for arf_url_parse), vol its name ("" when none).  0, or
 * -EINVAL with the reason in err (a name as arfd's: 1-63 of [A-Za-z0-9._-]). */
int arf_url_split_volume(const char *url, char *rest, size_t restlen, char *vol, size_t vollen,
			 char *err, size_t errlen);
void arf_log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* attr.c: each form attributes arrive in, to the API's struct arf_stat. */
struct arf_prog_attr;
void arf_stat_from_inode(const struct arf_meta_inode *in, struct arf_stat *st);
void arf_stat_from_proto(const struct arf_proto_attr *a, struct arf_stat *st);
void arf_stat_from_prog(const struct arf_prog_attr *a, struct arf_stat *st);

/* conn.c: the connection, with reconnection: a one-sided batch, and a
 * request/response exchange.  On a broken connection they reconnect and
 * retry for up to opts.reconnect_ms, then return -EIO.  *resent (may be
 * NULL) becomes 1 when the request had to be sent again on a new
 * connection: the server that went away may already have applied it. */
int arf_cl_read(arf_client *c, struct arf_net_read_op *ops, size_t n);
int arf_cl_call(arf_client *c, uint16_t op, const struct iovec *iov, int iovcnt,
		struct arf_net_buf *resp, int *resent);
/* A request id of the client's range (arf_net_call_id): every sending of a
 * mutation under one id, so that the server's reply cache answers one it
 * applied before (arf_cl_call and arf_cl_call_pieces take one each). */
uint64_t arf_cl_new_id(arf_client *c);
/* Several requests of one kind in flight together (a big write's pieces:
 * the server applies one while the next arrives): each sent, then
 * sent(arg) called (work to do while the server works; may be NULL), then
 * each reply awaited; each piece's rc and resp as arf_cl_call's, handed to
 * done(arg, i) once for every piece (done frees resp).  Every piece that
 * has its answer is done under the connection lock's read side, before any
 * reconnection (this thread's or another's) can replay the kept writes,
 * and before a piece the connection lost is sent again (alone, in order,
 * as arf_cl_call sends again, then done outside the lock, with unlocked
 * set): done is where the caller keeps them, so done must not take the
 * connection's lock unless unlocked says it may.  A cancelled
 * caller gets -EINTR for every piece without an answer, none sent again.
 * At most ARF_CL_PIECES_MAX pieces; first_id, when not 0, is the first
 * piece's request id (one sent before: arf_aio_again), the others new. */
#define ARF_CL_PIECES_MAX 4
struct arf_cl_piece {
	const struct iovec *iov;
	int iovcnt;
	struct arf_net_buf resp;  /* out: the caller frees it */
	int rc;                   /* out */
	int unlocked;             /* out: done() runs outside the read side (a piece
				   * sent again): keep through arf_cl_keep_current */
};
void arf_cl_call_pieces(arf_client *c, uint16_t op, uint64_t first_id, struct arf_cl_piece *pc,
			size_t n, void (*sent)(void *arg), void (*done)(void *arg, size_t i),
			void *arg);
/* The first connection, from c's URL, options, key and hello: 0, or the
 * transport's or handshake's error with the reason in err. */
int arf_cl_dial(arf_client *c, char *err, size_t errlen);
/* Transport counters of this connection and those it replaced. */
void arf_cl_counters(arf_client *c, struct arf_net_counters *nc);
/* Posted exchanges on the connection of the moment (async.c): *gen says
 * which connection took it; id as arf_net_post_id's.  Errors as
 * arf_net_post_read / arf_net_post, -ENOTCONN with no connection; when
 * they return 0, p's done will run. */
int arf_cl_post_read(arf_client *c, struct arf_net_read_op *ops, size_t n,
		     struct arf_net_pending *p, uint64_t *gen);
int arf_cl_post(arf_client *c, uint16_t op, uint64_t id, const struct iovec *iov, int iovcnt,
		struct arf_net_pending *p, uint64_t *gen);
/* arf_net_redirect for a round posted on connection gen (0 if replaced). */
int arf_cl_redirect(arf_client *c, uint64_t gen, struct arf_net_pending *p,
		    struct arf_net_read_op *ops);
/* Do posted reads return before their bytes are in (arf_net_reads_async)? */
int arf_cl_reads_async(arf_client *c);
/* arf_net_wait on the connection of the moment. */
int arf_cl_wait(arf_client *c, const int *flag, int timeout_ms);
/* Does rc say that the connection, not the operation, failed? */
int arf_cl_broken(int rc);
/* A posted exchange on connection gen met a broken connection: dial again
 * as the synchronous calls do, until *deadline (0: set now from
 * opts.reconnect_ms; UINT64_MAX: none, a hard mount).  0 = post it again,
 * -EIO = give up, -EINTR = the thread's cancel hook gave up. */
int arf_cl_recover(arf_client *c, uint64_t gen, uint64_t *deadline);
/* The bound of dialling again for an exchange begun at since_ms
 * (arf_now_ms; 0: unknown) that met a broken or missing connection now:
 * from now, or, while the connection is down (closed to dial again), from
 * when the exchange began waiting for it (since_ms, or when it went down
 * if later).  0 when the client never dials again, UINT64_MAX for no
 * bound. */
uint64_t arf_cl_deadline(arf_client *c, uint64_t since_ms);
/* The generation of the connection of the moment (a new one each
 * reconnection). */
uint64_t arf_cl_gen(arf_client *c);
/* Keep an unstable write the server answered with verifier (keep(arg)
 * puts it in the write log), only if the connection of the moment is of
 * that incarnation, under the connection lock's read side: 1 kept, 0 not
 * (the server restarted after its reply and the reconnection's replay ran
 * before this keep, so the caller sends the write again instead, on the
 * new incarnation, before it answers its own caller: a write kept under a
 * lost incarnation and replayed later could land over a newer write). */
int arf_cl_keep_current(arf_client *c, uint64_t verifier, void (*keep)(void *arg), void *arg);
/* A COMMIT answered with verifier: if that is still the connection's
 * incarnation (else a reconnection since covered the log), drop the writes
 * kept under any other (arf_wlog_drop_stale); how many went. */
int arf_cl_drop_stale(arf_client *c, uint64_t verifier);

/*
 * wlog.c: writes the server answered before they were durable, kept until
 * a COMMIT with the same verifier covers them (NFSv3's unstable writes).
 */
struct arf_wlog;
int arf_wlog_init(arf_client *c);   /* 0 or -ENOMEM */
void arf_wlog_free(arf_client *c);
/* Keep a copy of a write the server answered with (verifier, seq): 1 when
 * the bytes kept reach opts.unstable_max_mib (commit now), 0, or -ENOMEM
 * (not kept: commit now). */
int arf_wlog_keep(arf_client *c, const struct arf_proto_cred *cred, uint64_t ino, uint32_t gen,
		  uint64_t off, const void *data, uint32_t len, uint64_t verifier, uint64_t seq);
/* keep in two steps, the copy made while the write is in flight
 * (requests.c): an entry for len bytes (NULL: no memory), its bytes, and
 * either kept (len at most the prepared length) or given back */
struct arf_wlog_ent;
#define ARF_WLOG_PRECOPY_MIN (64u << 10) /* shorter writes are copied after the reply */
struct arf_wlog_ent *arf_wlog_prepare(arf_client *c, uint32_t len);
void *arf_wlog_prepared_data(struct arf_wlog_ent *e);
int arf_wlog_keep_prepared(arf_client *c, struct arf_wlog_ent *e,
			   const struct arf_proto_cred *cred, uint64_t ino, uint32_t gen,
			   uint64_t off, uint32_t len, uint64_t verifier, uint64_t seq);
void arf_wlog_discard(arf_client *c, struct arf_wlog_ent *e);
/* Half the bound (opts.unstable_max_mib) kept, and no COMMIT behind the
 * writes on its way: 1 once (it is then on its way until
 * arf_wlog_behind_done), else 0. */
int arf_wlog_behind_due(arf_client *c);
void arf_wlog_behind_done(arf_client *c);
/* behind.c: after a write was kept (arf_write, async.c), a COMMIT sent by
 * the client's thread once half the bound is kept; init 0 or -ENOMEM,
 * free stops the thread (arf_close, before its last commit). */
struct arf_behind;
int arf_behind_init(arf_client *c);
void arf_behind_free(arf_client *c);
void arf_behind_check(arf_client *c);
/* A COMMIT answered (verifier, durable): drop what it covers (the bytes
 * dropped). */
uint64_t arf_wlog_committed(arf_client *c, uint64_t verifier, uint64_t durable);
/* Does the client keep writes of ino (0: of any file), or a re-send
 * failure waiting to be reported? */
int arf_wlog_holds(arf_client *c, uint64_t ino);
/* The failure of a re-send to ino (0: any), reported once; 0 if none. */
int arf_wlog_error(arf_client *c, uint64_t ino);
/* Are writes kept under another verifier than this one? */
int arf_wlog_stale(arf_client *c, uint64_t verifier);
/* Drop every write kept under another incarnation than verifier, each
 * file's next commit told EIO; how many went. */
int arf_wlog_drop_stale(arf_client *c, uint64_t verifier);
void arf_wlog_counts(arf_client *c, uint64_t *bytes, uint64_t *writes);
/* After dialling a server of incarnation verifier, before anything else
 * uses conn (conn.c, under conn_lock's write side): re-send what its
 * restart lost, then commit.  0, or the error (a broken connection: dial
 * again). */
int arf_wlog_replay(arf_client *c, struct arf_net_conn *conn, uint64_t verifier);
/* Replies, decoded: COMMIT's and WRITE's (after its count and attr). */
struct arf_wlog_commit {
	uint64_t verifier, durable, old_through;
	uint32_t old_known;
};
struct arf_wlog_write {
	uint64_t verifier, seq, off;
	uint32_t flags;              /* ARF_PROTO_WRITE_* */
};
int arf_wlog_commit_reply(const struct arf_net_buf *resp, struct arf_wlog_commit *out);
int arf_wlog_write_reply(const struct arf_net_buf *resp, uint32_t *written,
			 struct arf_proto_attr *attr, struct arf_wlog_write *out);

/* progs.c: the shipped standard programs and their policy hooks (api.c).
 * Each returns 0 when the program answered, 1 when it did not apply or
 * failed in a way the caller should answer by itself, or an authoritative
 * error (-ENOENT, -ENOTDIR, ...). */
/* The chain lookup also gives the child's attributes in st when the server
 * read its inode (*have_st = 1), saving the inode's round trip. */
int arf_prog_lookup(arf_client *c, uint64_t dir, const char *name, size_t len, uint64_t *child,
		    uint32_t *child_gen, uint8_t *type, struct arf_stat *st, int *have_st);
int arf_prog_resolve(arf_client *c, const char *path, struct arf_stat *out);
int arf_prog_readdir(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		     struct arf_dirent *ents, struct arf_stat *st, size_t max, size_t *n, int *eof);
void arf_prog_stats(arf_client *c, struct arf_client_stats *s);
void arf_prog_free(arf_client *c);

/* requests.c: one request, counted by kind.  body is built by the caller
 * after the credentials (which this adds). */
int arf_req(arf_client *c, uint16_t op, const struct arf_proto_wr *args, struct arf_net_buf *resp);
/* arf_req, saying whether the request was sent again after a reconnect. */
int arf_req_resent(arf_client *c, uint16_t op, const struct arf_proto_wr *args,
		   struct arf_net_buf *resp, int *resent);
/* arf_req_resent with these credentials instead of the thread's (as NULL:
 * the thread's). */
int arf_req_as(arf_client *c, uint16_t op, const struct arf_proto_wr *args,
	       struct arf_net_buf *resp, int *resent, const struct arf_proto_cred *as);
int arf_req_lookup(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, size_t len,
		   struct arf_stat *out);
/* The thread's record of its last change of names (arf_last_dir_change):
 * arf_change_begin clears it before a change is sent; arf_change_wcc reads
 * a reply's wcc into it and caches each directory's new attributes. */
void arf_change_begin(arf_client *c);
void arf_change_wcc(arf_client *c, struct arf_proto_rd *r);
int arf_req_getattr(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out);
ssize_t arf_req_read(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, void *buf, size_t len);
int arf_req_readlink(arf_client *c, uint64_t ino, uint32_t gen, char *buf, size_t cap);
/* The credentials set for the calling thread (arf_set_thread_cred): 1
 * with pc filled, or 0 when it acts as the process.  The process's: */
int arf_req_thread_cred(struct arf_proto_cred *pc);
void arf_req_process_cred(struct arf_proto_cred *pc);

/* onesided.c */
/* Read and validate one object (retrying torn copies).  Returns 0, or
 * ARF_ERETRY when retries ran out, or a transport error. */
int arf_os_read_obj(arf_client *c, uint32_t region, uint64_t off, void *dst, uint32_t len);
/* Validated inode: 0, -ENOENT (free slot), -ESTALE (other generation), ARF_ERETRY, ... */
int arf_os_inode(arf_client *c, uint64_t ino, uint32_t gen, struct arf_meta_inode *out);
/* Walk the hash chain: 0 with child/gen, -ENOENT, ARF_ERETRY, or 1 = too many hops. */
int arf_os_lookup(arf_client *c, uint64_t dir, const char *name, size_t len, uint64_t *child,
		  uint32_t *child_gen, uint8_t *type);
/* Read file bytes given a validated inode: count, or ARF_ERETRY / ARF_ETAG /
 * ARF_ECSUM (buf then zeroed), or a transport error. */
ssize_t arf_os_read(arf_client *c, const struct arf_meta_inode *in, uint64_t off, void *buf,
		    size_t len);
/* arf_os_read in steps, for callers that post the rounds themselves
 * (async.c).  The extents covering [off, off+len): begin fills ops[0..np)
 * with the extent pages to read (np = 0: none, the extents are inline);
 * once they are read, end checks them (ARF_ETAG, ARF_ECSUM, ARF_ETORN) and
 * fills ext.  free accepts what begin left, whatever happened. */
struct arf_os_ext {
	struct arf_meta_extent *ext;  /* the extents, after end */
	size_t next;
	struct arf_meta_page *pages;  /* the extent pages read */
	struct arf_net_read_op ops[ARF_META_EXT_PAGES];
	int np;
};
int arf_os_ext_begin(arf_client *c, const struct arf_meta_inode *in, uint64_t off, size_t len,
		     struct arf_os_ext *x);
int arf_os_ext_end(const struct arf_meta_inode *in, struct arf_os_ext *x);
void arf_os_ext_free(struct arf_os_ext *x);
/* The data round of [off, off+len) (clipped to the file's size: len 0 =
 * nothing to read): begin fills ops[0..nops), whose destinations are buf
 * itself wherever whole blocks fall in it; once they are read, end checks
 * every block's tag and checksum and returns the count, or ARF_ETAG /
 * ARF_ECSUM / ARF_ETORN with buf zeroed (as fail does, for a round that
 * failed).  free accepts what begin left. */
struct arf_os_rd {
	uint64_t ino;
	uint32_t gen;
	uint64_t off;
	size_t len;
	uint8_t *buf;
	uint64_t fblk0;               /* the first block, and how many */
	size_t nblk;
	uint8_t *edge;                /* bounce blocks: a partial first, a partial last */
	struct arf_meta_tag *tags;    /* nblk */
	uint8_t *mapped;              /* nblk: 0 = a hole */
	struct arf_net_read_op *ops;
	size_t nops;
};
int arf_os_rd_begin(arf_client *c, const struct arf_meta_inode *in, const struct arf_os_ext *x,
		    uint64_t off, void *buf, size_t len, struct arf_os_rd *rd);
ssize_t arf_os_rd_end(struct arf_os_rd *rd);
void arf_os_rd_fail(struct arf_os_rd *rd);
void arf_os_rd_free(struct arf_os_rd *rd);
/* Directory listing from the listing pages: 0, or ARF_ERETRY. */
int arf_os_readdir(arf_client *c, const struct arf_meta_inode *dir, uint64_t cookie,
		   struct arf_dirent *ents, size_t max, size_t *n, int *eof);
/* The listing walk of arf_os_readdir apart from the connection (tests feed
 * it hostile pages): read performs one round of one-sided reads (0 or a
 * transport error), sb is the export's superblock, retries the torn copies
 * of a page tolerated; retried counts the retries taken. */
struct arf_os_src {
	int (*read)(void *ctx, struct arf_net_read_op *ops, size_t n);
	void *ctx;
	const struct arf_meta_super *sb;
	uint32_t retries;
	uint64_t retried;
};
int arf_os_listing(struct arf_os_src *src, const struct arf_meta_inode *dir, uint64_t cookie,
		   struct arf_dirent *ents, size_t max, size_t *n, int *eof);
/* A validated listing page of dir, checked before any field is trusted:
 * its kind, owner and generation, and count within the page.  0 or ARF_ERETRY. */
int arf_os_dir_page_check(const struct arf_meta_page *pg, const struct arf_meta_inode *dir);

/* locks.c: the lock client (id, lease, what is held) of a client: made at
 * connect (-ENOMEM), freed at close (its renewer stopped first). */
int arf_locks_init(arf_client *c);
void arf_locks_free(arf_client *c);

/* readahead.c.  init makes c->ra (-ENOMEM); free releases it, once the
 * connection is closed.  take hands out [off, off+len) of in's file from
 * data read ahead: the count (possibly less than len), 0 when none is
 * there (read it the ordinary way, then note it), or, only when wake is
 * given, ARF_RA_WAIT: the data is on its way and wake(arg) will run (on
 * the thread reading the connection, under its lock) when it arrives;
 * take again then.  note records a read of [off, off+n) done the ordinary
 * way (asked: what the reader asked for), which may post data ahead. */
#define ARF_RA_WAIT 1000000001
int arf_ra_init(arf_client *c);
void arf_ra_free(arf_client *c);
ssize_t arf_ra_take(arf_client *c, const struct arf_meta_inode *in, uint64_t off, void *buf,
		    size_t len, void (*wake)(void *), void *arg);
void arf_ra_note(arf_client *c, const struct arf_meta_inode *in, uint64_t off, size_t n,
		 size_t asked);

/* api.c: count a fallback to a request, by ARF_FALLBACK_* reason. */
void arf_fallback(arf_client *c, int reason);

/* cache.c.  init allocates the tables (-ENOMEM), free releases them,
 * clear forgets everything (a restarted server). */
int arf_cache_init(arf_client *c);
void arf_cache_free(arf_client *c);
void arf_cache_clear(arf_client *c);
int arf_icache_get(arf_client *c, uint64_t ino, uint32_t gen, struct arf_meta_inode *out);
void arf_icache_put(arf_client *c, const struct arf_meta_inode *in);
void arf_icache_drop(arf_client *c, uint64_t ino);
/* A reply carried st, the file's attributes as the server had them then:
 * a cached copy that disagrees gives way to them, kept as attributes alone
 * (arf_icache_get no longer returns it; arf_icache_get_stat does) unless
 * the cache holds something newer (a later ctime). */
void arf_icache_update_stat(arf_client *c, const struct arf_stat *st);
/* Cached attributes of (ino, gen), from either kind of entry: 0 or -1. */
int arf_icache_get_stat(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out);
int arf_ecache_get(arf_client *c, uint64_t dir, const char *name, size_t len, uint64_t *child,
		   uint32_t *gen, uint8_t *type);
void arf_ecache_put(arf_client *c, uint64_t dir, const char *name, size_t len, uint64_t child,
		    uint32_t gen, uint8_t type);
void arf_ecache_drop(arf_client *c, uint64_t dir, const char *name, size_t len);


/* Each public call that names a file is answered by volumes.c, which
 * finds the volume's client from the handle's top bits (see
 * ARF_VOL_SHIFT), and then by its arf_v_ form here, inside that one
 * volume (api.c, requests.c, space.c, compound.c, xattr.c, locks.c,
 * cache.c).  Code inside the library calls the arf_v_ forms. */
int arf_v_lookup(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, struct arf_stat *out);
int arf_v_getattr(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out);
int arf_v_reply_attr(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out);
void arf_v_reply_attr_drop(arf_client *c, uint64_t ino);
int arf_v_readdir(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		struct arf_dirent *ents, size_t max, size_t *n, int *eof);
int arf_v_readdirplus(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		    struct arf_dirent *ents, struct arf_stat *st, size_t max, size_t *n, int *eof);
ssize_t arf_v_read(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, void *buf, size_t len);
ssize_t arf_v_write(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, const void *buf,
		  size_t len);
/* arf_v_write whose first piece is first_len bytes sent under first_id,
 * the request id of a sending the connection lost (arf_aio_again), with
 * cred (NULL: the calling thread's), the first sending's: the server's
 * reply cache answers it if the first sending was applied, and only for
 * the same uid. */
ssize_t arf_v_write_again(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off,
			  const void *buf, size_t len, uint64_t first_id, size_t first_len,
			  const struct arf_proto_cred *cred);
int arf_v_readlink(arf_client *c, uint64_t ino, uint32_t gen, char *buf, size_t cap);
ssize_t arf_v_append(arf_client *c, uint64_t ino, uint32_t gen, const void *buf, size_t len,
		   uint64_t *off);
int arf_v_fallocate(arf_client *c, uint64_t ino, uint32_t gen, int mode, uint64_t off, uint64_t len,
		  struct arf_stat *out);
int arf_v_seek(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, int whence,
	     uint64_t *result);
int arf_v_create(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	       int exclusive, struct arf_stat *out);
int arf_v_mkdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      struct arf_stat *out);
int arf_v_mknod(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      uint64_t rdev, struct arf_stat *out);
int arf_v_unlink(arf_client *c, uint64_t dir, uint32_t dgen, const char *name);
int arf_v_rmdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name);
int arf_v_rename(arf_client *c, uint64_t odir, uint32_t ogen, const char *oname, uint64_t ndir,
	       uint32_t ngen, const char *nname, unsigned flags);
int arf_v_link(arf_client *c, uint64_t ino, uint32_t gen, uint64_t dir, uint32_t dgen,
	     const char *name, struct arf_stat *out);
int arf_v_symlink(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, const char *target,
		struct arf_stat *out);
int arf_v_setattr(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_setattr *sa,
		struct arf_stat *out);
int arf_v_fsync(arf_client *c, uint64_t ino, uint32_t gen);
int arf_v_create_write(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
		     const void *data, size_t len, const struct arf_setattr *sa,
		     struct arf_stat *out);
ssize_t arf_v_copy(arf_client *c, uint64_t src, uint32_t sgen, uint64_t soff, uint64_t dst,
		 uint32_t dgen, uint64_t doff, size_t len, unsigned flags, struct arf_stat *dst_st);
int arf_v_last_dir_change(arf_client *c, struct arf_dir_change *out);
int arf_v_flush(arf_client *c, uint64_t ino, uint32_t gen);
/* A COMMIT whose answer only drops the writes it covers: no re-send's
 * failure or stale write is reported (behind.c).  The bytes dropped, or
 * the error. */
int64_t arf_v_commit_behind(arf_client *c);
int arf_v_access(arf_client *c, uint64_t ino, uint32_t gen, int mask);
int arf_v_statfs(arf_client *c, struct arf_statfs *out);
ssize_t arf_v_getxattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name, void *buf,
		     size_t size);
ssize_t arf_v_listxattr(arf_client *c, uint64_t ino, uint32_t gen, char *buf, size_t size);
int arf_v_setxattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name, const void *value,
		 size_t size, int flags, struct arf_stat *out);
int arf_v_removexattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name,
		    struct arf_stat *out);
int arf_v_lock(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_lock *lk, int wait,
	     uint64_t wait_id);
int arf_v_unlock(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_lock *lk);
int arf_v_getlk(arf_client *c, uint64_t ino, uint32_t gen, struct arf_lock *lk);
int arf_v_lock_lost(arf_client *c, uint64_t ino, uint32_t gen);
void arf_v_lock_forget_lost(arf_client *c, uint64_t ino, uint32_t gen);

/* A handle's volume: the top bits of ino name the volume (its index in
 * the client's table, 0 = the volume the client connected to); arfd's
 * inode numbers are below 2^32. */
#define ARF_VOL_SHIFT 48
#define ARF_VOL_INO_MASK ((UINT64_C(1) << ARF_VOL_SHIFT) - 1)
#define ARF_VOLS_MAX 256
/* A mount point is a symbolic link whose mode is not 0777 (AFS's rule:
 * its are 0644), with the target "#VOLUME."; only root may make one
 * (arfd refuses chmod of a symbolic link to anyone else). */
static inline int arf_mount_point_mode(uint32_t mode)
{
	return (mode & S_IFMT) == S_IFLNK && (mode & 07777) != 0777;
}
/* arf_v_resolve_at: a path resolved from (dir, dgen) inside one volume,
 * as arf_resolve does.  0 with *out, an error, or 1 when the walk must go
 * on in another volume, with *hb saying where (hb->rest is malloc'd). */
enum { ARF_HB_MOUNT = 1, ARF_HB_DOTDOT, ARF_HB_ABS };
struct arf_handback {
	int kind;            /* ARF_HB_*: a mount point (ino, gen) in (dir, dgen); ".." at
			      * the volume's root; an absolute symbolic link */
	uint64_t ino, dir;
	uint32_t gen, dgen;
	char *rest;          /* the path left, from there */
};
int arf_v_resolve_at(arf_client *c, uint64_t dir, uint32_t dgen, const char *path,
		     struct arf_stat *out, struct arf_handback *hb);
/* client.c: a client for volume (NULL or "" = the root one) of the server
 * at u, with the options and secret of like, and its credential token when
 * with_token says (a server's token is good only on the server that minted
 * it, a cell's on every server of the cell: arf_cl_cell_token). */
int arf_connect_like(const arf_client *like, const struct arf_url *u, const char *volume,
		     int with_token, arf_client **out, char *err, size_t errlen);
/* Whether c carries a cell's credential token (ARF_PROTO_TOKEN_CELL, the
 * token's first field, little-endian), which every server of the cell
 * checks: libarf carries it to the server a volume moved to, and across
 * mount points into other servers' volumes. */
static inline int arf_cl_cell_token(const arf_client *c)
{
	return c->has_token && c->token[0] == (ARF_PROTO_TOKEN_CELL & 0xff) && !c->token[1] &&
	       !c->token[2] && !c->token[3];
}
/* volumes.c: "#NAME." -> NAME: 1 when a symbolic link's target names a
 * volume (a mount point's, with arf_mount_point_mode). */
int arf_mount_target(const char *target, char *name, size_t cap);
struct arf_vols *arf_vols_new(void);
void arf_vols_free(arf_client *c);
/* A copy of c's URL, as a redirect may be changing it. */
void arf_url_copy(arf_client *c, struct arf_url *out);
int arf_v_lock_cancel(arf_client *c, uint64_t wait_id);
/* requests.c: the client of the calling thread's last change of names */
const arf_client *arf_change_client(void);

#endif

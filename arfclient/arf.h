/* SPDX-License-Identifier: MIT */
/**
 * @file arf.h
 * libarf — the ARF client library.
 *
 * A client connects to arfd by URL, then reads metadata and data with
 * one-sided reads of the server's exported regions (validated by version and
 * checksum, retried a bounded number of times, then answered by a plain
 * request instead) and changes the filesystem with requests.  Every function
 * returns 0 (or a byte count) on success and a negative errno or one of
 * ARF's own codes (see arf_strerror) on failure.
 *
 * URLs:
 *   arf://HOST[:PORT]/PATH              tcp (default port 20490)
 *   arf+tcp://HOST[:PORT]/PATH          the same
 *   arf+rdma://HOST[:PORT]/PATH         RDMA verbs: InfiniBand, RoCE, iWARP
 *                                       (default port 20491, arfd.conf
 *                                       rdma_listen); HOST is an address of
 *                                       the server's RDMA interface.  Needs a
 *                                       libarf built with rdma-core and an
 *                                       RDMA device (or soft-RoCE) here:
 *                                       otherwise arf_connect() fails with
 *                                       -EOPNOTSUPP or -ENODEV saying which
 *   arf+shm:///PATH[?socket=SOCK]       shm through the server's UNIX socket
 *                                       (default /run/arf/arfd.sock); the
 *                                       regions are mapped read-only
 *   arf+unix:///PATH[?socket=SOCK]      the same as arf+shm
 * PATH is a path inside the export.  HOST may be a name, an IPv4 address
 * or a bracketed IPv6 address.
 *
 * Threads: one arf_client may be used by any number of threads at once.
 * Credentials: requests carry the process's effective uid, gid and groups,
 * or those set for the calling thread with arf_set_thread_cred().
 * The library never prints; see arf_set_log_func().
 */
#ifndef ARF_H
#define ARF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARF_DEFAULT_PORT   20490
#define ARF_DEFAULT_RDMA_PORT 20491
#define ARF_DEFAULT_SOCKET "/run/arf/arfd.sock"

typedef struct arf_client arf_client;

/**
 * A threshold left to libarf: arf_connect() sets it from the URL's
 * transport to the break-even measured there (see each field below), and
 * arf_client_policy() tells what it became.  A value the caller sets is
 * used as given, on every transport.  It is UINT32_MAX, so a caller who
 * wants "no limit" writes a large number instead (UINT32_MAX - 1 will do).
 */
#define ARF_OPT_AUTO UINT32_MAX

/** Client options; arf_client_opts_init() fills the defaults.
 *
 * Mobile-code policy.  Where one-sided reads would need many round trips,
 * libarf ships a standard program instead, or sends a plain request; four
 * thresholds decide, and their defaults (ARF_OPT_AUTO) depend on the
 * transport, because what a round trip costs does: over tcp (and rdma,
 * taken the same until measured) a one-sided round costs ~15 us on an idle
 * machine and an execution or a request ~100-150 us, so a program pays
 * for itself from about 8 rounds saved; over shm a one-sided read is a
 * memory copy (~0.1 us) while an execution still costs ~100 us, so the
 * one-sided walk wins until hundreds of reads.  The numbers are bench/'s
 * (bench/run, the committed bench/results/results.md: "Chain lookups",
 * "Listings" and "Strategies", taken on an idle 2-core machine with the
 * JIT on).  Explicit values suit other machines: where rounds are slower
 * (loaded cores, a real network), lower thresholds.
 */
struct arf_client_opts {
	uint32_t spin_us;         /**< poll this long before sleeping for a reply (default 50) */
	uint32_t timeout_ms;      /**< connect and reply timeout (default 30000) */
	/** One-sided hash-chain hops before the shipped lookup (or, with
	 * shipped_lookup 0, a LOOKUP request).  ARF_OPT_AUTO (default): 11 over
	 * tcp and rdma, 256 over shm.  Over tcp, with arfd forced to long
	 * chains (mcbench chain), a hop costs 11.1 us and the shipped lookup a
	 * constant ~150 us: break-even 11.3 hops, shipping faster from chain
	 * position 12 (16: 150 against 203 us; 32: 144 against 382 us).
	 * Earlier idle runs put it at 7.9 and 8.4 hops, and on loaded cores,
	 * where a round often misses its polling window, at 3-4: it is the
	 * ratio of an execution's cost to a round's.  Over shm a hop costs
	 * 0.13 us against ~108 us shipped: the walk never lost up to 32 hops
	 * (straight-line break-even 849 hops), nor up to 250 in a run of
	 * arf_lookup at positions 8-250; 256 keeps the walk bounded on a chain
	 * that keeps changing under it. */
	uint32_t max_hops;
	uint32_t retries;         /**< torn-read retries before a request (default 8) */
	uint32_t attr_timeout_ms; /**< trust cached attributes this long (default 1000) */
	uint32_t entry_timeout_ms;/**< trust cached names this long (default 1000) */
	int      one_sided;       /**< 1 = use one-sided reads (default); 0 = requests only */
	/** File holding the export's shared secret (arfd.conf secret_file), or
	 * NULL.  Read at connect; the secret is proved by challenge-response and
	 * never sent.  The pointer need only be valid during arf_connect(). */
	const char *secret_file;
	/** When the connection breaks (arfd restarted, network cut), operations
	 * wait and retry on a new connection for up to this long, then fail with
	 * EIO (default 30000; 0 = fail at once).  A new incarnation of the
	 * server drops the caches. */
	uint32_t reconnect_ms;
	/** After max_hops one-sided hops, look the name up with the shipped
	 * chain-lookup program (1, default) rather than a LOOKUP request (0).
	 * The program returns the child's attributes with its entry, so either
	 * way the lookup ends one round trip after the walk.  A plain LOOKUP
	 * (~105 us over tcp) is as fast or faster at long chains: the server
	 * walks the chain with no program to run. */
	int      shipped_lookup;
	/** arf_resolve ships the whole-path program when at least this many
	 * components of a path are not in the entry cache (0 = never).
	 * ARF_OPT_AUTO (default): 8 over tcp and rdma, 0 over shm.  bench/
	 * (lookup depth 10, 11 one-sided reads): over tcp the shipped
	 * resolution takes 150 us against 164 us one-sided (1515 us by
	 * requests), one execution costing about as much as 10 rounds; over
	 * shm one-sided takes 2.3 us against 147 us shipped, so it never ships
	 * there. */
	uint32_t resolve_exec_depth;
	/** arf_readdir and arf_readdirplus list a directory of at least this
	 * many entries with the readdir program, one execution per batch
	 * (0 = never).  ARF_OPT_AUTO (default): over tcp and rdma, never for
	 * arf_readdir and from 10 entries for arf_readdirplus; over shm, never.
	 * bench/ (mcbench listing, 4 to 4096 entries, and readdir 10k): without
	 * attributes the program never beat both the one-sided listing and
	 * READDIR requests (10k over tcp: 6.1 ms shipped, 4.3 ms by requests,
	 * 12.5 ms one-sided).  arf_readdirplus is another matter: without the
	 * program each child's attributes cost a round of their own, and over
	 * tcp the program wins from 16 entries (8: 144 us against 128
	 * one-sided; 16: 170 against 242; 256: 245 against 3019) while over shm
	 * the one-sided listing wins at every size (4096: 1.2 ms against 2.3
	 * ms shipped). */
	uint32_t readdir_exec_min;
	/** tcp: a root process connects from a reserved source port (665-1023),
	 * as NFS's resvport, so that an export with one_sided = root (the
	 * default) gives it region keys; any other process, or when no reserved
	 * port is free, gets requests only (1, default; 0 = never). */
	int      resvport;
	/** arf_readdir and arf_readdirplus list a directory of at least this
	 * many entries by READDIR requests rather than one-sided reads, unless
	 * readdir_exec_min sends it to the program (0 = never).  ARF_OPT_AUTO
	 * (default): 1024 over tcp and rdma, 0 over shm.  Each one-sided batch
	 * walks the listing pages from the first and copies whole 320-byte
	 * entries, where a READDIR reply carries names: over tcp (bench/,
	 * mcbench listing) one-sided wins up to 512 entries (256: 148 us
	 * against 169; 512: 163 against 202), requests from 1024 (292 against
	 * 295 us; 4096: 1.28 against 1.33 ms; 10k: 4.3 against 12.5 ms).  Over
	 * shm one-sided wins at every size (10k: 1.4 against 4.3 ms). */
	uint32_t readdir_req_min;
	/** A credential token (ARF_TOKEN_SIZE bytes, from arf_cred_token() or
	 * an ARF mount's ARF_IOC_CRED) to present in the handshake, or NULL.
	 * The connection then acts as the user the token names, whatever the
	 * process is; arfd refuses the connection when the token is forged,
	 * expired or was minted for another host.  Copied at arf_connect(). */
	const uint8_t *cred_token;
	/** Read ahead for a file read sequentially (1, default; 0 = never):
	 * from its second read in a row that goes on where the last ended, the
	 * next bytes (as many as the reads ask, at least 128 KiB, at most the
	 * server's largest I/O) are posted one-sidedly before they are asked
	 * for, and handed out, after the same checks as any read, to the next
	 * read through the same version of the file.  Asynchronous reads read
	 * ahead only while one is in flight on their queue.  Over tcp only:
	 * over shm a read is a copy done at once, which reading ahead would
	 * only make twice. */
	int      readahead;
};

void arf_client_opts_init(struct arf_client_opts *o);

/** The mobile-code policy a client applies: its options with every
 * ARF_OPT_AUTO replaced by the value for its transport. */
struct arf_client_policy {
	uint32_t max_hops;
	uint32_t resolve_exec_depth;
	uint32_t readdir_exec_min;     /**< for arf_readdir */
	uint32_t readdirplus_exec_min; /**< for arf_readdirplus */
	uint32_t readdir_req_min;
	uint32_t from_transport;       /**< ARF_POLICY_* bits: the values arf_connect chose */
};
#define ARF_POLICY_MAX_HOPS      0x1u
#define ARF_POLICY_RESOLVE_EXEC  0x2u
#define ARF_POLICY_READDIR_EXEC  0x4u
#define ARF_POLICY_READDIR_REQ   0x8u
/** Fill out with the policy of c (fixed at arf_connect; a reconnection
 * keeps it). */
void arf_client_policy(arf_client *c, struct arf_client_policy *out);

/** A parsed URL. */
struct arf_url {
	char transport[8];   /**< "tcp", "rdma" or "shm" */
	char host[256];      /**< tcp, rdma */
	uint16_t port;       /**< tcp, rdma */
	char socket[256];    /**< shm */
	char path[4096];     /**< path inside the export, "/" at least */
};

/** Parse a URL.  Returns 0 or -EINVAL with the reason in err. */
int arf_url_parse(const char *url, struct arf_url *out, char *err, size_t errlen);

/**
 * Connect to the server a URL names (its PATH is not resolved here).
 * opts may be NULL for the defaults.  On success *out owns the client:
 * close it with arf_close().  Errors: -EINVAL (bad URL), -ECONNREFUSED,
 * -ETIMEDOUT, ARF_EVERSION, ARF_EAUTH; for arf+rdma://, -EOPNOTSUPP (this
 * libarf was built without rdma-core) or -ENODEV (no RDMA device here);
 * with a one-line reason in err.
 */
int arf_connect(const char *url, const struct arf_client_opts *opts, arf_client **out,
		char *err, size_t errlen);
/** Close a client; NULL is allowed. */
void arf_close(arf_client *c);

/** Attributes of a file. */
struct arf_stat {
	uint64_t ino;
	uint32_t gen;
	uint32_t mode;
	uint32_t nlink, uid, gid;
	uint64_t size;
	uint64_t blocks;           /**< 512-byte units */
	int64_t  atime_ns, mtime_ns, ctime_ns;
	uint64_t rdev;
};

/** A directory entry. */
struct arf_dirent {
	uint64_t ino;
	uint32_t gen;
	uint8_t  type;             /**< DT_* */
	uint64_t cookie;           /**< resume after this entry */
	char     name[256];
};

/** Attributes of the export's root directory. */
int arf_root(arf_client *c, struct arf_stat *out);
/** Look up a name in a directory ("." and ".." allowed). */
int arf_lookup(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, struct arf_stat *out);
int arf_getattr(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out);
/** Resolve an absolute path inside the export; symbolic links in the middle
 * of the path are followed, a final one is not (like lstat).  -ELOOP after
 * 40 links. */
int arf_resolve(arf_client *c, const char *path, struct arf_stat *out);
/** List up to max entries after cookie (0 = start); *eof when done.  "." and
 * ".." are not included. */
int arf_readdir(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		struct arf_dirent *ents, size_t max, size_t *n, int *eof);
/** As arf_readdir, with each entry's attributes in st[i] (st[i].ino == 0
 * when the child changed while being listed: stat it yourself). */
int arf_readdirplus(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		    struct arf_dirent *ents, struct arf_stat *st, size_t max, size_t *n, int *eof);
/** Read up to len bytes at off; returns the count (short at end of file). */
ssize_t arf_read(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, void *buf, size_t len);
/** Write len bytes at off; returns the count.  Durable on return on a sync export. */
ssize_t arf_write(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, const void *buf,
		  size_t len);
int arf_readlink(arf_client *c, uint64_t ino, uint32_t gen, char *buf, size_t cap);

int arf_create(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	       int exclusive, struct arf_stat *out);
int arf_mkdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      struct arf_stat *out);
int arf_mknod(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      uint64_t rdev, struct arf_stat *out);
int arf_unlink(arf_client *c, uint64_t dir, uint32_t dgen, const char *name);
int arf_rmdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name);
/** flags: ARF_RENAME_NOREPLACE */
#define ARF_RENAME_NOREPLACE 0x1u
int arf_rename(arf_client *c, uint64_t odir, uint32_t ogen, const char *oname, uint64_t ndir,
	       uint32_t ngen, const char *nname, unsigned flags);
int arf_link(arf_client *c, uint64_t ino, uint32_t gen, uint64_t dir, uint32_t dgen,
	     const char *name, struct arf_stat *out);
int arf_symlink(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, const char *target,
		struct arf_stat *out);

/** setattr: which fields of struct arf_setattr apply. */
#define ARF_SET_MODE      0x01u
#define ARF_SET_UID       0x02u
#define ARF_SET_GID       0x04u
#define ARF_SET_SIZE      0x08u
#define ARF_SET_ATIME     0x10u
#define ARF_SET_MTIME     0x20u
#define ARF_SET_ATIME_NOW 0x40u
#define ARF_SET_MTIME_NOW 0x80u
struct arf_setattr {
	uint32_t valid;
	uint32_t mode, uid, gid;
	uint64_t size;
	int64_t  atime_ns, mtime_ns;
};
int arf_setattr(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_setattr *sa,
		struct arf_stat *out);
/** Make the file's acknowledged writes durable (as NFS COMMIT). */
int arf_fsync(arf_client *c, uint64_t ino, uint32_t gen);
/** access(2) check on the server: mask of R_OK|W_OK|X_OK. */
int arf_access(arf_client *c, uint64_t ino, uint32_t gen, int mask);

struct arf_statfs {
	uint64_t bsize, blocks, bfree, files, ffree, namemax;
};
int arf_statfs(arf_client *c, struct arf_statfs *out);

/** The server's status as a JSON object; *json is malloc'd (free it). */
int arf_server_status(arf_client *c, char **json);
/** Incarnation number of the server this client talks to. */
uint64_t arf_server_incarnation(arf_client *c);
/** "tcp", "rdma" or "shm". */
const char *arf_transport(arf_client *c);

/** Credentials for requests made by the calling thread (NULL = the process's).
 * arfd believes them only from a connection that proved root on its host
 * (tcp from a reserved port, which libarf binds when the process is root;
 * shm as uid 0; the export's secret).  Anyone else acts as the kernel says
 * (shm), as a credential token says, or as the anonymous user. */
struct arf_cred {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[16];
};
void arf_set_thread_cred(const struct arf_cred *cred);

/**
 * Credential tokens: how a tool run by an ordinary user acts as that user
 * on a connection of its own.  arf-fuse answers the ioctl ARF_IOC_CRED on
 * any open file of its mount: it asks arfd, over its own root-proven
 * connection, for a token naming the uid, gid and groups the kernel gives
 * with the ioctl, and hands back the token, the mount's URL and the file's
 * handle.  The token is good on this host for the ttl_s arfd gives it (ten
 * minutes) and until arfd restarts; a connection made with it keeps its
 * identity after that, but cannot reconnect with it.
 */
#define ARF_TOKEN_SIZE 144u
struct arf_ioc_cred {
	uint32_t version;          /**< ARF_IOC_CRED_VERSION */
	uint32_t ttl_s;            /**< seconds the token is good for */
	uint64_t ino;              /**< the open file's handle */
	uint32_t gen;
	uint32_t pad0;
	char     url[4352];        /**< the mount's server URL, with its export path */
	uint8_t  token[ARF_TOKEN_SIZE];
};
#define ARF_IOC_CRED_VERSION 1u
#define ARF_IOC_CRED _IOR(0xAF, 1, struct arf_ioc_cred)

/** A token for the calling thread's credentials (arf_set_thread_cred), on a
 * connection that proved root: 0, -EPERM (it did not), or a transport
 * error.  *ttl_s (may be NULL) gets its lifetime. */
int arf_cred_token(arf_client *c, uint8_t token[ARF_TOKEN_SIZE], uint32_t *ttl_s);

/** Connect as the user who runs this process to the server behind fd, an
 * open file of an ARF mount (ARF_IOC_CRED; see above), and say which file
 * fd is.  opts as arf_connect (its cred_token is replaced).  Errors:
 * -ENOTTY (fd is not on an ARF mount), the ioctl's, arf_connect's. */
int arf_connect_fd(int fd, const struct arf_client_opts *opts, arf_client **out, uint64_t *ino,
		   uint32_t *gen, char *err, size_t errlen);

/**
 * Mobile code.  arf_exec runs a program (raw eBPF bytecode, or an ELF
 * object from clang -O2 -target bpf) on the server, next to the data, with
 * arg (at most 64 KiB) as its context, and copies up to out_cap bytes of
 * what it emitted to out.  The program is loaded (verified and cached by
 * the server, keyed by the BLAKE2b hash of its bytes) the first time this
 * client runs it, and loaded again transparently when the server answers
 * ARF_ENOPROG (evicted, or the server restarted).  Helpers and the
 * standard programs' layouts: mobilecode/progs/arf_prog_abi.h.
 * Returns 0 with the program's r0 in res->r0, or: ARF_EVERIFY (rejected),
 * ARF_EBUDGET (instruction or wall-clock limit), ARF_EFAULT (bad memory
 * access), ARF_EOUTPUT (output limit, or more than out_cap), -ENOSYS
 * (mobile code disabled on the server), with the server's message, which
 * names the instruction, in res->msg.  res may not be NULL.
 */
struct arf_exec_result {
	int64_t  r0;          /**< the program's return value */
	uint64_t insns;       /**< instructions executed */
	size_t   out_len;     /**< bytes of output copied to out */
	uint32_t pc;          /**< on failure: the instruction that failed */
	char     msg[512];    /**< on failure: what happened, and where */
};
int arf_exec(arf_client *c, const void *prog, size_t prog_len, const void *arg, size_t arg_len,
	     void *out, size_t out_cap, struct arf_exec_result *res);
/** Only load (verify and cache) a program; its 32-byte hash goes to hash
 * (may be NULL).  Errors as arf_exec. */
int arf_prog_load(arf_client *c, const void *prog, size_t prog_len, uint8_t hash[32],
		  struct arf_exec_result *res);

/** Why the library ran a program (counted in execs_by_reason). */
enum arf_exec_reason {
	ARF_EXEC_USER = 0,    /**< arf_exec */
	ARF_EXEC_HOPS,        /**< chain longer than max_hops: shipped chain lookup */
	ARF_EXEC_PATH,        /**< uncached deep path: shipped whole-path resolution */
	ARF_EXEC_READDIR,     /**< large directory: shipped readdir */
	ARF_EXEC_NREASONS,
};
const char *arf_exec_reason_name(int reason);

/** Why a one-sided operation was answered by the server instead (a
 * request, or a shipped program: see execs_by_reason). */
enum arf_fallback_reason {
	ARF_FALLBACK_TORN = 0,   /**< retries exhausted on torn or changing objects */
	ARF_FALLBACK_HOPS,       /**< hash chain longer than max_hops */
	ARF_FALLBACK_TAG,        /**< data block tags did not match (stale map) */
	ARF_FALLBACK_POLICY,     /**< the policy chose a request: a directory of at least
				  *   readdir_req_min entries (counted once per batch) */
	ARF_FALLBACK_NREASONS,
};
const char *arf_fallback_reason_name(int reason);

#define ARF_NKINDS 23
/** Name of request kind i (0 <= i < ARF_NKINDS), as counted below. */
const char *arf_request_kind_name(int i);

/** Client counters (monotonic; the handshake is not counted). */
struct arf_client_stats {
	uint64_t one_sided_reads;   /**< individual one-sided reads */
	uint64_t one_sided_bytes;
	uint64_t rounds;            /**< round trips of one-sided operations */
	uint64_t requests;          /**< request/response exchanges */
	uint64_t execs;             /**< mobile-code executions (one round trip each) */
	uint64_t prog_loads;        /**< programs loaded (PROG_LOAD round trips) */
	uint64_t exec_insns;        /**< instructions those executions ran on the server */
	uint64_t execs_by_reason[ARF_EXEC_NREASONS];
	uint64_t retries;           /**< torn or stale objects re-read */
	uint64_t fallbacks;         /**< one-sided operations answered by a request */
	uint64_t requests_by_kind[ARF_NKINDS];
	uint64_t fallbacks_by_reason[ARF_FALLBACK_NREASONS];
	uint64_t bytes_sent, bytes_received;
	uint64_t cache_hits, cache_misses;
	uint64_t readahead_bytes;   /**< bytes handed out from data read ahead */
};
void arf_stats(arf_client *c, struct arf_client_stats *out);

/** Text for an error code (negative errno or ARF's own). */
const char *arf_strerror(int err);

/** Where the library's diagnostics go (default: nowhere). */
typedef void (*arf_log_func)(void *ctx, int level, const char *msg);
void arf_set_log_func(arf_log_func fn, void *ctx);

/**
 * Asynchronous operations.  A queue belongs to one client and keeps up to
 * `depth` operations in flight on its connection at once, with no thread
 * per operation: submitting sends what can be sent (one-sided reads of
 * all the operations submitted together go in one round where they fit)
 * and returns; arf_reap collects what has finished, reading the
 * connection itself while it waits.  An operation goes as its
 * synchronous twin would: READ and GETATTR one-sided where the client
 * holds the export's region keys (validated, retried and answered by a
 * request when objects keep changing, exactly as arf_read and
 * arf_getattr), else by READ and GETATTR requests; WRITE by WRITE
 * requests (split at the server's largest I/O, in order).  Over shm,
 * one-sided reads are memory copies and finish inside arf_submit.  A
 * broken connection is dialled again as for the synchronous calls
 * (opts.reconnect_ms) and the operations in flight are sent again.
 *
 * Ownership: the caller owns each struct arf_aio and its buffer; from
 * arf_submit until arf_reap hands the pointer back, libarf may write the
 * buffer (READ) and the result fields, and the caller must not touch
 * either or free them.  Requests carry the credentials of the thread
 * that submits (arf_set_thread_cred).
 *
 * Threads: a queue may be used by several threads (its calls are
 * serialised); different queues of one client may be used at once, and
 * beside the client's synchronous calls.  Destroy the client's queues
 * before arf_close.
 */
typedef struct arf_queue arf_queue;

/** What an arf_aio asks. */
enum arf_aio_op {
	ARF_AIO_READ = 1,    /**< read len bytes at off into buf (short at end of file) */
	ARF_AIO_WRITE = 2,   /**< write len bytes of buf at off; st gets the attributes after */
	ARF_AIO_GETATTR = 3, /**< the file's attributes into st */
};

/** One asynchronous operation. */
struct arf_aio {
	int      op;        /**< in: enum arf_aio_op */
	uint64_t ino;       /**< in: the file */
	uint32_t gen;
	uint64_t off;       /**< in: READ, WRITE */
	void    *buf;       /**< in: READ: where to; WRITE: what (not changed) */
	size_t   len;
	void    *user;      /**< in: the caller's, never touched */
	ssize_t  res;       /**< out: bytes (READ, WRITE), 0 (GETATTR), or a negative error
			     *   as the synchronous call would return */
	struct arf_stat st; /**< out: GETATTR, and WRITE when res >= 0 */
};

/** Make a queue of up to depth (1..4096) operations in flight on c.
 * Errors: -EINVAL, -ENOMEM. */
int arf_queue_create(arf_client *c, unsigned depth, arf_queue **out);
/** Wait for every operation still in flight (their buffers are in use
 * until then), drop what was not reaped, free the queue.  NULL ok. */
void arf_queue_destroy(arf_queue *q);
/** Submit n operations.  Returns how many were taken (the first ones), or
 * -EAGAIN when the queue already holds depth operations not reaped.  An
 * operation that is malformed (unknown op, NULL buf with len) is taken and
 * finishes at once with res = -EINVAL. */
int arf_submit(arf_queue *q, struct arf_aio *const *ios, unsigned n);
/** Collect finished operations: at least min of them (fewer when fewer are
 * in flight) and at most max, waiting up to timeout_ms (< 0: as long as it
 * takes; 0: not at all).  Their pointers go to done[], in the order they
 * finished.  Returns how many, or -EINVAL. */
int arf_reap(arf_queue *q, struct arf_aio **done, unsigned min, unsigned max, int timeout_ms);
/** Operations submitted and not yet reaped. */
unsigned arf_queue_pending(arf_queue *q);

#ifdef __cplusplus
}
#endif
#endif /* ARF_H */

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
 * or a bracketed IPv6 address.  A volume=NAME query parameter
 * (arf://HOST/PATH?volume=NAME, arf+shm:///PATH?socket=SOCK&volume=NAME)
 * connects to that volume of the server's (arfd.conf's [volume NAME]); the
 * root volume without one (see arf_url_volume).
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
	uint32_t spin_us;         /**< poll at most this long before sleeping for a reply
				   (default 50; adaptive: halved while spins catch nothing) */
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
	/** When the connection breaks (arfd restarted, network cut, or silent
	 * for timeout_ms), operations wait and retry on a new connection for up
	 * to this long, then fail with EIO (default 30000; 0 = fail at once;
	 * ARF_WAIT_FOREVER = never fail: NFS's hard mount, where only the
	 * thread's cancel hook ends a wait, see arf_set_thread_cancel).  A call
	 * is sent again with the request id it had, and arfd answers a
	 * mutation it had applied from its reply cache.  A new incarnation of
	 * the server drops the caches. */
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
	 * ms shipped).  Left to ARF_OPT_AUTO, arf_readdirplus's batches above
	 * the threshold are READDIRPLUS requests rather than executions: one
	 * round each too, with arfd reading the entries and inodes in place
	 * where the program copies and checks each (a 10,000-entry listing
	 * through a mount: 8.0-8.7 against 5.4-7.3 ms of arfd's CPU); the
	 * program lists when this is given explicitly, and when arfd answers
	 * READDIRPLUS with ENOSYS (one older than it).  A client with no
	 * regions lists by READDIRPLUS too, not a GETATTR a child. */
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
	/** Writes are unstable on an export without [export] sync: arfd answers
	 * before they are durable, and libarf keeps a copy of each until a
	 * COMMIT (arf_fsync, arf_flush, arf_close) makes it durable, re-sending
	 * it if arfd restarts first.  This bounds the bytes kept: a write that
	 * reaches it is followed by a COMMIT (default 64 MiB; 0 = a COMMIT after
	 * every write).  Once half of it is kept, a thread of the client's
	 * sends a COMMIT while the writes go on, so that a writer seldom waits
	 * at the bound.  The memory of committed copies is kept for later
	 * writes, up to as many bytes again. */
	uint32_t unstable_max_mib;
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
#define ARF_WAIT_FOREVER UINT32_MAX /**< reconnect_ms: wait for the server for ever */

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

/** Parse a URL.  Returns 0 or -EINVAL with the reason in err.  A volume=NAME
 * query parameter (see arf_url_volume) is not part of out->path. */
int arf_url_parse(const char *url, struct arf_url *out, char *err, size_t errlen);

/** The volume a URL names, as arf_connect() asks arfd for it: NAME of a
 * volume=NAME query parameter (arf://HOST/PATH?volume=NAME,
 * arf+shm:///PATH?socket=SOCK&volume=NAME), "" for none (the server's root
 * volume; "root" names it too).  A volume is one of the filesystems one
 * arfd serves (a [volume NAME] section of its arfd.conf).  Returns 0 or
 * -EINVAL with the reason in err (a name is 1-63 of [A-Za-z0-9._-]). */
int arf_url_volume(const char *url, char *vol, size_t vollen, char *err, size_t errlen);

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
/** The attributes a reply to one of this client's changes just carried
 * for (ino, gen) (NFS's post-op attributes: the server's state as of the
 * change, read under its lock), handed out once and only within the
 * attribute timeout: 0 with *out, else -ENOENT (no round trip either
 * way).  For a caller that otherwise asks the server each time, as
 * arf-fuse does for the kernel's GETATTR after a write or mkdir. */
int arf_reply_attr(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out);
/** Forget what arf_reply_attr would hand out for ino (the caller fetched
 * newer attributes, as close-to-open does at open). */
void arf_reply_attr_drop(arf_client *c, uint64_t ino);
/** Resolve an absolute path inside the export; symbolic links in the middle
 * of the path are followed, a final one is not (like lstat).  -ELOOP after
 * 40 links. */
int arf_resolve(arf_client *c, const char *path, struct arf_stat *out);
/** List up to max entries after cookie (0 = start); *eof when done.  "." and
 * ".." are not included. */
int arf_readdir(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		struct arf_dirent *ents, size_t max, size_t *n, int *eof);
/** As arf_readdir, with each entry's attributes in st[i] (st[i].ino == 0
 * when the child changed while being listed: stat it yourself).  A mount
 * point's entry (see arf_mkmount) is a directory with st[i].ino == 0 and
 * st[i].mode == S_IFDIR: a listing reads nothing of the volume behind it;
 * arf_lookup it by name. */
int arf_readdirplus(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		    struct arf_dirent *ents, struct arf_stat *st, size_t max, size_t *n, int *eof);
/** Read up to len bytes at off; returns the count (short at end of file). */
ssize_t arf_read(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, void *buf, size_t len);
/** Write len bytes at off; returns the count.  On an export without
 * [export] sync the write is unstable, as NFSv3's: applied and seen by every
 * client at once, durable at the next arf_fsync, arf_flush or arf_close (or
 * the COMMIT libarf sends by itself from half of unstable_max_mib kept); libarf keeps its bytes until then and
 * re-sends them if arfd restarts before (counted in resent_bytes).  On a
 * sync export it is durable on return. */
ssize_t arf_write(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, const void *buf,
		  size_t len);
int arf_readlink(arf_client *c, uint64_t ino, uint32_t gen, char *buf, size_t cap);
/** Append len bytes at the end of the file as the server has it, in one
 * request: appends of other clients never overlap it (O_APPEND).  *off
 * (may be NULL) gets the offset the server chose; a request sent again
 * after a reconnect is answered with that same offset.  Returns the count;
 * -EINVAL when len is more than the server's largest I/O (4 MiB). */
ssize_t arf_append(arf_client *c, uint64_t ino, uint32_t gen, const void *buf, size_t len,
		   uint64_t *off);
/** fallocate(2) on the server.  mode: 0 (preallocate zeroed blocks for the
 * holes of [off, off + len) and extend the size), FALLOC_FL_KEEP_SIZE (the
 * same without the size), or FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
 * (free the whole blocks of the range, zero its edges); Linux's values.
 * Done in 64 MiB pieces, each all or nothing: -ENOSPC may leave the pieces
 * before it done.  -EOPNOTSUPP for other modes, -EINVAL, -EFBIG. */
int arf_fallocate(arf_client *c, uint64_t ino, uint32_t gen, int mode, uint64_t off, uint64_t len,
		  struct arf_stat *out);
/** lseek(2)'s SEEK_DATA or SEEK_HOLE (Linux's values) from off: the first
 * data or hole at or after it (the end of file is a hole).  -ENXIO when
 * off is at or past the end of file, or (SEEK_DATA) only holes follow. */
int arf_seek(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, int whence,
	     uint64_t *result);

int arf_create(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	       int exclusive, struct arf_stat *out);
int arf_mkdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      struct arf_stat *out);
int arf_mknod(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      uint64_t rdev, struct arf_stat *out);
int arf_unlink(arf_client *c, uint64_t dir, uint32_t dgen, const char *name);
int arf_rmdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name);
/** flags: ARF_RENAME_NOREPLACE (-EEXIST if nname exists) or
 * ARF_RENAME_EXCHANGE (swap the two names; -ENOENT unless both exist) */
#define ARF_RENAME_NOREPLACE 0x1u
#define ARF_RENAME_EXCHANGE  0x2u
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
/** The umask the calling thread's creates carry (arf_create, arf_mkdir,
 * arf_mknod), or -1 (default) to carry none: the mode is then used as
 * given.  arfd applies it unless the directory has a default ACL, in which
 * case the new file inherits that ACL instead, as a local filesystem
 * does (arf-fuse passes the caller's umask this way). */
void arf_set_thread_umask(int umask);
/** COMMIT (NFSv3's): everything the server applied before it, every
 * client's writes included, is durable on return; (ino, gen) must name a
 * file (-ESTALE), or be (0, 0).  Also returns the failure of a write of
 * this file that libarf had to re-send after a restart (-ENOSPC, -EIO...),
 * once. */
int arf_fsync(arf_client *c, uint64_t ino, uint32_t gen);

/**
 * A new regular file named name in (dir, dgen), holding len bytes of data
 * (at most the server's max_io, 4 MiB), with the attributes of sa (may be
 * NULL) applied after the write: ARF_SET_MODE, _UID, _GID, _ATIME, _MTIME
 * and the _NOW forms, checked as arf_setattr checks them for the caller.
 * One request and one server transaction for what open(O_CREAT|O_EXCL),
 * write, fchown, fchmod, futimens and close cost on their own: tar, rsync
 * and git write many small files.  Always exclusive.  A failure after the
 * file was made (-ENOSPC part-way through the data, -EPERM from sa) removes
 * it again, so a failing call leaves no name.  out (may be NULL): the
 * file's attributes at the end.  Errors: -EEXIST, -EINVAL (ARF_SET_SIZE in
 * sa, or len past max_io), and those of arf_create, arf_write and
 * arf_setattr; -ENOSYS from a server without it.
 */
int arf_create_write(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
		     const void *data, size_t len, const struct arf_setattr *sa,
		     struct arf_stat *out);

/**
 * Server-side copy, as copy_file_range(2) and NFS 4.2's COPY: up to len
 * bytes of regular file (src, sgen) from soff into regular file (dst, dgen)
 * at doff, copied block by block inside arfd (the bytes never cross the
 * network; a few small requests do, one per ARF_COPY_CHUNK bytes).  Blocks
 * are copied, never shared; a hole in src stays a hole in dst unless dst
 * had data there.  Returns the count copied: less than len only at src's
 * end (0 at or past it) or when space ran out part-way.  Read permission
 * on src and write permission on dst, as for arf_read and arf_write.
 * flags must be 0.  Errors: -EINVAL (one file and overlapping ranges, not
 * a regular file, flags), -EISDIR, -EFBIG (doff at or past 16 TiB),
 * -EOVERFLOW (an offset plus len past 2^64), -ENOSPC (nothing copied),
 * -EACCES, -ESTALE; -ENOSYS from a server without it.  *dst_st (may be
 * NULL): dst's attributes after the copy.
 */
#define ARF_COPY_CHUNK (8u << 20)
ssize_t arf_copy(arf_client *c, uint64_t src, uint32_t sgen, uint64_t soff, uint64_t dst,
		 uint32_t dgen, uint64_t doff, size_t len, unsigned flags, struct arf_stat *dst_st);

/**
 * What the calling thread's last change of names on c did to the
 * directories it changed, as the server reported it with the reply (NFSv3's
 * wcc_data): each directory's ctime just before the change and its
 * attributes just after, read under the same lock as the change.  A caller
 * that kept a directory's ctime from an earlier reply knows, when
 * pre_ctime_ns matches it, that no one else changed the directory in
 * between (arf-fuse keeps the names of such directories this way).  Set by
 * arf_create, arf_mkdir, arf_mknod, arf_symlink, arf_link, arf_unlink,
 * arf_rmdir, arf_rename and arf_create_write when they succeed, and by
 * arf_setattr of a directory (the directory itself); any other
 * outcome, or another thread, leaves n = 0.  Returns 0, or -ENOENT when
 * this thread's last such call on c told nothing (out->n = 0 then).
 */
struct arf_dir_change {
	uint32_t n;                /**< directories: 1, or 2 for a rename between two */
	struct {
		int64_t pre_ctime_ns;  /**< its ctime just before the change */
		struct arf_stat post;  /**< its attributes just after (post.ino, post.gen name it) */
	} dir[2];
};
int arf_last_dir_change(arf_client *c, struct arf_dir_change *out);
/** arf_fsync if this client has writes of the file not yet committed (or a
 * re-send failure to report), else nothing (no round trip): what close()
 * does on a mount. */
int arf_flush(arf_client *c, uint64_t ino, uint32_t gen);
/** 1 when the bytes of unstable writes c keeps until a COMMIT have reached
 * opts.unstable_max_mib (arf_write then commits by itself; a queue that
 * fails fast leaves that to its caller), else 0. */
int arf_unstable_full(arf_client *c);
/** access(2) check on the server: mask of R_OK|W_OK|X_OK. */
int arf_access(arf_client *c, uint64_t ino, uint32_t gen, int mask);

struct arf_statfs {
	uint64_t bsize, blocks, bfree, files, ffree, namemax;
};
int arf_statfs(arf_client *c, struct arf_statfs *out);
/** As arf_statfs, for the volume holding handle ino (reached through a
 * mount point or not): df on a mount point reports that volume. */
int arf_statfs_at(arf_client *c, uint64_t ino, struct arf_statfs *out);

/**
 * Mount points (AFS's `fs mkmount`): a directory entry naming a volume.
 * arf_lookup, arf_resolve, arf_readdir and arf_readdirplus cross one they
 * meet: they locate the volume (arf_locate, asked of the server this
 * client talks to), connect to it with this client's options, secret and
 * token (one connection per volume, kept until arf_close), and answer with
 * the volume's root directory, never the entry itself.  ".." at that root
 * is the directory of the mount point first crossed into the volume.
 *
 * Handles: the top 16 bits of every ino libarf hands out (ARF_VOL_SHIFT
 * onwards) are the volume's number (0 for the volume connected to; arfd's
 * own inode numbers are below 2^32), so st_ino stays unique across the
 * volumes one client reaches.  A number is a hash of the volume's name,
 * the same in every process, so two clients show one st_ino for one file
 * (docs/volumes.md).  A call given handles of
 * two volumes (arf_rename, arf_link, arf_copy) fails with -EXDEV.  A
 * handle's volume is unknown to another client: pass handles only back to
 * the client that gave them (arf_volume_url says where a handle's volume
 * is, for a connection of one's own).  Asynchronous I/O (arf_queue) serves
 * the volume connected to only: -EXDEV for a handle of another.
 *
 * Errors crossing: -ENODEV (no such volume), -EHOSTDOWN (its server is
 * not live in the cell), and those of arf_connect.
 */
/** Make name in (dir, dgen) a mount point for volume (1-63 of
 * [A-Za-z0-9._-]): a symbolic link "#VOLUME." of mode 0644, which arfd
 * lets only root make (the chmod of a link).  -EINVAL for a bad volume
 * name, -EEXIST, -EPERM or -EOPNOTSUPP for anyone but root.  The volume
 * need not exist yet.  out (may be NULL): the link's attributes. */
int arf_mkmount(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, const char *volume,
		struct arf_stat *out);
/** The volume name in (dir, dgen) is a mount point for, without crossing
 * it: 0 with the name, -EINVAL when name is not a mount point. */
int arf_mount_point(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, char *volume,
		    size_t cap);
/** The URL of the volume handle ino lives in (with its ?volume=) and the
 * handle as a connection to that URL knows it (*local, may be NULL).
 * -ESTALE for a handle of no volume of this client's. */
int arf_volume_url(arf_client *c, uint64_t ino, char *url, size_t cap, uint64_t *local);

/**
 * Extended attributes, kept by arfd: user.* (regular files and
 * directories; read and write permission as for the data), trusted.*
 * (root proven on its host only) and the POSIX ACLs
 * system.posix_acl_access and system.posix_acl_default (Linux's xattr
 * form; anyone reads them, the owner or root sets them; setting an access
 * ACL sets the mode's rwx bits, and the server's permission checks follow
 * the ACL).  security.* and other system.* names: -EOPNOTSUPP.  Limits: a
 * name of at most 255 bytes (-ERANGE), a value of at most 64 KiB (-E2BIG),
 * 256 KiB of names and values and 64 KiB of names per file (-ENOSPC).
 *
 * arf_getxattr copies the value to buf and returns its length; with size 0
 * it only returns the length; -ERANGE when size is too small, -ENODATA
 * when there is no such attribute.  arf_listxattr does the same with the
 * names, each NUL-terminated (trusted.* only to root).  arf_setxattr sets
 * (flags ARF_XATTR_CREATE: -EEXIST if it exists; ARF_XATTR_REPLACE:
 * -ENODATA unless it does) and arf_removexattr removes (-ENODATA if
 * missing); both give the file's new attributes in *out (may be NULL):
 * ctime, and the mode an access ACL set.  Errors besides: -EACCES, -EPERM,
 * -EINVAL (a malformed ACL, an empty name), -ENOSPC, -ESTALE.
 */
#define ARF_XATTR_CREATE    0x1u
#define ARF_XATTR_REPLACE   0x2u
ssize_t arf_getxattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name, void *buf,
		     size_t size);
ssize_t arf_listxattr(arf_client *c, uint64_t ino, uint32_t gen, char *buf, size_t size);
int arf_setxattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name, const void *value,
		 size_t size, int flags, struct arf_stat *out);
int arf_removexattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name,
		    struct arf_stat *out);

/**
 * Advisory locks, held by arfd so that they exclude every client of the
 * export: fcntl byte-range locks (ARF_LK_FCNTL, owner: a process) and
 * flock locks (ARF_LK_FLOCK, owner: an open file, always the whole file).
 * The two kinds do not conflict with each other, as on a local Linux
 * filesystem.  owner is the caller's own name for the holder; locks of
 * one owner never conflict with each other, and a new fcntl lock replaces
 * what the owner held in its range.  Ranges are inclusive; end ARF_LK_EOF
 * reaches past any end of file.
 *
 * The client's locks live as long as its lease: libarf renews it while
 * it holds locks, and a client silent for the server's lease time
 * ([locks] lease_s) loses them all.  arf_lock_lost() then says, for each
 * file it held locks on, that they are gone, until arf_lock_forget_lost():
 * the caller should fail I/O on that file with EIO meanwhile, as NFS does.
 * After arfd restarts, libarf reclaims what it held in the server's grace
 * period, before anything else; during that period new locks wait.
 */
#define ARF_LK_FCNTL 1u
#define ARF_LK_FLOCK 2u
#define ARF_LK_UN    0u          /**< arf_getlk: nothing conflicts */
#define ARF_LK_RD    1u          /**< shared */
#define ARF_LK_WR    2u          /**< exclusive */
#define ARF_LK_EOF   UINT64_MAX
struct arf_lock {
	uint32_t kind;           /**< ARF_LK_FCNTL or ARF_LK_FLOCK */
	uint32_t type;           /**< ARF_LK_RD or ARF_LK_WR (arf_getlk: also ARF_LK_UN) */
	uint64_t owner;          /**< the caller's name for the holder */
	uint64_t start, end;     /**< first and last byte (flock: ignored) */
	uint32_t pid;            /**< the locking process, as F_GETLK shows it */
};
/** Take a lock.  wait 0: -EAGAIN at once if another owner's lock
 * conflicts; wait 1: wait until it can be had (the server holds the
 * request; no thread of the server waits), -EDEADLK when waiting would
 * close a cycle of fcntl owners, -EINTR when arf_lock_cancel(wait_id)
 * ended the wait first.  wait_id: 0, or an id from arf_lock_wait_id() to
 * cancel by.  Errors besides: -ENOLCK (too many ranges), -EACCES (no
 * access to the file at all), -ESTALE, transport errors. */
int arf_lock(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_lock *lk, int wait,
	     uint64_t wait_id);
/** A fresh id for arf_lock's wait_id. */
uint64_t arf_lock_wait_id(arf_client *c);
/** End a waiting arf_lock (another thread's) with -EINTR, unless it was
 * granted first; an arf_lock with that id that has not begun yet ends with
 * -EINTR as soon as it does.  0 or a transport error. */
int arf_lock_cancel(arf_client *c, uint64_t wait_id);
/** Let go of lk->owner's lock (flock) or of its fcntl locks in
 * [start, end] (lk->type is ignored).  Asks nothing when the client holds
 * nothing of that owner on that file. */
int arf_unlock(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_lock *lk);
/** F_GETLK: would *lk be granted?  lk->type becomes ARF_LK_UN if so, or
 * describes a conflicting lock (type, start, end, pid). */
int arf_getlk(arf_client *c, uint64_t ino, uint32_t gen, struct arf_lock *lk);
/** 1 when this client's locks on the file were lost (its lease ran out, or
 * a reclaim after a restart failed), else 0.  Renews the lease first when
 * it is due, so that an answer of 0 holds. */
int arf_lock_lost(arf_client *c, uint64_t ino, uint32_t gen);
/** Forget that the file's locks were lost (the caller closed the file). */
void arf_lock_forget_lost(arf_client *c, uint64_t ino, uint32_t gen);

/** The server's status as a JSON object; *json is malloc'd (free it). */
int arf_server_status(arf_client *c, char **json);

/** Where a volume lives, as the server c is connected to knows it (its
 * LOCATE): in a cell, from its copy of the cell's records in etcd (the
 * client needs no etcd credentials); outside a cell, this server's own
 * volumes. */
struct arf_location {
	int here;            /**< the server c talks to serves it */
	int in_cell;         /**< from the cell's records (else: that server's own) */
	int live;            /**< its server is live in the cell: address, ports below */
	char server[64];     /**< its server's id ("" outside a cell) */
	char address[256];   /**< where that server is reached (when live) */
	uint16_t port;       /**< its tcp port (when live; 0 = none) */
	uint16_t rdma_port;  /**< its rdma port (0 = none) */
	char state[16];      /**< "online", "offline" or "moving" */
	uint64_t version;    /**< changes of the record (0 outside a cell) */
};
/** Locate volume (1-63 of [A-Za-z0-9._-]): 0, -ENOENT when the cell (or,
 * outside one, the server) has no such volume, -EINVAL for a bad name,
 * -EAGAIN when the server's copy of the cell is not read yet. */
int arf_locate(arf_client *c, const char *volume, struct arf_location *out);
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

/** While a call made by the calling thread waits for the server -- for a
 * reply, or for a new connection -- fn(arg) is called about every 100 ms
 * once the wait is that long (never for a quick call); a nonzero answer
 * ends the call with -EINTR (a mutation may or may not have been applied).
 * arf-fuse answers "the process that asked got a fatal signal", so a hard
 * mount's waits end on SIGKILL and on nothing else.  NULL (default): waits
 * end only as reconnect_ms says.  Not for the verbs transport's waits. */
typedef int (*arf_cancel_func)(void *arg);
void arf_set_thread_cancel(arf_cancel_func fn, void *arg);

/**
 * Credential tokens: how a tool run by an ordinary user acts as that user
 * on a connection of its own.  arf-fuse answers the ioctl ARF_IOC_CRED on
 * any open file of its mount: it asks arfd, over its own root-proven
 * connection, for a token naming the uid, gid and groups the kernel gives
 * with the ioctl, and hands back the token, the mount's URL and the file's
 * handle.  The token is good on this host for the ttl_s arfd gives it (ten
 * minutes) and until arfd restarts; a connection made with it keeps its
 * identity after that, but cannot reconnect with it.  In a cell whose
 * servers share [cell] move_secret_file a token minted for a tcp client is
 * the cell's: good on every server of the cell with that secret for its
 * ten minutes, restarts included, so that libarf carries it when the
 * volume moves ("moved") and when a walk crosses into a volume of another
 * server of the cell (one that refuses it is reached without it).
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
/** As arf_cred_token, minted by the server of the volume handle ino lives
 * in: a server's token is good only on the server that minted it (a
 * cell's on every server of the cell with the cell's secret). */
int arf_cred_token_at(arf_client *c, uint64_t ino, uint8_t token[ARF_TOKEN_SIZE],
		      uint32_t *ttl_s);

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

#define ARF_NKINDS 37
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
	uint64_t commits;           /**< COMMITs sent (arf_fsync, arf_flush, the bound) */
	uint64_t resent_bytes;      /**< bytes of uncommitted writes re-sent after arfd restarted */
	uint64_t unstable_bytes;    /**< now: bytes of writes kept until a COMMIT */
	uint64_t unstable_writes;   /**< now: those writes */
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

/** arf_queue_set_flags: fail fast.  Nothing inside arf_submit or arf_reap
 * waits on the server beyond the rounds and requests in flight:
 *  - an operation whose connection breaks (or is broken when it is posted)
 *    finishes at once with res = -ENOTCONN, instead of dialling again for
 *    opts.reconnect_ms; the caller then does it again with arf_aio_again,
 *    which dials as the synchronous calls do (so a thread that only reaps
 *    never waits on a dead server).  A WRITE that finished so may or may
 *    not have been applied; one whose copy could not be kept for
 *    re-sending (out of memory) finishes so too;
 *  - a WRITE that brings the unstable bytes kept to opts.unstable_max_mib
 *    sends no COMMIT: the caller commits (arf_unstable_full, arf_fsync);
 *  - READs read no further ahead (opts.readahead): their own rounds only. */
#define ARF_QUEUE_F_FAIL_FAST 1u
/** Set the queue's ARF_QUEUE_F_* flags (0 by default).  Errors: -EINVAL. */
int arf_queue_set_flags(arf_queue *q, unsigned flags);
/** Do again, the synchronous way (waiting, dialling and bounded as
 * arf_read, arf_write or arf_getattr), an operation q handed back with
 * res = -ENOTCONN (ARF_QUEUE_F_FAIL_FAST), from any thread: io is the
 * pointer arf_reap handed back, unchanged.  A WRITE starts at the bytes
 * the server had not answered, and the piece the broken connection lost
 * goes under the request id it went under then: a server that was silent
 * rather than gone may still read that first sending after this one (and
 * after writes the caller made since), and its reply cache then answers
 * it instead of writing the older bytes again.  Returns what the
 * synchronous call returns (a WRITE: bytes written, counting those
 * answered before the break), also put in io->res; io->st is set for a
 * GETATTR only.  For an io q never handed back so (or one of more than
 * 2 × depth so handed back since), it is done as new.  Errors: -EINVAL,
 * and those of the synchronous calls. */
ssize_t arf_aio_again(arf_queue *q, struct arf_aio *io);

#ifdef __cplusplus
}
#endif
#endif /* ARF_H */

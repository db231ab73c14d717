/* SPDX-License-Identifier: MIT */
/*
 * net/arf_proto.h — the filesystem request protocol carried by net/'s
 * two-sided requests: request kinds, the server info blob of the handshake,
 * and a bounds-checked little-endian encoder/decoder for message bodies.
 *
 * Every request body starts with the caller's credentials (AUTH_SYS-like),
 * then the fields of its kind, in the order the arf_proto_* encoders below
 * write them.  Replies carry a wire status in the frame header (never a raw
 * errno) and, on success, the fields listed beside each kind.
 *
 * The decoder (struct arf_proto_rd) never reads past its buffer: every get
 * checks the remaining length and latches an error flag, so a handler decodes
 * all fields and then checks `rd.err` once.
 */
#ifndef ARF_PROTO_H
#define ARF_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "arf_common.h"

#define ARF_PROTO_INFO_VERSION 1u
#define ARF_PROTO_NGROUPS      16u
#define ARF_PROTO_MAX_IO       (4u << 20)  /* largest READ/WRITE payload */
#define ARF_PROTO_MAX_READDIR  1024u       /* most entries in one READDIR reply */
#define ARF_PROTO_MAX_COPY     (8u << 20)  /* most bytes one COPY copies (the client loops) */
#define ARF_PROTO_MAX_PROG     (1u << 20)  /* largest program (raw bytecode or ELF) */
#define ARF_PROTO_MAX_PROG_ARG (64u << 10) /* largest PROG_EXEC argument */
#define ARF_PROTO_MAX_PROG_MSG 512u        /* longest error message of a program */
#define ARF_PROTO_PROG_HASH    32u         /* BLAKE2b-256 of the program's bytes */

/* Request kinds (frame op).  Request fields after the credentials -> reply. */
enum arf_proto_op {
	ARF_OP_GETATTR  = 0x100, /* fh -> attr */
	ARF_OP_LOOKUP   = 0x101, /* fh, name -> attr */
	ARF_OP_READDIR  = 0x102, /* fh, u64 cookie, u32 max -> u32 n, u32 eof, n x dirent */
	/* READDIR with each child's attributes (NFSv3's READDIRPLUS): a dirent
	 * as READDIR's, then u32 has_attr (0: the child went meanwhile), then
	 * its attr when 1 */
	ARF_OP_READDIRPLUS = 0x107, /* fh, u64 cookie, u32 max -> u32 n, u32 eof,
				     * n x (dirent, u32 has_attr[, attr]) */
	ARF_OP_READ     = 0x103, /* fh, u64 off, u32 len -> bytes */
	ARF_OP_READLINK = 0x104, /* fh -> bytes */
	ARF_OP_STATFS   = 0x105, /* - -> statfs */
	ARF_OP_ACCESS   = 0x106, /* fh, u32 mask -> - */
	/* CREATE, MKDIR and MKNOD may end with u32 umask: applied by the server
	 * unless the directory has a default ACL (which is inherited instead) */
	ARF_OP_CREATE   = 0x110, /* fh, name, u32 mode, u32 excl[, u32 umask] -> attr, wcc */
	ARF_OP_MKDIR    = 0x111, /* fh, name, u32 mode[, u32 umask] -> attr, wcc */
	ARF_OP_MKNOD    = 0x112, /* fh, name, u32 mode, u64 rdev[, u32 umask] -> attr, wcc */
	ARF_OP_UNLINK   = 0x113, /* fh, name -> wcc, objs */
	ARF_OP_RMDIR    = 0x114, /* fh, name -> wcc, objs */
	ARF_OP_RENAME   = 0x115, /* fh, name, fh, name, u32 flags -> wcc, objs */
	ARF_OP_LINK     = 0x116, /* fh, fh(dir), name -> attr, wcc */
	ARF_OP_SYMLINK  = 0x117, /* fh, name, bytes(target) -> attr, wcc */
	ARF_OP_SETATTR  = 0x118, /* fh, setattr -> attr, wcc (of fh itself, when a directory) */
	/* reply: then (ARF_PROTO_WRITE_*) u64 verifier (the server's incarnation),
	 * u64 seq (the write's transaction), u64 offset (where the bytes went),
	 * u32 flags; the write is durable only once a COMMIT with the same
	 * verifier answers a durable sequence >= seq, unless flags say stable */
	ARF_OP_WRITE    = 0x119, /* fh, u64 off, bytes -> u32 written, attr, write_info */
	ARF_OP_FSYNC    = 0x11a, /* fh -> - (everything before it durable) */
	/* Everything applied before it durable (NFSv3 COMMIT), for the whole
	 * export; fh may be (0, 0), else it must name a file (ESTALE).  The reply
	 * says how far: the verifier and the durable sequence; and for
	 * old_verifier (an earlier incarnation whose writes the client holds;
	 * 0 = none) the sequence it was found durable through at the next
	 * start, and whether the server knows it (0: it does not). */
	ARF_OP_COMMIT   = 0x11b, /* fh, u64 old_verifier -> u64 verifier, u64 durable,
				  * u64 old_through, u32 old_known */
	/* A new regular file with its bytes and attributes (setattr: mode, uid,
	 * gid, times; never size) in one transaction: what tar, rsync and git
	 * do for each small file.  Always exclusive (EEXIST); a failure after
	 * the file was made removes it again. */
	ARF_OP_CREATE_WRITE = 0x11d, /* fh(dir), name, u32 mode, setattr, bytes(data) -> attr, wcc */
	/* Server-side copy (NFS 4.2's COPY): up to ARF_PROTO_MAX_COPY bytes of
	 * src copied into dst block by block, never through the client; holes
	 * stay holes where dst had none.  flags must be 0. */
	ARF_OP_COPY     = 0x11e, /* fh(src), u64 src_off, fh(dst), u64 dst_off, u64 len, u32 flags
				  * -> u64 copied, attr(dst) */
	/* O_APPEND: written at the server's end of file, under its lock; the
	 * reply says where (a re-send is answered from the reply cache) */
	ARF_OP_APPEND   = 0x11c, /* fh, bytes -> u64 offset, u32 written, attr */
	/* u32 mode: ARF_FALLOC_* (Linux's FALLOC_FL_* values) */
	ARF_OP_FALLOCATE = 0x11f, /* fh, u32 mode, u64 off, u64 len -> attr */
	/* u32 whence: ARF_SEEK_DATA or ARF_SEEK_HOLE (Linux's values) */
	ARF_OP_SEEK     = 0x122, /* fh, u64 off, u32 whence -> u64 offset */
	ARF_OP_STATUS   = 0x120, /* - -> string (JSON object) */
	/* A credential token for the request's credentials, which a tool then
	 * presents in its own HELLO (ARF_PROTO_HELLO_TOKEN).  Root-proven
	 * connections only (arf-fuse, for the user the kernel names). */
	ARF_OP_CRED_MINT = 0x121, /* - -> bytes(token), u32 lifetime_s */
	/* Advisory locks held by arfd (arfd/locks.c), by lock owner: a client
	 * id (random per libarf client) and the client's own owner (FUSE's
	 * lock owner).  Every reply starts with a lock_hdr: u32 result
	 * (ARF_LOCK_R_*), u64 lease id, u32 lease ms, u64 seq.  Blocking waits
	 * are held in arfd, not on a worker, and answered when granted, or
	 * with ARF_LOCK_R_WAIT after wait_ms (the client asks again). */
	ARF_OP_LOCK     = 0x123, /* fh, lock_req -> lock_hdr, [TEST: conflict], ranges */
	ARF_OP_UNLOCK   = 0x124, /* fh, u64 client, u64 lease, u64 owner, u32 kind, u64 start,
				  * u64 end -> lock_hdr, ranges */
	ARF_OP_LOCK_RENEW = 0x125, /* u64 client, u64 lease, u32 flags -> lock_hdr, u32 state */
	ARF_OP_LOCK_CANCEL = 0x126, /* u64 client, u64 wait_id -> u32 cancelled */
	/* Where a volume of the cell lives (arfd/locate.c): answered from the
	 * server's copy of the cell's records, never by waiting for etcd.
	 * Counted as "other" (a kind of its own would change libarf's
	 * arf_client_stats, whose layout is its ABI). */
	ARF_OP_LOCATE   = 0x127, /* name -> location */
	/* Extended attributes (arfd/xattr.c), requests only. */
	ARF_OP_XATTR_GET = 0x128, /* fh, name, u32 size -> u32 len, [bytes(value) if size] */
	ARF_OP_XATTR_SET = 0x129, /* fh, name, bytes(value), u32 flags -> attr */
	ARF_OP_XATTR_LIST = 0x12a, /* fh, u32 size -> u32 len, [bytes(names) if size] */
	ARF_OP_XATTR_REMOVE = 0x12b, /* fh, name -> attr */
	/* A volume sent here by the server moving it (arfctl vol move,
	 * arfd/move_in.c): u32 step, the step's fields, and a MAC of the cell's
	 * move secret over the session's nonce, a counter and the body before
	 * it.  Only between servers; counted as "other". */
	ARF_OP_VOLUME_IN = 0x12c, /* u32 step, ... , mac[32] -> the step's answer */
	/* Mobile code.  On failure the reply body is a prog_error (pc, insns,
	 * message) whenever there is something to say. */
	ARF_OP_PROG_LOAD = 0x130, /* bytes(program: raw bytecode or ELF) -> hash[32], u32 insns */
	ARF_OP_PROG_EXEC = 0x131, /* hash[32], u32 out_max, bytes(arg) -> prog_result */
	ARF_OP_MAX      = 0x1ff,
};

/* Name of a request kind ("lookup"), "unknown" otherwise. */
const char *arf_proto_op_name(uint16_t op);
/* Dense index 0..ARF_PROTO_NKINDS-1 for counters, -1 if unknown.  The
 * last index, ARF_PROTO_NKINDS - 1, counts the kinds no index names. */
int arf_proto_op_index(uint16_t op);
/* The name of dense index i: a kind's, "other" for the last, "unknown"
 * out of range. */
const char *arf_proto_kind_name(int i);
#define ARF_PROTO_NKINDS 40

/* Locks (ARF_OP_LOCK and friends).  Ranges are inclusive: [start, end],
 * end = ARF_LOCK_EOF for "to the end of the file, however long". */
#define ARF_LOCK_EOF        UINT64_MAX
#define ARF_LOCK_POSIX      1u  /* kind: fcntl byte-range lock, owner = the process */
#define ARF_LOCK_FLOCK      2u  /* kind: flock(2), owner = the open file; whole file */
#define ARF_LOCK_RD         1u  /* type: shared */
#define ARF_LOCK_WR         2u  /* type: exclusive */
#define ARF_LOCK_F_WAIT     0x1u /* wait for a conflicting lock to go (F_SETLKW) */
#define ARF_LOCK_F_RECLAIM  0x2u /* reclaim after a restart (in the grace period) */
#define ARF_LOCK_F_TEST     0x4u /* F_GETLK: say what conflicts, take nothing */
#define ARF_LOCK_RENEW_RECLAIMED 0x1u /* LOCK_RENEW: this client has reclaimed all */
#define ARF_LOCK_STATE_GRACE 0x1u /* LOCK_RENEW reply: the server is in its grace period */
#define ARF_LOCK_R_DONE     0u  /* granted (TEST: nothing conflicts) / unlocked / renewed */
#define ARF_LOCK_R_WAIT     1u  /* still waiting: ask again with the same wait id */
#define ARF_LOCK_R_CONFLICT 2u  /* TEST: a conflicting lock follows */
#define ARF_LOCK_MAX_RANGES 4096u /* most ranges one owner may hold on one file */
#define ARF_LOCK_MAX_WAIT_MS 60000u /* longest a waiting LOCK is held before R_WAIT */

/* LOCK's fields after the file handle. */
struct arf_proto_lock_req {
	uint64_t client;             /* the client's id (random, per client instance) */
	uint64_t lease;              /* the lease the client believes it holds (0: none) */
	uint64_t owner;              /* the client's lock owner */
	uint32_t pid;                /* the locking process, as F_GETLK shows it */
	uint32_t kind;               /* ARF_LOCK_POSIX or ARF_LOCK_FLOCK */
	uint32_t type;               /* ARF_LOCK_RD or ARF_LOCK_WR */
	uint32_t flags;              /* ARF_LOCK_F_* */
	uint64_t start, end;         /* inclusive; flock: 0, ARF_LOCK_EOF */
	uint64_t wait_id;            /* names a waiting request (LOCK_CANCEL); 0 if none */
	uint32_t wait_ms;            /* hold a waiting request at most this long */
};

/* Start of every lock reply. */
struct arf_proto_lock_hdr {
	uint32_t result;             /* ARF_LOCK_R_* */
	uint64_t lease;              /* the client's lease now (0: it holds none) */
	uint32_t lease_ms;           /* how long a lease lasts without a renewal */
	uint64_t seq;                /* the server's lock-state counter at this answer */
};

/* Extended attributes. */
#define ARF_XATTR_NAME_MAX  255u     /* bytes of a name, namespace prefix included */
#define ARF_XATTR_VALUE_MAX 65536u   /* bytes of one value */
#define ARF_XATTR_LIST_MAX  65536u   /* bytes of a file's name list (NUL-terminated names) */
#define ARF_XATTR_CREATE    0x1u     /* XATTR_SET: fail with EEXIST if it exists */
#define ARF_XATTR_REPLACE   0x2u     /* XATTR_SET: fail with ENODATA unless it exists */

/* FALLOCATE modes and SEEK whences on the wire (Linux's values). */
#define ARF_FALLOC_KEEP_SIZE  0x01u
#define ARF_FALLOC_PUNCH_HOLE 0x02u
#define ARF_SEEK_DATA 3u
#define ARF_SEEK_HOLE 4u

/* Caller credentials, first in every request. */
struct arf_proto_cred {
	uint32_t uid, gid, ngroups;
	uint32_t groups[ARF_PROTO_NGROUPS];
};

/* A file handle: inode number and generation. */
struct arf_proto_fh {
	uint64_t ino;
	uint32_t gen;
};

struct arf_proto_attr {
	uint64_t ino;
	uint32_t gen, mode, nlink, uid, gid;
	uint64_t size, blocks;       /* blocks in 512-byte units */
	int64_t  atime_ns, mtime_ns, ctime_ns;
	uint64_t rdev;
};

struct arf_proto_setattr {
	uint32_t valid;              /* ARF_OPS_SET_* values */
	uint32_t mode, uid, gid;
	uint64_t size;
	int64_t  atime_ns, mtime_ns;
};

/*
 * What a change of names did to the directories it changed, as NFSv3's
 * wcc_data: each directory's ctime just before the change and its
 * attributes just after, taken under the same lock as the change.  A
 * client that kept the directory's ctime from an earlier reply knows, when
 * pre_ctime_ns matches it, that nobody else changed the directory in
 * between.  The "wcc" of a reply above: u32 n (1, or 2 for a rename
 * between two directories; 0 when a directory vanished), then n of these.
 * It follows the reply's older fields, so a reader that stops before it
 * loses nothing.  The "objs" after it say what became of the files the
 * names named before (the one removed; for a rename the one moved and the
 * one replaced): u32 n (0..2), then n x { fh, u32 live, attr when live },
 * so a client drops or refreshes what it cached of them.
 */
#define ARF_PROTO_MAX_WCC 2u
struct arf_proto_wcc {
	struct arf_proto_fh dir;     /* which directory */
	int64_t pre_ctime_ns;        /* its ctime before the change */
	struct arf_proto_attr post;  /* its attributes after */
};

struct arf_proto_statfs {
	uint64_t bsize, blocks, bfree, files, ffree, namemax;
};

/* PROG_EXEC's reply on success.  out points into the reply buffer. */
struct arf_proto_prog_result {
	uint64_t r0;                 /* the program's return value */
	uint64_t insns;              /* instructions executed */
	const uint8_t *out;          /* what it emitted */
	uint32_t out_len;
};

/* Reply body of a failed PROG_LOAD or PROG_EXEC: ARF_EVERIFY ("instruction
 * 12: jump out of range"), ARF_EBUDGET, ARF_EFAULT (instruction and
 * address), ARF_EOUTPUT, ARF_ENOPROG, a helper's error. */
struct arf_proto_prog_error {
	uint32_t pc;                 /* instruction that failed (0 when none) */
	uint64_t insns;              /* instructions executed before it */
	char msg[ARF_PROTO_MAX_PROG_MSG];
};

/* Server info blob of the handshake (after HELLO). */
struct arf_proto_info {
	uint32_t version;            /* ARF_PROTO_INFO_VERSION */
	uint32_t flags;              /* ARF_PROTO_INFO_* */
	uint64_t incarnation;        /* changes at every server start */
	uint32_t max_io;             /* largest READ/WRITE payload */
	uint32_t root_gen;           /* generation of the root inode */
	char     export_name[64];    /* NUL-terminated */
	uint8_t  super[4096];        /* copy of the superblock (struct arf_meta_super) */
};
#define ARF_PROTO_WRITE_STABLE 0x1u /* WRITE reply flags: durable already ([export] sync) */
#define ARF_PROTO_INFO_RO   0x1u /* read-only export */
#define ARF_PROTO_INFO_SYNC 0x2u /* sync export */
#define ARF_PROTO_INFO_SIZE (4 + 4 + 8 + 4 + 4 + 64 + 4096)

/* A credential token (CRED_MINT): opaque to clients, which only carry it
 * from arf-fuse's ioctl to their HELLO.  arfd's layout (arfd/identity.c):
 * u32 version, uid, gid, ngroups, 16 x u32 groups, u64 expires (seconds,
 * CLOCK_REALTIME), u64 incarnation, 16 bytes of the minting peer's
 * address, 32 bytes of MAC.  Version 1 is good on the server that minted
 * it; version 2 on every server of its cell (the one thing clients read of
 * it: they carry it to those servers too). */
#define ARF_PROTO_TOKEN_SIZE 144u
#define ARF_PROTO_TOKEN_CELL 2u

/* Client hello blob: what the client asks for. */
#define ARF_PROTO_CLIENT_ID 16u
#define ARF_PROTO_VOLUME_MAX 64u
struct arf_proto_hello {
	uint32_t version;            /* ARF_PROTO_INFO_VERSION */
	uint32_t flags;              /* ARF_PROTO_HELLO_* */
	char     path[256];          /* URL path (export selection) */
	uint8_t  token[ARF_PROTO_TOKEN_SIZE]; /* with ARF_PROTO_HELLO_TOKEN */
	uint8_t  client[ARF_PROTO_CLIENT_ID]; /* with ARF_PROTO_HELLO_CLIENT */
	char     volume[ARF_PROTO_VOLUME_MAX]; /* with ARF_PROTO_HELLO_VOLUME */
};
#define ARF_PROTO_HELLO_TOKEN 0x1u   /* a credential token follows the path */
/* A client id follows (the token, or) the path: random, the same on every
 * connection of one client, so that arfd's reply cache recognises a
 * request sent again after a reconnection (the frame id is kept) */
#define ARF_PROTO_HELLO_CLIENT 0x2u
/* The volume it wants follows (the token and) the client id: a name of
 * ARF_PROTO_VOLUME_MAX bytes, NUL-padded; without it, the root volume.  An
 * arfd older than volumes ignores it (and serves its one filesystem). */
#define ARF_PROTO_HELLO_VOLUME 0x4u
#define ARF_PROTO_HELLO_SIZE (4 + 4 + 256) /* without a token */

/* A volume's location (ARF_OP_LOCATE's reply). */
#define ARF_PROTO_LOC_HERE 0x1u  /* the answering server serves it */
#define ARF_PROTO_LOC_LIVE 0x2u  /* its server is live in the cell (address, ports) */
#define ARF_PROTO_LOC_CELL 0x4u  /* from the cell's records (else: this server's own) */
struct arf_proto_location {
	uint32_t flags;              /* ARF_PROTO_LOC_* */
	char     server[64];         /* its server's id ("" outside a cell) */
	char     address[256];       /* where that server is reached (with LIVE) */
	uint32_t port, rdma_port;    /* its tcp and rdma ports (with LIVE; 0 = none) */
	char     state[16];          /* "online", "offline", "moving" */
	uint64_t version;            /* the record's changes (0 outside a cell) */
};
/* The reply: u32 flags, bytes server, bytes address, u32 port, u32
 * rdma_port, bytes state, u64 version. */

/* ---- encoder: a growable buffer ---- */
struct arf_proto_wr {
	uint8_t *buf;
	size_t len, cap;
	int err;                     /* -ENOMEM latched */
};
void arf_proto_wr_init(struct arf_proto_wr *w);
void arf_proto_wr_free(struct arf_proto_wr *w);
void arf_proto_put(struct arf_proto_wr *w, const void *p, size_t n);
/* The fixed-size fields inline, the growth out of line: a listing's reply
 * is ~20 fields an entry, and a call each was ~1 ms of a 10,000-entry
 * listing on each side.  Little-endian host (asserted in arf_meta.h). */
static inline void arf_proto_put_u32(struct arf_proto_wr *w, uint32_t v)
{
	if (!w->err && w->cap - w->len >= 4) {
		memcpy(w->buf + w->len, &v, 4);
		w->len += 4;
		return;
	}
	arf_proto_put(w, &v, 4);
}
static inline void arf_proto_put_u64(struct arf_proto_wr *w, uint64_t v)
{
	if (!w->err && w->cap - w->len >= 8) {
		memcpy(w->buf + w->len, &v, 8);
		w->len += 8;
		return;
	}
	arf_proto_put(w, &v, 8);
}
void arf_proto_put_bytes(struct arf_proto_wr *w, const void *p, uint32_t n); /* u32 length + bytes */
void arf_proto_put_cred(struct arf_proto_wr *w, const struct arf_proto_cred *c);
void arf_proto_put_fh(struct arf_proto_wr *w, const struct arf_proto_fh *fh);
void arf_proto_put_attr(struct arf_proto_wr *w, const struct arf_proto_attr *a);
void arf_proto_put_setattr(struct arf_proto_wr *w, const struct arf_proto_setattr *s);
void arf_proto_put_statfs(struct arf_proto_wr *w, const struct arf_proto_statfs *s);
void arf_proto_put_wcc(struct arf_proto_wr *w, const struct arf_proto_wcc *v, uint32_t n);
void arf_proto_put_info(struct arf_proto_wr *w, const struct arf_proto_info *i);
void arf_proto_put_hello(struct arf_proto_wr *w, const struct arf_proto_hello *h);
void arf_proto_put_location(struct arf_proto_wr *w, const struct arf_proto_location *l);
void arf_proto_put_prog_result(struct arf_proto_wr *w, const struct arf_proto_prog_result *r);
void arf_proto_put_prog_error(struct arf_proto_wr *w, const struct arf_proto_prog_error *e);

/* ---- decoder over untrusted bytes ---- */
struct arf_proto_rd {
	const uint8_t *p;
	size_t len, pos;
	int err;                     /* ARF_EPROTO latched on any overrun or bad value */
};
static inline void arf_proto_rd_init(struct arf_proto_rd *r, const void *p, size_t len)
{
	r->p = (const uint8_t *)p;
	r->len = len;
	r->pos = 0;
	r->err = 0;
}
void arf_proto_get(struct arf_proto_rd *r, void *p, size_t n);
/* as the encoder's: inline where the bytes are there, else the checked
 * copy, which latches the error */
static inline uint32_t arf_proto_get_u32(struct arf_proto_rd *r)
{
	uint32_t v;
	if (!r->err && r->pos <= r->len && r->len - r->pos >= 4) {
		memcpy(&v, r->p + r->pos, 4);
		r->pos += 4;
		return v;
	}
	arf_proto_get(r, &v, 4);
	return v;
}
static inline uint64_t arf_proto_get_u64(struct arf_proto_rd *r)
{
	uint64_t v;
	if (!r->err && r->pos <= r->len && r->len - r->pos >= 8) {
		memcpy(&v, r->p + r->pos, 8);
		r->pos += 8;
		return v;
	}
	arf_proto_get(r, &v, 8);
	return v;
}
/* Length-prefixed bytes: returns a pointer into the buffer (not copied) and
 * the length; fails if longer than max. */
const uint8_t *arf_proto_get_bytes(struct arf_proto_rd *r, uint32_t max, uint32_t *n);
void arf_proto_get_cred(struct arf_proto_rd *r, struct arf_proto_cred *c);
void arf_proto_get_fh(struct arf_proto_rd *r, struct arf_proto_fh *fh);
void arf_proto_get_attr(struct arf_proto_rd *r, struct arf_proto_attr *a);
void arf_proto_get_setattr(struct arf_proto_rd *r, struct arf_proto_setattr *s);
void arf_proto_get_statfs(struct arf_proto_rd *r, struct arf_proto_statfs *s);
/* A wcc into v (room for max): returns n, 0 when the reply ends before it
 * (an older server); more than max, or a bad record, is ARF_EPROTO. */
uint32_t arf_proto_get_wcc(struct arf_proto_rd *r, struct arf_proto_wcc *v, uint32_t max);
void arf_proto_get_info(struct arf_proto_rd *r, struct arf_proto_info *i);
void arf_proto_get_hello(struct arf_proto_rd *r, struct arf_proto_hello *h);
void arf_proto_get_location(struct arf_proto_rd *r, struct arf_proto_location *l);
/* out points into r's buffer (valid while it is). */
void arf_proto_get_prog_result(struct arf_proto_rd *r, struct arf_proto_prog_result *res);
/* The message is NUL-terminated (cut to fit). */
void arf_proto_get_prog_error(struct arf_proto_rd *r, struct arf_proto_prog_error *e);
/* A name: 1..255 bytes (ENAMETOOLONG past that is the server's business:
 * up to 4096 is accepted here so the server can say ENAMETOOLONG). */
const char *arf_proto_get_name(struct arf_proto_rd *r, uint32_t *n);
/* Locks: LOCK's fields after the handle, and every lock reply's start. */
void arf_proto_put_lock_req(struct arf_proto_wr *w, const struct arf_proto_lock_req *l);
void arf_proto_get_lock_req(struct arf_proto_rd *r, struct arf_proto_lock_req *l);
void arf_proto_put_lock_hdr(struct arf_proto_wr *w, const struct arf_proto_lock_hdr *h);
void arf_proto_get_lock_hdr(struct arf_proto_rd *r, struct arf_proto_lock_hdr *h);
/* True when the whole buffer was consumed without error. */
static inline int arf_proto_rd_done(const struct arf_proto_rd *r)
{
	return !r->err && r->pos == r->len;
}

#endif /* ARF_PROTO_H */

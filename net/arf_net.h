/* SPDX-License-Identifier: MIT */
/*
 * net/ — the wire framing and the transport interface, client and server.
 *
 * A transport carries two kinds of traffic:
 *   - one-sided operations on registered regions (READ, batched READ, WRITE,
 *     compare-and-swap, fetch-and-add).  On tcp they are served by the
 *     soft-NIC thread of the server, which checks region id, key, rights and
 *     bounds and copies bytes: it never calls filesystem code (this module
 *     links nothing of meta/ or ops/).  On shm the client has the regions
 *     mapped (read-only unless registered writable) and the server does
 *     nothing at all.
 *   - two-sided requests: any frame whose op is >= ARF_NET_OP_REQUEST_BASE
 *     goes to the server's on_request callback, and the reply is sent with
 *     arf_net_reply() from any thread, at any later time.  Requests are
 *     pipelined: many may be in flight on one connection, matched by id.
 *
 * Back ends sit behind an ops table (net/transport.h); nothing above this
 * header knows which one is in use.  Waiting polls adaptively on both sides:
 * spin up to spin_us microseconds, then sleep in poll/epoll (spin_us 0 =
 * never spin).
 *
 * Errors: 0 or -errno; ARF_EPROTO for malformed frames, ARF_EVERSION for a
 * protocol version mismatch, ARF_EKEY when a one-sided access is refused.
 * Functions that can say more fill an `err` buffer with one line.
 */
#ifndef ARF_NET_H
#define ARF_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "arf_common.h"

#define ARF_NET_PROTO_VERSION 1u
#define ARF_NET_MAGIC         0x4e465241u   /* "ARFN" */
#define ARF_NET_DEFAULT_PORT  20490
#define ARF_NET_DEFAULT_RDMA_PORT 20491      /* rdma_cm port (iWARP shares tcp's port space) */
#define ARF_NET_MAX_FRAME     (16u << 20)    /* largest frame accepted, header included */
#define ARF_NET_MAX_PREAUTH_FRAME 4096u      /* largest frame a server accepts before the
					      * handshake (a HELLO, its token and proof) */
#define ARF_NET_MAX_BATCH     4096u          /* most reads in one batched READ */
#define ARF_NET_MAX_REGIONS   48u
#define ARF_NET_MAX_VIEWS     16u /* arf_net_server_add_region_in */

/* Frame header: explicit little-endian fields, 24 bytes. */
struct arf_net_hdr {
	uint32_t len;    /* whole frame in bytes, header included */
	uint16_t op;     /* enum arf_net_op, or a request op >= ARF_NET_OP_REQUEST_BASE */
	uint16_t flags;  /* ARF_NET_F_* */
	uint64_t id;     /* chosen by the requester, echoed in the reply */
	int32_t  status; /* replies: enum arf_net_status; requests: 0 */
	uint32_t aux;    /* op-specific (e.g. number of reads in a batch) */
};
_Static_assert(sizeof(struct arf_net_hdr) == 24, "arf_net_hdr is 24 bytes on the wire");

#define ARF_NET_F_REPLY     0x1u
#define ARF_NET_F_PROOF     0x2u /* HELLO: body = 32-byte HMAC of the challenge, then the hello */
#define ARF_NET_F_CHALLENGE 0x4u /* HELLO reply (ARF_EAUTH): body = 32-byte nonce to prove */
#define ARF_NET_AUTH_KEY_BYTES 32u

enum arf_net_op {
	ARF_NET_OP_HELLO = 1,  /* handshake: version check, region keys, server info */
	ARF_NET_OP_READ  = 2,  /* one-sided batched READ: aux = count, body = count x arf_net_wire_read */
	ARF_NET_OP_WRITE = 3,  /* one-sided WRITE: body = arf_net_wire_rmw + bytes */
	ARF_NET_OP_CAS   = 4,  /* one-sided compare-and-swap of 8 aligned bytes */
	ARF_NET_OP_FAA   = 5,  /* one-sided fetch-and-add of 8 aligned bytes */
	ARF_NET_OP_REQUEST_BASE = 0x100, /* two-sided requests, defined above net/ */
};

/* One read of a batch, on the wire (24 bytes). */
struct arf_net_wire_read {
	uint32_t region;
	uint32_t len;
	uint64_t key;
	uint64_t off;
};
_Static_assert(sizeof(struct arf_net_wire_read) == 24, "wire read");

/* WRITE / CAS / FAA body (40 bytes); WRITE's bytes follow. */
struct arf_net_wire_rmw {
	uint32_t region;
	uint32_t len;    /* WRITE: bytes that follow; CAS/FAA: 8 */
	uint64_t key;
	uint64_t off;
	uint64_t arg0;   /* CAS: expected; FAA: addend */
	uint64_t arg1;   /* CAS: desired */
};
_Static_assert(sizeof(struct arf_net_wire_rmw) == 40, "wire rmw");

/* Status on the wire: never a raw errno.  0 = OK; the POSIX ones; ARF's own. */
enum arf_net_status {
	ARF_NET_S_OK = 0,
	ARF_NET_S_PERM = 1, ARF_NET_S_NOENT = 2, ARF_NET_S_IO = 3, ARF_NET_S_NXIO = 4,
	ARF_NET_S_ACCES = 5, ARF_NET_S_EXIST = 6, ARF_NET_S_XDEV = 7, ARF_NET_S_NOTDIR = 8,
	ARF_NET_S_ISDIR = 9, ARF_NET_S_INVAL = 10, ARF_NET_S_FBIG = 11, ARF_NET_S_NOSPC = 12,
	ARF_NET_S_ROFS = 13, ARF_NET_S_MLINK = 14, ARF_NET_S_NAMETOOLONG = 15,
	ARF_NET_S_NOTEMPTY = 16, ARF_NET_S_STALE = 17, ARF_NET_S_NOTSUP = 18,
	ARF_NET_S_BUSY = 19, ARF_NET_S_AGAIN = 20, ARF_NET_S_NOMEM = 21, ARF_NET_S_TOOBIG = 22,
	ARF_NET_S_LOOP = 23, ARF_NET_S_RANGE = 24, ARF_NET_S_BADF = 25, ARF_NET_S_NOSYS = 26,
	ARF_NET_S_DQUOT = 27, ARF_NET_S_OVERFLOW = 28, ARF_NET_S_TIMEDOUT = 29,
	ARF_NET_S_CONNRESET = 30, ARF_NET_S_NODATA = 31, ARF_NET_S_INTR = 32,
	ARF_NET_S_DEADLK = 33, ARF_NET_S_NOLCK = 34, ARF_NET_S_REMOTE = 35, ARF_NET_S_HOSTDOWN = 36,
	ARF_NET_S_ARF_BASE = 1000, /* ARF_NET_S_ARF_BASE + (ARF_ERR_MAX - err) for enum arf_err */
	ARF_NET_S_UNKNOWN = 0x7fffffff,
};

/* errno (negative) or arf_err -> wire status, and back.  Unknown -> S_IO / -EIO. */
int32_t arf_net_status_from_err(int err);
int arf_net_status_to_err(int32_t status);

/* Region flags */
#define ARF_NET_REGION_WRITABLE 0x1u /* one-sided WRITE/CAS/FAA allowed */

struct arf_net_region_info {
	uint32_t id;
	uint32_t flags;
	uint64_t size;
	uint64_t key;    /* random at every server start, never 0 */
};

/* ------------------------------------------------------------------ client */

struct arf_net_conn; /* opaque; thread-safe: any number of threads may use one */

struct arf_net_client_opts {
	const char *transport;  /* "tcp", "shm" or "rdma" (alias "verbs") */
	const char *host;       /* tcp, rdma: host name or address */
	uint16_t port;          /* tcp: 0 = ARF_NET_DEFAULT_PORT; rdma: 0 = ARF_NET_DEFAULT_RDMA_PORT */
	const char *sock_path;  /* shm: the server's UNIX socket */
	uint32_t spin_us;       /* adaptive polling: spin this long before sleeping */
	uint32_t timeout_ms;    /* connect and reply timeout; 0 = 30 s */
	const void *hello;      /* opaque bytes passed to the server's on_hello (credentials etc.) */
	size_t hello_len;
	/* Shared-secret key (ARF_NET_AUTH_KEY_BYTES) answering the server's
	 * challenge, NULL = none.  The secret itself never travels: the client
	 * proves it with HMAC-SHA-512-256 (libsodium crypto_auth) over a nonce. */
	const uint8_t *auth_key;
	/* tcp: when the process is root, connect from a reserved source port
	 * (665-1023), as NFS's resvport, which an export with one_sided = root
	 * takes as proof of root on this host; when none is free, any port. */
	int resvport;
};

/* Per-connection transport counters (monotonic). */
struct arf_net_counters {
	uint64_t one_sided_reads;   /* individual reads (a batch of 5 counts 5) */
	uint64_t one_sided_bytes;   /* bytes read one-sidedly */
	uint64_t one_sided_writes;  /* WRITE + CAS + FAA */
	uint64_t rounds;            /* round trips of one-sided operations */
	uint64_t calls;             /* request/response exchanges (arf_net_call) */
	uint64_t bytes_sent;        /* frame bytes sent, headers included */
	uint64_t bytes_received;    /* frame bytes received (shm: bytes copied in local reads too) */
	uint64_t futile_wakes;      /* waiting threads woken to find neither their reply
				     * nor the socket free (asleep again) */
};

/* Connect and handshake.  On success *out owns the connection (close it with
 * arf_net_close).  Errors: -ECONNREFUSED, -ETIMEDOUT, ARF_EVERSION (protocol
 * mismatch), ARF_EAUTH (refused by the server), -EINVAL (bad options), with
 * a one-line reason in err. */
int arf_net_connect(const struct arf_net_client_opts *opts, struct arf_net_conn **out,
		    char *err, size_t errlen);
void arf_net_close(struct arf_net_conn *c); /* NULL ok */
/* Close a connection being left (broken, or silent past a timeout): what
 * its socket has not sent yet is dropped (SO_LINGER 0: a reset), so that
 * a request the client will send again elsewhere cannot reach the server
 * later, when the path comes back. */
void arf_net_abandon(struct arf_net_conn *c);

/* The server's region table and its info blob (from the handshake), valid
 * until arf_net_close. */
const struct arf_net_region_info *arf_net_regions(struct arf_net_conn *c, size_t *n);
const void *arf_net_server_info(struct arf_net_conn *c, size_t *len);
const char *arf_net_transport_name(struct arf_net_conn *c);

/* One read of a batch.  key == 0 means "the key from the handshake". */
struct arf_net_read_op {
	uint32_t region;
	uint32_t len;
	uint64_t off;
	uint64_t key;
	void *dst;
};

/* Post n reads together: one round trip.  Returns 0, or the first error
 * (ARF_EKEY for a refused read, -EIO/-ECONNRESET for a broken connection). */
int arf_net_read(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n);
int arf_net_write(struct arf_net_conn *c, uint32_t region, uint64_t key, uint64_t off,
		  const void *buf, uint32_t len);
int arf_net_cas(struct arf_net_conn *c, uint32_t region, uint64_t key, uint64_t off,
		uint64_t expect, uint64_t desired, uint64_t *old);
int arf_net_faa(struct arf_net_conn *c, uint32_t region, uint64_t key, uint64_t off,
		uint64_t add, uint64_t *old);

/* A reply body, owned by the caller: free with arf_net_buf_free. */
struct arf_net_buf {
	uint8_t *data;
	size_t len;
};
void arf_net_buf_free(struct arf_net_buf *b);

/* Send a request (op >= ARF_NET_OP_REQUEST_BASE) made of iov and wait for its
 * reply.  Returns the reply status converted by arf_net_status_to_err (0 on
 * success); the reply body (possibly empty) is in *resp in every case where
 * a reply arrived.  -ECONNRESET / -ETIMEDOUT when the connection fails. */
int arf_net_call(struct arf_net_conn *c, uint16_t op, const struct iovec *iov, int iovcnt,
		 struct arf_net_buf *resp);

/* arf_net_call with the frame id chosen by the caller (at or above
 * ARF_NET_ID_CALLER, unique among this connection's calls in flight): the
 * server sees the same id when the request is sent again on a new
 * connection, which is what its reply cache keys on. */
#define ARF_NET_ID_CALLER (1ull << 63)
int arf_net_call_id(struct arf_net_conn *c, uint16_t op, uint64_t id, const struct iovec *iov,
		    int iovcnt, struct arf_net_buf *resp);

/* Waits that can be given up: while fn is set for the calling thread,
 * every wait of this thread in net/ (for a reply, for the socket, for a
 * connection) longer than ARF_NET_ABORT_POLL_MS calls fn(arg) at that
 * pace, and a nonzero answer ends the wait with -ECANCELED.  A call given
 * up leaves the connection as it was (its reply, if one comes, is
 * dropped), unless it was given up half-way through sending a frame: the
 * connection is then broken.  fn NULL: waits are not given up (default).
 * The verbs transport does not look at it. */
#define ARF_NET_ABORT_POLL_MS 100
void arf_net_set_thread_abort(int (*fn)(void *arg), void *arg);

void arf_net_counters(struct arf_net_conn *c, struct arf_net_counters *out);

/*
 * Asynchronous exchanges.  A request or a batched one-sided READ is posted
 * and the caller goes on; whichever thread reads the socket next (one
 * waiting in arf_net_call, arf_net_read or arf_net_wait: there is no
 * receiver thread) files the reply and calls the pending's done.  So many
 * exchanges can be in flight on one connection without a thread each.
 *
 * The caller owns the struct arf_net_pending and keeps it (and a READ's
 * ops and destinations) untouched from the post until done has been
 * called; done is called exactly once for every post that returned 0:
 * with rc = 0 when a reply arrived (its status, aux and, for a request,
 * its body, which done's caller then owns), or rc = the connection's
 * error (-ECONNRESET, -ETIMEDOUT, ...) when it broke first.  done runs on
 * any thread, possibly inside the post itself (shm's one-sided reads are
 * plain copies, done at once) and with the connection's lock held: it
 * must be short and must not call this connection's functions.
 */
struct arf_net_pending {
	void (*done)(struct arf_net_pending *p); /* the caller's: see above */
	void *ctx;                 /* the caller's */
	int rc;                    /* outcome: 0 = replied, else the connection's error */
	int32_t status;            /* the reply's enum arf_net_status */
	uint32_t aux;              /* the reply's aux */
	struct arf_net_buf body;   /* a request's reply body (READ: empty, the bytes
				    * went to the ops' destinations) */
	/* net's own, set by the post */
	struct arf_net_read_op *reads; /* READ: where the reply's bytes go */
	size_t nreads;
	uint64_t rtotal;           /* their length together */
	uint64_t id;
	int completed;             /* atomic; the synchronous waiter's flag */
	int claimed;               /* its reply is being received straight into reads */
	int direct;                /* the READ reply's bytes went to the destinations */
	void *impl;                /* a posted READ: the transport's own waiter */
	struct arf_net_pending *next;
};

/* arf_net_call_id in two halves, so that one thread has several calls in
 * flight (a big write's pieces: the server applies one while the next
 * arrives): _send sends the request (id as arf_net_call_id's, required;
 * p the caller's until _end), _end waits for its reply and answers as
 * arf_net_call_id.  Every call sent must be ended, in any order. */
int arf_net_call_send(struct arf_net_conn *c, uint16_t op, uint64_t id, const struct iovec *iov,
		      int iovcnt, struct arf_net_pending *p);
int arf_net_call_end(struct arf_net_conn *c, struct arf_net_pending *p, struct arf_net_buf *resp);

/* Post a request (op >= ARF_NET_OP_REQUEST_BASE) made of iov: the bytes
 * are sent before this returns.  0 (done will be called), -E2BIG (over a
 * frame), -EINVAL, or the connection's error when it is already broken
 * (done will not be called). */
int arf_net_post(struct arf_net_conn *c, uint16_t op, const struct iovec *iov, int iovcnt,
		 struct arf_net_pending *p);
/* The same under a request id of the caller's (as arf_net_call_id's; 0:
 * the connection's own), which the server's reply cache knows again when
 * the request is sent once more on a new connection. */
int arf_net_post_id(struct arf_net_conn *c, uint16_t op, uint64_t id, const struct iovec *iov,
		    int iovcnt, struct arf_net_pending *p);
/* Post n one-sided reads as one round (at most ARF_NET_MAX_BATCH, whose
 * bytes fit in one frame, else -E2BIG).  A reply with status OK has put
 * the bytes in the ops' destinations.  On shm (and wherever the transport
 * has no asynchronous read) the reads are done at once and done is called
 * before this returns.  Errors as arf_net_post (-EINVAL for n = 0). */
int arf_net_post_read(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n,
		      struct arf_net_pending *p);
/* Send the bytes of a posted READ (arf_net_post_read, p) elsewhere: ops,
 * as many as were posted and of the same lengths, replace the reads'
 * destinations, as long as its reply has not begun to arrive.  1 when
 * they did, 0 when it is too late (or the transport reads at once): the
 * bytes go where they were first meant to. */
int arf_net_redirect(struct arf_net_conn *c, struct arf_net_pending *p,
		     struct arf_net_read_op *ops);
/* Does arf_net_post_read return before the reads are done (tcp), rather
 * than doing them at once (shm: a copy; rdma: waiting for the RDMA READs)? */
int arf_net_reads_async(struct arf_net_conn *c);
/* Can n reads of `bytes` bytes in all go in one round of arf_net_post_read? */
int arf_net_read_fits(size_t n, uint64_t bytes);
/* Read the connection (or wait while another thread does) until *flag is
 * non-zero, timeout_ms passes (< 0 = no limit but the connection's reply
 * timeout) or the connection breaks.  Returns 1 when *flag was seen set,
 * 0 on timeout, or the connection's error.  Call it only with something
 * in flight that will set flag: a silent socket past the connection's
 * timeout breaks it.  timeout_ms 0 is a poll: file the replies the socket
 * holds now (unless another thread is reading it) and return. */
int arf_net_wait(struct arf_net_conn *c, const int *flag, int timeout_ms);

/* ------------------------------------------------------------------ server */

struct arf_net_server;
struct arf_net_sconn; /* a server-side connection; reference counted */

struct arf_net_peer {
	const char *transport;  /* "tcp", "shm" or "rdma" */
	char addr[64];          /* numeric address ("127.0.0.1:40000", "unix"; rdma as tcp) */
	int has_cred;           /* shm: SO_PEERCRED known */
	uint32_t pid, uid, gid;
	uint32_t ngroups;       /* shm: supplementary groups from SO_PEERGROUPS (at most 16 */
	uint32_t groups[16];    /* kept; ngroups = 0 when the kernel gave none) */
	uint16_t port;          /* tcp: the client's source port (< 1024: root on its host);
				 * rdma: always 0 (an rdma_cm port proves nothing) */
	int authenticated;      /* proved the shared secret (server auth_key) */
};

struct arf_net_server_opts {
	const char *listen_addr;  /* tcp: address to bind, NULL = no tcp */
	uint16_t port;            /* tcp: 0 = pick a free port (see arf_net_server_port) */
	const char *unix_path;    /* shm: socket path, NULL = no shm */
	/* rdma (verbs): address to listen on with rdma_cm, NULL = no rdma; ""
	 * = every RDMA-capable address.  Port 0 = any free one (see
	 * arf_net_server_rdma_port).  Needs rdma-core at build time and an
	 * RDMA device (or soft-RoCE) at start, else start fails with -ENODEV
	 * / -EOPNOTSUPP and says why; without rdma_addr nothing RDMA is
	 * touched. */
	const char *rdma_addr;
	uint16_t rdma_port;
	uint32_t spin_us;         /* soft-NIC adaptive polling */
	/* After a message whose work went to another thread
	 * (arf_net_server_handed_off), the soft-NIC polls at most this long,
	 * without adapting spin_us (0: spin_us): the next message then comes
	 * after that thread's reply, and polling meanwhile takes a core from
	 * it. */
	uint32_t spin_handoff_us;
	/* Connection limits, checked at accept.  A client is a uid on the
	 * UNIX socket (SO_PEERCRED) and an address on tcp and rdma (IPv6 by
	 * its /64).  Root-evident peers (shm uid 0, tcp from a reserved port
	 * below 1024) are not counted per client and may take the last
	 * reserved_root_conns slots, which no one else can: one user holding
	 * every connection cannot lock out root.  A refused connection is
	 * closed at once (counters.conns_refused_limit). */
	uint32_t max_conns;       /* 0 = 1024 */
	uint32_t max_conns_per_client; /* 0 = no per-client limit */
	uint32_t reserved_root_conns;  /* must be below max_conns (create: -EINVAL) */
	/* Back-pressure: requests handed to on_request and not yet answered
	 * with arf_net_reply, per connection.  At either cap the server stops
	 * reading the connection, and reads on when replies bring it under:
	 * memory does not grow with what a client pipelines.  A connection
	 * always gets one request in flight, however big. */
	uint32_t max_conn_requests;      /* 0 = 64 */
	uint64_t max_conn_request_bytes; /* frame bytes, headers included; 0 = 32 MiB */
	/* Timeouts.  A ready connection with no frame received, no reply sent
	 * and nothing in flight for idle_timeout_ms is closed (clients
	 * reconnect; libarf does it transparently); 0 = never.  A frame must
	 * arrive whole within frame_timeout_ms of the previous frame or of
	 * its first byte (time the server itself spent not reading excluded),
	 * else the connection is closed and its buffer freed; 0 = 10 s. */
	uint32_t idle_timeout_ms;
	uint32_t frame_timeout_ms;
	/* When set (ARF_NET_AUTH_KEY_BYTES), every client must prove this key
	 * in a challenge-response before on_hello sees it. */
	const uint8_t *auth_key;
	void *ctx;
	/* Handshake: decide whether this peer may connect.  hello/hello_len are
	 * the client's opaque bytes.  Return 0 to accept, or a negative error
	 * (the client sees it, with msg if set).  May be NULL (accept all). */
	int (*on_hello)(void *ctx, struct arf_net_sconn *c, const struct arf_net_peer *peer,
			const void *hello, size_t hello_len, char *msg, size_t msglen);
	/* A request frame arrived (op >= REQUEST_BASE).  Runs on the soft-NIC
	 * thread: copy what is needed (or take a big body's buffer,
	 * arf_net_sconn_take_body) and return quickly; reply later with
	 * arf_net_reply.  Take a reference (arf_net_sconn_ref) to keep c. */
	void (*on_request)(void *ctx, struct arf_net_sconn *c, const struct arf_net_hdr *h,
			   const uint8_t *body, size_t len);
	/* The connection closed (after which replies to it are dropped). */
	void (*on_close)(void *ctx, struct arf_net_sconn *c);
};

int arf_net_server_create(const struct arf_net_server_opts *opts, struct arf_net_server **out,
			  char *err, size_t errlen);
/* Register a region before start.  memfd is used by shm (passed to clients),
 * -1 if none.  Returns 0, -EINVAL, -ENOSPC (too many regions).
 * When shm is served, the memfd of a region that is not WRITABLE is sealed
 * at start with F_SEAL_FUTURE_WRITE, so that no client can reopen it for
 * writing: create it with MFD_ALLOW_SEALING and map it writable before
 * arf_net_server_start (those mappings keep working; later write() calls
 * and writable mappings of it fail).  A memfd that cannot be sealed is made
 * readable by its owner only, which keeps out other users but not the
 * server's own user or root. */
int arf_net_server_add_region(struct arf_net_server *s, uint32_t id, void *base, uint64_t size,
			      int memfd, uint32_t flags);
/* Replace the info blob sent in the handshake (copied). */
int arf_net_server_set_info(struct arf_net_server *s, const void *info, size_t len);
/*
 * Views: one server, several sets of regions (arfd's volumes).  A region
 * belongs to one view (arf_net_server_add_region is view 0), and region ids
 * are unique within a view, not across them; each view has its own info
 * blob.  A connection sees one view, 0 unless its on_hello says otherwise
 * (arf_net_sconn_set_view): the handshake lists that view's regions and
 * info alone, and its one-sided operations reach that view's regions
 * alone.  rdma serves view 0 only (a connection of another view is
 * granted no rdma keys, and uses the soft-NIC).  view < ARF_NET_MAX_VIEWS.
 * A started server takes regions of views other than 0 too (a volume made
 * while it serves): set the view's info first, then its regions, and let
 * no connection into the view (on_hello) before they are all added.
 */
int arf_net_server_add_region_in(struct arf_net_server *s, uint32_t view, uint32_t id,
				 void *base, uint64_t size, int memfd, uint32_t flags);
int arf_net_server_set_view_info(struct arf_net_server *s, uint32_t view, const void *info,
				 size_t len);
/* A view (not 0) whose regions are going away (a volume removed): its shm
 * descriptors are closed and its regions and info forgotten.  The caller
 * has made sure no connection is in the view, and lets none in again; the
 * view's number is not used again. */
void arf_net_server_retire_view(struct arf_net_server *s, uint32_t view);
/* Shut down every connection in view (from any thread): each is closed as
 * a client that hung up is (on_close), and its client dials again.  The
 * embedder refuses new hellos for the view first, and waits for its
 * connections' on_close before it retires the view.  Returns how many. */
int arf_net_server_drop_view(struct arf_net_server *s, uint32_t view);
/* One view's share of the soft-NIC's one-sided reads (the counters'
 * one_sided_reads and one_sided_bytes). */
void arf_net_server_view_reads(struct arf_net_server *s, uint32_t view, uint64_t *reads,
			       uint64_t *bytes);
int arf_net_server_start(struct arf_net_server *s, char *err, size_t errlen);
uint16_t arf_net_server_port(struct arf_net_server *s); /* bound tcp port */
/* From on_request: the request's work went to another thread (the soft-NIC
 * polls spin_handoff_us after this batch of messages, not spin_us). */
void arf_net_server_handed_off(void);
uint16_t arf_net_server_rdma_port(struct arf_net_server *s); /* bound rdma port, 0 = none */
/* Can this process use the rdma transport?  1 when rdma-core was built in
 * and ibv_get_device_list finds a device; 0 otherwise, with the reason in
 * why ("no RDMA device (ibv_get_device_list: Function not implemented)",
 * "built without rdma-core").  why may be NULL. */
int arf_net_rdma_available(char *why, size_t len);
/* Stop serving, close every connection, join threads, free.  NULL ok. */
void arf_net_server_destroy(struct arf_net_server *s);

/* Reply to request `id` (thread-safe, any thread).  Dropped if c closed. */
int arf_net_reply(struct arf_net_sconn *c, uint64_t id, uint16_t op, int32_t status,
		  const struct iovec *iov, int iovcnt);
void arf_net_sconn_ref(struct arf_net_sconn *c);
void arf_net_sconn_unref(struct arf_net_sconn *c);
const struct arf_net_peer *arf_net_sconn_peer(struct arf_net_sconn *c);
/* In on_hello: hand this connection no region keys (and, on shm, no region
 * descriptors): it can make requests only.  Region keys are random per
 * connection, so a key is good on the connection that received it alone. */
void arf_net_sconn_set_grant(struct arf_net_sconn *c, int grant_keys);
/* In on_hello: the view this connection sees (see Views above): 0, or
 * -EINVAL for a view out of range. */
int arf_net_sconn_set_view(struct arf_net_sconn *c, uint32_t view);
/* Per-connection user data (set in on_hello, read in on_request).  It
 * lives as long as the connection object, which outlives its on_close
 * while requests taken from it are still being served: udata_free (may
 * be NULL) is called with it when the last reference goes. */
void arf_net_sconn_set_udata(struct arf_net_sconn *c, void *udata, void (*udata_free)(void *));
void *arf_net_sconn_udata(struct arf_net_sconn *c);
/* In on_request only, rather than copy a big body: take the receive
 * buffer that holds it (body stays where it is, in the buffer returned),
 * which the caller then owns and gives back with arf_net_sconn_body_free
 * once done with body.  Only a body of ARF_NET_OWN_MIN bytes or more that
 * fills at least half of the buffer is handed over (what a request in
 * flight holds stays within twice its bytes); NULL otherwise, or when no
 * buffer can replace it (out of memory): copy body then. */
#define ARF_NET_OWN_MIN (64u << 10)
void *arf_net_sconn_take_body(struct arf_net_sconn *c);
/* Give back a buffer from arf_net_sconn_take_body (NULL ok): c keeps the
 * last one for its next big request (its pages mapped and warm) and frees
 * the one it held.  Any thread, while c is referenced. */
void arf_net_sconn_body_free(struct arf_net_sconn *c, void *buf);
/* Has c been closed (the peer hung up, or the server dropped it)?  A
 * request taken from it before then can no longer be answered. */
int arf_net_sconn_closed(struct arf_net_sconn *c);

/* One connection as seen by arf_net_server_foreach_conn. */
struct arf_net_conn_info {
	struct arf_net_peer peer;
	int ready;                 /* handshake done */
	double connected_s;        /* seconds since accepted */
	uint64_t requests;         /* two-sided requests received */
	uint64_t one_sided_reads, one_sided_bytes, one_sided_writes;
	uint64_t refused;          /* one-sided operations refused */
	uint64_t bytes_sent, bytes_received;
};
/* Call fn for every open connection (thread-safe; fn must not call back
 * into the server). */
void arf_net_server_foreach_conn(struct arf_net_server *s,
				 void (*fn)(void *ctx, const struct arf_net_conn_info *ci), void *ctx);

/* Server counters (soft-NIC work), monotonic. */
struct arf_net_server_counters {
	uint64_t conns_accepted, conns_open, conns_refused;
	uint64_t one_sided_reads, one_sided_bytes, one_sided_writes, one_sided_refused;
	uint64_t one_sided_rounds; /* frames of one-sided operations served: round trips
				    * (a batched READ is one; shm loads never reach here) */
	uint64_t requests, bad_frames;
	uint64_t conns_refused_limit;  /* refused at accept by a connection limit (also in
					* conns_refused) */
	uint64_t conns_closed_idle;    /* closed after idle_timeout_ms */
	uint64_t conns_closed_midframe;/* closed with a frame unfinished past frame_timeout_ms */
	uint64_t preauth_oversize;     /* closed for a frame over ARF_NET_MAX_PREAUTH_FRAME before
					* the handshake (also in bad_frames) */
	uint64_t stalls;               /* times a connection stopped being read at its cap of
					* requests in flight (max_conn_requests / _bytes) */
	uint64_t conns_stalled;        /* gauge: connections not read now for that reason */
};
void arf_net_server_counters(struct arf_net_server *s, struct arf_net_server_counters *out);

#endif /* ARF_NET_H */

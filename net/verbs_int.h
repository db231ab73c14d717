/* SPDX-License-Identifier: MIT */
/*
 * net/verbs internals: the RDMA verbs transport (DESIGN §3), in two halves.
 *
 * The pure half (verbs_flow.c) needs no device and no rdma-core header, so
 * that it is unit-tested on every machine: the message header that goes in
 * every SEND buffer, frame bytes packed into fixed-size buffers, the
 * connection private data, the rkey table, credit-based flow control, the
 * completion table (one slot per posted piece of work, generation-checked
 * so a late completion can never land in a reused slot), the adaptive
 * completion wait, the planner that cuts a batch of reads into RDMA READs
 * that fit the staging buffer, the client-side region check, and the
 * connection state machine driven by rdma_cm events.
 *
 * The device half (verbs.c, verbs_client.c, verbs_server.c) is built only
 * with rdma-core (ARF_HAVE_VERBS).  Its shape: on both sides a *pump* thread
 * per RDMA connection moves the two-sided traffic (ARF frames, the same
 * struct arf_net_hdr as on tcp) between a UNIX socketpair and the queue pair
 * as SEND/RECV messages.  On the client, the other end of the socketpair is
 * the connection's fd, so handshake, shared-secret proof, pipelining and
 * reader election are client.c's, unchanged; on the server it is adopted by
 * the soft-NIC as a connection whose peer transport is "rdma", so on_hello,
 * on_request and arf_net_reply are server.c's, unchanged.  One-sided
 * operations never touch the pump: the calling thread posts RDMA READ /
 * WRITE / atomic work requests on the queue pair and polls the send
 * completion queue itself.
 *
 * Not installed; nothing outside net/ (and tests/verbs) includes it.
 */
#ifndef ARF_NET_VERBS_INT_H
#define ARF_NET_VERBS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "arf_net.h"

/* ------------------------------------------------------------ messages */

/* The header of every SEND buffer (8 bytes, little-endian on the wire). */
struct arf_net_verbs_msg {
	uint32_t len;     /* payload bytes after this header */
	uint16_t credits; /* receive buffers the sender re-posted since its last message */
	uint16_t kind;    /* enum arf_net_verbs_kind */
};
#define ARF_NET_VERBS_MSG_HDR 8u
_Static_assert(sizeof(struct arf_net_verbs_msg) == ARF_NET_VERBS_MSG_HDR, "verbs msg header");

enum arf_net_verbs_kind {
	ARF_NET_VERBS_DATA   = 1, /* payload: the next bytes of the ARF frame stream */
	ARF_NET_VERBS_CREDIT = 2, /* no payload: only gives credits back */
	ARF_NET_VERBS_RKEYS  = 3, /* payload: the rkey table (server -> client, once) */
};

/* Fill buf (cap bytes) with one message: the header and as much of src as
 * fits.  Returns the payload bytes taken from src (0 for CREDIT, or when
 * cap cannot hold the header: then nothing is written). */
size_t arf_net_verbs_pack(uint8_t *buf, size_t cap, uint16_t kind, uint16_t credits,
			  const uint8_t *src, size_t srclen);
/* Check one received message of got bytes (the buffer holds cap).  Returns
 * 0 with m and *payload filled, or ARF_EPROTO (short, length beyond what
 * arrived, unknown kind, CREDIT with payload). */
int arf_net_verbs_unpack(const uint8_t *buf, size_t got, struct arf_net_verbs_msg *m,
			 const uint8_t **payload);

/* Connection private data, in rdma_connect's and rdma_accept's parameters
 * (16 bytes: the smallest private data any transport carries is 56). */
#define ARF_NET_VERBS_MAGIC   0x56465241u /* "ARFV" */
#define ARF_NET_VERBS_VERSION 1u
#define ARF_NET_VERBS_PDATA   16u
#define ARF_NET_VERBS_MIN_BUF 256u
#define ARF_NET_VERBS_MAX_BUF (1u << 20)
#define ARF_NET_VERBS_MAX_DEPTH 4096u
struct arf_net_verbs_pdata {
	uint32_t depth;   /* receive buffers the sender of this pdata keeps posted */
	uint32_t buf_size;/* bytes per receive buffer, message header included */
	uint16_t flags;   /* none yet */
};
void arf_net_verbs_pdata_encode(const struct arf_net_verbs_pdata *p, uint8_t out[16]);
/* ARF_EVERSION for another version, ARF_EPROTO for anything else wrong
 * (len < 16, magic, depth outside [2, MAX_DEPTH], buf_size outside
 * [MIN_BUF, MAX_BUF]). */
int arf_net_verbs_pdata_decode(const void *in, size_t len, struct arf_net_verbs_pdata *p);

/* ------------------------------------------------------------ rkey table */

/* What a client may touch with one-sided verbs: the region table of the
 * handshake, completed by the RKEYS message. */
struct arf_net_verbs_rregion {
	uint32_t id, flags;
	uint64_t size;
	uint64_t key;     /* the handshake's key: a caller's explicit key must match it */
	uint64_t addr;    /* remote virtual address of byte 0 */
	uint32_t rkey;
	int has_rkey;     /* 0: the server registered no MR for it (one-sided ops go
			   * to the soft-NIC over the pump instead) */
};

struct arf_net_verbs_rkey {
	uint32_t region, rkey;
	uint64_t addr;
};
/* RKEYS payload: u32 n, n x {u32 region, u32 rkey, u64 addr}.  Returns the
 * bytes written (4 + 16 n), or 0 if cap is too small. */
size_t arf_net_verbs_rkeys_encode(const struct arf_net_verbs_rkey *k, size_t n, uint8_t *out,
				  size_t cap);
/* Returns n (<= max), or ARF_EPROTO when len is not exactly 4 + 16 n or
 * n > max. */
int arf_net_verbs_rkeys_decode(const uint8_t *in, size_t len, struct arf_net_verbs_rkey *k,
			       size_t max);

/* The region ids and flags a successful HELLO reply grants (its body: u32 n,
 * n x {u32 id, u32 flags, u64 size, u64 key}, ...).  Returns n or
 * ARF_EPROTO. */
int arf_net_verbs_hello_regions(const uint8_t *body, size_t len, uint32_t *ids, uint32_t *flags,
				size_t max);

/* The checks the soft-NIC makes, on the client, before anything is posted
 * (a remote access error would kill the queue pair, and with it every
 * operation in flight): region known, key (0 = the handshake's) matching,
 * rights, bounds (arf_range_ok); CAS/FAA also need 8 aligned bytes.
 * Returns the region or NULL. */
const struct arf_net_verbs_rregion *
arf_net_verbs_check(const struct arf_net_verbs_rregion *r, size_t n, uint32_t region,
		    uint64_t key, uint64_t off, uint64_t len, int write, int atomic);

/* ------------------------------------------------------------ credits */

/* Flow control of SEND/RECV.  A message may only be sent into a receive
 * buffer the peer has posted: tx counts them.  Each side re-posts a buffer
 * once its bytes are consumed and owes the peer that credit; owed credits
 * ride on every message, and go back alone (a CREDIT message) once half the
 * receive queue is owed.  The last credit is kept for such a message, so
 * that two peers can never both hold data and no credit.  No field is ever
 * allowed above its depth (a peer returning more than it could have is
 * malformed). */
struct arf_net_verbs_credits {
	uint32_t tx;         /* messages we may still send */
	uint32_t owed;       /* re-posted receives not yet announced to the peer */
	uint32_t depth;      /* our receive queue */
	uint32_t peer_depth; /* the peer's receive queue (tx never exceeds it) */
};
void arf_net_verbs_credits_init(struct arf_net_verbs_credits *cr, uint32_t depth,
				uint32_t peer_depth);
int arf_net_verbs_can_send_data(const struct arf_net_verbs_credits *cr);
/* A CREDIT message is due (and can be sent). */
int arf_net_verbs_credit_due(const struct arf_net_verbs_credits *cr);
/* Take the credit for one message of kind; returns the credits it carries
 * (all owed) or -EAGAIN when the rules above forbid it now. */
int arf_net_verbs_take(struct arf_net_verbs_credits *cr, uint16_t kind);
/* A message arrived carrying credits: ARF_EPROTO if that would give us more
 * than the peer's depth. */
int arf_net_verbs_returned(struct arf_net_verbs_credits *cr, uint32_t credits);
/* n receive buffers were re-posted: ARF_EPROTO if more than depth owed. */
int arf_net_verbs_reposted(struct arf_net_verbs_credits *cr, uint32_t n);

/* ------------------------------------------------------------ completions */

/* One slot per piece of posted work (a batch of READs, a WRITE, an atomic,
 * a SEND).  All work requests of a piece carry the slot's wr_id; only the
 * last is signalled, so a piece ends with one good completion or with the
 * first bad one (a work request that fails completes even unsignalled; the
 * rest are flushed).  wr_id = generation << 32 | index, and a slot's
 * generation moves on every time it is taken, so a completion that arrives
 * after its piece was given up (timeout, earlier failure) is recognised as
 * stale and ignored instead of landing in whatever uses the slot now.
 *
 *   FREE --take--> POSTED --good completion--> DONE --release--> FREE
 *                    |  \--bad completion----> FAILED --release--> FREE
 */
enum arf_net_verbs_op_state {
	ARF_NET_VERBS_OP_FREE = 0,
	ARF_NET_VERBS_OP_POSTED,  /* work requests posted, completion awaited */
	ARF_NET_VERBS_OP_DONE,    /* completed well */
	ARF_NET_VERBS_OP_FAILED,  /* completed with an error (err) */
};
struct arf_net_verbs_op {
	uint32_t gen;
	uint8_t state;        /* enum arf_net_verbs_op_state */
	uint32_t nwr;         /* send-queue slots it holds until it ends */
	int err;              /* FAILED: 0 / -errno / ARF_EKEY */
	uint32_t next_free;
};
struct arf_net_verbs_optab {
	struct arf_net_verbs_op *v;
	uint32_t n, free_head, nfree;
	uint32_t sq_depth, sq_used; /* send-queue slots: posted work requests */
	uint64_t stale;             /* completions ignored as stale */
};
/* Returns 0 or -ENOMEM.  n slots; sq_depth send-queue entries. */
int arf_net_verbs_optab_init(struct arf_net_verbs_optab *t, uint32_t n, uint32_t sq_depth);
void arf_net_verbs_optab_free(struct arf_net_verbs_optab *t);
/* Take a slot for a piece of nwr work requests: returns the wr_id, or 0 when
 * no slot or not enough send-queue room is free (wait for completions).
 * nwr == 0 or > sq_depth: 0 too (a caller bug: never postable). */
uint64_t arf_net_verbs_op_take(struct arf_net_verbs_optab *t, uint32_t nwr);
/* A completion for wr_id with a work-completion status (ARF_NET_VERBS_WC_*).
 * Returns 1 if it ended its piece (now DONE or FAILED; its send-queue slots
 * are free again), 0 if it was stale or for a piece already ended. */
int arf_net_verbs_op_complete(struct arf_net_verbs_optab *t, uint64_t wr_id, int wc_status);
/* The piece's state (FREE for a stale wr_id) and, when FAILED, *err. */
int arf_net_verbs_op_state(const struct arf_net_verbs_optab *t, uint64_t wr_id, int *err);
/* Give the slot back (its owner, after DONE/FAILED, or to abandon a POSTED
 * piece after a timeout: the connection is then dead, and its slots stay
 * counted until the queue pair is destroyed). */
void arf_net_verbs_op_release(struct arf_net_verbs_optab *t, uint64_t wr_id);

/* Work-completion statuses used here (enum ibv_wc_status; verbs.c checks
 * they match) and what they mean to a caller. */
#define ARF_NET_VERBS_WC_SUCCESS        0
#define ARF_NET_VERBS_WC_LOC_PROT_ERR   4
#define ARF_NET_VERBS_WC_WR_FLUSH_ERR   5
#define ARF_NET_VERBS_WC_REM_INV_REQ_ERR 9
#define ARF_NET_VERBS_WC_REM_ACCESS_ERR 10
#define ARF_NET_VERBS_WC_REM_OP_ERR     11
#define ARF_NET_VERBS_WC_RETRY_EXC_ERR  12
#define ARF_NET_VERBS_WC_RNR_RETRY_EXC_ERR 13
/* 0, ARF_EKEY (remote access refused), -ETIMEDOUT (retries exhausted),
 * -ECONNRESET (flushed: the queue pair is in error), -EIO otherwise. */
int arf_net_verbs_wc_err(int wc_status);

/* ------------------------------------------------------------ waiting */

/* The adaptive completion wait: poll the CQ for spin_us, then arm the
 * completion channel (ibv_req_notify_cq), poll once more (a completion may
 * have slipped in before the arming), and only then block in the channel,
 * so that an idle client sleeps instead of spinning.
 *
 *   POLL --nothing for spin_us--> ARM --poll finds nothing--> BLOCK
 *     ^-----------completion found / woken by the channel------'    */
enum arf_net_verbs_wait_act {
	ARF_NET_VERBS_POLL = 0,  /* poll the CQ (again) */
	ARF_NET_VERBS_ARM,       /* ibv_req_notify_cq, then poll */
	ARF_NET_VERBS_BLOCK,     /* sleep on the completion channel */
};
struct arf_net_verbs_wait {
	uint32_t spin_us;
	uint64_t idle_since;  /* when the last completion was seen */
	int armed;            /* notification requested since the last one */
};
void arf_net_verbs_wait_init(struct arf_net_verbs_wait *w, uint32_t spin_us, uint64_t now_us);
/* found: completions the last poll returned. */
enum arf_net_verbs_wait_act arf_net_verbs_wait_next(struct arf_net_verbs_wait *w, int found,
						     uint64_t now_us);
/* The channel woke us (the event is acknowledged): poll, not yet armed. */
void arf_net_verbs_wait_woken(struct arf_net_verbs_wait *w, uint64_t now_us);

/* ------------------------------------------------------------ read plan */

/* One RDMA READ (or WRITE) of a plan: bytes [op_off, op_off + len) of
 * ops[op] go to (or come from) the staging buffer at stage_off. */
struct arf_net_verbs_piece {
	uint32_t op;
	uint32_t len;
	uint64_t op_off;
	uint64_t stage_off;
};
struct arf_net_verbs_cursor {
	size_t op;       /* next op to plan */
	uint64_t off;    /* bytes of it already planned */
};
/* Plan the next round: as many pieces (at most max_pieces) as fit in
 * stage_cap bytes of staging, taking ops from *cur on (a read larger than
 * the staging buffer is cut across rounds; empty reads are skipped).
 * Returns the number of pieces (0 = everything is planned); *cur moves. */
size_t arf_net_verbs_plan(const uint32_t *lens, size_t n, struct arf_net_verbs_cursor *cur,
			  uint64_t stage_cap, struct arf_net_verbs_piece *pieces,
			  size_t max_pieces);

/* ------------------------------------------------------------ connection */

/* The state of one RDMA connection, moved only by arf_net_verbs_conn_next.
 * Client: IDLE -> ADDR -> ROUTE -> CONNECTING -> ESTABLISHED;
 * server: IDLE -> ACCEPTING (connect request) -> ESTABLISHED;
 * then CLOSED (either side disconnects, or the queue pair fails).  Any
 * error event, or an event the state does not expect, leads to FAILED. */
enum arf_net_verbs_cstate {
	ARF_NET_VERBS_CS_IDLE = 0,
	ARF_NET_VERBS_CS_ADDR,        /* rdma_resolve_addr in progress */
	ARF_NET_VERBS_CS_ROUTE,       /* rdma_resolve_route in progress */
	ARF_NET_VERBS_CS_CONNECTING,  /* rdma_connect sent, waiting to be accepted */
	ARF_NET_VERBS_CS_ACCEPTING,   /* server: rdma_accept sent, waiting for RTU */
	ARF_NET_VERBS_CS_ESTABLISHED, /* the pump runs */
	ARF_NET_VERBS_CS_CLOSED,      /* disconnected: only teardown is left */
	ARF_NET_VERBS_CS_FAILED,      /* setup or transport error */
};
enum arf_net_verbs_cevent {
	ARF_NET_VERBS_EV_RESOLVE = 0,   /* client: rdma_resolve_addr called */
	ARF_NET_VERBS_EV_ADDR_RESOLVED, /* -> rdma_resolve_route */
	ARF_NET_VERBS_EV_ROUTE_RESOLVED,/* -> rdma_connect */
	ARF_NET_VERBS_EV_CONNECT_REQUEST, /* server: a client asks; -> rdma_accept */
	ARF_NET_VERBS_EV_ESTABLISHED,
	ARF_NET_VERBS_EV_REJECTED,
	ARF_NET_VERBS_EV_ERROR,         /* ADDR/ROUTE/CONNECT error, UNREACHABLE */
	ARF_NET_VERBS_EV_DISCONNECTED,
	ARF_NET_VERBS_EV_DEVICE_REMOVAL,
	ARF_NET_VERBS_EV_QP_ERROR,      /* a completion in error: the QP is dead */
	ARF_NET_VERBS_EV_LOCAL_CLOSE,   /* our side hangs up (socket end closed, stop) */
	ARF_NET_VERBS_EV_OTHER,         /* anything else rdma_cm says: ignored */
};
/* Returns the new state.  *err (may be NULL) gets the error a caller waiting
 * for the connection should see when the state becomes FAILED or CLOSED
 * before ESTABLISHED: -ECONNREFUSED (rejected), -EHOSTUNREACH (resolution
 * or route), -ECONNRESET, -ENODEV (device removed), -EPROTO (an event out
 * of order); 0 otherwise. */
enum arf_net_verbs_cstate arf_net_verbs_conn_next(enum arf_net_verbs_cstate s,
						  enum arf_net_verbs_cevent e, int *err);
/* enum rdma_cm_event_type -> enum arf_net_verbs_cevent (verbs.c checks the
 * numbers). */
enum arf_net_verbs_cevent arf_net_verbs_cm_event(int rdma_cm_event_type);
const char *arf_net_verbs_cstate_name(enum arf_net_verbs_cstate s);

/* ------------------------------------------------------------ device half */

#ifdef ARF_HAVE_VERBS
extern const struct arf_net_cops arf_net_verbs_cops;

struct arf_net_verbs_server;
/* A region the verbs server may register for a connection that is granted
 * it: MRs are made per connection, on its own protection domain, when the
 * soft-NIC's HELLO reply accepts it, so an rkey is good on that queue pair
 * alone and dies with it. */
struct arf_net_verbs_sregion {
	uint32_t id, flags;
	void *base;
	uint64_t size;
};
/* Listen for RDMA connections on addr:port (port 0 = any free one).  Each
 * established connection is handed to the soft-NIC with adopt(ctx, fd,
 * peer).  Errors: -ENODEV ("no RDMA device (...)"), -EADDRNOTAVAIL,
 * -errno, with err filled. */
int arf_net_verbs_server_start(const char *addr, uint16_t port, uint32_t spin_us,
			       const struct arf_net_verbs_sregion *regions, size_t nregions,
			       int (*adopt)(void *ctx, int fd, const struct arf_net_peer *peer),
			       void *ctx, struct arf_net_verbs_server **out, char *err,
			       size_t errlen);
uint16_t arf_net_verbs_server_port(const struct arf_net_verbs_server *vs);
/* Stop listening, disconnect and tear down every connection, join. NULL ok. */
void arf_net_verbs_server_stop(struct arf_net_verbs_server *vs);
#endif

/* In server.c: take fd (a connected stream socket) as a new connection of
 * the soft-NIC with this peer; the soft-NIC thread registers it.  Returns 0
 * or -ENOMEM; fd is the server's in every case. */
int arf_net_server_adopt(void *server, int fd, const struct arf_net_peer *peer);

#endif /* ARF_NET_VERBS_INT_H */

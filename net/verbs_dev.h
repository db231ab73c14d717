/* SPDX-License-Identifier: MIT */
/*
 * net/verbs device half: one RDMA connection (an endpoint) as verbs.c,
 * verbs_client.c and verbs_server.c share it.  Built with rdma-core only.
 *
 * An endpoint owns its event channel and cm id, a protection domain of its
 * own (so MRs registered for it — the server's regions, the client's
 * staging — are usable on its queue pair alone), two completion queues each
 * with its completion channel (send: SENDs and one-sided work, polled by
 * whichever thread waits; receive: polled by the pump alone), the receive
 * and transmit buffers, and the pump thread (verbs_int.h).
 */
#ifndef ARF_NET_VERBS_DEV_H
#define ARF_NET_VERBS_DEV_H

#include <pthread.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "net_int.h"
#include "verbs_int.h"

#define VERBS_DEPTH     64u          /* receive buffers posted per side */
#define VERBS_BUF       (16u << 10)  /* bytes per receive / transmit buffer */
#define VERBS_NTX       32u          /* transmit buffers */
#define VERBS_SQ        256u         /* send-queue entries (capped by the device) */
#define VERBS_STAGES    4u           /* client staging buffers for one-sided ops */
#define VERBS_STAGE     (256u << 10) /* bytes each */
#define VERBS_PIECES    64u          /* work requests in one posted batch, at most */
#define VERBS_TXQ_HIGH  (256u << 10) /* stop reading the socket while this much waits */
#define VERBS_CM_MS     5000         /* address, route and connection setup */

struct arf_net_verbs_server;

struct arf_net_verbs_ep {
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *sch, *rch;
	struct ibv_cq *scq, *rcq;
	enum arf_net_verbs_cstate state;  /* pump (or setup) thread only; conn_next moves it */
	uint32_t depth, buf_size;         /* our receive queue */
	uint32_t peer_depth, peer_buf;    /* the peer's, from its private data */
	uint32_t sq_depth;
	uint32_t init_depth, resp_res;    /* RDMA READ/atomic in flight, both ways */
	int atomics;                      /* the device does RDMA atomics */
	uint32_t spin_us;
	int timeout_ms;

	uint8_t *rbufs, *tbufs;           /* depth x buf_size, VERBS_NTX x buf_size */
	struct ibv_mr *rmr, *tmr;

	/* the pump (its thread only, unless said otherwise) */
	int sock;                         /* our end of the socketpair, -1 = none yet */
	int stopfd;                       /* readable = stop (client: own; server: shared) */
	int stop;                         /* atomic: stop (seen also while spinning) */
	pthread_t thr;
	int thr_started;
	struct arf_net_verbs_credits cr;
	struct arf_net_rbuf rb;           /* socket -> whole frames */
	uint8_t *txq;                     /* frame bytes waiting to be SENT */
	size_t txq_off, txq_len, txq_cap;
	uint32_t rxq[VERBS_DEPTH];        /* received DATA buffers not yet written out */
	uint32_t rxq_len[VERBS_DEPTH];
	uint32_t rxq_head, rxq_n;
	size_t rx_off;                    /* bytes of the head already written */
	uint64_t txr[VERBS_NTX];          /* SENDs in flight: wr_ids, oldest first */
	uint32_t txr_head, txr_n;
	int sock_eof;                     /* the local side closed its end */
	uint8_t rkeys_msg[4 + 16 * ARF_NET_MAX_REGIONS];
	size_t rkeys_len;
	int rkeys_pending;                /* server: send RKEYS once txq has drained */
	int hello_done;                   /* server: a HELLO reply has granted (or not) */

	/* shared with the threads doing one-sided operations */
	pthread_mutex_t mtx;
	pthread_cond_t cond;
	struct arf_net_verbs_optab ot;    /* under mtx */
	int polling;                      /* a thread polls the send CQ (under mtx) */
	int dead;                         /* -errno once the connection failed (under mtx) */

	/* client */
	struct arf_net_verbs_rkey rk[ARF_NET_MAX_REGIONS]; /* from RKEYS (under mtx) */
	int nrk;                          /* -1 until RKEYS arrived (under mtx) */
	struct arf_net_verbs_rregion rr[ARF_NET_MAX_REGIONS]; /* set by attach, then read-only */
	size_t nrr;
	uint8_t *stage;                   /* VERBS_STAGES x VERBS_STAGE, registered */
	struct ibv_mr *smr;
	uint32_t stage_busy;              /* bit per staging buffer (under mtx) */
	int fd_user;                      /* the socketpair end client.c owns: the registry
					   * key between dial and attach; never closed here */

	/* server */
	struct arf_net_verbs_server *srv;
	struct ibv_mr *mrs[ARF_NET_MAX_REGIONS];
	size_t nmrs;
	struct arf_net_peer peer;
	struct arf_net_verbs_ep *next;    /* the server's list (under its lock) */
};

/* Is there an RDMA device?  0, or -ENODEV with "no RDMA device (...)". */
int arf_net_verbs_probe(char *err, size_t errlen);
struct arf_net_verbs_ep *arf_net_verbs_ep_new(uint32_t spin_us, int timeout_ms);
/* Protection domain, channels, CQs, QP and buffers on id (whose context
 * becomes ep), receives posted.  0 or -errno with err. */
int arf_net_verbs_ep_setup(struct arf_net_verbs_ep *ep, struct rdma_cm_id *id, char *err,
			   size_t errlen);
/* The connection parameters we send (pdata: 16 bytes kept by the caller). */
void arf_net_verbs_ep_param(struct arf_net_verbs_ep *ep, struct rdma_conn_param *p,
			    uint8_t pdata[ARF_NET_VERBS_PDATA]);
/* The peer's private data arrived: credits start. */
int arf_net_verbs_ep_peer(struct arf_net_verbs_ep *ep, const void *pdata, size_t len);
/* Everything, in reverse order (the pump must have ended).  NULL ok. */
void arf_net_verbs_ep_free(struct arf_net_verbs_ep *ep);
/* Wait for the next cm event on ep->ech (at most ms); the event is copied
 * to *type, *status and, for CONNECT/ESTABLISHED, its private data into
 * pd (pdlen in/out); it is acknowledged here.  0, -ETIMEDOUT, -errno. */
int arf_net_verbs_cm_wait(struct rdma_event_channel *ech, int ms, int *type, int *status,
			  struct rdma_cm_id **id, void *pd, size_t *pdlen);
/* Run the pump on ep->sock until the connection or the socket ends. */
void arf_net_verbs_pump(struct arf_net_verbs_ep *ep);
/* Post a chain of work requests (one doorbell) as one piece and wait for
 * it: the calling thread polls the send CQ adaptively.  0, or the error of
 * the piece (ARF_EKEY, -ETIMEDOUT, -ECONNRESET, -EIO). */
int arf_net_verbs_post_wait(struct arf_net_verbs_ep *ep, struct ibv_send_wr *wrs, uint32_t nwr);
/* Server (verbs_server.c): the soft-NIC's HELLO reply accepted this
 * connection; register the regions it granted on the connection's own
 * protection domain and fill ep->rkeys_msg.  A region that cannot be
 * registered (locked-memory limit) is left out: the client then reaches it
 * through the soft-NIC. */
void arf_net_verbs_grant(struct arf_net_verbs_ep *ep, const uint8_t *body, size_t len);
/* Mark the connection failed (first error wins), waking every waiter. */
void arf_net_verbs_ep_fail(struct arf_net_verbs_ep *ep, int err);

#endif /* ARF_NET_VERBS_DEV_H */

/* SPDX-License-Identifier: MIT */
/*
 * net/verbs — what both sides of the verbs transport share: the device
 * probe, an endpoint's resources (protection domain, completion channels
 * and queues, an RC queue pair, registered message buffers), the wait for
 * one-sided work, and the pump.
 *
 * The pump (one thread per connection) carries the ARF frame stream between
 * a UNIX socketpair and the queue pair.  Socket -> QP: whole frames are
 * read (arf_net_rbuf), packed into transmit buffers (several small frames
 * in one, a large one across several) and SENT when the credit rules allow
 * (verbs_flow.c).  QP -> socket: each received DATA payload is written to
 * the socket and its buffer re-posted only once written, so a slow reader
 * holds credits back and the peer stops: backpressure without a queue.  On
 * the server, the first successful HELLO reply the soft-NIC sends is the
 * moment the connection is granted: the pump registers the granted regions
 * on this connection's protection domain and sends their rkeys in an RKEYS
 * message right after the reply.
 *
 * Waiting is adaptive on every path: poll the CQ for spin_us, then arm its
 * completion channel, poll once more, and sleep in poll(2); the send CQ is
 * polled by one elected thread at a time (as client.c elects a socket
 * reader), which files every completion into the completion table and
 * wakes the others.
 *
 * Errors: a work completion in error, a cm DISCONNECTED or DEVICE_REMOVAL,
 * or a malformed message from the peer marks the endpoint dead (first error
 * wins); waiters get that error, and the pump closes its socket end so that
 * client.c and the soft-NIC see the connection end as on tcp.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "verbs_dev.h"

_Static_assert(ARF_NET_VERBS_WC_SUCCESS == IBV_WC_SUCCESS, "wc status");
_Static_assert(ARF_NET_VERBS_WC_LOC_PROT_ERR == IBV_WC_LOC_PROT_ERR, "wc status");
_Static_assert(ARF_NET_VERBS_WC_WR_FLUSH_ERR == IBV_WC_WR_FLUSH_ERR, "wc status");
_Static_assert(ARF_NET_VERBS_WC_REM_INV_REQ_ERR == IBV_WC_REM_INV_REQ_ERR, "wc status");
_Static_assert(ARF_NET_VERBS_WC_REM_ACCESS_ERR == IBV_WC_REM_ACCESS_ERR, "wc status");
_Static_assert(ARF_NET_VERBS_WC_REM_OP_ERR == IBV_WC_REM_OP_ERR, "wc status");
_Static_assert(ARF_NET_VERBS_WC_RETRY_EXC_ERR == IBV_WC_RETRY_EXC_ERR, "wc status");
_Static_assert(ARF_NET_VERBS_WC_RNR_RETRY_EXC_ERR == IBV_WC_RNR_RETRY_EXC_ERR, "wc status");
_Static_assert(RDMA_CM_EVENT_ADDR_RESOLVED == 0 && RDMA_CM_EVENT_ROUTE_RESOLVED == 2 &&
		       RDMA_CM_EVENT_CONNECT_REQUEST == 4 && RDMA_CM_EVENT_REJECTED == 8 &&
		       RDMA_CM_EVENT_ESTABLISHED == 9 && RDMA_CM_EVENT_DISCONNECTED == 10 &&
		       RDMA_CM_EVENT_DEVICE_REMOVAL == 11,
	       "rdma_cm event numbers as arf_net_verbs_cm_event expects");
_Static_assert(VERBS_BUF >= ARF_NET_VERBS_MIN_BUF && VERBS_BUF <= ARF_NET_VERBS_MAX_BUF, "buf");
_Static_assert(VERBS_BUF >= ARF_NET_VERBS_MSG_HDR + 4 + 16 * ARF_NET_MAX_REGIONS,
	       "an RKEYS message fits one buffer");
_Static_assert(VERBS_STAGES <= 32, "stage_busy is a 32-bit mask");

int arf_net_verbs_probe(char *err, size_t errlen)
{
	int n = 0;

	errno = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	if (!l) {
		/* ENOSYS: the kernel has no RDMA at all; that is "no device",
		 * not a failure of ours. */
		int e = errno ? errno : ENODEV;
		snprintf(err, errlen, "no RDMA device (ibv_get_device_list: %s)", strerror(e));
		return -ENODEV;
	}
	ibv_free_device_list(l);
	if (n <= 0) {
		snprintf(err, errlen, "no RDMA device (ibv_get_device_list found none)");
		return -ENODEV;
	}
	return 0;
}

int arf_net_rdma_available(char *why, size_t len)
{
	char buf[160];
	int rc = arf_net_verbs_probe(buf, sizeof(buf));
	if (rc) {
		if (why && len)
			snprintf(why, len, "%s", buf);
		return 0;
	}
	if (why && len)
		why[0] = 0;
	return 1;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

struct arf_net_verbs_ep *arf_net_verbs_ep_new(uint32_t spin_us, int timeout_ms)
{
	struct arf_net_verbs_ep *ep = calloc(1, sizeof(*ep));
	if (!ep)
		return NULL;
	ep->spin_us = spin_us;
	ep->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
	ep->sock = ep->stopfd = ep->fd_user = -1;
	ep->nrk = -1;
	pthread_mutex_init(&ep->mtx, NULL);
	pthread_cond_init(&ep->cond, NULL);
	return ep;
}

static void *alloc_buf(size_t len)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

static int post_recv(struct arf_net_verbs_ep *ep, uint32_t idx)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(ep->rbufs + (size_t)idx * ep->buf_size),
			       .length = ep->buf_size, .lkey = ep->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = idx, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = ibv_post_recv(ep->id->qp, &wr, &bad);
	return rc ? -rc : 0;
}

int arf_net_verbs_ep_setup(struct arf_net_verbs_ep *ep, struct rdma_cm_id *id, char *err,
			   size_t errlen)
{
	struct ibv_device_attr da;
	const char *what;
	int rc;

	ep->id = id;
	id->context = ep;
	if ((rc = ibv_query_device(id->verbs, &da))) {
		what = "query device";
		goto fail_rc;
	}
	ep->sq_depth = (uint32_t)da.max_qp_wr < VERBS_SQ ? (uint32_t)da.max_qp_wr : VERBS_SQ;
	ep->depth = (uint32_t)da.max_qp_wr < VERBS_DEPTH ? (uint32_t)da.max_qp_wr : VERBS_DEPTH;
	ep->buf_size = VERBS_BUF;
	ep->init_depth = da.max_qp_init_rd_atom < 16 ? (uint32_t)da.max_qp_init_rd_atom : 16;
	ep->resp_res = da.max_qp_rd_atom < 16 ? (uint32_t)da.max_qp_rd_atom : 16;
	ep->atomics = da.atomic_cap != IBV_ATOMIC_NONE;
	if (ep->depth < 2 || ep->sq_depth < VERBS_NTX + 2) {
		snprintf(err, errlen, "rdma: device queues too small (%d work requests)", da.max_qp_wr);
		return -ENOTSUP;
	}
	what = "allocate protection domain";
	if (!(ep->pd = ibv_alloc_pd(id->verbs)))
		goto fail_errno;
	what = "create completion channel";
	if (!(ep->sch = ibv_create_comp_channel(id->verbs)) ||
	    !(ep->rch = ibv_create_comp_channel(id->verbs)))
		goto fail_errno;
	if ((rc = -set_nonblock(ep->sch->fd)) || (rc = -set_nonblock(ep->rch->fd)))
		goto fail_rc;
	what = "create completion queue";
	if (!(ep->scq = ibv_create_cq(id->verbs, (int)ep->sq_depth, ep, ep->sch, 0)) ||
	    !(ep->rcq = ibv_create_cq(id->verbs, (int)ep->depth, ep, ep->rch, 0)))
		goto fail_errno;
	struct ibv_qp_init_attr qa = {
		.send_cq = ep->scq, .recv_cq = ep->rcq, .qp_type = IBV_QPT_RC, .sq_sig_all = 0,
		.cap = { .max_send_wr = ep->sq_depth, .max_recv_wr = ep->depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	what = "create queue pair";
	if (rdma_create_qp(id, ep->pd, &qa))
		goto fail_errno;
	what = "allocate message buffers";
	ep->rbufs = alloc_buf((size_t)ep->depth * ep->buf_size);
	ep->tbufs = alloc_buf((size_t)VERBS_NTX * ep->buf_size);
	if (!ep->rbufs || !ep->tbufs) {
		rc = ENOMEM;
		goto fail_rc;
	}
	what = "register message buffers";
	if (!(ep->rmr = ibv_reg_mr(ep->pd, ep->rbufs, (size_t)ep->depth * ep->buf_size,
				   IBV_ACCESS_LOCAL_WRITE)) ||
	    !(ep->tmr = ibv_reg_mr(ep->pd, ep->tbufs, (size_t)VERBS_NTX * ep->buf_size, 0)))
		goto fail_errno;
	if ((rc = -arf_net_verbs_optab_init(&ep->ot, ep->sq_depth, ep->sq_depth))) {
		what = "completion table";
		goto fail_rc;
	}
	for (uint32_t i = 0; i < ep->depth; i++) {
		if ((rc = -post_recv(ep, i))) {
			what = "post receive buffers";
			goto fail_rc;
		}
	}
	return 0;
fail_errno:
	rc = errno ? errno : EIO;
fail_rc:
	snprintf(err, errlen, "rdma: %s: %s%s", what, strerror(rc),
		 rc == ENOMEM || rc == EPERM ? " (is the locked-memory limit, ulimit -l, too small?)"
					     : "");
	return -rc;
}

void arf_net_verbs_ep_param(struct arf_net_verbs_ep *ep, struct rdma_conn_param *p,
			    uint8_t pdata[ARF_NET_VERBS_PDATA])
{
	struct arf_net_verbs_pdata pd = { .depth = ep->depth, .buf_size = ep->buf_size };
	arf_net_verbs_pdata_encode(&pd, pdata);
	memset(p, 0, sizeof(*p));
	p->private_data = pdata;
	p->private_data_len = ARF_NET_VERBS_PDATA;
	p->initiator_depth = (uint8_t)ep->init_depth;
	p->responder_resources = (uint8_t)ep->resp_res;
	p->retry_count = 7;
	p->rnr_retry_count = 7; /* never needed with credits; infinite, as a safety */
}

int arf_net_verbs_ep_peer(struct arf_net_verbs_ep *ep, const void *pdata, size_t len)
{
	struct arf_net_verbs_pdata p;
	int rc = arf_net_verbs_pdata_decode(pdata, len, &p);
	if (rc)
		return rc;
	ep->peer_depth = p.depth;
	ep->peer_buf = p.buf_size;
	arf_net_verbs_credits_init(&ep->cr, ep->depth, p.depth);
	return 0;
}

void arf_net_verbs_ep_free(struct arf_net_verbs_ep *ep)
{
	if (!ep)
		return;
	if (ep->id && ep->id->qp)
		rdma_destroy_qp(ep->id);
	for (size_t i = 0; i < ep->nmrs; i++)
		if (ep->mrs[i])
			ibv_dereg_mr(ep->mrs[i]);
	if (ep->smr)
		ibv_dereg_mr(ep->smr);
	if (ep->rmr)
		ibv_dereg_mr(ep->rmr);
	if (ep->tmr)
		ibv_dereg_mr(ep->tmr);
	if (ep->scq)
		ibv_destroy_cq(ep->scq);
	if (ep->rcq)
		ibv_destroy_cq(ep->rcq);
	if (ep->sch)
		ibv_destroy_comp_channel(ep->sch);
	if (ep->rch)
		ibv_destroy_comp_channel(ep->rch);
	if (ep->pd)
		ibv_dealloc_pd(ep->pd);
	if (ep->id)
		rdma_destroy_id(ep->id);
	if (ep->ech)
		rdma_destroy_event_channel(ep->ech);
	if (ep->sock >= 0)
		close(ep->sock);
	if (ep->stopfd >= 0 && !ep->srv) /* the server's stop fd is shared */
		close(ep->stopfd);
	free(ep->rbufs);
	free(ep->tbufs);
	free(ep->stage);
	free(ep->txq);
	arf_net_rbuf_free(&ep->rb);
	arf_net_verbs_optab_free(&ep->ot);
	pthread_mutex_destroy(&ep->mtx);
	pthread_cond_destroy(&ep->cond);
	free(ep);
}

int arf_net_verbs_cm_wait(struct rdma_event_channel *ech, int ms, int *type, int *status,
			  struct rdma_cm_id **id, void *pd, size_t *pdlen)
{
	struct rdma_cm_event *ev;
	struct pollfd p = { .fd = ech->fd, .events = POLLIN };

	for (;;) {
		if (rdma_get_cm_event(ech, &ev) == 0)
			break;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		int n = poll(&p, 1, ms);
		if (n == 0)
			return -ETIMEDOUT;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
	*type = ev->event;
	*status = ev->status;
	if (id)
		*id = ev->id;
	if (pd && pdlen) {
		size_t l = 0;
		if ((ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ||
		     ev->event == RDMA_CM_EVENT_ESTABLISHED) && ev->param.conn.private_data) {
			l = ev->param.conn.private_data_len;
			if (l > *pdlen)
				l = *pdlen;
			memcpy(pd, ev->param.conn.private_data, l);
		}
		*pdlen = l;
	}
	rdma_ack_cm_event(ev);
	return 0;
}

/* ------------------------------------------------------------ send CQ */

static void fail_locked(struct arf_net_verbs_ep *ep, int err)
{
	if (!ep->dead)
		ep->dead = err ? err : -ECONNRESET;
	pthread_cond_broadcast(&ep->cond);
}

void arf_net_verbs_ep_fail(struct arf_net_verbs_ep *ep, int err)
{
	pthread_mutex_lock(&ep->mtx);
	fail_locked(ep, err);
	pthread_mutex_unlock(&ep->mtx);
}

/* Poll the send CQ once and file what it holds (the caller is the elected
 * poller).  Returns the completions found. */
static int scq_drain(struct arf_net_verbs_ep *ep)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(ep->scq, 16, wc);

	if (n < 0) {
		arf_net_verbs_ep_fail(ep, -EIO);
		return 0;
	}
	if (n == 0)
		return 0;
	pthread_mutex_lock(&ep->mtx);
	for (int i = 0; i < n; i++) {
		arf_net_verbs_op_complete(&ep->ot, wc[i].wr_id, wc[i].status);
		if (wc[i].status != IBV_WC_SUCCESS) /* the QP is in error now */
			fail_locked(ep, wc[i].status == IBV_WC_RETRY_EXC_ERR ? -ETIMEDOUT
									     : -ECONNRESET);
	}
	pthread_cond_broadcast(&ep->cond);
	pthread_mutex_unlock(&ep->mtx);
	return n;
}

/* Sleep until the channel signals (the event is acknowledged) or ms pass. */
static void chan_block(struct ibv_comp_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	if (poll(&p, 1, ms) > 0 && (p.revents & POLLIN)) {
		struct ibv_cq *cq;
		void *ctx;
		if (ibv_get_cq_event(ch, &cq, &ctx) == 0)
			ibv_ack_cq_events(cq, 1);
	}
}

static int op_ended(struct arf_net_verbs_ep *ep, uint64_t wr_id)
{
	pthread_mutex_lock(&ep->mtx);
	int st = arf_net_verbs_op_state(&ep->ot, wr_id, NULL);
	int ended = ep->dead || st != ARF_NET_VERBS_OP_POSTED;
	pthread_mutex_unlock(&ep->mtx);
	return ended;
}

/* The elected poller: until wr_id ends, the connection dies or the
 * deadline passes, poll adaptively (verbs_flow.c's wait machine). */
static void scq_poll_until(struct arf_net_verbs_ep *ep, uint64_t wr_id, uint64_t deadline)
{
	struct arf_net_verbs_wait w;
	int found = 0;

	arf_net_verbs_wait_init(&w, ep->spin_us, arf_net_now_us());
	for (;;) {
		if (op_ended(ep, wr_id))
			return;
		uint64_t now = arf_net_now_us();
		if (now >= deadline)
			return;
		switch (arf_net_verbs_wait_next(&w, found, now)) {
		case ARF_NET_VERBS_POLL:
			break;
		case ARF_NET_VERBS_ARM:
			if (ibv_req_notify_cq(ep->scq, 0)) {
				arf_net_verbs_ep_fail(ep, -EIO);
				return;
			}
			break;
		case ARF_NET_VERBS_BLOCK: {
			uint64_t left_ms = (deadline - now) / 1000 + 1;
			chan_block(ep->sch, left_ms > 100 ? 100 : (int)left_ms);
			arf_net_verbs_wait_woken(&w, arf_net_now_us());
			break;
		}
		}
		found = scq_drain(ep);
	}
}

/* Wait for wr_id to end; release its slot.  Caller holds nothing. */
static int op_wait(struct arf_net_verbs_ep *ep, uint64_t wr_id, uint64_t deadline)
{
	int rc;

	pthread_mutex_lock(&ep->mtx);
	for (;;) {
		int err = 0;
		int st = arf_net_verbs_op_state(&ep->ot, wr_id, &err);
		if (st == ARF_NET_VERBS_OP_DONE) {
			rc = 0;
			break;
		}
		if (st == ARF_NET_VERBS_OP_FAILED) {
			rc = err;
			break;
		}
		if (ep->dead) {
			rc = ep->dead;
			break;
		}
		if (arf_net_now_us() >= deadline) {
			/* the piece stays posted: the connection cannot be
			 * trusted with its staging buffer any more */
			fail_locked(ep, -ETIMEDOUT);
			rc = -ETIMEDOUT;
			break;
		}
		if (ep->polling) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&ep->cond, &ep->mtx, &ts);
			continue;
		}
		ep->polling = 1;
		pthread_mutex_unlock(&ep->mtx);
		scq_poll_until(ep, wr_id, deadline);
		pthread_mutex_lock(&ep->mtx);
		ep->polling = 0;
		pthread_cond_broadcast(&ep->cond);
	}
	arf_net_verbs_op_release(&ep->ot, wr_id);
	pthread_mutex_unlock(&ep->mtx);
	return rc;
}

/* Take a completion slot with room for nwr work requests, polling the CQ
 * for room when the send queue is full.  Returns the wr_id, or 0 with *rc. */
static uint64_t op_take_wait(struct arf_net_verbs_ep *ep, uint32_t nwr, uint64_t deadline,
			     int *rc)
{
	uint64_t wr_id = 0;

	pthread_mutex_lock(&ep->mtx);
	for (;;) {
		if (ep->dead) {
			*rc = ep->dead;
			break;
		}
		if ((wr_id = arf_net_verbs_op_take(&ep->ot, nwr)))
			break;
		if (nwr > ep->ot.sq_depth) {
			*rc = -EINVAL;
			break;
		}
		if (arf_net_now_us() >= deadline) {
			*rc = -ETIMEDOUT;
			break;
		}
		if (ep->polling) {
			pthread_cond_wait(&ep->cond, &ep->mtx);
			continue;
		}
		ep->polling = 1;
		pthread_mutex_unlock(&ep->mtx);
		scq_drain(ep); /* room comes back within microseconds: spin */
		pthread_mutex_lock(&ep->mtx);
		ep->polling = 0;
		pthread_cond_broadcast(&ep->cond);
	}
	pthread_mutex_unlock(&ep->mtx);
	return wr_id;
}

int arf_net_verbs_post_wait(struct arf_net_verbs_ep *ep, struct ibv_send_wr *wrs, uint32_t nwr)
{
	uint64_t deadline = arf_net_now_us() + (uint64_t)ep->timeout_ms * 1000u;
	struct ibv_send_wr *bad = NULL, *w = wrs;
	int rc = 0;

	uint64_t wr_id = op_take_wait(ep, nwr, deadline, &rc);
	if (!wr_id)
		return rc;
	/* one doorbell; only the last is signalled (the earlier ones are
	 * complete when it is: a send queue completes in order) */
	for (uint32_t i = 0; i < nwr; i++, w = w->next) {
		w->wr_id = wr_id;
		w->send_flags = i + 1 == nwr ? IBV_SEND_SIGNALED : 0;
	}
	if ((rc = ibv_post_send(ep->id->qp, wrs, &bad))) {
		pthread_mutex_lock(&ep->mtx);
		fail_locked(ep, -EIO); /* maybe half posted: the QP cannot be trusted */
		arf_net_verbs_op_release(&ep->ot, wr_id);
		pthread_mutex_unlock(&ep->mtx);
		return -EIO;
	}
	return op_wait(ep, wr_id, deadline);
}

/* ------------------------------------------------------------ the pump */

static int txq_add(struct arf_net_verbs_ep *ep, const uint8_t *p, size_t len)
{
	if (ep->txq_off == ep->txq_len)
		ep->txq_off = ep->txq_len = 0;
	if (ep->txq_len + len > ep->txq_cap) {
		if (ep->txq_off) {
			memmove(ep->txq, ep->txq + ep->txq_off, ep->txq_len - ep->txq_off);
			ep->txq_len -= ep->txq_off;
			ep->txq_off = 0;
		}
		if (ep->txq_len + len > ep->txq_cap) {
			size_t cap = ep->txq_cap ? ep->txq_cap : 65536;
			while (cap < ep->txq_len + len)
				cap *= 2;
			uint8_t *nb = realloc(ep->txq, cap);
			if (!nb)
				return -ENOMEM;
			ep->txq = nb;
			ep->txq_cap = cap;
		}
	}
	memcpy(ep->txq + ep->txq_len, p, len);
	ep->txq_len += len;
	return 0;
}

/* Socket -> txq, whole frames.  Returns progress (> 0), 0, or < 0 to end. */
static int pump_read_socket(struct arf_net_verbs_ep *ep)
{
	int progress = 0;

	while (!ep->sock_eof && !ep->rkeys_pending && ep->txq_len - ep->txq_off < VERBS_TXQ_HIGH) {
		struct arf_net_hdr h;
		const uint8_t *body;
		int r = arf_net_rbuf_frame(&ep->rb, &h, &body);
		if (r < 0)
			return r;
		if (r == 1) {
			if (txq_add(ep, body - sizeof(h), h.len))
				return -ENOMEM;
			progress = 1;
			if (ep->srv && !ep->hello_done && h.op == ARF_NET_OP_HELLO &&
			    (h.flags & ARF_NET_F_REPLY) && h.status == ARF_NET_S_OK) {
				arf_net_verbs_grant(ep, body, h.len - sizeof(h));
				ep->hello_done = 1;
				ep->rkeys_pending = 1; /* sent after the reply; nothing else before it */
			}
			continue;
		}
		ssize_t n = arf_net_rbuf_fill(&ep->rb, ep->sock);
		if (n == -ECONNRESET) {
			ep->sock_eof = 1; /* flush what is queued, then hang up */
			return 1;
		}
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		progress = 1;
	}
	return progress;
}

/* Free transmit buffers whose SEND completed (in order). */
static int pump_reclaim(struct arf_net_verbs_ep *ep)
{
	int rc = 0;

	pthread_mutex_lock(&ep->mtx);
	int take = !ep->polling && ep->txr_n;
	if (take)
		ep->polling = 1;
	pthread_mutex_unlock(&ep->mtx);
	if (take) {
		scq_drain(ep);
		pthread_mutex_lock(&ep->mtx);
		ep->polling = 0;
		pthread_cond_broadcast(&ep->cond);
		pthread_mutex_unlock(&ep->mtx);
	}
	pthread_mutex_lock(&ep->mtx);
	while (ep->txr_n) {
		int err = 0;
		uint64_t id = ep->txr[ep->txr_head];
		int st = arf_net_verbs_op_state(&ep->ot, id, &err);
		if (st == ARF_NET_VERBS_OP_POSTED)
			break;
		if (st == ARF_NET_VERBS_OP_FAILED)
			rc = err ? err : -EIO;
		arf_net_verbs_op_release(&ep->ot, id);
		ep->txr_head = (ep->txr_head + 1) % VERBS_NTX;
		ep->txr_n--;
	}
	if (ep->dead && !rc)
		rc = ep->dead;
	pthread_mutex_unlock(&ep->mtx);
	return rc;
}

/* txq / RKEYS / owed credits -> SENDs.  Returns progress, or < 0 to end;
 * *starved when something waits for a transmit buffer. */
static int pump_send(struct arf_net_verbs_ep *ep, int *starved)
{
	int progress = 0;
	uint32_t cap = ep->buf_size < ep->peer_buf ? ep->buf_size : ep->peer_buf;

	*starved = 0;
	for (;;) {
		uint16_t kind;
		const uint8_t *src = NULL;
		size_t len = 0;
		if (ep->txq_len > ep->txq_off) {
			kind = ARF_NET_VERBS_DATA;
			src = ep->txq + ep->txq_off;
			len = ep->txq_len - ep->txq_off;
		} else if (ep->rkeys_pending) {
			kind = ARF_NET_VERBS_RKEYS;
			src = ep->rkeys_msg;
			len = ep->rkeys_len;
		} else if (arf_net_verbs_credit_due(&ep->cr)) {
			kind = ARF_NET_VERBS_CREDIT;
		} else {
			break;
		}
		if (kind != ARF_NET_VERBS_CREDIT && !arf_net_verbs_can_send_data(&ep->cr)) {
			if (!arf_net_verbs_credit_due(&ep->cr))
				break; /* wait for the peer's credits */
			kind = ARF_NET_VERBS_CREDIT;
		}
		if (ep->txr_n == VERBS_NTX) {
			*starved = 1;
			break;
		}
		pthread_mutex_lock(&ep->mtx);
		uint64_t wr_id = ep->dead ? 0 : arf_net_verbs_op_take(&ep->ot, 1);
		pthread_mutex_unlock(&ep->mtx);
		if (!wr_id) {
			*starved = 1;
			break;
		}
		uint32_t slot = (ep->txr_head + ep->txr_n) % VERBS_NTX;
		uint8_t *buf = ep->tbufs + (size_t)slot * ep->buf_size;
		int credits = arf_net_verbs_take(&ep->cr, kind);
		size_t took = arf_net_verbs_pack(buf, cap, kind, (uint16_t)credits, src, len);
		struct ibv_sge sge = { .addr = (uintptr_t)buf,
				       .length = (uint32_t)(ARF_NET_VERBS_MSG_HDR + took),
				       .lkey = ep->tmr->lkey };
		struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		ep->txr[slot] = wr_id;
		ep->txr_n++;
		if (ibv_post_send(ep->id->qp, &wr, &bad))
			return -EIO;
		if (kind == ARF_NET_VERBS_DATA)
			ep->txq_off += took;
		else if (kind == ARF_NET_VERBS_RKEYS)
			ep->rkeys_pending = 0;
		progress = 1;
	}
	return progress;
}

static int repost(struct arf_net_verbs_ep *ep, uint32_t idx)
{
	int rc = post_recv(ep, idx);
	if (!rc)
		rc = arf_net_verbs_reposted(&ep->cr, 1);
	return rc;
}

/* Receive CQ -> messages.  Returns progress, or < 0 to end. */
static int pump_recv(struct arf_net_verbs_ep *ep, int peer_gone)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(ep->rcq, 16, wc), rc;

	if (n < 0)
		return -EIO;
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			if (wc[i].status == IBV_WC_WR_FLUSH_ERR && peer_gone)
				continue; /* an empty buffer flushed by the hang-up */
			return arf_net_verbs_wc_err(wc[i].status);
		}
		uint32_t idx = (uint32_t)wc[i].wr_id;
		if (idx >= ep->depth)
			return -EIO;
		struct arf_net_verbs_msg m;
		const uint8_t *pl;
		const uint8_t *buf = ep->rbufs + (size_t)idx * ep->buf_size;
		if ((rc = arf_net_verbs_unpack(buf, wc[i].byte_len, &m, &pl)))
			return rc;
		if ((rc = arf_net_verbs_returned(&ep->cr, m.credits)))
			return rc;
		if (m.kind == ARF_NET_VERBS_DATA && m.len) {
			if (ep->rxq_n >= VERBS_DEPTH)
				return ARF_EPROTO; /* more than the buffers we posted */
			uint32_t slot = (ep->rxq_head + ep->rxq_n) % VERBS_DEPTH;
			ep->rxq[slot] = idx;
			ep->rxq_len[slot] = m.len;
			ep->rxq_n++;
			continue; /* re-posted once written out */
		}
		if (m.kind == ARF_NET_VERBS_RKEYS) {
			if (ep->srv)
				return ARF_EPROTO; /* only servers hand out keys */
			pthread_mutex_lock(&ep->mtx);
			int k = arf_net_verbs_rkeys_decode(pl, m.len, ep->rk, ARF_NET_MAX_REGIONS);
			ep->nrk = k < 0 ? 0 : k;
			pthread_cond_broadcast(&ep->cond);
			pthread_mutex_unlock(&ep->mtx);
			if (k < 0)
				return k;
		}
		if ((rc = repost(ep, idx)))
			return rc;
	}
	return n > 0;
}

/* Received payloads -> socket, in order.  Returns progress, < 0 to end;
 * *blocked when the socket takes no more now. */
static int pump_write_socket(struct arf_net_verbs_ep *ep, int *blocked)
{
	int progress = 0, rc;

	*blocked = 0;
	while (ep->rxq_n) {
		uint32_t idx = ep->rxq[ep->rxq_head], len = ep->rxq_len[ep->rxq_head];
		const uint8_t *p = ep->rbufs + (size_t)idx * ep->buf_size + ARF_NET_VERBS_MSG_HDR;
		ssize_t n = send(ep->sock, p + ep->rx_off, len - ep->rx_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				*blocked = 1;
				break;
			}
			return -errno;
		}
		progress = 1;
		ep->rx_off += (size_t)n;
		if (ep->rx_off < len)
			continue;
		ep->rx_off = 0;
		ep->rxq_head = (ep->rxq_head + 1) % VERBS_DEPTH;
		ep->rxq_n--;
		if ((rc = repost(ep, idx)))
			return rc;
	}
	return progress;
}

/* cm events on the connection's own channel.  Returns 1 when the peer hung
 * up, 0, or < 0 for a failure. */
static int pump_cm(struct arf_net_verbs_ep *ep)
{
	for (;;) {
		int type, status, err = 0;
		int rc = arf_net_verbs_cm_wait(ep->ech, 0, &type, &status, NULL, NULL, NULL);
		if (rc == -ETIMEDOUT)
			return 0;
		if (rc)
			return rc;
		ep->state = arf_net_verbs_conn_next(ep->state, arf_net_verbs_cm_event(type), &err);
		if (ep->state == ARF_NET_VERBS_CS_FAILED)
			return err ? err : -ECONNRESET;
		if (ep->state == ARF_NET_VERBS_CS_CLOSED)
			return 1;
	}
}

void arf_net_verbs_pump(struct arf_net_verbs_ep *ep)
{
	struct arf_net_verbs_wait w;
	int rc = 0, peer_gone = 0;
	uint64_t gone_since = 0;

	arf_net_verbs_wait_init(&w, ep->spin_us, arf_net_now_us());
	for (;;) {
		int progress = 0, starved = 0, blocked = 0, r;

		if (__atomic_load_n(&ep->stop, __ATOMIC_ACQUIRE))
			break;
		if ((r = pump_cm(ep)) < 0) {
			rc = r;
			break;
		}
		if (r == 1 && !peer_gone) {
			peer_gone = 1;
			gone_since = arf_net_now_us();
		}
		if ((r = pump_recv(ep, peer_gone)) < 0) {
			rc = r;
			break;
		}
		progress |= r;
		if ((r = pump_write_socket(ep, &blocked)) < 0) {
			rc = r;
			break;
		}
		progress |= r;
		if (peer_gone) {
			/* deliver what arrived before the hang-up, then end */
			if (!ep->rxq_n || arf_net_now_us() - gone_since > 2000000u)
				break;
		} else {
			if ((r = pump_reclaim(ep)) < 0) {
				rc = r;
				break;
			}
			if ((r = pump_read_socket(ep)) < 0) {
				rc = r;
				break;
			}
			progress |= r;
			if ((r = pump_send(ep, &starved)) < 0) {
				rc = r;
				break;
			}
			progress |= r;
			if (ep->sock_eof && ep->txq_len == ep->txq_off && !ep->rkeys_pending &&
			    !ep->txr_n)
				break; /* the local side is done and everything went out */
		}

		uint64_t now = arf_net_now_us();
		enum arf_net_verbs_wait_act act = arf_net_verbs_wait_next(&w, progress, now);
		if (act == ARF_NET_VERBS_POLL)
			continue;
		if (act == ARF_NET_VERBS_ARM) {
			if (ibv_req_notify_cq(ep->rcq, 0)) {
				rc = -EIO;
				break;
			}
			continue; /* poll once more before sleeping */
		}
		/* BLOCK: sleep on whatever can bring work */
		struct pollfd p[4] = {
			{ .fd = ep->rch->fd, .events = POLLIN },
			{ .fd = ep->ech->fd, .events = POLLIN },
			{ .fd = ep->stopfd, .events = POLLIN },
			{ .fd = ep->sock, .events = 0 },
		};
		if (!ep->sock_eof && !ep->rkeys_pending && !peer_gone &&
		    ep->txq_len - ep->txq_off < VERBS_TXQ_HIGH)
			p[3].events |= POLLIN;
		if (blocked)
			p[3].events |= POLLOUT;
		/* a full transmit ring or a closing socket empties within
		 * microseconds: look again soon rather than sleep */
		int ms = starved || ep->sock_eof || peer_gone ? 1 : 1000;
		int n = poll(p, 4, ms);
		if (n < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		if (p[2].revents & POLLIN)
			break; /* stop */
		if (p[0].revents & POLLIN) {
			struct ibv_cq *cq;
			void *ctx;
			if (ibv_get_cq_event(ep->rch, &cq, &ctx) == 0)
				ibv_ack_cq_events(cq, 1);
		}
		arf_net_verbs_wait_woken(&w, arf_net_now_us());
	}
	/* The end: wake every waiter, hang up, close our socket end so the
	 * other side of the socketpair sees the connection end. */
	arf_net_verbs_ep_fail(ep, rc ? rc : -ECONNRESET);
	if (ep->state == ARF_NET_VERBS_CS_ESTABLISHED)
		rdma_disconnect(ep->id);
	ep->state = arf_net_verbs_conn_next(ep->state, ARF_NET_VERBS_EV_LOCAL_CLOSE, NULL);
	if (ep->sock >= 0) {
		shutdown(ep->sock, SHUT_RDWR);
		close(ep->sock);
		ep->sock = -1;
	}
}

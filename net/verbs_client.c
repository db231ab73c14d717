/* SPDX-License-Identifier: MIT */
/*
 * net/verbs_client — the client side of the verbs transport, as a third
 * struct arf_net_cops ("rdma").
 *
 * dial resolves the server's address and route with librdmacm, sets up an
 * endpoint (verbs.c) and connects; once established, a pump thread carries
 * the frame stream between the queue pair and a socketpair, whose other end
 * dial returns: client.c then runs the handshake on it as on tcp.  The
 * server follows its successful HELLO reply with an RKEYS message; attach
 * waits for it and completes the region table with remote addresses and
 * rkeys.
 *
 * One-sided operations are posted by the calling thread: a batch of reads
 * is cut into RDMA READs into a registered staging buffer (several work
 * requests, one doorbell, the last one signalled), WRITE is RDMA WRITE from
 * staging, CAS and FAA are IBV_WR_ATOMIC_CMP_AND_SWP / _FETCH_AND_ADD.
 * Everything is checked first (region, key, rights, bounds, alignment) as
 * the soft-NIC would, because a remote access error would take the whole
 * queue pair down.  A region the server registered no MR for (its memlock
 * limit), or atomics on a device without them, go to the soft-NIC over the
 * pump instead, as tcp frames: slower, never wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "verbs_dev.h"

/* Endpoints between dial (which can only return an fd) and attach. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct arf_net_verbs_ep *reg_head;

static void reg_add(struct arf_net_verbs_ep *ep)
{
	pthread_mutex_lock(&reg_lock);
	ep->next = reg_head;
	reg_head = ep;
	pthread_mutex_unlock(&reg_lock);
}

static struct arf_net_verbs_ep *reg_take(int fd)
{
	pthread_mutex_lock(&reg_lock);
	struct arf_net_verbs_ep **pp = &reg_head, *ep = NULL;
	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->fd_user == fd) {
			ep = *pp;
			*pp = ep->next;
			ep->next = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return ep;
}

static void *client_pump_main(void *arg)
{
	arf_net_verbs_pump(arg);
	return NULL;
}

/* Resolve, set up, connect: the state machine of verbs_flow.c driven by the
 * cm events of our own channel.  0 with ep established, or -errno + err. */
static int connect_ep(struct arf_net_verbs_ep *ep, const struct arf_net_client_opts *o,
		      const char *port, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	uint8_t pdata[ARF_NET_VERBS_PDATA];
	int rc, e;

	int g = getaddrinfo(o->host, port, &hints, &res);
	if (g) {
		snprintf(err, errlen, "rdma: %s: %s", o->host, gai_strerror(g));
		return -EHOSTUNREACH;
	}
	rc = -EHOSTUNREACH;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		if (rdma_resolve_addr(ep->id, NULL, a->ai_addr, VERBS_CM_MS) == 0) {
			rc = 0;
			break;
		}
		rc = -errno;
	}
	freeaddrinfo(res);
	if (rc) {
		snprintf(err, errlen, "rdma: resolve %s: %s", o->host, strerror(-rc));
		return rc;
	}
	ep->state = arf_net_verbs_conn_next(ep->state, ARF_NET_VERBS_EV_RESOLVE, NULL);

	uint64_t deadline = arf_net_now_us() + (uint64_t)ep->timeout_ms * 1000u;
	while (ep->state != ARF_NET_VERBS_CS_ESTABLISHED) {
		int type, status;
		uint8_t pd[64];
		size_t pdlen = sizeof(pd);
		uint64_t now = arf_net_now_us();
		if (now >= deadline) {
			snprintf(err, errlen, "rdma: connect to %s:%s: timed out (%s)", o->host, port,
				 arf_net_verbs_cstate_name(ep->state));
			return -ETIMEDOUT;
		}
		rc = arf_net_verbs_cm_wait(ep->ech, (int)((deadline - now) / 1000u) + 1, &type,
					   &status, NULL, pd, &pdlen);
		if (rc == -ETIMEDOUT)
			continue;
		if (rc) {
			snprintf(err, errlen, "rdma: cm event: %s", strerror(-rc));
			return rc;
		}
		enum arf_net_verbs_cstate was = ep->state;
		ep->state = arf_net_verbs_conn_next(was, arf_net_verbs_cm_event(type), &e);
		if (ep->state == ARF_NET_VERBS_CS_FAILED || ep->state == ARF_NET_VERBS_CS_CLOSED) {
			snprintf(err, errlen, "rdma: connect to %s:%s: %s while %s (%s, status %d)",
				 o->host, port, strerror(e ? -e : ECONNRESET),
				 arf_net_verbs_cstate_name(was), rdma_event_str(type), status);
			return e ? e : -ECONNRESET;
		}
		if (ep->state == was)
			continue;
		switch (ep->state) {
		case ARF_NET_VERBS_CS_ROUTE:
			if (rdma_resolve_route(ep->id, VERBS_CM_MS)) {
				rc = -errno;
				snprintf(err, errlen, "rdma: resolve route to %s: %s", o->host,
					 strerror(-rc));
				return rc;
			}
			break;
		case ARF_NET_VERBS_CS_CONNECTING: {
			struct rdma_conn_param cp;
			if ((rc = arf_net_verbs_ep_setup(ep, ep->id, err, errlen)))
				return rc;
			arf_net_verbs_ep_param(ep, &cp, pdata);
			if (rdma_connect(ep->id, &cp)) {
				rc = -errno;
				snprintf(err, errlen, "rdma: connect to %s:%s: %s", o->host, port,
					 strerror(-rc));
				return rc;
			}
			break;
		}
		case ARF_NET_VERBS_CS_ESTABLISHED:
			if ((rc = arf_net_verbs_ep_peer(ep, pd, pdlen))) {
				snprintf(err, errlen, "rdma: %s:%s is not an arfd verbs endpoint "
					 "(connection parameters refused)", o->host, port);
				return rc;
			}
			break;
		default:
			break;
		}
	}
	return 0;
}

static int verbs_dial(const struct arf_net_client_opts *o, char *err, size_t errlen)
{
	struct arf_net_verbs_ep *ep = NULL;
	char port[8];
	int sv[2] = { -1, -1 }, rc;

	if ((rc = arf_net_verbs_probe(err, errlen)))
		return rc;
	if (!o->host || !o->host[0]) {
		snprintf(err, errlen, "rdma: no host given");
		return -EINVAL;
	}
	snprintf(port, sizeof(port), "%u", o->port ? o->port : ARF_NET_DEFAULT_RDMA_PORT);
	ep = arf_net_verbs_ep_new(o->spin_us, (int)o->timeout_ms);
	if (!ep) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!(ep->ech = rdma_create_event_channel()) ||
	    fcntl(ep->ech->fd, F_SETFL, fcntl(ep->ech->fd, F_GETFL) | O_NONBLOCK) < 0 ||
	    rdma_create_id(ep->ech, &ep->id, ep, RDMA_PS_TCP)) {
		rc = -errno;
		snprintf(err, errlen, "rdma: event channel: %s", strerror(-rc));
		goto fail;
	}
	if ((rc = connect_ep(ep, o, port, err, errlen)))
		goto fail;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0 ||
	    (ep->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "rdma: socketpair: %s", strerror(-rc));
		goto fail;
	}
	ep->sock = sv[0];
	ep->fd_user = sv[1];
	if ((rc = -pthread_create(&ep->thr, NULL, client_pump_main, ep))) {
		ep->sock = -1;
		snprintf(err, errlen, "rdma: pump thread: %s", strerror(-rc));
		goto fail;
	}
	ep->thr_started = 1;
	reg_add(ep);
	return sv[1];
fail:
	if (ep && ep->state == ARF_NET_VERBS_CS_ESTABLISHED)
		rdma_disconnect(ep->id);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	ep->sock = -1;
	arf_net_verbs_ep_free(ep);
	return rc;
}

static int verbs_attach(struct arf_net_conn *c, const int *fds, int nfds, char *err,
			size_t errlen)
{
	struct arf_net_verbs_ep *ep = reg_take(c->fd);
	int rc = 0;

	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (!ep) {
		snprintf(err, errlen, "rdma: no endpoint for this connection");
		return -EINVAL;
	}
	c->tp = ep;
	/* The RKEYS message follows the HELLO reply: wait for it. */
	uint64_t deadline = arf_net_now_us() + (uint64_t)ep->timeout_ms * 1000u;
	pthread_mutex_lock(&ep->mtx);
	while (ep->nrk < 0 && !ep->dead && arf_net_now_us() < deadline) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&ep->cond, &ep->mtx, &ts);
	}
	if (ep->nrk < 0) {
		rc = ep->dead ? ep->dead : -ETIMEDOUT;
		snprintf(err, errlen, "rdma: the server sent no region keys: %s", strerror(-rc));
	}
	pthread_mutex_unlock(&ep->mtx);
	if (rc)
		return rc;
	int any = 0;
	for (size_t i = 0; i < c->nregions; i++) {
		struct arf_net_verbs_rregion *r = &ep->rr[i];
		r->id = c->regions[i].id;
		r->flags = c->regions[i].flags;
		r->size = c->regions[i].size;
		r->key = c->regions[i].key;
		for (int k = 0; k < ep->nrk; k++) {
			if (ep->rk[k].region == r->id) {
				r->rkey = ep->rk[k].rkey;
				r->addr = ep->rk[k].addr;
				r->has_rkey = 1;
				any = 1;
			}
		}
	}
	ep->nrr = c->nregions;
	if (any) {
		/* staging for one-sided work; without it everything goes to the
		 * soft-NIC, which is slower but correct */
		/* iWARP writes an RDMA READ's data into the sink like a remote
		 * write: the staging buffer must allow that there */
		int access = IBV_ACCESS_LOCAL_WRITE;
		if (ep->id->verbs->device->transport_type == IBV_TRANSPORT_IWARP)
			access |= IBV_ACCESS_REMOTE_WRITE;
		ep->stage = calloc(VERBS_STAGES, VERBS_STAGE);
		if (ep->stage)
			ep->smr = ibv_reg_mr(ep->pd, ep->stage, (size_t)VERBS_STAGES * VERBS_STAGE,
					     access);
	}
	return 0;
}

static void verbs_detach(struct arf_net_conn *c)
{
	struct arf_net_verbs_ep *ep = c->tp ? c->tp : reg_take(c->fd);
	if (!ep)
		return;
	uint64_t one = 1;
	__atomic_store_n(&ep->stop, 1, __ATOMIC_RELEASE);
	if (write(ep->stopfd, &one, sizeof(one)) < 0) { /* the flag is enough */ }
	if (ep->thr_started)
		pthread_join(ep->thr, NULL);
	arf_net_verbs_ep_free(ep);
	c->tp = NULL;
}

/* A staging buffer: index, or -errno. */
static int stage_get(struct arf_net_verbs_ep *ep)
{
	int idx = -1;
	pthread_mutex_lock(&ep->mtx);
	while (!ep->dead) {
		if (ep->stage_busy != (1u << VERBS_STAGES) - 1) {
			idx = __builtin_ctz(~ep->stage_busy);
			ep->stage_busy |= 1u << idx;
			break;
		}
		pthread_cond_wait(&ep->cond, &ep->mtx);
	}
	if (idx < 0)
		idx = ep->dead;
	pthread_mutex_unlock(&ep->mtx);
	return idx;
}

static void stage_put(struct arf_net_verbs_ep *ep, int idx)
{
	pthread_mutex_lock(&ep->mtx);
	ep->stage_busy &= ~(1u << idx);
	pthread_cond_broadcast(&ep->cond);
	pthread_mutex_unlock(&ep->mtx);
}

static int verbs_read(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n)
{
	struct arf_net_verbs_ep *ep = c->tp;
	struct arf_net_verbs_piece pieces[VERBS_PIECES];
	struct ibv_send_wr wrs[VERBS_PIECES];
	struct ibv_sge sges[VERBS_PIECES];
	struct arf_net_verbs_cursor cur = { 0, 0 };
	const struct arf_net_verbs_rregion **rr = NULL;
	uint32_t *lens = NULL;
	uint64_t total = 0, rounds = 0;
	int rc = 0, st = -1;

	for (size_t i = 0; i < n; i++) {
		const struct arf_net_verbs_rregion *r =
			arf_net_verbs_check(ep->rr, ep->nrr, ops[i].region, ops[i].key, ops[i].off,
					    ops[i].len, 0, 0);
		if (!r)
			return ARF_EKEY;
		if (!r->has_rkey || !ep->smr)
			return arf_net_tcp_cops.read(c, ops, n); /* through the soft-NIC */
	}
	rr = malloc(n * sizeof(*rr));
	lens = malloc(n * sizeof(*lens));
	if (!rr || !lens) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		rr[i] = arf_net_verbs_check(ep->rr, ep->nrr, ops[i].region, ops[i].key, ops[i].off,
					    ops[i].len, 0, 0);
		lens[i] = ops[i].len;
		total += ops[i].len;
	}
	if ((st = stage_get(ep)) < 0) {
		rc = st;
		goto out;
	}
	uint8_t *stage = ep->stage + (size_t)st * VERBS_STAGE;
	size_t maxp = ep->sq_depth / 2 < VERBS_PIECES ? ep->sq_depth / 2 : VERBS_PIECES;
	size_t np;
	while ((np = arf_net_verbs_plan(lens, n, &cur, VERBS_STAGE, pieces, maxp))) {
		for (size_t k = 0; k < np; k++) {
			const struct arf_net_verbs_piece *p = &pieces[k];
			sges[k] = (struct ibv_sge){ .addr = (uintptr_t)(stage + p->stage_off),
						    .length = p->len, .lkey = ep->smr->lkey };
			wrs[k] = (struct ibv_send_wr){ .sg_list = &sges[k], .num_sge = 1,
						       .opcode = IBV_WR_RDMA_READ,
						       .next = k + 1 < np ? &wrs[k + 1] : NULL };
			wrs[k].wr.rdma.remote_addr = rr[p->op]->addr + ops[p->op].off + p->op_off;
			wrs[k].wr.rdma.rkey = rr[p->op]->rkey;
		}
		if ((rc = arf_net_verbs_post_wait(ep, wrs, (uint32_t)np)))
			break;
		rounds++;
		for (size_t k = 0; k < np; k++)
			memcpy((uint8_t *)ops[pieces[k].op].dst + pieces[k].op_off,
			       stage + pieces[k].stage_off, pieces[k].len);
	}
	stage_put(ep, st);
	if (!rc) {
		ARF_NET_CTR(c, rounds, rounds ? rounds : 1);
		ARF_NET_CTR(c, one_sided_reads, n);
		ARF_NET_CTR(c, one_sided_bytes, total);
		ARF_NET_CTR(c, bytes_received, total);
	}
out:
	free(rr);
	free(lens);
	return rc;
}

static int verbs_rmw(struct arf_net_conn *c, uint16_t op, uint32_t region, uint64_t key,
		     uint64_t off, const void *buf, uint32_t len, uint64_t arg0, uint64_t arg1,
		     uint64_t *old)
{
	struct arf_net_verbs_ep *ep = c->tp;
	int atomic = op != ARF_NET_OP_WRITE, rc = 0, st;

	if (op != ARF_NET_OP_WRITE && op != ARF_NET_OP_CAS && op != ARF_NET_OP_FAA)
		return -EINVAL;
	const struct arf_net_verbs_rregion *r =
		arf_net_verbs_check(ep->rr, ep->nrr, region, key, off, len, 1, atomic);
	if (!r)
		return ARF_EKEY;
	if (!r->has_rkey || !ep->smr || (atomic && (!ep->atomics || (r->addr + off) % 8)))
		return arf_net_tcp_cops.rmw(c, op, region, key, off, buf, len, arg0, arg1, old);
	if ((st = stage_get(ep)) < 0)
		return st;
	uint8_t *stage = ep->stage + (size_t)st * VERBS_STAGE;
	struct ibv_sge sge = { .addr = (uintptr_t)stage, .lkey = ep->smr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1 };
	uint64_t rounds = 0;

	if (!atomic) {
		for (uint32_t done = 0; done < len;) {
			uint32_t k = len - done < VERBS_STAGE ? len - done : VERBS_STAGE;
			memcpy(stage, (const uint8_t *)buf + done, k);
			sge.length = k;
			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.wr.rdma.remote_addr = r->addr + off + done;
			wr.wr.rdma.rkey = r->rkey;
			wr.next = NULL;
			if ((rc = arf_net_verbs_post_wait(ep, &wr, 1)))
				break;
			rounds++;
			done += k;
		}
	} else {
		/* host byte order both ways: the responder's memory is read
		 * and written as a native 64-bit integer */
		sge.length = 8;
		wr.opcode = op == ARF_NET_OP_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP
						 : IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = r->addr + off;
		wr.wr.atomic.rkey = r->rkey;
		wr.wr.atomic.compare_add = arg0;
		wr.wr.atomic.swap = op == ARF_NET_OP_CAS ? arg1 : 0;
		if (!(rc = arf_net_verbs_post_wait(ep, &wr, 1))) {
			rounds++;
			if (old)
				memcpy(old, stage, 8);
		}
	}
	stage_put(ep, st);
	if (!rc) {
		ARF_NET_CTR(c, rounds, rounds ? rounds : 1);
		ARF_NET_CTR(c, one_sided_writes, 1);
		ARF_NET_CTR(c, bytes_sent, atomic ? 8 : len);
	}
	return rc;
}

const struct arf_net_cops arf_net_verbs_cops = {
	.name = "rdma",
	.dial = verbs_dial,
	.attach = verbs_attach,
	.read = verbs_read,
	.rmw = verbs_rmw,
	.detach = verbs_detach,
};

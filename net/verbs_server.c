/* SPDX-License-Identifier: MIT */
/*
 * net/verbs_server — the server side of the verbs transport, run by
 * arf_net_server_start beside tcp and shm when an RDMA address is given.
 *
 * A listener thread owns the listening cm id.  For each connect request it
 * checks the client's connection parameters, moves the new id to an event
 * channel of its own, sets up an endpoint (verbs.c) and accepts; a pump
 * thread per connection then waits for ESTABLISHED, hands one end of a
 * socketpair to the soft-NIC as a connection whose peer transport is
 * "rdma" (so the handshake, on_hello, requests and replies are server.c's),
 * and pumps until either side ends.  No region is registered for a
 * connection until the soft-NIC's HELLO reply has accepted it
 * (arf_net_verbs_grant), and then only the regions that reply grants, on
 * the connection's own protection domain: its rkeys are good on its queue
 * pair alone and die with it.
 *
 * The peer's address is the one rdma_cm reports, in the tcp form
 * ("1.2.3.4:port"), so address-based access lists apply unchanged; its
 * port is reported as 0, so that an RDMA peer never passes for a process
 * holding a reserved port (arfd's "proven root"): it proves itself with the
 * shared secret instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "verbs_dev.h"

#define ESTABLISH_MS 10000 /* an accepted connection must complete in this */

struct arf_net_verbs_server {
	struct rdma_event_channel *ech;
	struct rdma_cm_id *lid;              /* listening */
	uint16_t port;
	uint32_t spin_us;
	struct arf_net_verbs_sregion regions[ARF_NET_MAX_REGIONS];
	size_t nregions;
	int (*adopt)(void *ctx, int fd, const struct arf_net_peer *peer);
	void *ctx;
	int stopfd;                          /* eventfd, written once at stop: stays readable */
	int stop;                            /* atomic */
	pthread_t thr;
	int thr_started;
	pthread_mutex_t lock;                /* eps, neps */
	pthread_cond_t cond;                 /* a pump ended */
	struct arf_net_verbs_ep *eps;
	unsigned neps;
};

void arf_net_verbs_grant(struct arf_net_verbs_ep *ep, const uint8_t *body, size_t len)
{
	struct arf_net_verbs_server *vs = ep->srv;
	uint32_t ids[ARF_NET_MAX_REGIONS], flags[ARF_NET_MAX_REGIONS];
	struct arf_net_verbs_rkey k[ARF_NET_MAX_REGIONS];
	size_t nk = 0;

	int n = arf_net_verbs_hello_regions(body, len, ids, flags, ARF_NET_MAX_REGIONS);
	for (int i = 0; i < n; i++) {
		for (size_t j = 0; j < vs->nregions; j++) {
			const struct arf_net_verbs_sregion *r = &vs->regions[j];
			if (r->id != ids[i])
				continue;
			/* the server's flags decide, not the reply's copy */
			int access = r->flags & ARF_NET_REGION_WRITABLE
					     ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
						       IBV_ACCESS_REMOTE_WRITE |
						       IBV_ACCESS_REMOTE_ATOMIC
					     : IBV_ACCESS_REMOTE_READ;
			struct ibv_mr *mr = ibv_reg_mr(ep->pd, r->base, r->size, access);
			if (!mr)
				break; /* left out: the client uses the soft-NIC for it */
			ep->mrs[ep->nmrs++] = mr;
			k[nk++] = (struct arf_net_verbs_rkey){ .region = r->id, .rkey = mr->rkey,
							       .addr = (uintptr_t)r->base };
			break;
		}
	}
	ep->rkeys_len = arf_net_verbs_rkeys_encode(k, nk, ep->rkeys_msg, sizeof(ep->rkeys_msg));
}

static void peer_of(struct rdma_cm_id *id, struct arf_net_peer *peer)
{
	struct sockaddr *sa = rdma_get_peer_addr(id);
	char host[INET6_ADDRSTRLEN] = "?";

	memset(peer, 0, sizeof(*peer));
	peer->transport = "rdma";
	snprintf(peer->addr, sizeof(peer->addr), "rdma");
	if (sa && sa->sa_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(peer->addr, sizeof(peer->addr), "%s:%u", host, ntohs(in->sin_port));
	} else if (sa && sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(peer->addr, sizeof(peer->addr), "[%s]:%u", host, ntohs(in6->sin6_port));
	}
	peer->port = 0; /* never "a reserved port": see the file comment */
}

static void ep_done(struct arf_net_verbs_ep *ep)
{
	struct arf_net_verbs_server *vs = ep->srv;

	pthread_mutex_lock(&vs->lock);
	for (struct arf_net_verbs_ep **pp = &vs->eps; *pp; pp = &(*pp)->next) {
		if (*pp == ep) {
			*pp = ep->next;
			break;
		}
	}
	vs->neps--;
	pthread_cond_broadcast(&vs->cond);
	pthread_mutex_unlock(&vs->lock);
	arf_net_verbs_ep_free(ep);
}

static void *server_pump_main(void *arg)
{
	struct arf_net_verbs_ep *ep = arg;
	struct arf_net_verbs_server *vs = ep->srv;
	uint64_t deadline = arf_net_now_us() + ESTABLISH_MS * 1000u;
	int sv[2];

	while (ep->state == ARF_NET_VERBS_CS_ACCEPTING) {
		int type, status;
		if (__atomic_load_n(&ep->stop, __ATOMIC_ACQUIRE) || arf_net_now_us() >= deadline)
			goto out;
		int rc = arf_net_verbs_cm_wait(ep->ech, 100, &type, &status, NULL, NULL, NULL);
		if (rc == -ETIMEDOUT)
			continue;
		if (rc)
			goto out;
		ep->state = arf_net_verbs_conn_next(ep->state, arf_net_verbs_cm_event(type), NULL);
	}
	if (ep->state != ARF_NET_VERBS_CS_ESTABLISHED)
		goto out;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		goto out;
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(sv[1], F_SETFL, O_NONBLOCK) < 0) {
		close(sv[0]);
		close(sv[1]);
		goto out;
	}
	ep->sock = sv[0];
	if (vs->adopt(vs->ctx, sv[1], &ep->peer)) /* sv[1] is the soft-NIC's now, either way */
		goto out;
	arf_net_verbs_pump(ep);
out:
	if (ep->state == ARF_NET_VERBS_CS_ESTABLISHED)
		rdma_disconnect(ep->id);
	ep_done(ep);
	return NULL;
}

/* A connect request on the listening id: set up, accept, start its pump. */
static void on_connect_request(struct arf_net_verbs_server *vs, struct rdma_cm_id *id,
			       const void *pd, size_t pdlen)
{
	struct arf_net_verbs_ep *ep = arf_net_verbs_ep_new(vs->spin_us, ESTABLISH_MS);
	char err[160];
	uint8_t pdata[ARF_NET_VERBS_PDATA];
	struct rdma_conn_param cp;
	pthread_t thr;
	pthread_attr_t at;

	if (!ep) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	ep->srv = vs;
	ep->stopfd = vs->stopfd;
	ep->state = arf_net_verbs_conn_next(ARF_NET_VERBS_CS_IDLE,
					    ARF_NET_VERBS_EV_CONNECT_REQUEST, NULL);
	ep->id = id;
	/* Its own channel, so that its pump alone sees its events.  The
	 * request was acknowledged already (migrating waits for that). */
	if (!(ep->ech = rdma_create_event_channel()) ||
	    fcntl(ep->ech->fd, F_SETFL, fcntl(ep->ech->fd, F_GETFL) | O_NONBLOCK) < 0 ||
	    rdma_migrate_id(id, ep->ech))
		goto reject;
	if (arf_net_verbs_ep_setup(ep, id, err, sizeof(err)))
		goto reject;
	if (arf_net_verbs_ep_peer(ep, pd, pdlen))
		goto reject; /* not an ARF client, or another version */
	peer_of(id, &ep->peer);
	arf_net_verbs_ep_param(ep, &cp, pdata);
	if (rdma_accept(id, &cp))
		goto reject;
	pthread_mutex_lock(&vs->lock);
	ep->next = vs->eps;
	vs->eps = ep;
	vs->neps++;
	pthread_mutex_unlock(&vs->lock);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&thr, &at, server_pump_main, ep)) {
		pthread_attr_destroy(&at);
		rdma_disconnect(id);
		ep_done(ep);
		return;
	}
	pthread_attr_destroy(&at);
	return;
reject:
	rdma_reject(id, NULL, 0);
	arf_net_verbs_ep_free(ep); /* destroys id */
}

static void *listener_main(void *arg)
{
	struct arf_net_verbs_server *vs = arg;
	struct pollfd p[2] = { { .fd = vs->ech->fd, .events = POLLIN },
			       { .fd = vs->stopfd, .events = POLLIN } };

	while (!__atomic_load_n(&vs->stop, __ATOMIC_ACQUIRE)) {
		int type, status;
		struct rdma_cm_id *id;
		uint8_t pd[256];
		size_t pdlen = sizeof(pd);
		if (poll(p, 2, 1000) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN)
			break;
		int rc = arf_net_verbs_cm_wait(vs->ech, 0, &type, &status, &id, pd, &pdlen);
		if (rc == -ETIMEDOUT)
			continue;
		if (rc)
			break;
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST)
			on_connect_request(vs, id, pd, pdlen);
		/* anything else on the listening id (device removal) leaves
		 * it as it is: the established connections see their own */
	}
	return NULL;
}

int arf_net_verbs_server_start(const char *addr, uint16_t port, uint32_t spin_us,
			       const struct arf_net_verbs_sregion *regions, size_t nregions,
			       int (*adopt)(void *ctx, int fd, const struct arf_net_peer *peer),
			       void *ctx, struct arf_net_verbs_server **out, char *err,
			       size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	struct arf_net_verbs_server *vs;
	char ps[8];
	int rc;

	*out = NULL;
	if ((rc = arf_net_verbs_probe(err, errlen)))
		return rc;
	if (nregions > ARF_NET_MAX_REGIONS)
		return -EINVAL;
	vs = calloc(1, sizeof(*vs));
	if (!vs) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(vs->regions, regions, nregions * sizeof(*regions));
	vs->nregions = nregions;
	vs->spin_us = spin_us;
	vs->adopt = adopt;
	vs->ctx = ctx;
	vs->stopfd = -1;
	pthread_mutex_init(&vs->lock, NULL);
	pthread_cond_init(&vs->cond, NULL);
	if ((vs->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    !(vs->ech = rdma_create_event_channel()) ||
	    fcntl(vs->ech->fd, F_SETFL, fcntl(vs->ech->fd, F_GETFL) | O_NONBLOCK) < 0 ||
	    rdma_create_id(vs->ech, &vs->lid, vs, RDMA_PS_TCP)) {
		rc = -errno;
		snprintf(err, errlen, "rdma: event channel: %s", strerror(-rc));
		goto fail;
	}
	snprintf(ps, sizeof(ps), "%u", port);
	int g = getaddrinfo(addr && addr[0] ? addr : NULL, ps, &hints, &res);
	if (g) {
		snprintf(err, errlen, "rdma listen address '%s': %s", addr ? addr : "", gai_strerror(g));
		rc = -EINVAL;
		goto fail;
	}
	rc = -EADDRNOTAVAIL;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		if (rdma_bind_addr(vs->lid, a->ai_addr) == 0) {
			rc = 0;
			break;
		}
		rc = -errno;
	}
	freeaddrinfo(res);
	if (!rc && rdma_listen(vs->lid, 64))
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "rdma: listen on %s:%u: %s%s", addr && addr[0] ? addr : "*",
			 port, strerror(-rc),
			 rc == -EADDRNOTAVAIL || rc == -ENODEV
				 ? " (is the address on an RDMA-capable interface?)"
				 : "");
		goto fail;
	}
	vs->port = ntohs(rdma_get_src_port(vs->lid));
	if ((rc = -pthread_create(&vs->thr, NULL, listener_main, vs))) {
		snprintf(err, errlen, "rdma: listener thread: %s", strerror(-rc));
		goto fail;
	}
	vs->thr_started = 1;
	*out = vs;
	return 0;
fail:
	arf_net_verbs_server_stop(vs);
	return rc;
}

uint16_t arf_net_verbs_server_port(const struct arf_net_verbs_server *vs)
{
	return vs ? vs->port : 0;
}

void arf_net_verbs_server_stop(struct arf_net_verbs_server *vs)
{
	if (!vs)
		return;
	uint64_t one = 1;
	__atomic_store_n(&vs->stop, 1, __ATOMIC_RELEASE);
	if (vs->stopfd >= 0 && write(vs->stopfd, &one, sizeof(one)) < 0) { /* flag is enough */ }
	if (vs->thr_started)
		pthread_join(vs->thr, NULL);
	pthread_mutex_lock(&vs->lock);
	for (struct arf_net_verbs_ep *ep = vs->eps; ep; ep = ep->next)
		__atomic_store_n(&ep->stop, 1, __ATOMIC_RELEASE);
	while (vs->neps)
		pthread_cond_wait(&vs->cond, &vs->lock);
	pthread_mutex_unlock(&vs->lock);
	if (vs->lid)
		rdma_destroy_id(vs->lid);
	if (vs->ech)
		rdma_destroy_event_channel(vs->ech);
	if (vs->stopfd >= 0)
		close(vs->stopfd);
	pthread_mutex_destroy(&vs->lock);
	pthread_cond_destroy(&vs->cond);
	free(vs);
}

/* SPDX-License-Identifier: MIT */
/*
 * net/server — the server side of tcp and shm: the soft-NIC.
 *
 * One thread owns every socket through epoll.  For a one-sided frame it
 * checks region id, key, rights and bounds (arf_range_ok) and copies bytes
 * in or out of the registered region (softnic.c): it never calls
 * filesystem code, and net/ links nothing of meta/ or ops/.  A request
 * frame goes to the embedder's on_request callback; its reply may come
 * later from any thread (arf_net_reply), written straight to the socket
 * under the connection's send lock (sconn.c).  The handshake (HELLO,
 * handshake.c) checks the protocol version, asks the embedder's on_hello,
 * and answers with the region table and the info blob; on the UNIX socket
 * the reply also carries one descriptor per region.  Connections come from
 * listen.c; what one client may hold, and the timers, are in limits.c.
 * This file holds the server's life (create, regions, start, destroy) and
 * the soft-NIC thread's loop.
 *
 * Waiting is adaptive: after any event the thread polls epoll without
 * sleeping for up to spin_us (less while such spins catch nothing:
 * common/arf_spin.h), then sleeps in epoll_wait.
 *
 * RDMA (verbs_server.c) runs beside: its connections arrive here as one end
 * of a socketpair (arf_net_server_adopt), so everything above applies to
 * them unchanged; only their one-sided operations bypass the soft-NIC.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "server_int.h"
#include "verbs_int.h"

static char tag_tcp, tag_unix, tag_ev; /* epoll data for the non-connection fds */

int arf_net_server_create(const struct arf_net_server_opts *opts, struct arf_net_server **out,
			  char *err, size_t errlen)
{
	struct arf_net_server *s;

	*out = NULL;
	if (!opts->listen_addr && !opts->unix_path && !opts->rdma_addr) {
		snprintf(err, errlen, "neither a tcp address, a UNIX socket nor an rdma address "
			 "to serve on");
		return -EINVAL;
	}
	if (opts->unix_path && strlen(opts->unix_path) >= sizeof(s->unix_path)) {
		snprintf(err, errlen, "socket path too long (%zu bytes, at most %zu)",
			 strlen(opts->unix_path), sizeof(s->unix_path) - 1);
		return -ENAMETOOLONG;
	}
	if (opts->listen_addr && strlen(opts->listen_addr) >= sizeof(s->listen_addr)) {
		snprintf(err, errlen, "listen address too long");
		return -EINVAL;
	}
	if (opts->rdma_addr && strlen(opts->rdma_addr) >= sizeof(s->rdma_addr)) {
		snprintf(err, errlen, "rdma listen address too long");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->o = *opts;
	if (opts->auth_key) {
		if (sodium_init() < 0) {
			free(s);
			snprintf(err, errlen, "libsodium failed to initialise");
			return -EIO;
		}
		memcpy(s->auth_key, opts->auth_key, sizeof(s->auth_key));
		s->has_auth = 1;
		s->o.auth_key = NULL; /* ours is the copy */
	}
	int rc = arf_net_srv_limits_init(s, err, errlen);
	if (rc) {
		free(s);
		return rc;
	}
	if (opts->unix_path)
		snprintf(s->unix_path, sizeof(s->unix_path), "%s", opts->unix_path);
	if (opts->listen_addr)
		snprintf(s->listen_addr, sizeof(s->listen_addr), "%s", opts->listen_addr);
	if (opts->rdma_addr) {
		snprintf(s->rdma_addr, sizeof(s->rdma_addr), "%s", opts->rdma_addr);
		s->has_rdma = 1;
	}
	s->o.rdma_addr = NULL; /* ours is the copy */
	s->tcp_fd = s->unix_fd = s->ep = s->evfd = s->spare_fd = -1;
	pthread_mutex_init(&s->adopt_lock, NULL);
	pthread_mutex_init(&s->resume_lock, NULL);
	pthread_mutex_init(&s->info_lock, NULL);
	pthread_mutex_init(&s->conns_lock, NULL);
	*out = s;
	return 0;
}

int arf_net_server_add_region(struct arf_net_server *s, uint32_t id, void *base, uint64_t size,
			      int memfd, uint32_t flags)
{
	return arf_net_server_add_region_in(s, 0, id, base, size, memfd, flags);
}

int arf_net_server_add_region_in(struct arf_net_server *s, uint32_t view, uint32_t id,
				 void *base, uint64_t size, int memfd, uint32_t flags)
{
	if (!base || !size || view >= ARF_NET_MAX_VIEWS || (s->started && !view))
		return -EINVAL;
	/* a started server takes regions of a new view (a volume made while
	 * it serves): the soft-NIC thread reads the table without a lock, so
	 * the region is whole, its shm descriptor made, before the count that
	 * shows it is stored; writers take info_lock among themselves */
	pthread_mutex_lock(&s->info_lock);
	size_t n = s->nregions;
	int rc = n >= ARF_NET_MAX_REGIONS ? -ENOSPC : 0;
	for (size_t i = 0; !rc && i < n; i++)
		if (s->regions[i].id == id && s->regions[i].view == view)
			rc = -EINVAL;
	if (rc) {
		pthread_mutex_unlock(&s->info_lock);
		return rc;
	}
	struct srv_region *r = &s->regions[n];
	memset(r, 0, sizeof(*r));
	r->view = view;
	r->id = id;
	r->flags = flags;
	r->base = base;
	r->size = size;
	r->memfd = memfd;
	r->passfd = -1;
	if (s->started && (rc = arf_net_srv_make_passfd(r))) {
		pthread_mutex_unlock(&s->info_lock);
		return rc;
	}
	__atomic_store_n(&s->nregions, n + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->info_lock);
	return 0;
}

void arf_net_server_retire_view(struct arf_net_server *s, uint32_t view)
{
	if (!s || !view || view >= ARF_NET_MAX_VIEWS)
		return;
	/* no connection is in the view (the embedder's promise), so nothing
	 * reads these regions but the handshake's look at their view */
	pthread_mutex_lock(&s->info_lock);
	for (size_t i = 0; i < s->nregions; i++) {
		struct srv_region *r = &s->regions[i];
		if (r->view != view)
			continue;
		if (r->passfd >= 0)
			close(r->passfd);
		r->passfd = -1;
		r->memfd = -1;
		r->base = NULL;
		r->size = 0;
	}
	free(s->info[view]);
	s->info[view] = NULL;
	s->info_len[view] = 0;
	pthread_mutex_unlock(&s->info_lock);
}

int arf_net_server_drop_view(struct arf_net_server *s, uint32_t view)
{
	int n = 0;

	if (!s || !view || view >= ARF_NET_MAX_VIEWS)
		return 0;
	/* in the list, a connection's descriptor is open (it is closed after
	 * conn_close takes it out, under this lock); the soft-NIC sees the
	 * shutdown as a hang-up and closes it there */
	pthread_mutex_lock(&s->conns_lock);
	for (struct arf_net_sconn *c = s->conns; c; c = c->next)
		if (__atomic_load_n(&c->view, __ATOMIC_ACQUIRE) == view) {
			shutdown(c->fd, SHUT_RDWR);
			n++;
		}
	pthread_mutex_unlock(&s->conns_lock);
	return n;
}

int arf_net_server_set_info(struct arf_net_server *s, const void *info, size_t len)
{
	return arf_net_server_set_view_info(s, 0, info, len);
}

void arf_net_server_view_reads(struct arf_net_server *s, uint32_t view, uint64_t *reads,
			       uint64_t *bytes)
{
	*reads = *bytes = 0;
	if (s && view < ARF_NET_MAX_VIEWS) {
		*reads = __atomic_load_n(&s->view_reads[view], __ATOMIC_RELAXED);
		*bytes = __atomic_load_n(&s->view_bytes[view], __ATOMIC_RELAXED);
	}
}

int arf_net_server_set_view_info(struct arf_net_server *s, uint32_t view, const void *info,
				 size_t len)
{
	if (view >= ARF_NET_MAX_VIEWS)
		return -EINVAL;
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, info, len);
	pthread_mutex_lock(&s->info_lock);
	free(s->info[view]);
	s->info[view] = copy;
	s->info_len[view] = len;
	pthread_mutex_unlock(&s->info_lock);
	return 0;
}

uint16_t arf_net_server_port(struct arf_net_server *s)
{
	return s->port;
}

uint16_t arf_net_server_rdma_port(struct arf_net_server *s)
{
#ifdef ARF_HAVE_VERBS
	return arf_net_verbs_server_port(s->vs);
#else
	(void)s;
	return 0;
#endif
}

void arf_net_server_foreach_conn(struct arf_net_server *s,
				 void (*fn)(void *ctx, const struct arf_net_conn_info *ci), void *ctx)
{
	uint64_t now = arf_net_now_us();

	pthread_mutex_lock(&s->conns_lock);
	for (struct arf_net_sconn *c = s->conns; c; c = c->next) {
		struct arf_net_conn_info ci;
		_Static_assert(offsetof(struct arf_net_conn_info, bytes_received) ==
				       offsetof(struct arf_net_conn_info, requests) + 6 * sizeof(uint64_t),
			       "the counters are 7 consecutive uint64_t");
		uint64_t *src = &c->ctr.requests, *dst = &ci.requests;
		for (size_t i = 0; i < 7; i++) /* requests .. bytes_received */
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
		ci.peer = c->peer;
		ci.ready = __atomic_load_n(&c->state, __ATOMIC_RELAXED) == SCONN_READY;
		ci.connected_s = (double)(now - c->accepted_us) / 1e6;
		fn(ctx, &ci);
	}
	pthread_mutex_unlock(&s->conns_lock);
}

void arf_net_server_counters(struct arf_net_server *s, struct arf_net_server_counters *out)
{
	uint64_t *src = (uint64_t *)&s->ctr, *dst = (uint64_t *)out;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

/* Set by on_request (arf_net_server_handed_off) on the soft-NIC thread. */
static __thread int handed_off;

void arf_net_server_handed_off(void)
{
	handed_off = 1;
}

static void *snic_main(void *arg)
{
	struct arf_net_server *s = arg;
	struct epoll_event evs[64];
	uint64_t last = arf_net_now_us(), last_scan = last;
	struct arf_spin spin;
	uint32_t window;
	int short_window = 0;      /* window is spin_handoff_us: not adapted */

	arf_spin_init(&spin, s->o.spin_us);
	window = arf_spin_budget(&spin);
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		int spinning = window && arf_net_now_us() - last < window;
		if (window && !spinning) { /* the spin caught nothing */
			if (!short_window)
				arf_spin_done(&spin, window, 0);
			window = 0;
		}
		/* while there are connections, their timers are looked at every
		 * second (limits.c) */
		int n = epoll_wait(s->ep, evs, 64, spinning ? 0 : s->conns ? 1000 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n > 0) {
			if (spinning && !short_window)
				arf_spin_done(&spin, window, 1);
			last = arf_net_now_us();
			window = arf_spin_budget(&spin);
			short_window = 0;
		}
		handed_off = 0;
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			if (p == &tag_ev) {
				uint64_t v;
				if (read(s->evfd, &v, sizeof(v)) < 0) { /* woken to stop */ }
				arf_net_srv_adopt_pending(s); /* or to serve an rdma connection */
				arf_net_srv_resume_pending(s); /* or to read on after a stall */
				continue;
			}
			if (p == &tag_tcp) {
				arf_net_srv_accept(s, s->tcp_fd, 0);
				continue;
			}
			if (p == &tag_unix) {
				arf_net_srv_accept(s, s->unix_fd, 1);
				continue;
			}
			struct arf_net_sconn *c = p;
			if (c->state == SCONN_CLOSED)
				continue; /* closed earlier in this batch */
			if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
				arf_net_srv_conn_close(s, c);
				continue;
			}
			if (evs[i].events & EPOLLOUT)
				arf_net_srv_conn_writable(s, c);
			arf_net_srv_conn_readable(s, c);
		}
		if (handed_off && s->o.spin_handoff_us && window > s->o.spin_handoff_us) {
			window = s->o.spin_handoff_us;
			short_window = 1;
		}
		uint64_t now = arf_net_now_us();
		if (now - last_scan >= SCAN_US) {
			last_scan = now;
			arf_net_srv_scan(s, now);
		}
		arf_net_srv_free_dead(s);
	}
	return NULL;
}

int arf_net_server_start(struct arf_net_server *s, char *err, size_t errlen)
{
	int rc;

	if (s->started) {
		snprintf(err, errlen, "server already started");
		return -EINVAL;
	}
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	s->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* best effort: see accept */
	if (s->ep < 0 || s->evfd < 0) {
		rc = -errno;
		snprintf(err, errlen, "epoll: %s", strerror(-rc));
		return rc;
	}
	if (s->unix_path[0] && (rc = arf_net_srv_make_passfds(s))) {
		snprintf(err, errlen, "region descriptors for shm: %s", strerror(-rc));
		return rc;
	}
	if (s->listen_addr[0] || s->o.listen_addr) {
		if ((rc = arf_net_srv_listen_tcp(s, err, errlen)))
			return rc;
	}
	if (s->unix_path[0] && (rc = arf_net_srv_listen_unix(s, err, errlen)))
		return rc;
	if (s->has_rdma && (rc = arf_net_srv_listen_rdma(s, err, errlen)))
		return rc;
	/* A listener epoll does not watch would never accept: fail the start. */
	struct epoll_event ev = { .events = EPOLLIN };
	ev.data.ptr = &tag_ev;
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, s->evfd, &ev) < 0)
		goto epoll_fail;
	if (s->tcp_fd >= 0) {
		ev.data.ptr = &tag_tcp;
		if (epoll_ctl(s->ep, EPOLL_CTL_ADD, s->tcp_fd, &ev) < 0)
			goto epoll_fail;
	}
	if (s->unix_fd >= 0) {
		ev.data.ptr = &tag_unix;
		if (epoll_ctl(s->ep, EPOLL_CTL_ADD, s->unix_fd, &ev) < 0)
			goto epoll_fail;
	}
	if ((rc = -pthread_create(&s->thr, NULL, snic_main, s))) {
		snprintf(err, errlen, "soft-NIC thread: %s", strerror(-rc));
		return rc;
	}
	s->started = 1;
	return 0;
epoll_fail:
	rc = -errno;
	snprintf(err, errlen, "epoll: watch the listeners: %s", strerror(-rc));
	return rc;
}

void arf_net_server_destroy(struct arf_net_server *s)
{
	if (!s)
		return;
#ifdef ARF_HAVE_VERBS
	/* first, while the soft-NIC still runs: its pumps may be adopting */
	arf_net_verbs_server_stop(s->vs);
	s->vs = NULL;
#endif
	if (s->started) {
		uint64_t one = 1;
		__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
		if (write(s->evfd, &one, sizeof(one)) < 0) { /* the thread also sees stop */ }
		pthread_join(s->thr, NULL);
	}
	while (s->conns)
		arf_net_srv_conn_close(s, s->conns);
	while (s->resumeq) { /* the soft-NIC has stopped: nothing to read on */
		struct arf_net_sconn *c = s->resumeq;
		s->resumeq = c->resume_next;
		arf_net_sconn_unref(c);
	}
	arf_net_srv_free_dead(s);
	if (s->tcp_fd >= 0)
		close(s->tcp_fd);
	if (s->unix_fd >= 0) {
		close(s->unix_fd);
		unlink(s->unix_path);
	}
	if (s->ep >= 0)
		close(s->ep);
	if (s->evfd >= 0)
		close(s->evfd);
	if (s->spare_fd >= 0)
		close(s->spare_fd);
	for (size_t i = 0; i < s->nregions; i++)
		if (s->regions[i].passfd >= 0)
			close(s->regions[i].passfd);
	while (s->adoptq) { /* handed over but never served */
		struct adopted *a = s->adoptq;
		s->adoptq = a->next;
		close(a->fd);
		free(a);
	}
	pthread_mutex_destroy(&s->adopt_lock);
	pthread_mutex_destroy(&s->resume_lock);
	pthread_mutex_destroy(&s->info_lock);
	pthread_mutex_destroy(&s->conns_lock);
	for (size_t v = 0; v < ARF_NET_MAX_VIEWS; v++)
		free(s->info[v]);
	free(s->out);
	free(s);
}

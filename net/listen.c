/* SPDX-License-Identifier: MIT */
/*
 * net/listen — where connections come from: the tcp and UNIX listeners,
 * accept (with the peer's address, or its kernel-given credentials on the
 * UNIX socket), the region descriptors shm clients receive, and the rdma
 * listener, whose connections arrive as one end of a socketpair
 * (arf_net_server_adopt) and are served by the soft-NIC like the others.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "server_int.h"
#include "verbs_int.h"

void arf_net_srv_accept(struct arf_net_server *s, int lfd, int is_unix)
{
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	int fd = accept4(lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE) && s->spare_fd >= 0) {
		/* Out of descriptors: the connection would stay queued and the
		 * listener readable, waking this thread for ever.  Give up the
		 * spare descriptor to take the connection and close it: refused,
		 * as a limit refuses, and the client may try again. */
		close(s->spare_fd);
		fd = accept4(lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC);
		if (fd >= 0)
			close(fd);
		s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		__atomic_add_fetch(&s->ctr.conns_refused, 1, __ATOMIC_RELAXED);
		return;
	}
	if (fd < 0)
		return;
	struct arf_net_sconn *c = arf_net_srv_conn_alloc(s, fd, is_unix);
	if (!c)
		return;
	if (is_unix) {
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		c->peer.transport = "shm";
		snprintf(c->peer.addr, sizeof(c->peer.addr), "unix");
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0) {
			c->peer.has_cred = 1;
			c->peer.pid = (uint32_t)cr.pid;
			c->peer.uid = cr.uid;
			c->peer.gid = cr.gid;
			snprintf(c->peer.addr, sizeof(c->peer.addr), "unix:pid=%d", (int)cr.pid);
			/* the groups as the kernel has them for the socket, not
			 * /proc/PID (which races with the pid's reuse) */
			gid_t g[256];
			socklen_t gl = sizeof(g);
			if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &gl) == 0)
				for (size_t i = 0; i < gl / sizeof(g[0]) && c->peer.ngroups < 16; i++)
					c->peer.groups[c->peer.ngroups++] = (uint32_t)g[i];
		}
	} else {
		int one = 1;
		char host[INET6_ADDRSTRLEN] = "?";
		unsigned port = 0;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->peer.transport = "tcp";
		if (sa.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&sa;
			inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
			port = ntohs(in->sin_port);
			snprintf(c->peer.addr, sizeof(c->peer.addr), "%s:%u", host, port);
			c->peer.port = (uint16_t)port;
		} else if (sa.ss_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;
			inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
			port = ntohs(in6->sin6_port);
			snprintf(c->peer.addr, sizeof(c->peer.addr), "[%s]:%u", host, port);
			c->peer.port = (uint16_t)port;
		}
	}
	arf_net_srv_conn_register(s, c);
}

int arf_net_server_adopt(void *server, int fd, const struct arf_net_peer *peer)
{
	struct arf_net_server *s = server;
	struct adopted *a = malloc(sizeof(*a));
	uint64_t one = 1;

	if (!a) {
		close(fd);
		return -ENOMEM;
	}
	a->fd = fd;
	a->peer = *peer;
	pthread_mutex_lock(&s->adopt_lock);
	a->next = s->adoptq;
	s->adoptq = a;
	pthread_mutex_unlock(&s->adopt_lock);
	if (write(s->evfd, &one, sizeof(one)) < 0) { /* the counter is readable already */ }
	return 0;
}

void arf_net_srv_adopt_pending(struct arf_net_server *s)
{
	pthread_mutex_lock(&s->adopt_lock);
	struct adopted *a = s->adoptq;
	s->adoptq = NULL;
	pthread_mutex_unlock(&s->adopt_lock);
	while (a) {
		struct adopted *next = a->next;
		struct arf_net_sconn *c = arf_net_srv_conn_alloc(s, a->fd, 0);
		if (c) {
			c->peer = a->peer;
			arf_net_srv_conn_register(s, c);
		}
		free(a);
		a = next;
	}
}

int arf_net_srv_listen_tcp(struct arf_net_server *s, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	char port[8];
	int rc = -EADDRNOTAVAIL, one = 1;

	snprintf(port, sizeof(port), "%u", s->o.port);
	int g = getaddrinfo(s->listen_addr[0] ? s->listen_addr : NULL, port, &hints, &res);
	if (g) {
		snprintf(err, errlen, "listen address '%s': %s", s->listen_addr, gai_strerror(g));
		return -EINVAL;
	}
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, 128) < 0) {
			rc = -errno;
			close(fd);
			continue;
		}
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		getsockname(fd, (struct sockaddr *)&sa, &sl);
		s->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
							 : ((struct sockaddr_in *)&sa)->sin_port);
		s->tcp_fd = fd;
		rc = 0;
		break;
	}
	freeaddrinfo(res);
	if (rc)
		snprintf(err, errlen, "listen on %s:%u: %s", s->listen_addr, s->o.port, strerror(-rc));
	return rc;
}

int arf_net_srv_listen_unix(struct arf_net_server *s, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	memcpy(sa.sun_path, s->unix_path, strlen(s->unix_path) + 1);
	/* A socket file left by a server that died is removed; one that
	 * answers belongs to a live server and is left alone. */
	struct stat st;
	if (lstat(s->unix_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "socket path %s exists and is not a socket", s->unix_path);
			return -EEXIST;
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(fd);
			snprintf(err, errlen, "socket %s is in use by a running server", s->unix_path);
			return -EADDRINUSE;
		}
		if (fd >= 0)
			close(fd);
		unlink(s->unix_path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "socket %s: %s", s->unix_path, strerror(e));
		return -e;
	}
	s->unix_fd = fd;
	return 0;
}

/* A read-only region's memfd, before any client gets it.  A read-only
 * descriptor alone is not enough: a memfd's inode is mode 0777, so a client
 * holding one can open /proc/self/fd/N for writing and map the pages
 * writable.  F_SEAL_FUTURE_WRITE refuses every later write() and writable
 * shared mapping of the inode, whoever asks, while the embedder's own
 * mappings, made before start, keep writing.  A memfd created without
 * MFD_ALLOW_SEALING cannot be sealed; then at least other users are kept
 * from reopening it for writing (owner read only: the open below needs it),
 * and the embedder should create it sealable. */
static void protect_readonly(struct srv_region *r)
{
	if (fcntl(r->memfd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == 0)
		return;
	if (errno == EPERM) /* a memfd that forbids sealing */
		(void)fchmod(r->memfd, S_IRUSR);
	/* EINVAL: not a memfd (a file of its own, with its own permissions) */
}

/* Descriptors shm clients receive: read-only regions get a new, read-only
 * open of the memfd, sealed against writes (protect_readonly), so that a
 * client cannot map them writable. */
int arf_net_srv_make_passfd(struct srv_region *r)
{
	if (r->memfd < 0)
		return 0;
	if (!(r->flags & ARF_NET_REGION_WRITABLE))
		protect_readonly(r);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", r->memfd);
	int mode = r->flags & ARF_NET_REGION_WRITABLE ? O_RDWR : O_RDONLY;
	r->passfd = open(path, mode | O_CLOEXEC);
	return r->passfd < 0 ? -errno : 0;
}

int arf_net_srv_make_passfds(struct arf_net_server *s)
{
	for (size_t i = 0; i < s->nregions; i++) {
		int rc = arf_net_srv_make_passfd(&s->regions[i]);
		if (rc)
			return rc;
	}
	return 0;
}

/* rdma beside tcp and shm: its connections come back through
 * arf_net_server_adopt (queued until the soft-NIC thread runs). */
int arf_net_srv_listen_rdma(struct arf_net_server *s, char *err, size_t errlen)
{
#ifdef ARF_HAVE_VERBS
	/* view 0's regions only (arf_net.h's Views): the pump grants by id */
	struct arf_net_verbs_sregion r[ARF_NET_MAX_REGIONS];
	size_t n = 0;
	for (size_t i = 0; i < s->nregions; i++)
		if (!s->regions[i].view)
			r[n++] = (struct arf_net_verbs_sregion){ .id = s->regions[i].id,
								 .flags = s->regions[i].flags,
								 .base = s->regions[i].base,
								 .size = s->regions[i].size };
	return arf_net_verbs_server_start(s->rdma_addr, s->o.rdma_port, s->o.spin_us, r, n,
					  arf_net_server_adopt, s, &s->vs, err, errlen);
#else
	(void)s;
	snprintf(err, errlen, "rdma: built without rdma-core (libibverbs-dev, librdmacm-dev)");
	return -EOPNOTSUPP;
#endif
}

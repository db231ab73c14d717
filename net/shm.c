/* SPDX-License-Identifier: MIT */
/*
 * net/shm — the client side of the shm transport, for clients on the
 * server's host.  The handshake on the UNIX socket brings one memory file
 * descriptor per region; read-only regions arrive as descriptors opened
 * read-only, of a memfd the server sealed against writes, so the client
 * cannot map them writable even if it tried (not even by reopening the
 * descriptor through /proc).  A one-sided READ is then a plain copy out of
 * the mapping, and WRITE, CAS and FAA are atomic instructions on a writable
 * mapping: the server does no work at all.  Requests still travel on the
 * socket.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "net_int.h"

static int shm_dial(const struct arf_net_client_opts *o, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (!o->sock_path || !o->sock_path[0] || strlen(o->sock_path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "shm: missing or overlong socket path");
		return -EINVAL;
	}
	memcpy(sa.sun_path, o->sock_path, strlen(o->sock_path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "shm: socket: %s", strerror(e));
		return -e;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		snprintf(err, errlen, "shm: connect to %s: %s", o->sock_path, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

static int shm_attach(struct arf_net_conn *c, const int *fds, int nfds, char *err, size_t errlen)
{
	int rc = 0;

	if ((size_t)nfds != c->nregions) {
		snprintf(err, errlen, "shm: the server passed %d region descriptors for %zu regions",
			 nfds, c->nregions);
		rc = ARF_EPROTO;
		goto out;
	}
	for (size_t i = 0; i < c->nregions; i++) {
		int prot = PROT_READ | (c->regions[i].flags & ARF_NET_REGION_WRITABLE ? PROT_WRITE : 0);
		void *p = mmap(NULL, c->regions[i].size, prot, MAP_SHARED, fds[i], 0);
		if (p == MAP_FAILED) {
			rc = -errno;
			snprintf(err, errlen, "shm: map region %u (%llu bytes): %s", c->regions[i].id,
				 (unsigned long long)c->regions[i].size, strerror(-rc));
			goto out;
		}
		c->maps[i].base = p;
		c->maps[i].size = c->regions[i].size;
	}
out:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return rc;
}

static void shm_detach(struct arf_net_conn *c)
{
	for (size_t i = 0; i < c->nregions; i++)
		if (c->maps[i].base)
			munmap(c->maps[i].base, c->maps[i].size);
}

/* The same checks the soft-NIC makes: region, key, rights, bounds. */
static uint8_t *shm_check(struct arf_net_conn *c, uint32_t region, uint64_t key, uint64_t off,
			  uint64_t len, int write)
{
	for (size_t i = 0; i < c->nregions; i++) {
		const struct arf_net_region_info *r = &c->regions[i];
		if (r->id != region)
			continue;
		if ((key && key != r->key) || !c->maps[i].base)
			return NULL;
		if (write && !(r->flags & ARF_NET_REGION_WRITABLE))
			return NULL;
		if (!arf_range_ok(off, len, r->size))
			return NULL;
		return c->maps[i].base + off;
	}
	return NULL;
}

/* A one-sided read on shm never touches the socket, so a server that went
 * away (and whose memory the mapping keeps alive) would go unnoticed: look
 * at the socket every few milliseconds.  The server sends nothing unasked,
 * so readable-with-no-bytes is its end. */
static int shm_alive(struct arf_net_conn *c)
{
	uint64_t now = arf_net_now_us();
	if (now - __atomic_load_n(&c->alive_checked_us, __ATOMIC_RELAXED) < 5000)
		return 1;
	__atomic_store_n(&c->alive_checked_us, now, __ATOMIC_RELAXED);
	struct pollfd p = { .fd = c->fd, .events = POLLIN | POLLRDHUP };
	if (poll(&p, 1, 0) <= 0)
		return 1;
	if (p.revents & (POLLHUP | POLLERR | POLLRDHUP))
		return 0;
	return 1; /* a reply waiting for a reader: alive */
}

static int shm_read(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n)
{
	uint64_t total = 0;

	if (!shm_alive(c))
		return -ECONNRESET;

	for (size_t i = 0; i < n; i++) {
		uint8_t *p = shm_check(c, ops[i].region, ops[i].key, ops[i].off, ops[i].len, 0);
		if (!p)
			return ARF_EKEY;
		arf_net_copy_racy(ops[i].dst, p, ops[i].len);
		total += ops[i].len;
	}
	ARF_NET_CTR(c, rounds, 1);
	ARF_NET_CTR(c, one_sided_reads, n);
	ARF_NET_CTR(c, one_sided_bytes, total);
	ARF_NET_CTR(c, bytes_received, total);
	return 0;
}

static int shm_rmw(struct arf_net_conn *c, uint16_t op, uint32_t region, uint64_t key,
		   uint64_t off, const void *buf, uint32_t len, uint64_t arg0, uint64_t arg1,
		   uint64_t *old)
{
	uint8_t *p = shm_check(c, region, key, off, len, 1);
	uint64_t prev = 0;

	if (!p || (op != ARF_NET_OP_WRITE && (len != 8 || off % 8)))
		return ARF_EKEY;
	switch (op) {
	case ARF_NET_OP_WRITE:
		memcpy(p, buf, len);
		break;
	case ARF_NET_OP_CAS:
		prev = arg0;
		__atomic_compare_exchange_n((uint64_t *)(void *)p, &prev, arg1, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
		break;
	case ARF_NET_OP_FAA:
		prev = __atomic_fetch_add((uint64_t *)(void *)p, arg0, __ATOMIC_SEQ_CST);
		break;
	default:
		return -EINVAL;
	}
	if (old)
		*old = prev;
	ARF_NET_CTR(c, rounds, 1);
	ARF_NET_CTR(c, one_sided_writes, 1);
	return 0;
}

const struct arf_net_cops arf_net_shm_cops = {
	.name = "shm",
	.dial = shm_dial,
	.attach = shm_attach,
	.read = shm_read,
	.rmw = shm_rmw,
	.detach = shm_detach,
};

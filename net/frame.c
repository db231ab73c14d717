/* SPDX-License-Identifier: MIT */
/*
 * net/frame — the frame on the wire and the socket I/O both sides share:
 * header encode/decode (little-endian, at the edge), a receive buffer that
 * yields whole frames, writing a frame with optional file descriptors, and
 * the adaptive wait (spin, then sleep in poll) that RDMA code uses on its
 * completion queues.  Also the wire status <-> error conversions.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "net_int.h"

void arf_net_hdr_encode(const struct arf_net_hdr *h, uint8_t out[24])
{
	uint32_t len = htole32(h->len), aux = htole32(h->aux);
	uint16_t op = htole16(h->op), flags = htole16(h->flags);
	uint64_t id = htole64(h->id);
	uint32_t st = htole32((uint32_t)h->status);

	memcpy(out, &len, 4);
	memcpy(out + 4, &op, 2);
	memcpy(out + 6, &flags, 2);
	memcpy(out + 8, &id, 8);
	memcpy(out + 16, &st, 4);
	memcpy(out + 20, &aux, 4);
}

void arf_net_hdr_decode(const uint8_t in[24], struct arf_net_hdr *h)
{
	uint32_t len, st, aux;
	uint16_t op, flags;
	uint64_t id;

	memcpy(&len, in, 4);
	memcpy(&op, in + 4, 2);
	memcpy(&flags, in + 6, 2);
	memcpy(&id, in + 8, 8);
	memcpy(&st, in + 16, 4);
	memcpy(&aux, in + 20, 4);
	h->len = le32toh(len);
	h->op = le16toh(op);
	h->flags = le16toh(flags);
	h->id = le64toh(id);
	h->status = (int32_t)le32toh(st);
	h->aux = le32toh(aux);
}

uint64_t arf_net_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

__attribute__((no_sanitize_thread)) void arf_net_copy_racy(void *dst, const void *src, size_t len)
{
	uint8_t *d = dst;
	const uint8_t *p = src;

#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
	/* Large copies go to the C library's memcpy, an opaque call for the
	 * compiler (nothing of the race for it to exploit), at up to twice
	 * the loop's speed below: a 1 MiB one-sided read on shm is this copy.
	 * It may tear anywhere, which the readers' checksums catch as ever.
	 * (A bare `rep movsb` was as fast only when source and destination
	 * happened to align: 1.4 GB/s where they are 16 bytes apart.)
	 * Sanitized builds keep the loop, which they do not intercept. */
	if (len >= 256) {
		memcpy(d, p, len);
		return;
	}
#endif
	/* Relaxed atomic loads: the compiler may neither tear a word further
	 * nor turn the loop into a memcpy call that a sanitizer intercepts. */
	while (len && ((uintptr_t)p & 7)) {
		*d++ = __atomic_load_n(p++, __ATOMIC_RELAXED);
		len--;
	}
	for (; len >= 8; len -= 8, p += 8, d += 8) {
		uint64_t w = __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_RELAXED);
		memcpy(d, &w, 8);
	}
	while (len--)
		*d++ = __atomic_load_n(p++, __ATOMIC_RELAXED);
}

void arf_net_auth_proof(const uint8_t *key, const uint8_t nonce[32], const void *hello,
			size_t hello_len, uint8_t proof[32])
{
	crypto_auth_hmacsha512256_state st;
	_Static_assert(crypto_auth_hmacsha512256_BYTES == 32, "a 32-byte proof");
	crypto_auth_hmacsha512256_init(&st, key, ARF_NET_AUTH_KEY_BYTES);
	crypto_auth_hmacsha512256_update(&st, nonce, 32);
	crypto_auth_hmacsha512256_update(&st, hello, hello_len);
	crypto_auth_hmacsha512256_final(&st, proof);
}

int arf_net_auth_verify(const uint8_t *key, const uint8_t nonce[32], const void *hello,
			size_t hello_len, const uint8_t proof[32])
{
	uint8_t want[32];
	arf_net_auth_proof(key, nonce, hello, hello_len, want);
	return sodium_memcmp(want, proof, sizeof(want)) ? -1 : 0;
}

int arf_net_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

void arf_net_rbuf_free(struct arf_net_rbuf *rb)
{
	size_t max = rb->max;
	free(rb->buf);
	memset(rb, 0, sizeof(*rb));
	rb->max = max;
}

static size_t rbuf_max(const struct arf_net_rbuf *rb)
{
	return rb->max ? rb->max : ARF_NET_MAX_FRAME;
}

int arf_net_rbuf_peek(struct arf_net_rbuf *rb, struct arf_net_hdr *h, const uint8_t **body)
{
	size_t have = rb->end - rb->start;

	if (have < sizeof(struct arf_net_hdr))
		return 0;
	arf_net_hdr_decode(rb->buf + rb->start, h);
	if (h->len < sizeof(struct arf_net_hdr) || h->len > rbuf_max(rb))
		return ARF_EPROTO;
	if (have < h->len)
		return 0;
	*body = rb->buf + rb->start + sizeof(struct arf_net_hdr);
	return 1;
}

void arf_net_rbuf_drop(struct arf_net_rbuf *rb, size_t len)
{
	rb->start += len;
}

uint8_t *arf_net_rbuf_detach(struct arf_net_rbuf *rb, size_t flen, uint8_t *nb, size_t ncap)
{
	uint8_t *old = rb->buf;
	size_t rest = rb->end - rb->start - flen;

	memcpy(nb, old + rb->start + flen, rest);
	rb->buf = nb;
	rb->cap = ncap;
	rb->start = 0;
	rb->end = rest;
	return old;
}

int arf_net_rbuf_frame(struct arf_net_rbuf *rb, struct arf_net_hdr *h, const uint8_t **body)
{
	int r = arf_net_rbuf_peek(rb, h, body);
	if (r == 1)
		arf_net_rbuf_drop(rb, h->len);
	return r;
}

ssize_t arf_net_rbuf_fill(struct arf_net_rbuf *rb, int fd)
{
	if (rb->start == rb->end)
		rb->start = rb->end = 0;
	/* Room for at least one more header, or for the frame that has
	 * started, but never more than twice what has arrived of it: a peer
	 * that claims 16 MiB and sends a little makes us hold a little (the
	 * buffer doubles as the bytes come; realloc of a large block moves
	 * pages, not bytes).  A small max (before a handshake) keeps the
	 * buffer small too. */
	size_t max = rbuf_max(rb);
	size_t have = rb->end - rb->start;
	size_t want = max < (64u << 10) ? max : 64u << 10;
	if (have >= sizeof(struct arf_net_hdr)) {
		uint32_t len;
		memcpy(&len, rb->buf + rb->start, 4);
		len = le32toh(len);
		if (len <= max && len > want)
			want = len;
		if (want > 2 * have + (64u << 10))
			want = 2 * have + (64u << 10);
	}
	if (rb->cap - rb->start < want) {
		if (rb->start) {
			memmove(rb->buf, rb->buf + rb->start, rb->end - rb->start);
			rb->end -= rb->start;
			rb->start = 0;
		}
		if (rb->cap < want) {
			uint8_t *nb = realloc(rb->buf, want);
			if (!nb)
				return -ENOMEM;
			rb->buf = nb;
			rb->cap = want;
		}
	}
	ssize_t n = recv(fd, rb->buf + rb->end, rb->cap - rb->end, MSG_DONTWAIT);
	if (n > 0) {
		rb->end += (size_t)n;
		return n;
	}
	if (n == 0)
		return -ECONNRESET;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	return -errno;
}

static __thread int (*tls_abort)(void *arg);
static __thread void *tls_abort_arg;

void arf_net_set_thread_abort(int (*fn)(void *arg), void *arg)
{
	tls_abort = fn;
	tls_abort_arg = arg;
}

int arf_net_abort_check(void)
{
	return tls_abort && tls_abort(tls_abort_arg) ? -ECANCELED : 0;
}

int arf_net_abort_set(void)
{
	return tls_abort != NULL;
}

int arf_net_wait_fd(int fd, short events, uint32_t spin_us, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint64_t start = arf_net_now_us();
	int rc;

	if (spin_us) {
		do {
			rc = poll(&p, 1, 0);
			if (rc > 0)
				return 0;
			if (rc < 0 && errno != EINTR)
				return -errno;
		} while (arf_net_now_us() - start < spin_us);
	}
	for (;;) {
		int left = -1;
		if (timeout_ms >= 0) {
			uint64_t spent = (arf_net_now_us() - start) / 1000u;
			if (spent >= (uint64_t)timeout_ms)
				return -ETIMEDOUT;
			left = (int)((uint64_t)timeout_ms - spent);
		}
		/* a wait the caller may give up is taken in slices */
		if (tls_abort && (left < 0 || left > ARF_NET_ABORT_POLL_MS))
			left = ARF_NET_ABORT_POLL_MS;
		rc = poll(&p, 1, left);
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc == 0 && tls_abort && tls_abort(tls_abort_arg))
			return -ECANCELED;
	}
}

int arf_net_wait_fd_spin(int fd, short events, struct arf_spin *s, int timeout_ms)
{
	uint32_t spin = arf_spin_budget(s);

	if (spin) {
		struct pollfd p = { .fd = fd, .events = events };
		uint64_t start = arf_net_now_us();
		do {
			int rc = poll(&p, 1, 0);
			if (rc > 0) {
				arf_spin_done(s, spin, 1);
				return 0;
			}
			if (rc < 0 && errno != EINTR)
				return -errno;
		} while (arf_net_now_us() - start < spin);
		arf_spin_done(s, spin, 0);
		if (timeout_ms > 0) {
			uint64_t spent_ms = (arf_net_now_us() - start) / 1000u;
			timeout_ms = spent_ms >= (uint64_t)timeout_ms ? 1 : timeout_ms - (int)spent_ms;
		}
	}
	return arf_net_wait_fd(fd, events, 0, timeout_ms);
}

int arf_net_send_frame(int fd, const struct arf_net_hdr *h, const struct iovec *iov, int iovcnt,
		       const int *fds, int nfds, int timeout_ms)
{
	return arf_net_send_frame_wait(fd, h, iov, iovcnt, fds, nfds, timeout_ms, NULL, NULL);
}

int arf_net_send_frame_wait(int fd, const struct arf_net_hdr *h, const struct iovec *iov,
			    int iovcnt, const int *fds, int nfds, int timeout_ms,
			    int (*wait)(void *arg), void *arg)
{
	uint8_t hdr[sizeof(struct arf_net_hdr)];
	struct iovec v[18];
	int nv = 0;
	union {
		char buf[CMSG_SPACE(sizeof(int) * ARF_NET_MAX_REGIONS)];
		struct cmsghdr align;
	} cm;

	if (iovcnt > 16 || nfds > (int)ARF_NET_MAX_REGIONS)
		return -EINVAL;
	arf_net_hdr_encode(h, hdr);
	v[nv++] = (struct iovec){ hdr, sizeof(hdr) };
	for (int i = 0; i < iovcnt; i++)
		if (iov[i].iov_len)
			v[nv++] = iov[i];

	struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)nv };
	if (nfds > 0) {
		memset(&cm, 0, sizeof(cm));
		m.msg_control = cm.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	struct iovec *cur = v;
	int left = nv;
	while (left > 0) {
		m.msg_iov = cur;
		m.msg_iovlen = (size_t)left;
		ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				int rc = wait ? wait(arg) : arf_net_wait_fd(fd, POLLOUT, 0, timeout_ms);
				if (rc)
					return rc;
				continue;
			}
			return -errno;
		}
		m.msg_control = NULL; /* the fds went with the first byte */
		m.msg_controllen = 0;
		size_t done = (size_t)n;
		while (left > 0 && done >= cur->iov_len) {
			done -= cur->iov_len;
			cur++;
			left--;
		}
		if (left > 0) {
			cur->iov_base = (uint8_t *)cur->iov_base + done;
			cur->iov_len -= done;
		}
	}
	return 0;
}

/* ------------------------------------------------------------- statuses */

static const int errno_of_status[] = {
	[ARF_NET_S_OK] = 0,
	[ARF_NET_S_PERM] = EPERM, [ARF_NET_S_NOENT] = ENOENT, [ARF_NET_S_IO] = EIO,
	[ARF_NET_S_NXIO] = ENXIO, [ARF_NET_S_ACCES] = EACCES, [ARF_NET_S_EXIST] = EEXIST,
	[ARF_NET_S_XDEV] = EXDEV, [ARF_NET_S_NOTDIR] = ENOTDIR, [ARF_NET_S_ISDIR] = EISDIR,
	[ARF_NET_S_INVAL] = EINVAL, [ARF_NET_S_FBIG] = EFBIG, [ARF_NET_S_NOSPC] = ENOSPC,
	[ARF_NET_S_ROFS] = EROFS, [ARF_NET_S_MLINK] = EMLINK,
	[ARF_NET_S_NAMETOOLONG] = ENAMETOOLONG, [ARF_NET_S_NOTEMPTY] = ENOTEMPTY,
	[ARF_NET_S_STALE] = ESTALE, [ARF_NET_S_NOTSUP] = EOPNOTSUPP, [ARF_NET_S_BUSY] = EBUSY,
	[ARF_NET_S_AGAIN] = EAGAIN, [ARF_NET_S_NOMEM] = ENOMEM, [ARF_NET_S_TOOBIG] = E2BIG,
	[ARF_NET_S_LOOP] = ELOOP, [ARF_NET_S_RANGE] = ERANGE, [ARF_NET_S_BADF] = EBADF,
	[ARF_NET_S_NOSYS] = ENOSYS, [ARF_NET_S_DQUOT] = EDQUOT,
	[ARF_NET_S_OVERFLOW] = EOVERFLOW, [ARF_NET_S_TIMEDOUT] = ETIMEDOUT,
	[ARF_NET_S_CONNRESET] = ECONNRESET, [ARF_NET_S_NODATA] = ENODATA,
	[ARF_NET_S_INTR] = EINTR, [ARF_NET_S_DEADLK] = EDEADLK, [ARF_NET_S_NOLCK] = ENOLCK,
	[ARF_NET_S_REMOTE] = EREMOTE, [ARF_NET_S_HOSTDOWN] = EHOSTDOWN,
};
#define NSTATUS ((int)(sizeof(errno_of_status) / sizeof(errno_of_status[0])))

int32_t arf_net_status_from_err(int err)
{
	if (err == 0)
		return ARF_NET_S_OK;
	if (err <= ARF_ERR_MAX && err >= ARF_ERR_MIN)
		return ARF_NET_S_ARF_BASE + (ARF_ERR_MAX - err);
	if (err == -ENOTSUP)
		return ARF_NET_S_NOTSUP;
	for (int s = 1; s < NSTATUS; s++)
		if (errno_of_status[s] && -err == errno_of_status[s])
			return s;
	return ARF_NET_S_IO;
}

int arf_net_status_to_err(int32_t status)
{
	if (status == ARF_NET_S_OK)
		return 0;
	if (status > 0 && status < NSTATUS && errno_of_status[status])
		return -errno_of_status[status];
	if (status >= ARF_NET_S_ARF_BASE && status <= ARF_NET_S_ARF_BASE + (ARF_ERR_MAX - ARF_ERR_MIN))
		return ARF_ERR_MAX - (status - ARF_NET_S_ARF_BASE);
	return -EIO;
}

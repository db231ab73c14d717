/* SPDX-License-Identifier: MIT */
/*
 * net/ internals: frame header encoding, whole-frame socket I/O with
 * adaptive polling, the client connection structure and the client
 * transport ops table (tcp, shm).  Not installed; nothing outside net/
 * includes it.
 */
#ifndef ARF_NET_INT_H
#define ARF_NET_INT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include "arf_net.h"
#include "arf_spin.h"

/* Little-endian header fields at the edges only. */
void arf_net_hdr_encode(const struct arf_net_hdr *h, uint8_t out[24]);
void arf_net_hdr_decode(const uint8_t in[24], struct arf_net_hdr *h);

/* Receive buffer of one socket: bytes read but not yet consumed. */
struct arf_net_rbuf {
	uint8_t *buf;
	size_t cap, start, end;
	size_t max;     /* largest frame accepted; 0 = ARF_NET_MAX_FRAME */
};
/* Free the buffer (max is kept). */
void arf_net_rbuf_free(struct arf_net_rbuf *rb);
/* If a whole frame is buffered, return 1 with its header and body (valid
 * until the next call on rb); 0 if more bytes are needed; ARF_EPROTO for a
 * header that cannot be a frame (length under a header, or over max). */
int arf_net_rbuf_frame(struct arf_net_rbuf *rb, struct arf_net_hdr *h, const uint8_t **body);
/* The same, but the frame stays in rb until arf_net_rbuf_drop(rb, h->len). */
int arf_net_rbuf_peek(struct arf_net_rbuf *rb, struct arf_net_hdr *h, const uint8_t **body);
void arf_net_rbuf_drop(struct arf_net_rbuf *rb, size_t len);
/* Hand over the buffer that holds the whole frame of flen bytes at
 * rb->start (the caller then owns it): rb goes on in nb, ncap bytes (at
 * least the bytes buffered after the frame, which are copied there). */
uint8_t *arf_net_rbuf_detach(struct arf_net_rbuf *rb, size_t flen, uint8_t *nb, size_t ncap);
/* Bytes buffered and not consumed (a partial frame, or frames not yet
 * taken). */
static inline size_t arf_net_rbuf_pending(const struct arf_net_rbuf *rb)
{
	return rb->end - rb->start;
}
/* Read what the socket has (non-blocking).  Returns bytes read (> 0),
 * 0 when nothing is there, -ECONNRESET at end of stream, -errno. */
ssize_t arf_net_rbuf_fill(struct arf_net_rbuf *rb, int fd);

/* Wait until fd is readable (events = POLLIN) or writable (POLLOUT):
 * spin up to spin_us with poll(0), then block.  timeout_ms < 0 = forever.
 * Returns 0, -ETIMEDOUT, -errno. */
int arf_net_wait_fd(int fd, short events, uint32_t spin_us, int timeout_ms);
/* A reply wait that spins as common/arf_spin.h says, then blocks. */
int arf_net_wait_fd_spin(int fd, short events, struct arf_spin *s, int timeout_ms);
/* The calling thread's abort hook (arf_net_set_thread_abort): -ECANCELED
 * when it says to give up, else 0; and whether one is set.  A wait of
 * timeout_ms may also end with -ECANCELED when one is set. */
int arf_net_abort_check(void);
int arf_net_abort_set(void);

/* Write a whole frame (header + iov) on a non-blocking socket, waiting for
 * room at most timeout_ms.  fds (SCM_RIGHTS) go with the first byte.
 * Returns 0, -ETIMEDOUT, -EPIPE/-ECONNRESET, -errno. */
int arf_net_send_frame(int fd, const struct arf_net_hdr *h, const struct iovec *iov, int iovcnt,
		       const int *fds, int nfds, int timeout_ms);
/* the same, with wait(arg) called instead of a wait for POLLOUT while the
 * socket will not take more (net/client.c reads replies meanwhile) */
int arf_net_send_frame_wait(int fd, const struct arf_net_hdr *h, const struct iovec *iov,
			    int iovcnt, const int *fds, int nfds, int timeout_ms,
			    int (*wait)(void *arg), void *arg);

uint64_t arf_net_now_us(void);

/* The shared-secret proof: HMAC-SHA-512-256 (libsodium crypto_auth) of the
 * server's nonce followed by the hello bytes, under the 32-byte key.
 * proof: 32 bytes out; verify returns 0 when proof matches. */
void arf_net_auth_proof(const uint8_t *key, const uint8_t nonce[32], const void *hello,
			size_t hello_len, uint8_t proof[32]);
int arf_net_auth_verify(const uint8_t *key, const uint8_t nonce[32], const void *hello,
			size_t hello_len, const uint8_t proof[32]);

/* Copy out of a region that a writer may be changing at the same time: the
 * one-sided read itself.  The copy may be torn; readers find that out from
 * the objects' versions and checksums (meta/object.c), never from this
 * copy.  It is a deliberate data race, made with word-sized relaxed loads
 * and kept out of ThreadSanitizer's view (as the kernel's data_race()). */
void arf_net_copy_racy(void *dst, const void *src, size_t len);
int arf_net_set_nonblock(int fd);

/* ------------------------------------------------------------- client side */

struct arf_net_cops {
	const char *name;
	/* Open the socket (blocking connect); returns fd or -errno with err. */
	int (*dial)(const struct arf_net_client_opts *o, char *err, size_t errlen);
	/* The handshake brought these region fds (shm only); take ownership. */
	int (*attach)(struct arf_net_conn *c, const int *fds, int nfds, char *err, size_t errlen);
	int (*read)(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n);
	/* One round of reads posted (arf_net_post_read's contract); NULL: the
	 * transport reads at once with read and completes the post inline. */
	int (*post_read)(struct arf_net_conn *c, struct arf_net_read_op *ops, size_t n,
			 struct arf_net_pending *p);
	/* WRITE (buf/len), CAS, FAA; *old gets the previous value for CAS/FAA. */
	int (*rmw)(struct arf_net_conn *c, uint16_t op, uint32_t region, uint64_t key, uint64_t off,
		   const void *buf, uint32_t len, uint64_t arg0, uint64_t arg1, uint64_t *old);
	void (*detach)(struct arf_net_conn *c);
};

extern const struct arf_net_cops arf_net_tcp_cops;
extern const struct arf_net_cops arf_net_shm_cops;

struct arf_net_map {           /* shm: one region mapped into the client */
	uint8_t *base;
	uint64_t size;
};

/* A thread asleep on a connection (on its stack, in c->sleepers while
 * asleep): woken when *flag is set, when the reader leaves and it may
 * read next, or when the connection breaks. */
struct arf_net_sleeper {
	pthread_cond_t cv;
	const int *flag;
	struct arf_net_sleeper *next;
};

struct arf_net_conn {
	const struct arf_net_cops *ops;
	int fd;
	uint32_t spin_us;
	struct arf_spin spin;          /* the reply waits' adaptive spin */
	int timeout_ms;

	struct arf_net_region_info regions[ARF_NET_MAX_REGIONS];
	size_t nregions;
	uint8_t *info;
	size_t info_len;
	struct arf_net_map maps[ARF_NET_MAX_REGIONS]; /* shm */
	void *tp;                      /* the back end's own state (rdma: its endpoint) */
	uint64_t alive_checked_us;     /* shm: when the socket was last seen open (atomic) */

	pthread_mutex_t send_lock;     /* one frame at a time on the socket */
	pthread_mutex_t lock;          /* waiters, reader election, broken */
	/* threads asleep until their flag is set or they must read (client.c:
	 * each is woken alone, never all for every reply) */
	struct arf_net_sleeper *sleepers;
	struct arf_net_pending *waiters; /* posted, reply not filed yet */
	int reading;                   /* a thread is reading the socket for everyone */
	int broken;                    /* -errno once the connection failed */
	uint64_t next_id;
	struct arf_net_rbuf rb;        /* only the reading thread touches it */

	struct arf_net_counters ctr;   /* atomic adds */
};

#define ARF_NET_CTR(c, f, n) __atomic_add_fetch(&(c)->ctr.f, (uint64_t)(n), __ATOMIC_RELAXED)

/* Send a frame and wait for the reply with the same id.  The reply's status
 * comes back in *status, its aux in *aux (may be NULL), its body in *resp
 * (owned by the caller).  Returns 0 when a reply arrived, or a connection
 * error. */
int arf_net_exchange(struct arf_net_conn *c, uint16_t op, uint32_t aux, const struct iovec *iov,
		     int iovcnt, int32_t *status, uint32_t *reply_aux, struct arf_net_buf *resp);
/* The same with the frame id given (0: the connection's next one). */
int arf_net_exchange_id(struct arf_net_conn *c, uint16_t op, uint64_t id, uint32_t aux,
			const struct iovec *iov, int iovcnt, int32_t *status, uint32_t *reply_aux,
			struct arf_net_buf *resp);
/* Register p (done may be NULL: then the poster waits for p->completed)
 * under a fresh id and send the frame.  A failed send breaks the
 * connection, which completes p.  0, or, with p not registered, -E2BIG or
 * the error of a connection already broken. */
int arf_net_submit(struct arf_net_conn *c, uint16_t op, uint32_t aux, const struct iovec *iov,
		   int iovcnt, struct arf_net_pending *p);
/* The same with the frame id given (0: the connection's next one). */
int arf_net_submit_id(struct arf_net_conn *c, uint16_t op, uint64_t id, uint32_t aux,
		      const struct iovec *iov, int iovcnt, struct arf_net_pending *p);
/* Wait until p (submitted with done NULL) completes: 0 with p's reply, or
 * the connection's error; -ECANCELED (p forgotten) when the thread's abort
 * hook gives up first. */
int arf_net_await(struct arf_net_conn *c, struct arf_net_pending *p);
/* Complete p at once, outside any lock, with the outcome of a read done
 * synchronously (rc: 0, ARF_EKEY, or a connection error). */
void arf_net_complete_now(struct arf_net_pending *p, int rc);

/* Find a region the handshake announced; NULL if none. */
const struct arf_net_region_info *arf_net_find_region(struct arf_net_conn *c, uint32_t id);

#endif /* ARF_NET_INT_H */

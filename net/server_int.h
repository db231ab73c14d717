/* SPDX-License-Identifier: MIT */
/*
 * net/ server internals: the server and connection structures that the
 * server's rooms share, and the functions one room calls in another.  Not
 * installed; nothing outside net/ includes it.
 *
 *   server.c     create, regions, start, destroy, the soft-NIC thread's
 *                epoll loop
 *   sconn.c      one connection: state, reading and dispatching frames,
 *                the send queue, replies, close
 *   handshake.c  HELLO: version, shared-secret challenge, the embedder's
 *                decision, region keys (and descriptors on shm)
 *   softnic.c    one-sided READ, WRITE, CAS and FAA on registered regions
 *   listen.c     tcp, UNIX and rdma listeners, accept, connections adopted
 *                from rdma
 *   limits.c     what one client may hold: connections (per client, root's
 *                reserved slots), requests in flight (back-pressure), the
 *                timers (handshake, idle, mid-frame), buffers shrinking
 *
 * Threads: the soft-NIC thread owns the connection list, every receive
 * buffer and every state change; any thread may send (under the
 * connection's send_lock).
 */
#ifndef ARF_NET_SERVER_INT_H
#define ARF_NET_SERVER_INT_H

#include <endian.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "net_int.h"

#define HELLO_TIMEOUT_US (10u * 1000000u) /* a connection must finish its handshake in this */
#define OUTQ_HIGH (4u << 20)   /* stop reading a client's frames while this much waits for it */
#define OUTQ_MAX  (64u << 20)  /* a client that lets more pile up is dropped */
#define RBUF_KEEP (64u << 10)  /* a receive buffer above this is freed once empty and quiet */
#define SCAN_US   1000000u     /* the timers (handshake, idle, mid-frame) look every second */

enum sconn_state {
	SCONN_NEW,     /* accepted: only HELLO is allowed */
	SCONN_READY,   /* handshake done */
	SCONN_CLOSED,  /* out of epoll; replies are dropped */
};

struct srv_region {
	uint32_t id, flags;
	uint32_t view; /* the view it belongs to (arf_net_server_add_region_in) */
	uint8_t *base;
	uint64_t size;
	int memfd;     /* the embedder's; not ours to close */
	int passfd;    /* what shm clients get: read-only unless writable */
};

/* Who a connection counts against for max_conns_per_client: a uid on the
 * UNIX socket, an IPv4 address, or an IPv6 /64. */
struct client_key {
	uint8_t kind;              /* CKEY_* */
	uint8_t b[8];
};
enum { CKEY_NONE, CKEY_UID, CKEY_V4, CKEY_V6, CKEY_LOOPBACK };

/* A request handed to the embedder and not yet answered. */
struct inflight {
	uint64_t id;
	uint64_t bytes;
};

struct arf_net_sconn {
	struct arf_net_server *s;
	int fd;
	int is_unix;
	int refs;                  /* atomic */
	enum sconn_state state;    /* changed by the soft-NIC thread only */
	int closed;                /* under send_lock: replies dropped */
	pthread_mutex_t send_lock;
	/* Output that the socket would not take yet (under send_lock): sent
	 * when epoll says the socket is writable.  Nothing ever blocks on a
	 * client that stops reading: its frames wait here, the soft-NIC stops
	 * reading its requests past OUTQ_HIGH and drops it past OUTQ_MAX. */
	uint8_t *outq;
	size_t outq_off, outq_len, outq_cap;
	uint32_t events;           /* epoll events armed (under send_lock) */
	uint64_t accepted_us;      /* when accepted: SCONN_NEW may last HELLO_TIMEOUT_US */
	struct arf_net_conn_info ctr; /* counters (atomic adds); peer and times filled on read */
	int no_grant;              /* on_hello withheld the region keys */
	uint32_t view;             /* the regions and info it is shown (on_hello; 0 by default) */
	int challenged;            /* a challenge was sent: the next HELLO must prove it */
	uint8_t nonce[32];         /* that challenge */
	uint64_t keys[ARF_NET_MAX_REGIONS]; /* this connection's region keys (0 = none) */
	struct arf_net_rbuf rb;
	uint8_t *spare;            /* atomic: a receive buffer given back (body_free),
				    * to replace the next one handed over */
	size_t req_len;            /* soft-NIC: the frame in on_request's hands (0: none) */
	int req_taken;             /* and on_request took its buffer (take_body) */
	struct arf_net_peer peer;
	void *udata;
	void (*udata_free)(void *udata); /* at the last reference (set_udata) */
	struct arf_net_sconn *prev, *next;

	struct client_key ckey;    /* set at accept */
	int root_evident;          /* shm uid 0, tcp from a reserved port: not limited per client */
	uint64_t active_us;        /* atomic: last frame received or reply sent (idle timeout) */
	uint64_t frame_since_us;   /* soft-NIC: a frame has been unfinished since (0 = none) */
	int resume_queued;         /* under the server's resume_lock: in resumeq */
	struct arf_net_sconn *resume_next;
	/* Requests in flight (under send_lock): handed to on_request, not yet
	 * answered.  At the cap the soft-NIC stops reading (rstalled) and
	 * arf_net_reply, bringing it under, hands the connection back through
	 * the server's resumeq: frames already buffered wake no epoll. */
	int rstalled;
	int stall_counted;         /* this stall is in counters.stalls already */
	uint32_t ninflight;
	uint64_t inflight_bytes;
	struct inflight inflight[]; /* max_conn_requests entries */
};

struct arf_net_server {
	struct arf_net_server_opts o;
	uint8_t auth_key[ARF_NET_AUTH_KEY_BYTES];
	int has_auth;
	char unix_path[108];
	char listen_addr[128];
	int tcp_fd, unix_fd, ep, evfd;
	int spare_fd;                  /* /dev/null, given up to shed a connection at EMFILE */
	uint16_t port;
	pthread_t thr;
	int started, stop;

	struct srv_region regions[ARF_NET_MAX_REGIONS];
	size_t nregions;

	pthread_mutex_t info_lock;
	uint8_t *info[ARF_NET_MAX_VIEWS];    /* by view */
	uint64_t view_reads[ARF_NET_MAX_VIEWS], view_bytes[ARF_NET_MAX_VIEWS]; /* soft-NIC
					      * one-sided reads by view (atomic adds) */
	size_t info_len[ARF_NET_MAX_VIEWS];

	struct arf_net_sconn *conns;   /* changed by the soft-NIC thread, under conns_lock */
	pthread_mutex_t conns_lock;    /* the list, for arf_net_server_foreach_conn */
	struct arf_net_sconn *dead;    /* closed in this epoll batch, unref after it */
	unsigned nnew;                 /* connections in SCONN_NEW (soft-NIC thread only) */
	uint8_t *out;                  /* READ reply staging, soft-NIC thread only */
	size_t out_cap;

	struct arf_net_server_counters ctr; /* atomic adds */

	char rdma_addr[128];           /* rdma: listen address ("" = any) when has_rdma */
	int has_rdma;
	struct arf_net_verbs_server *vs; /* the rdma listener, NULL = none */
	pthread_mutex_t adopt_lock;    /* adoptq */
	struct adopted *adoptq;        /* connections handed over by rdma, for the soft-NIC */
	pthread_mutex_t resume_lock;   /* resumeq */
	struct arf_net_sconn *resumeq; /* stalled connections a reply brought under their cap
					* (referenced), for the soft-NIC to read on */
};

/* A connected socket another transport hands to the soft-NIC. */
struct adopted {
	int fd;
	struct arf_net_peer peer;
	struct adopted *next;
};

/* Little-endian fields of reply bodies. */
static inline void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

#define SCTR(s, f, n) __atomic_add_fetch(&(s)->ctr.f, (uint64_t)(n), __ATOMIC_RELAXED)
#define CCTR(c, f, n) __atomic_add_fetch(&(c)->ctr.f, (uint64_t)(n), __ATOMIC_RELAXED)

/* ------------------------------------------------------------- sconn.c */

static inline size_t outq_pending(const struct arf_net_sconn *c)
{
	return c->outq_len - c->outq_off;
}
/* Arm epoll for what the connection needs now (caller holds send_lock). */
void arf_net_srv_arm_locked(struct arf_net_sconn *c);

/* Send one frame to a client, from any thread, never waiting: what the
 * socket does not take now is queued behind what already waits.  flags
 * are added to ARF_NET_F_REPLY; fds (SCM_RIGHTS) go with the first byte.
 * Returns 0, or -errno after which the connection is finished. */
int arf_net_srv_send(struct arf_net_sconn *c, uint64_t id, uint16_t op, int32_t status,
		     uint32_t aux, uint16_t flags, const struct iovec *iov, int iovcnt,
		     const int *fds, int nfds);
/* A new connection on fd, or NULL (fd closed) when full or out of memory. */
struct arf_net_sconn *arf_net_srv_conn_alloc(struct arf_net_server *s, int fd, int is_unix);
/* Serve c (its peer filled in): into epoll and the list.  A connection
 * over a limit (max_conns, per client, reserved root slots) is refused:
 * closed and freed. */
void arf_net_srv_conn_register(struct arf_net_server *s, struct arf_net_sconn *c);
/* The one place a connection becomes SCONN_CLOSED (soft-NIC thread). */
void arf_net_srv_conn_close(struct arf_net_server *s, struct arf_net_sconn *c);
/* Drop the references of connections closed in this epoll batch. */
void arf_net_srv_free_dead(struct arf_net_server *s);
/* epoll said readable / writable (soft-NIC thread). */
void arf_net_srv_conn_readable(struct arf_net_server *s, struct arf_net_sconn *c);
void arf_net_srv_conn_writable(struct arf_net_server *s, struct arf_net_sconn *c);

/* ------------------------------------------------------------ limits.c */

/* Apply the defaults of the limits in s->o; -EINVAL with err when they
 * contradict each other. */
int arf_net_srv_limits_init(struct arf_net_server *s, char *err, size_t errlen);
/* Fill c's client key and root evidence from its peer; 0 when c may be
 * served, -EUSERS when a connection limit refuses it. */
int arf_net_srv_admit_conn(struct arf_net_server *s, struct arf_net_sconn *c);
/* May request h go to the embedder now?  1: yes, and it is in flight
 * until arf_net_reply; 0: the connection is at its cap and stalls. */
int arf_net_srv_admit_request(struct arf_net_server *s, struct arf_net_sconn *c,
			      const struct arf_net_hdr *h);
/* Request id was answered (any thread): out of flight; a stalled
 * connection brought under its cap goes back to the soft-NIC. */
void arf_net_srv_release_request(struct arf_net_sconn *c, uint64_t id);
/* Read on the connections arf_net_reply brought under their cap. */
void arf_net_srv_resume_pending(struct arf_net_server *s);
/* The timers (every SCAN_US): handshakes, idle and mid-frame timeouts,
 * shrinking quiet buffers. */
void arf_net_srv_scan(struct arf_net_server *s, uint64_t now);

/* --------------------------------------------------------- handshake.c */

/* HELLO.  Returns < 0 to close the connection (after a refusal was sent). */
int arf_net_srv_hello(struct arf_net_server *s, struct arf_net_sconn *c,
		      const struct arf_net_hdr *h, const uint8_t *body, size_t len);

/* ----------------------------------------------------------- softnic.c */

/* One-sided READ (a batch) and WRITE / CAS / FAA: answered at once.
 * Returns < 0 when the reply could not be sent (the connection is done). */
int arf_net_srv_read(struct arf_net_server *s, struct arf_net_sconn *c,
		     const struct arf_net_hdr *h, const uint8_t *body, size_t len);
int arf_net_srv_rmw(struct arf_net_server *s, struct arf_net_sconn *c,
		    const struct arf_net_hdr *h, const uint8_t *body, size_t len);

/* ------------------------------------------------------------ listen.c */

/* Listen on tcp / the UNIX socket / rdma, as configured; 0 or -errno
 * with err. */
int arf_net_srv_listen_tcp(struct arf_net_server *s, char *err, size_t errlen);
int arf_net_srv_listen_unix(struct arf_net_server *s, char *err, size_t errlen);
int arf_net_srv_listen_rdma(struct arf_net_server *s, char *err, size_t errlen);
/* The descriptors shm clients receive (read-only regions sealed). */
int arf_net_srv_make_passfds(struct arf_net_server *s);
/* The same for one region (added to a started server): 0 or -errno. */
int arf_net_srv_make_passfd(struct srv_region *r);
/* Accept one connection on listener lfd (soft-NIC thread). */
void arf_net_srv_accept(struct arf_net_server *s, int lfd, int is_unix);
/* Serve what arf_net_server_adopt queued (soft-NIC thread). */
void arf_net_srv_adopt_pending(struct arf_net_server *s);

#endif /* ARF_NET_SERVER_INT_H */

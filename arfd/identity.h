/* SPDX-License-Identifier: MIT */
/*
 * arfd/identity — who a connection is, and so who each of its requests
 * acts as (identity.c says why each rule is what it is).
 *
 * Lock order: the callers hold fs_lock where a function says so; the
 * stale-handle table has a lock of its own, taken last.
 */
#ifndef ARFD_IDENTITY_H
#define ARFD_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#include "arf_net.h"
#include "arf_ops.h"
#include "arf_proto.h"

struct arfd;

/* How much a connection's word about identity counts. */
enum arfd_trust {
	ARFD_TRUST_ANON = 0,   /* unproven tcp/rdma peer: every request acts as anon_uid/gid */
	ARFD_TRUST_PINNED,     /* the kernel (shm peer) or a kernel-vouched token named it */
	ARFD_TRUST_CLAIMED,    /* unproven, on an `insecure` export: its claims are believed */
	ARFD_TRUST_ROOT,       /* proven root on its host: its claims are believed */
};

/* One client connection, as arfd sees it (the connection's udata). */
struct arfd_conn {
	struct arfd *d;
	enum arfd_trust trust;
	int grant;               /* holds region keys */
	struct arf_cred id;      /* PINNED: who it is (groups from SO_PEERGROUPS or the token) */
	char from[48];           /* "uid:N" or "addr:HOST": the key stale handles count under */
	uint8_t addr[16];        /* the peer's address (IPv4 mapped; zeros for shm) */
	uint64_t suspect_until_ms; /* named a stale handle lately: watched until then (atomic) */
	uint8_t client_id[ARF_PROTO_CLIENT_ID]; /* from the hello: the reply cache's key */
	int has_client_id;
	struct arfd_move_in *move; /* a vol move session on it (move_in.c; under move_lock) */
};

/* "root", "pinned", "claimed" or "anonymous" (arfctl clients). */
const char *arfd_identity_trust_name(enum arfd_trust t);

/* Credential tokens (CRED_MINT, handed to tools through arf-fuse's ioctl). */
#define ARFD_TOKEN_TTL_S 600

/* Keys for this incarnation (tokens die with it).  0 or -EIO. */
int arfd_identity_start(struct arfd *d);
void arfd_identity_stop(struct arfd *d);

/*
 * The handshake's identity part (on_hello): decide trust and region keys
 * for peer, verify a token if the hello carries one.  Fills *ac (whose d is
 * set).  Returns 0, or ARF_EAUTH / -EPERM with the reason in msg.  Takes
 * fs_lock (the export's settings may change on SIGHUP).
 */
int arfd_identity_hello(struct arfd *d, const struct arf_net_peer *peer,
			const struct arf_proto_hello *h, struct arfd_conn *ac, char *msg,
			size_t msglen);

/*
 * The credentials a request acts with (caller holds fs_lock): the claimed
 * ones from a root-proven (or insecure-export) connection, the pinned ones
 * of a pinned connection, the anonymous user otherwise; then root squashed
 * as the export says.  *proven_root (may be NULL) becomes 1 only for uid 0
 * believed from a root-proven connection and not squashed.
 */
void arfd_identity_cred(const struct arfd *d, const struct arfd_conn *ac,
			const struct arf_proto_cred *pc, struct arf_cred *cr, int *proven_root);

/* May a program run with these credentials see the exported regions?  Only
 * for uid 0 proven root on a connection that holds the region keys. */
int arfd_identity_sees_regions(const struct arfd_conn *ac, int proven_root);

/*
 * CRED_MINT: a token for cr (the request's credentials, already resolved
 * and squashed), for a root-proven connection only: -EPERM otherwise.
 * The token goes to w as bytes(token), then u32 lifetime in seconds.
 */
int arfd_identity_mint(struct arfd *d, const struct arfd_conn *ac, const struct arf_cred *cr,
		       struct arf_proto_wr *w);

/*
 * Handles are (ino, gen) with a random 32-bit generation; an unproven
 * client that keeps naming handles that do not exist is guessing.  Call
 * before serving a request that names a handle: 0 to go on, -ESTALE when
 * its principal spent its allowance of stale handles and this connection
 * took part (the request is not looked at).  Call arfd_identity_stale() when a request answered ESTALE.
 * Root-proven connections are not counted: they can read every handle
 * one-sidedly anyway.
 */
int arfd_identity_stale_check(struct arfd *d, struct arfd_conn *ac);
void arfd_identity_stale(struct arfd *d, struct arfd_conn *ac);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * An etcd v3 client over etcd's JSON gateway (HTTP/JSON, paths under /v3/,
 * as etcd 3.4 serves them; no gRPC), with libcurl and json-c: the key-value
 * calls (put, get, prefix range, delete, transactions with compare-and-swap),
 * leases (grant, keepalive, revoke) and watches (a stream read on a thread
 * of its own).  Keys and values are bytes; the gateway carries them in
 * base64, which this module adds and removes.
 *
 * Errors: every call returns 0 or -errno, and writes what happened into err
 * (when errlen > 0): curl's reason for a connection that failed
 * (-ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH), etcd's own message and gRPC
 * code for a refusal (mapped: NotFound -ENOENT, InvalidArgument -EINVAL,
 * PermissionDenied -EPERM, Unauthenticated -EACCES, Unavailable -EAGAIN,
 * others -EIO) with the HTTP status, -EACCES with the user's name when
 * etcd refuses the user's password (or has no authentication enabled),
 * -EACCES for a certificate of etcd's that ca_file does not verify, and
 * -EPROTO for a reply that is not what etcd sends (not JSON, a field of the
 * wrong type, bad base64, over ARF_ETCD_MAX_REPLY bytes) -- a peer that is
 * not etcd gets a message, never a crash.
 *
 * Security (struct arf_etcd_security): a user of etcd's authentication,
 * whose password is read from a file at open (refused when group or others
 * may read it, as ssh refuses such keys); the client authenticates on its
 * first call (POST /v3/auth/authenticate), sends the token in the
 * Authorization header, and when etcd says the token is no longer valid
 * (it expired: "simple" tokens live --auth-token-ttl, 300 s by default,
 * after their last use) authenticates again once and repeats the call (a
 * watch's stream likewise opens again at once with a new token).  A
 * password goes only over https://, or over http:// to a loopback address
 * (127.0.0.0/8, ::1, localhost).  With https://, etcd's certificate is
 * verified against ca_file (else the system's CAs), and cert_file/key_file
 * are sent where etcd asks for a client certificate (--client-cert-auth);
 * these need https:// endpoints.
 *
 * Threads: one struct arf_etcd may be used from several threads (its calls
 * are serialised on one connection); a watch runs on a thread and a
 * connection of its own.  The module never prints.
 */
#ifndef ARF_ETCD_H
#define ARF_ETCD_H

#include <stddef.h>
#include <stdint.h>

#define ARF_ETCD_MAX_REPLY (64u << 20) /* bytes of one reply (one watch line) */
#define ARF_ETCD_MAX_ENDPOINTS 16

#define ARF_ETCD_PASSWORD_MAX 256 /* bytes of a password (its file's first line) */

struct arf_etcd;

/* How to prove who we are and to check etcd's identity; every field may be
 * NULL or "" (none).  The strings are copied at open. */
struct arf_etcd_security {
	const char *user;          /* etcd user to authenticate as (none: no token sent) */
	const char *password_file; /* with user: its password, the file's first line */
	const char *ca_file;       /* https: CA certificates (PEM) etcd's must chain to */
	const char *cert_file;     /* https: client certificate (PEM) for --client-cert-auth */
	const char *key_file;      /* https: its private key (none: in cert_file) */
};

/* Open a client for ENDPOINTS: "http://HOST:PORT" (or https://), several
 * separated by commas or blanks; each call tries them in turn, starting with
 * the last one that answered.  timeout_ms bounds each call (0 = 5000).
 * sec (may be NULL): authentication and TLS, as above; the password file
 * is read here.  Connects to nothing yet.  Returns 0, -EINVAL (a malformed
 * list; a user without a password file or the reverse; a password or TLS
 * files with a non-loopback http:// endpoint), -EPERM (a password file
 * that group or others may read), -errno of reading the password file
 * (-ENOENT, -EACCES), or -ENOMEM.  The handle is freed by arf_etcd_close
 * (which wipes the password from memory). */
int arf_etcd_open(struct arf_etcd **out, const char *endpoints, unsigned timeout_ms,
		  const struct arf_etcd_security *sec, char *err, size_t errlen);
/* arf_etcd_open's checks of endpoints and sec, without reading the
 * password file or keeping a client: for a configuration read by a
 * program that will not use its password. */
int arf_etcd_check(const char *endpoints, const struct arf_etcd_security *sec, char *err,
		   size_t errlen);
void arf_etcd_close(struct arf_etcd *e); /* accepts NULL */
/* The endpoint that answered last (or the first): valid until close. */
const char *arf_etcd_endpoint(const struct arf_etcd *e);

/* One key and what etcd keeps about it.  key and value are NUL-terminated
 * copies (the NUL not counted), owned by whatever holds the struct. */
struct arf_etcd_kv {
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t create_revision; /* revision that created it (0: it does not exist) */
	int64_t mod_revision;    /* revision of its last change */
	int64_t version;         /* changes since it was created (1 = just created) */
	int64_t lease;           /* lease it is attached to (0 = none) */
};

/* What a range returns: n keys in key order, at store revision revision. */
struct arf_etcd_kvs {
	struct arf_etcd_kv *kv;
	size_t n;
	int64_t revision;
};
void arf_etcd_kvs_free(struct arf_etcd_kvs *kvs); /* frees the keys, zeroes *kvs */

/* Put key = value, attached to lease (0 = none).  *revision (may be NULL):
 * the store's revision after it.  -ENOENT: the lease does not exist. */
int arf_etcd_put(struct arf_etcd *e, const char *key, const void *value, size_t value_len,
		 int64_t lease, int64_t *revision, char *err, size_t errlen);
/* The key alone (out->n is 0 or 1), or with prefix every key that starts
 * with key (in key order).  *out is set on success only. */
int arf_etcd_get(struct arf_etcd *e, const char *key, int prefix, struct arf_etcd_kvs *out,
		 char *err, size_t errlen);
/* Delete the key (with prefix: every key under it); *deleted (may be
 * NULL): how many were. */
int arf_etcd_delete(struct arf_etcd *e, const char *key, int prefix, int64_t *deleted, char *err,
		    size_t errlen);

/* Transactions: if every comparison holds, the success operations run,
 * else the failure ones; all in one revision. */
enum arf_etcd_target {
	ARF_ETCD_VERSION = 0,  /* cmp.number against the key's version (0 = absent) */
	ARF_ETCD_CREATE,       /* against its create_revision (0 = absent) */
	ARF_ETCD_MOD,          /* against its mod_revision */
	ARF_ETCD_VALUE,        /* cmp.value against its value */
};
enum arf_etcd_result { ARF_ETCD_EQUAL = 0, ARF_ETCD_GREATER, ARF_ETCD_LESS, ARF_ETCD_NOT_EQUAL };
struct arf_etcd_cmp {
	const char *key;
	enum arf_etcd_target target;
	enum arf_etcd_result result;
	int64_t number;            /* VERSION, CREATE, MOD */
	const void *value;         /* VALUE */
	size_t value_len;
};
enum arf_etcd_op_kind { ARF_ETCD_OP_PUT = 0, ARF_ETCD_OP_DELETE, ARF_ETCD_OP_GET };
struct arf_etcd_op {
	enum arf_etcd_op_kind kind;
	const char *key;
	const void *value;         /* PUT */
	size_t value_len;
	int64_t lease;             /* PUT: 0 = none */
};
/* *succeeded: 1 if the comparisons held (the success branch ran), 0 if
 * not.  got (may be NULL): the keys the branch's GET operations read, all
 * together in their order (freed with arf_etcd_kvs_free); got->revision is
 * the transaction's revision. */
int arf_etcd_txn(struct arf_etcd *e, const struct arf_etcd_cmp *cmp, size_t ncmp,
		 const struct arf_etcd_op *success, size_t nsuccess,
		 const struct arf_etcd_op *failure, size_t nfailure, int *succeeded,
		 struct arf_etcd_kvs *got, char *err, size_t errlen);

/* Leases.  grant: a lease of ttl_s seconds; *id its id, *granted (may be
 * NULL) the TTL etcd gave.  keepalive: one renewal; *ttl_left (may be
 * NULL) the TTL it now has; -ENOENT when the lease has expired or was
 * revoked.  revoke: the lease and every key attached to it are gone;
 * -ENOENT when it was not there. */
int arf_etcd_lease_grant(struct arf_etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted,
			 char *err, size_t errlen);
int arf_etcd_lease_keepalive(struct arf_etcd *e, int64_t id, int64_t *ttl_left, char *err,
			     size_t errlen);
int arf_etcd_lease_revoke(struct arf_etcd *e, int64_t id, char *err, size_t errlen);

/* Watches.  The callback runs on the watch's thread, one event at a time;
 * ev and what it points to are valid during the call only. */
enum arf_etcd_event_kind {
	ARF_ETCD_EV_PUT = 0,   /* kv was created or changed */
	ARF_ETCD_EV_DELETE,    /* kv.key was deleted (kv.mod_revision: when) */
	ARF_ETCD_EV_ERROR,     /* the stream broke (message says why); the watch
				* reconnects and resumes after the last revision it saw */
};
struct arf_etcd_event {
	enum arf_etcd_event_kind kind;
	struct arf_etcd_kv kv;
	const char *message;   /* ERROR */
};
typedef void (*arf_etcd_watch_fn)(void *arg, const struct arf_etcd_event *ev);
struct arf_etcd_watch;
/* Watch key (with prefix: every key under it) from start_revision (0 =
 * changes from now on), on a thread of the watch's own, with its own
 * connection to e's endpoints (e must stay open until the watch is
 * stopped).  Returns once etcd has confirmed the watch
 * (so a change made after the return is seen), or -errno with err if the
 * first attempt failed. */
int arf_etcd_watch_start(struct arf_etcd *e, const char *key, int prefix,
			 int64_t start_revision, arf_etcd_watch_fn fn, void *arg,
			 struct arf_etcd_watch **out, char *err, size_t errlen);
/* Stop the stream and join its thread (within about a second); after it
 * the callback is not called again.  Accepts NULL. */
void arf_etcd_watch_stop(struct arf_etcd_watch *w);

#endif

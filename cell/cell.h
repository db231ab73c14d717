/* SPDX-License-Identifier: MIT */
/*
 * An ARF cell's records in etcd (issue 18's foundation): which servers are
 * alive and where each volume lives.  etcd holds all of it; no ARF process
 * keeps cell state that etcd does not have.
 *
 * The schema, one JSON object per key:
 *
 *   /arf/<cell>/servers/<id>   a live server, attached to its lease (gone
 *                              when the server stops renewing it):
 *     {"id": "s1", "address": "10.0.0.1", "port": 20490, "rdma_port": 0,
 *      "incarnation": 1234, "software": "0.1.0"}
 *   /arf/<cell>/volumes/<name> where a volume lives:
 *     {"name": "root", "server": "s1", "state": "online", "version": 1}
 *
 * A volume record is created only if absent, and changed only by a
 * transaction that compares etcd's mod_revision of the record read before
 * (compare-and-swap); its "version" counts those changes (1 = created).
 * Names (cells, server ids, volumes) are 1 to 63 of [A-Za-z0-9._-], not "."
 * or "..".  Unknown fields in a record are ignored (later versions add some);
 * a record that lacks a field or has one of the wrong type is an error
 * (-EPROTO) naming its key.
 *
 * Errors are arf_etcd.h's: 0 or -errno, with the message in err.
 */
#ifndef ARF_CELL_H
#define ARF_CELL_H

#include <stddef.h>
#include <stdint.h>

#include "arf_etcd.h"

#define ARF_CELL_PREFIX   "/arf/"
#define ARF_CELL_NAME_MAX 64
#define ARF_CELL_KEY_MAX  (sizeof(ARF_CELL_PREFIX) + 3 * ARF_CELL_NAME_MAX)

/* 1 if name is a valid cell, server or volume name. */
int arf_cell_name_ok(const char *name);

struct arf_cell_server {
	char id[ARF_CELL_NAME_MAX];
	char address[256];       /* where clients reach it (host name or address) */
	uint16_t port;           /* tcp */
	uint16_t rdma_port;      /* 0 = no rdma */
	uint64_t incarnation;    /* the server's write verifier (changes at each start) */
	char software[32];       /* ARF version it runs */
	int64_t lease;           /* etcd's lease the record is attached to (not in the JSON) */
};

/* Volume states: where a volume can be used. */
#define ARF_CELL_VOL_ONLINE  "online"  /* served by its server */
#define ARF_CELL_VOL_OFFLINE "offline" /* not served */
#define ARF_CELL_VOL_MOVING  "moving"  /* being moved (issue 18, not built yet) */

struct arf_cell_volume {
	char name[ARF_CELL_NAME_MAX];
	char server[ARF_CELL_NAME_MAX]; /* id of the server that hosts it */
	char state[16];          /* one of ARF_CELL_VOL_* */
	int64_t version;         /* changes of the record (1 = created) */
	int64_t mod_revision;    /* etcd's revision of the record as read (for CAS; not in the JSON) */
};

/* "/arf/<cell>/<kind>/<name>" (name "" = the prefix of all, with its
 * trailing slash) into buf.  -EINVAL for a bad name, -ENAMETOOLONG. */
int arf_cell_key(char *buf, size_t len, const char *cell, const char *kind, const char *name);

/* Records as JSON text (a new string the caller frees) and back. */
int arf_cell_server_encode(const struct arf_cell_server *s, char **json);
int arf_cell_server_decode(const char *json, size_t len, struct arf_cell_server *s, char *err,
			   size_t errlen);
int arf_cell_volume_encode(const struct arf_cell_volume *v, char **json);
int arf_cell_volume_decode(const char *json, size_t len, struct arf_cell_volume *v, char *err,
			   size_t errlen);

/* Register s under lease (which must exist): its record is put only if no
 * record of that id exists, or the one there is attached to the same lease.
 * -EEXIST (the message names the other holder) when another live server
 * holds the id; -ENOENT when the lease is gone. */
int arf_cell_server_register(struct arf_etcd *e, const char *cell, const struct arf_cell_server *s,
			     int64_t lease, char *err, size_t errlen);
/* Every live server of the cell, by id; *out is an array the caller frees
 * (NULL when *n is 0). */
int arf_cell_servers_list(struct arf_etcd *e, const char *cell, struct arf_cell_server **out,
			  size_t *n, char *err, size_t errlen);

/* Create v (v->version becomes 1) only if no volume of that name exists:
 * -EEXIST otherwise.  On success v->mod_revision is the record's. */
int arf_cell_volume_create(struct arf_etcd *e, const char *cell, struct arf_cell_volume *v,
			   char *err, size_t errlen);
/* Read the record of name into v; -ENOENT when there is none. */
int arf_cell_volume_read(struct arf_etcd *e, const char *cell, const char *name,
			 struct arf_cell_volume *v, char *err, size_t errlen);
/* Write v (server, state) over the record, if it is still the one read at
 * v->mod_revision: then v->version is one more and v->mod_revision the new
 * revision.  -ESTALE when the record changed since (read it again),
 * -ENOENT when it was deleted. */
int arf_cell_volume_update(struct arf_etcd *e, const char *cell, struct arf_cell_volume *v,
			   char *err, size_t errlen);
/* Delete the record of v->name if it is still the one read at
 * v->mod_revision: -ESTALE when it changed since, -ENOENT when it is gone. */
int arf_cell_volume_delete(struct arf_etcd *e, const char *cell, const struct arf_cell_volume *v,
			   char *err, size_t errlen);
/* Every volume record of the cell, by name (*out freed by the caller). */
int arf_cell_volumes_list(struct arf_etcd *e, const char *cell, struct arf_cell_volume **out,
			  size_t *n, char *err, size_t errlen);

/* Membership: a thread that keeps a server registered.  It grants a lease
 * of ttl_s seconds, registers s under it, renews it every third of the TTL,
 * and registers again under a new lease when the lease is lost (etcd was
 * unreachable longer than the TTL, or lost its data); while etcd is
 * unreachable it retries every second.  It reports what happens through
 * log (level 0 error, 1 warning, 2 information, 3 debug; called from the
 * thread; may be NULL).  sec (may be NULL): arf_etcd_open's; a user who
 * cannot authenticate or lacks the permission to write the cell's records
 * is an error logged once per new reason (level 0), retried every second.
 * Returns at once, whether etcd answers or not: -EINVAL (bad endpoints,
 * names, TTL, security settings), arf_etcd_open's errors of the password
 * file, or -ENOMEM only. */
typedef void (*arf_cell_log_fn)(void *arg, int level, const char *msg);
struct arf_cell_member;
int arf_cell_member_start(const char *endpoints, const struct arf_etcd_security *sec,
			  const char *cell, const struct arf_cell_server *s,
			  int ttl_s, arf_cell_log_fn log, void *log_arg,
			  struct arf_cell_member **out, char *err, size_t errlen);
/* The volumes the server serves, by name (copied): once registered, the
 * thread creates each one's record (online, on this server) if there is
 * none, sets it online again if it names this server, and leaves alone
 * (with a warning) one that names another server; at the stop it sets
 * those that name this server offline.  0, -EINVAL (a bad name), -ENOMEM. */
int arf_cell_member_publish(struct arf_cell_member *m, const char *const *names, size_t n);
/* A volume this server no longer has (removed): the thread deletes its
 * record if it names this server (compare-and-swap on the revision read),
 * leaves it alone if it names another, retrying while etcd fails; drop it
 * from the names given to arf_cell_member_publish too.  0, -EINVAL (a bad
 * name), -ENOMEM. */
int arf_cell_member_withdraw(struct arf_cell_member *m, const char *name);
/* vol move's flip: the record of volume name, which must name this
 * server, made to name server `to` (online), in one compare-and-swap on the
 * revision read; *version (may be NULL) is the record's new version.  0,
 * -EREMOTE (it names another server), -ESTALE (changed between the read
 * and the swap), -ENOENT, or etcd's errors, with err.  *sent: whether the
 * swap was sent (0: it certainly did not happen). */
int arf_cell_member_move(struct arf_cell_member *m, const char *name, const char *to,
			 int64_t *version, int *sent, char *err, size_t errlen);
/* vol release NAME SERVER's record of its replica: created naming `to`
 * when there is none, left when it names `to` already, else moved as
 * arf_cell_member_move moves it (it must name this server). */
int arf_cell_member_place(struct arf_cell_member *m, const char *name, const char *to,
			  int64_t *version, int *sent, char *err, size_t errlen);
/* Volume name's record as etcd has it now (not a watched copy): 0,
 * -ENOENT, or etcd's errors with err.  And this member's server id. */
int arf_cell_member_read(struct arf_cell_member *m, const char *name, struct arf_cell_volume *v,
			 char *err, size_t errlen);
const char *arf_cell_member_id(const struct arf_cell_member *m);
/* The record of name read again at the next round (a volume moved here:
 * its record, another server's when it was published, names this one
 * now).  m NULL: nothing. */
void arf_cell_member_recheck(struct arf_cell_member *m, const char *name);
/* 1 while registered (the lease renewed within its TTL), else 0. */
int arf_cell_member_registered(struct arf_cell_member *m);
/* Stop the thread; the lease is revoked (best effort, within about a
 * second), so the record is gone at once rather than after the TTL.
 * Accepts NULL. */
void arf_cell_member_stop(struct arf_cell_member *m);

/* A server's copy of the cell's volume and server records (view.c), kept
 * current by a watch on a thread of its own; it never makes a caller wait
 * for etcd.  start returns at once (-EINVAL, arf_etcd_open's errors,
 * -ENOMEM); log as for membership.  locate: 0 with the volume's record and
 * its server's (srv->id "" when that server is not live), -ENOENT when the
 * cell has no such volume, -EAGAIN when etcd has never answered yet. */
struct arf_cell_view;
int arf_cell_view_start(const char *endpoints, const struct arf_etcd_security *sec,
			const char *cell, arf_cell_log_fn log, void *log_arg,
			struct arf_cell_view **out, char *err, size_t errlen);
int arf_cell_view_locate(struct arf_cell_view *v, const char *name, struct arf_cell_volume *vol,
			 struct arf_cell_server *srv);
/* The live server id's record: 0, -ENOENT (not live), -EAGAIN (etcd has
 * never answered yet). */
int arf_cell_view_server(struct arf_cell_view *v, const char *id, struct arf_cell_server *srv);
void arf_cell_view_stop(struct arf_cell_view *v); /* accepts NULL */

#endif

/* SPDX-License-Identifier: MIT */
/*
 * arfd/locks — the lock manager: fcntl byte-range locks and flock locks
 * held by arfd for every client of the export, with leases and a grace
 * period after a restart (locks.c says how each part works).
 *
 * Lock order: the request procedures run with fs_lock held and take the
 * manager's own mutex inside it; the manager's thread and connection
 * close take only the manager's mutex.  Replies are sent after it is
 * released.
 */
#ifndef ARFD_LOCKS_H
#define ARFD_LOCKS_H

#include <stddef.h>
#include <stdint.h>

struct arfd;
struct arfd_req;
struct arf_net_sconn;
struct json_object;

/* After the store is open and before requests are served: the lock
 * clients of the previous incarnation are read from the store and, if
 * there were any that a move did not bring with their locks
 * (ARFD_LOCKS_CARRIED), the grace period starts.  0 or -errno with err. */
int arfd_locks_start(struct arfd *d, char *err, size_t errlen);
/* After the workers have stopped: every lock and waiting request goes
 * (the waiting requests' connections are gone). */
void arfd_locks_stop(struct arfd *d);
/* A connection closed: the requests it had waiting are dropped (its
 * locks stay: they belong to the client, whose lease decides). */
void arfd_locks_conn_closed(struct arfd *d, struct arf_net_sconn *c);

/* The procedures of ARF_OP_LOCK, UNLOCK, LOCK_RENEW and LOCK_CANCEL
 * (procs.c's table).  LOCK may keep the request and answer it later:
 * then it returns ARFD_PROC_LATER. */
int arfd_p_lock(struct arfd_req *q);
int arfd_p_unlock(struct arfd_req *q);
int arfd_p_lock_renew(struct arfd_req *q);
int arfd_p_lock_cancel(struct arfd_req *q);

/* vol move (move_out.c), in the freeze: the table of d's clients that hold
 * locks -- ids, leases, principals, what is left of each lease, their
 * locks -- written to dir/ARFD_LOCKS_CARRIED (the last snapshot), for the
 * receiver's arfd_locks_start to take in.  0 or -errno with err. */
#define ARFD_LOCKS_CARRIED "locks.carried.json"
int arfd_locks_save(struct arfd *d, const char *dir, char *err, size_t errlen);

/* Counts for the status summary: {"clients", "locks", "waiting",
 * "grace_s", "lease_s"} added to o. */
void arfd_locks_status(struct arfd *d, struct json_object *o);

#endif

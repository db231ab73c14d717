/* SPDX-License-Identifier: MIT */
/*
 * arfd in a cell (issue 18's first step): with [cell] etcd and name set,
 * arfd registers itself in etcd under a lease and keeps it alive from a
 * thread of its own (cell/member.c), whether etcd answers at start or
 * later; serving never waits for etcd.  Without [cell], nothing happens.
 */
#ifndef ARFD_CELL_H
#define ARFD_CELL_H

#include <stddef.h>

struct arfd;
struct arf_cell_member;

/* Start the membership of d (serving already: its ports are known).
 * *out is NULL without a [cell].  Returns 0, or -errno with err (a
 * configuration etcd's keys cannot hold; no memory). */
int arfd_cell_start(struct arfd *d, struct arf_cell_member **out, char *err, size_t errlen);
/* Record d's volumes in the cell again (one was made: volumes.c); 0 or
 * -errno.  m NULL (no cell): nothing. */
int arfd_cell_publish(struct arfd *d, struct arf_cell_member *m);
/* A volume removed: its record goes from the cell (if it names this
 * server).  0 or -errno; m NULL: nothing. */
int arfd_cell_withdraw(struct arf_cell_member *m, const char *name);
/* The address clients reach d at ([cell] address, else listen's address
 * unless it is a wildcard, else the host name): what its record says. */
void arfd_cell_advertised(const struct arfd *d, char *out, size_t len);
/* Leave the cell (the lease is revoked) and stop the thread; accepts NULL. */
void arfd_cell_stop(struct arf_cell_member *m);

#endif

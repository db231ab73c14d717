/* SPDX-License-Identifier: MIT */
/*
 * arfd/helpers — the functions arfd lends to programs (ids and contracts in
 * mobilecode/progs/arf_prog_abi.h), and the per-run state they see.
 */
#ifndef ARFD_HELPERS_H
#define ARFD_HELPERS_H

#include <stdint.h>

#include "arf_mc.h"
#include "arf_ops.h"

struct arfd;

/* One run, as its helpers see it (the vm's user pointer). */
struct arfd_exec {
	struct arfd *d;
	struct arf_cred cr;   /* the request's credentials, squashed as the export says */
	uint64_t seq;         /* last transaction a hook applied (0: none) */
	int views;            /* file views lent in this run (file_view) */
};

/* Registers arfd's helpers in h.  0, or -errno with the reason in err. */
int arfd_helpers_register(struct arf_mc_helpers *h, char *err, size_t errlen);
/* dir_read and file_digest (helpers_walk.c), which arfd_helpers_register
 * registers too. */
int arfd_helpers_walk_register(struct arf_mc_helpers *h, char *err, size_t errlen);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * arfd/access — the export's client list and the region-key policy
 * (access.c says what each entry and policy means).
 */
#ifndef ARFD_ACCESS_H
#define ARFD_ACCESS_H

#include <stdint.h>
#include <stddef.h>

#include "arf_net.h"

#define ARFD_MAX_NETS 32

enum arfd_net_kind { ARFD_NET_ANY = 1, ARFD_NET_UNIX, ARFD_NET_V4, ARFD_NET_V6 };

struct arfd_net_entry {
	enum arfd_net_kind kind;
	int prefix;        /* bits that must match (V4, V6) */
	uint8_t addr[16];  /* network address, network byte order */
};

struct arfd_nets {
	int n;
	struct arfd_net_entry e[ARFD_MAX_NETS];
};

/* Parse a clients list.  Returns 0 or -EINVAL with the bad entry in err. */
int arfd_access_parse(const char *spec, struct arfd_nets *out, char *err, size_t errlen);
/* The peer's network address: 4 (a[0..3] set, IPv4, also when mapped in
 * IPv6), 6 (a[0..15]) or 0 (shm, or not parsed). */
int arfd_access_peer_addr(const struct arf_net_peer *peer, uint8_t a[16]);
/* Does the list let this peer in? */
int arfd_access_allowed(const struct arfd_nets *nets, const struct arf_net_peer *peer);
/* Is the peer proven root on its host (shm uid 0, reserved tcp port, or the
 * shared secret)? */
int arfd_access_proven_root(const struct arf_net_peer *peer);

#endif

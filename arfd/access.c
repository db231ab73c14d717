/* SPDX-License-Identifier: MIT */
/*
 * arfd/access — who may connect to the export, and who gets region keys.
 *
 * `[export] clients` is a list of entries separated by spaces or commas:
 * an IPv4 or IPv6 address, a network in CIDR form (10.0.0.0/8, fd00::/8),
 * `unix` (clients on this host through the UNIX socket) or `*` (anyone).
 * A tcp client must match an address or network entry; an shm client needs
 * `unix` or `*`.
 *
 * Region keys let a client read the whole export one-sidedly, bypassing
 * per-file permissions, so `[export] one_sided` says who gets them: `root`
 * (the default: only clients proven to be root on their host: an shm peer
 * whose SO_PEERCRED uid is 0, a tcp client from a reserved source port
 * (< 1024, as NFS's `secure`; libarf binds one when its process is root),
 * or a client that proved the export's shared secret, which only root can
 * read), `all` (every accepted client) or `none`.  Everyone else reaches data through
 * requests, which check permissions.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"

static int parse_entry(const char *tok, struct arfd_net_entry *e, char *err, size_t errlen)
{
	char addr[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(tok, '/');
	size_t al = slash ? (size_t)(slash - tok) : strlen(tok);

	memset(e, 0, sizeof(*e));
	if (!strcmp(tok, "*")) {
		e->kind = ARFD_NET_ANY;
		return 0;
	}
	if (!strcmp(tok, "unix")) {
		e->kind = ARFD_NET_UNIX;
		return 0;
	}
	if (al == 0 || al >= sizeof(addr))
		goto bad;
	memcpy(addr, tok, al);
	addr[al] = 0;
	if (inet_pton(AF_INET, addr, e->addr) == 1) {
		e->kind = ARFD_NET_V4;
		e->prefix = 32;
	} else if (inet_pton(AF_INET6, addr, e->addr) == 1) {
		e->kind = ARFD_NET_V6;
		e->prefix = 128;
	} else {
		goto bad;
	}
	if (slash) {
		char *end;
		long p = strtol(slash + 1, &end, 10);
		if (!slash[1] || *end || p < 0 || p > e->prefix)
			goto bad;
		e->prefix = (int)p;
	}
	return 0;
bad:
	snprintf(err, errlen, "'%s' is not an address, a network (ADDR/BITS), 'unix' or '*'", tok);
	return -EINVAL;
}

int arfd_access_parse(const char *spec, struct arfd_nets *out, char *err, size_t errlen)
{
	char tok[128];
	const char *p = spec;

	memset(out, 0, sizeof(*out));
	while (*p) {
		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, " ,\t");
		if (n >= sizeof(tok)) {
			snprintf(err, errlen, "entry '%.20s...' is too long", p);
			return -EINVAL;
		}
		memcpy(tok, p, n);
		tok[n] = 0;
		p += n;
		if (out->n >= ARFD_MAX_NETS) {
			snprintf(err, errlen, "more than %d entries", ARFD_MAX_NETS);
			return -EINVAL;
		}
		if (parse_entry(tok, &out->e[out->n], err, errlen))
			return -EINVAL;
		out->n++;
	}
	return 0;
}

static int prefix_match(const uint8_t *a, const uint8_t *b, int bits)
{
	int whole = bits / 8, rest = bits % 8;
	if (memcmp(a, b, (size_t)whole))
		return 0;
	if (!rest)
		return 1;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[whole] & mask) == (b[whole] & mask);
}

int arfd_access_peer_addr(const struct arf_net_peer *peer, uint8_t a[16])
{
	/* peer->addr is "1.2.3.4:port" or "[v6]:port" */
	char host[INET6_ADDRSTRLEN + 2];
	const char *s = peer->addr, *e;

	if (!strcmp(peer->transport, "shm"))
		return 0;
	if (*s == '[') {
		s++;
		e = strchr(s, ']');
	} else {
		e = strrchr(s, ':');
	}
	if (!e || (size_t)(e - s) >= sizeof(host))
		return 0;
	memcpy(host, s, (size_t)(e - s));
	host[e - s] = 0;
	if (inet_pton(AF_INET, host, a) == 1)
		return 4;
	if (inet_pton(AF_INET6, host, a) != 1)
		return 0;
	/* an IPv4 client on an IPv6 socket: ::ffff:a.b.c.d */
	static const uint8_t v4m[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	if (!memcmp(a, v4m, 12)) {
		memmove(a, a + 12, 4);
		return 4;
	}
	return 6;
}

int arfd_access_allowed(const struct arfd_nets *nets, const struct arf_net_peer *peer)
{
	int is_unix = !strcmp(peer->transport, "shm");
	uint8_t a[16];
	int fam = arfd_access_peer_addr(peer, a);

	if (!is_unix && !fam)
		return 0;
	for (int i = 0; i < nets->n; i++) {
		const struct arfd_net_entry *e = &nets->e[i];
		switch (e->kind) {
		case ARFD_NET_ANY:
			return 1;
		case ARFD_NET_UNIX:
			if (is_unix)
				return 1;
			break;
		case ARFD_NET_V4:
			if (fam == 4 && prefix_match(a, e->addr, e->prefix))
				return 1;
			break;
		case ARFD_NET_V6:
			if (fam == 6 && prefix_match(a, e->addr, e->prefix))
				return 1;
			break;
		}
	}
	return 0;
}

int arfd_access_proven_root(const struct arf_net_peer *peer)
{
	if (peer->authenticated)
		return 1;
	if (!strcmp(peer->transport, "shm"))
		return peer->has_cred && peer->uid == 0;
	return peer->port > 0 && peer->port < 1024;
}

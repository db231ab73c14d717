/* SPDX-License-Identifier: MIT */
/*
 * libarf URLs: arf_url_parse() splits arf://, arf+tcp://, arf+rdma://,
 * arf+shm:// and arf+unix:// URLs into transport, host, port, socket and
 * path (arf.h lists the forms), saying in err what is wrong with a bad one.
 * Parsing only: connecting is client.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

/* HOST[:PORT]/PATH of arf://, arf+tcp:// and arf+rdma:// (rest is what
 * follows the scheme); port 0 in u means the transport's default. */
static int url_host(const char *url, const char *rest, uint16_t defport, struct arf_url *u,
		    char *err, size_t errlen)
{
	const char *slash = strchr(rest, '/');
	size_t hl = slash ? (size_t)(slash - rest) : strlen(rest);
	char hostport[sizeof(u->host)];
	if (hl == 0 || hl >= sizeof(hostport)) {
		snprintf(err, errlen, "%s: missing or overlong host", url);
		return -EINVAL;
	}
	memcpy(hostport, rest, hl);
	hostport[hl] = 0;
	u->port = defport;
	char *portp = NULL;
	if (hostport[0] == '[') {
		char *close = strchr(hostport, ']');
		if (!close) {
			snprintf(err, errlen, "%s: unbalanced '[' in host", url);
			return -EINVAL;
		}
		*close = 0;
		memmove(u->host, hostport + 1, strlen(hostport + 1) + 1);
		if (close[1] == ':')
			portp = close + 2;
		else if (close[1]) {
			snprintf(err, errlen, "%s: junk after ']'", url);
			return -EINVAL;
		}
	} else {
		char *colon = strchr(hostport, ':');
		if (colon) {
			*colon = 0;
			portp = colon + 1;
		}
		memcpy(u->host, hostport, strlen(hostport) + 1);
	}
	if (!u->host[0]) {
		snprintf(err, errlen, "%s: missing host", url);
		return -EINVAL;
	}
	if (portp) {
		char *end;
		long p = strtol(portp, &end, 10);
		if (!*portp || *end || p <= 0 || p > 65535) {
			snprintf(err, errlen, "%s: bad port '%s'", url, portp);
			return -EINVAL;
		}
		u->port = (uint16_t)p;
	}
	snprintf(u->path, sizeof(u->path), "%s", slash ? slash : "/");
	return 0;
}

static int parse_bare(const char *url, struct arf_url *u, char *err, size_t errlen);

int arf_url_parse(const char *url, struct arf_url *u, char *err, size_t errlen)
{
	size_t n = strlen(url) + 1;
	char *bare = malloc(n), vol[ARF_PROTO_VOLUME_MAX];
	int rc;

	memset(u, 0, sizeof(*u));
	if (!bare) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* the volume is arf_connect's (arf_url_split_volume), not the path's */
	rc = arf_url_split_volume(url, bare, n, vol, sizeof(vol), err, errlen);
	if (!rc)
		rc = parse_bare(bare, u, err, errlen);
	free(bare);
	return rc;
}

static int parse_bare(const char *url, struct arf_url *u, char *err, size_t errlen)
{
	const char *rest;
	int rc;

	if (!strncmp(url, "arf://", 6) || !strncmp(url, "arf+tcp://", 10)) {
		strcpy(u->transport, "tcp");
		rest = url + (url[3] == '+' ? 10 : 6);
		if ((rc = url_host(url, rest, ARF_DEFAULT_PORT, u, err, errlen)))
			return rc;
	} else if (!strncmp(url, "arf+rdma://", 11)) {
		/* RDMA verbs (InfiniBand, RoCE, iWARP): rdma_cm resolves HOST
		 * to an RDMA device.  Whether this libarf has verbs, and the
		 * machine a device, is arf_connect's to say. */
		strcpy(u->transport, "rdma");
		if ((rc = url_host(url, url + 11, ARF_DEFAULT_RDMA_PORT, u, err, errlen)))
			return rc;
	} else if (!strncmp(url, "arf+shm://", 10) || !strncmp(url, "arf+unix://", 11)) {
		strcpy(u->transport, "shm");
		rest = url + (url[4] == 's' ? 10 : 11);
		if (rest[0] != '/') {
			snprintf(err, errlen, "%s: expected arf+shm:///PATH[?socket=SOCK]", url);
			return -EINVAL;
		}
		snprintf(u->socket, sizeof(u->socket), "%s", ARF_DEFAULT_SOCKET);
		const char *q = strchr(rest, '?');
		size_t pl = q ? (size_t)(q - rest) : strlen(rest);
		if (pl >= sizeof(u->path)) {
			snprintf(err, errlen, "%s: path too long", url);
			return -EINVAL;
		}
		memcpy(u->path, rest, pl);
		u->path[pl] = 0;
		if (q) {
			if (strncmp(q, "?socket=", 8) || !q[8] || strlen(q + 8) >= sizeof(u->socket)) {
				snprintf(err, errlen, "%s: the only query is ?socket=PATH", url);
				return -EINVAL;
			}
			snprintf(u->socket, sizeof(u->socket), "%s", q + 8);
		}
	} else {
		snprintf(err, errlen,
			 "%s: not an ARF URL (arf://HOST[:PORT]/PATH, arf+rdma://HOST[:PORT]/PATH "
			 "or arf+shm:///PATH[?socket=SOCK])",
			 url);
		return -EINVAL;
	}
	if (!u->path[0])
		strcpy(u->path, "/");
	return 0;
}

int arf_url_split_volume(const char *url, char *rest, size_t restlen, char *vol, size_t vollen,
			 char *err, size_t errlen)
{
	size_t n = strlen(url);
	const char *p = NULL;

	vol[0] = 0;
	if (n >= restlen) {
		snprintf(err, errlen, "URL too long");
		return -EINVAL;
	}
	for (const char *q = strstr(url, "volume="); q; q = strstr(q + 1, "volume="))
		if (q > url && (q[-1] == '?' || q[-1] == '&') && strchr(url, '?') < q)
			p = q;
	if (!p) {
		memcpy(rest, url, n + 1);
		return 0;
	}
	const char *val = p + 7, *end = strchr(val, '&');
	size_t vl = end ? (size_t)(end - val) : strlen(val);
	if (!vl || vl >= vollen || vl >= 64 ||
	    strspn(val, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") < vl ||
	    (vl == 1 && val[0] == '.') || (vl == 2 && !strncmp(val, "..", 2))) {
		snprintf(err, errlen, "%s: volume=NAME: a volume's name is 1-63 letters, digits, "
			 "'.', '_' or '-'", url);
		return -EINVAL;
	}
	memcpy(vol, val, vl);
	vol[vl] = 0;
	/* "?volume=V&x" -> "?x", "&volume=V" -> "", "?volume=V" -> "" */
	size_t cut_from = (size_t)(p - url), cut_to = (size_t)(val + vl - url);
	if (end)
		cut_to++; /* its '&' */
	else
		cut_from--; /* its '?' or '&' */
	memcpy(rest, url, cut_from);
	memcpy(rest + cut_from, url + cut_to, n - cut_to + 1);
	if (!strcmp(vol, "root"))
		vol[0] = 0;
	return 0;
}

int arf_url_volume(const char *url, char *vol, size_t vollen, char *err, size_t errlen)
{
	size_t n = strlen(url) + 1;
	char *bare = malloc(n);

	if (!bare) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = arf_url_split_volume(url, bare, n, vol, vollen, err, errlen);
	free(bare);
	return rc;
}

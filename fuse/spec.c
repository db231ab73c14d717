/* SPDX-License-Identifier: MIT */
/*
 * mount(8)'s SPEC for ARF, NFS-style: HOST:/PATH, HOST:PORT:/PATH,
 * [IPV6]:/PATH or [IPV6]:PORT:/PATH; an arf:// (or arf+shm://) URL is taken
 * as it is.  The result is a URL for libarf; port=, transport= and socket=
 * are applied to it afterwards (options.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf_fuse.h"

int arf_fuse_spec_to_url(const char *spec, char *url, size_t cap, char *err, size_t errlen)
{
	char host[256];
	const char *rest;
	unsigned long port = 0;
	int n;

	if (!strncmp(spec, "arf://", 6) || !strncmp(spec, "arf+", 4)) {
		if (strlen(spec) >= cap) {
			snprintf(err, errlen, "URL too long");
			return -EINVAL;
		}
		strcpy(url, spec);
		return 0;
	}
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');
		if (!close || close == spec + 1 || (size_t)(close - spec - 1) >= sizeof(host)) {
			snprintf(err, errlen, "'%s': bad [IPv6] address", spec);
			return -EINVAL;
		}
		memcpy(host, spec + 1, (size_t)(close - spec - 1));
		host[close - spec - 1] = 0;
		rest = close + 1;
	} else {
		const char *colon = strchr(spec, ':');
		if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host)) {
			snprintf(err, errlen, "'%s' is not HOST:/PATH or HOST:PORT:/PATH", spec);
			return -EINVAL;
		}
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = 0;
		rest = colon;
	}
	if (rest[0] != ':') {
		snprintf(err, errlen, "'%s' is not HOST:/PATH or HOST:PORT:/PATH", spec);
		return -EINVAL;
	}
	rest++;
	if (rest[0] != '/') {
		char *end;
		port = strtoul(rest, &end, 10);
		if (end == rest || *end != ':' || end[1] != '/' || port < 1 || port > 65535) {
			snprintf(err, errlen, "'%s': expected PORT:/PATH after the host", spec);
			return -EINVAL;
		}
		rest = end + 1;
	}
	const char *fmt = strchr(host, ':') ? "arf://[%s]" : "arf://%s";
	n = snprintf(url, cap, fmt, host);
	if (n >= 0 && (size_t)n < cap && port)
		n += snprintf(url + n, cap - (size_t)n, ":%lu", port);
	if (n >= 0 && (size_t)n < cap)
		n += snprintf(url + n, cap - (size_t)n, "%s", rest);
	if (n < 0 || (size_t)n >= cap) {
		snprintf(err, errlen, "'%s': too long", spec);
		return -EINVAL;
	}
	return 0;
}

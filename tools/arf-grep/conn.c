/* SPDX-License-Identifier: MIT */
/*
 * arf-grep's connections to ARF servers, one per server and volume, kept
 * to the end (with their --stats line), and the test for a filesystem
 * mounted below a directory of a mount (walked through the mount then).
 * Split from remote.c, which searches what these reach.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf.h"
#include "grep_int.h"

/* ---- connections ---------------------------------------------------------- */

struct conn {
	char *url;
	arf_client *c;
	struct conn *next;
};

static struct conn *conns;

/* A client for the server of url (one per server, kept to the end);
 * token: a credential token to connect with (NULL: none); name: what to
 * blame in the error message (NULL: say nothing). */
arf_client *grep_conn_get(struct grep_run *run, const char *url, const uint8_t *token,
			    const char *name)
{
	struct arf_url u, v;
	struct arf_client_opts o;
	char err[256], uvol[64], vvol[64];
	arf_client *c;

	/* one connection per server and volume (?volume=) */
	if (arf_url_parse(url, &u, err, sizeof(err)) == 0 &&
	    arf_url_volume(url, uvol, sizeof(uvol), err, sizeof(err)) == 0)
		for (struct conn *k = conns; k; k = k->next)
			if (arf_url_parse(k->url, &v, err, sizeof(err)) == 0 &&
			    !strcmp(u.transport, v.transport) && !strcmp(u.host, v.host) &&
			    u.port == v.port && !strcmp(u.socket, v.socket) &&
			    arf_url_volume(k->url, vvol, sizeof(vvol), err, sizeof(err)) == 0 &&
			    !strcmp(uvol, vvol) && (k->c || !name))
				return k->c;
	arf_client_opts_init(&o);
	o.cred_token = token;
	int r = arf_connect(url, &o, &c, err, sizeof(err));
	if (r < 0 && name) {
		run->errseen = 1;
		if (!run->o.no_messages)
			fprintf(stderr, "grep: %s: %s\n", name, err);
		return NULL;
	}
	if (r < 0)
		c = NULL; /* remembered: the next file of this mount does not try again */
	struct conn *k = calloc(1, sizeof(*k));
	if (!k || !(k->url = strdup(url))) {
		free(k);
		arf_close(c);
		return NULL;
	}
	k->c = c;
	k->next = conns;
	conns = k;
	return c;
}

void grep_remote_finish(struct grep_run *run)
{
	while (conns) {
		struct conn *k = conns;

		if (run->stats && k->c) {
			struct arf_client_stats s;

			arf_stats(k->c, &s);
			fprintf(stderr,
				"arf-grep: stats %s: execs %" PRIu64 " prog_loads %" PRIu64
				" exec_insns %" PRIu64 " requests %" PRIu64 " one_sided_bytes %" PRIu64
				" bytes_sent %" PRIu64 " bytes_received %" PRIu64 "\n",
				k->url, s.execs, s.prog_loads, s.exec_insns, s.requests,
				s.one_sided_bytes, s.bytes_sent, s.bytes_received);
		}
		conns = k->next;
		arf_close(k->c);
		free(k->url);
		free(k);
	}
}

/* True when a filesystem is mounted somewhere below dir (the server's walk
 * would not see it, so the walk goes through the mount). */
int grep_mounts_below(const char *dir)
{
	char *real = realpath(dir, NULL), *line = NULL;
	size_t cap = 0, rl;
	FILE *f;
	int found = 0;

	if (!real)
		return 1;
	rl = strlen(real);
	f = fopen("/proc/self/mountinfo", "r");
	if (!f) {
		free(real);
		return 1;
	}
	while (!found && getline(&line, &cap, f) > 0) {
		char mp[4096], *o = mp;
		const char *q;
		int field = 0;

		for (q = line; *q && field < 4; q++) /* the mount point is the fifth field */
			if (*q == ' ')
				field++;
		while (*q && *q != ' ' && o < mp + sizeof(mp) - 1) {
			if (q[0] == '\\' && q[1] && q[2] && q[3]) { /* \040 and the like */
				*o++ = (char)((q[1] - '0') * 64 + (q[2] - '0') * 8 + (q[3] - '0'));
				q += 4;
			} else {
				*o++ = *q++;
			}
		}
		*o = 0;
		if (!strncmp(mp, real, rl) && (rl == 1 || mp[rl] == '/') && mp[rl] &&
		    strcmp(mp, real))
			found = 1;
	}
	free(line);
	fclose(f);
	free(real);
	return found;
}

/* SPDX-License-Identifier: MIT */
/*
 * What the active tools (arf-find, arf-du, arf-sum) share, in one static
 * library (tools/common/): the file names in their messages quoted as GNU
 * tools quote them (quote.c), the cache of connections to ARF servers,
 * one per server, reached by arf:// URL or through an ARF mount (conn.c),
 * and the --stats line of each connection (stats.c).
 *
 * Not installed: the tools link it statically.  Nothing here exits; the
 * only output is what a function says it writes.
 */
#ifndef ARF_TOOL_H
#define ARF_TOOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arf.h"

/* ---- quote.c ---------------------------------------------------------------- */

#define ARF_TOOL_QUOTE_ALWAYS 1u /* quote even a name that needs none (quoteaf) */
#define ARF_TOOL_QUOTE_COLON  2u /* ':' needs quoting too (quotef) */

/* Writes s to f as coreutils quotes a file name in the C locale
 * (gnulib's shell-escape quoting): du's quoteaf (ARF_TOOL_QUOTE_ALWAYS)
 * and the checksum tools' quotef (ARF_TOOL_QUOTE_COLON). */
void arf_tool_quote(FILE *f, const char *s, unsigned flags);
/* Writes s to f as GNU find quotes a file name in a message (gnulib's
 * locale quoting style): 'name' in the C locale, curly quotes in a UTF-8
 * one, with C escapes for control bytes. */
void arf_tool_quote_locale(FILE *f, const char *s);

/* ---- conn.c ----------------------------------------------------------------- */

/* One server's entry in a cache.  A tool that keeps more per server puts
 * this first in its own struct and names that struct's size in its
 * arf_tool_conn_type. */
struct arf_tool_conn {
	char *url;                     /* as first given; owned */
	arf_client *c;                 /* NULL: connecting failed, not tried again */
	int idx;                       /* 0, 1, ...: entries in the order they were made */
	struct arf_tool_conn *next;
};

#define ARF_TOOL_CONN_RETRY 1u     /* a failed connect leaves no entry: tried again */

/* What a tool keeps per server, and what to do on making and closing it. */
struct arf_tool_conn_type {
	size_t size;                   /* >= sizeof(struct arf_tool_conn); zeroed when made */
	unsigned flags;                /* ARF_TOOL_CONN_* */
	void (*init)(struct arf_tool_conn *k); /* a new entry, connected or not; may be NULL */
	void (*fini)(struct arf_tool_conn *k); /* frees the tool's part; may be NULL */
};

/* The connections of a tool: one per server, kept to the end.
 * Initialise as { &type } (nothing else set). */
struct arf_tool_conns {
	const struct arf_tool_conn_type *type;
	struct arf_tool_conn *head;    /* the newest first */
	int n;                         /* entries made */
};

/* Whether URLs a and b name the same server (transport, host, port,
 * socket) and volume (?volume=): 0 when either does not parse. */
int arf_tool_same_server(const char *a, const char *b);

/* A handle c gave (arf_resolve) of a volume behind a mount point: 1 with
 * url that volume's URL (for a connection of the tool's own, which its
 * programs need) and *ino the handle there; 0 for c's own volume; or
 * -errno. */
int arf_tool_volume_url(arf_client *c, uint64_t *ino, char *url, size_t cap);

/* The entry for url's server, made (and connected, presenting token, may
 * be NULL, ARF_TOKEN_SIZE bytes) on first use.  0 with *out connected;
 * -ENOTCONN with *out when an earlier connect to the server failed; the
 * connect's failure with *out (NULL with ARF_TOOL_CONN_RETRY) and its
 * reason in err when this one fails; -ENOMEM (err says so, *out untouched). */
int arf_tool_conn_get(struct arf_tool_conns *set, const char *url, const uint8_t *token,
		      struct arf_tool_conn **out, char *err, size_t errlen);

/* The server of open file fd, when fd is on an ARF mount (arf-fuse's
 * ARF_IOC_CRED: its URL, the file's handle and a credential token for the
 * user the kernel says runs us, presented on connecting).  As
 * arf_tool_conn_get, with *ino and *gen set once the mount has answered;
 * -ENOTTY (err: "not on an ARF mount") when fd is not on one. */
int arf_tool_conn_fd(struct arf_tool_conns *set, int fd, struct arf_tool_conn **out,
		     uint64_t *ino, uint32_t *gen, char *err, size_t errlen);

/* Closes every connection, the newest first, after printing its --stats
 * line (arf_tool_stats, to stderr) when stats is set and it connected.
 * The set is empty after. */
void arf_tool_conns_close(struct arf_tool_conns *set, const char *prog, int stats);

/* ---- stats.c ---------------------------------------------------------------- */

/* Writes c's counters to f in one line, as --stats asks:
 * "PROG: stats URL: execs N prog_loads N ... bytes_received N". */
void arf_tool_stats(FILE *f, const char *prog, const char *url, arf_client *c);

#endif /* ARF_TOOL_H */

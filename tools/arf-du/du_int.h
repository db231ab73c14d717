/* SPDX-License-Identifier: MIT */
/*
 * arf-du's parts: the options and the walk (main.c), where listings come
 * from (list.c: a local directory; remote.c: a directory of an ARF
 * server, by the du program), and sizes as GNU du prints them (human.c).
 */
#ifndef ARF_DU_INT_H
#define ARF_DU_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct du_ent {                  /* a child as a listing gives it */
	char *name;                  /* owned; NULL where the listing left it out */
	uint64_t ino, blocks, size;  /* blocks: 512-byte units */
	uint32_t gen, mode, nlink;
	int err;                     /* 0, or -errno: its attributes could not be had */
};

struct du_list {                 /* one directory's listing */
	struct du_ent *e;            /* in listing order; owned */
	size_t n, cap;
	uint64_t blocks, bytes, count; /* children summed where the listing was made */
	int err;                     /* 0, or -errno: the directory could not be read */
};

struct du_opts {
	int all, apparent, inodes, count_all, total, nul, summarize;
	int hash_all;                /* several operands: every (dev, ino) counted once */
	size_t max_depth;            /* SIZE_MAX: no limit */
	int human;                   /* 0, 1024 (-h) or 1000 (--si) */
	uint64_t block_size;         /* output unit */
	char suffix[4];              /* -B K: the unit's name after each size ("K", "kB", "KiB") */
	int stats, local_only;
};

struct du_conn;

/* Where a tree lies: this host (through the kernel) or an ARF server. */
struct du_src {
	struct du_conn *conn;        /* NULL: local */
	uint64_t dev;                /* the (dev, ino) set's dev for this tree */
};

#define DU_VOL_CHAIN 16          /* volumes on one path at most (mount points crossed + 1) */

void du_list_free(struct du_list *l);
int du_list_add(struct du_list *l, const struct du_ent *e);

/* Lists directory path on this host: every child with its lstat
 * attributes (err when fstatat fails), or l->err when it cannot be
 * opened or read.  -ENOMEM only. */
int du_list_local(const char *path, struct du_list *l);

/* remote.c.  Connects (once per server) for an operand: a directory of an
 * ARF mount (fd open on it, from which ARF_IOC_CRED) or an arf:// URL.
 * 0 with *conn, *ino, *gen; < 0 when it cannot (the caller walks through
 * the kernel, or reports: err says why). */
int du_remote_fd(const struct du_opts *o, int fd, struct du_conn **conn, uint64_t *ino,
		 uint32_t *gen, char *err, size_t errlen);
int du_remote_url(const struct du_opts *o, const char *url, struct du_conn **conn,
		  struct du_ent *root, char *err, size_t errlen);
/* The listing of (ino, gen) on conn, by the du program; subdirectories
 * named with du_remote_hint since may come in the same run.  0, or
 * < 0 when the server could not run it (the caller walks another way). */
int du_remote_list(const struct du_opts *o, struct du_conn *conn, uint64_t ino, uint32_t gen,
		   struct du_list *l);
/* The listing of (ino, gen) on conn by readdirplus requests, for a server
 * that cannot run the program and an operand with no path through the
 * kernel (a URL).  0 or -ENOMEM; the listing's own failure in l->err. */
int du_remote_list_plain(struct du_conn *conn, uint64_t ino, uint32_t gen, struct du_list *l);
/* Child name of directory (dir, dgen) on conn (path its path), a symbolic
 * link of a mode other than 0777, which may be a volume's mount point
 * (docs/volumes.md): 1 when it is one, with *out the connection to walk
 * the volume on (NULL: walk it through the mount, which could not be
 * asked for one) and *root its root as the mount (by path) or libarf (by
 * URL) shows it, *vnum the volume's number (st_ino's top 16 bits); 0
 * when it is a plain link; -errno when it cannot be crossed (no such
 * volume, its server down). */
int du_remote_cross(const struct du_opts *o, struct du_conn *conn, uint64_t dir, uint32_t dgen,
		    const char *name, const char *path, int by_url, struct du_conn **out,
		    struct du_ent *root, unsigned *vnum);
/* A directory the walk will want soon. */
void du_remote_hint(struct du_conn *conn, uint64_t ino, uint32_t gen);
uint64_t du_remote_dev(struct du_conn *conn);
/* --stats to stderr, and close everything. */
void du_remote_finish(const struct du_opts *o);

/* human.c: n (bytes, or inodes) in the output's unit, as GNU du writes it. */
char *du_human(uint64_t n, const struct du_opts *o, char *buf, size_t len);
/* -B's argument: 0 or -EINVAL. */
int du_block_size(const char *spec, struct du_opts *o);

#endif

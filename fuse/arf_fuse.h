/* SPDX-License-Identifier: MIT */
/*
 * arf-fuse internals: the mount options (one typed table, shared by arf-fuse
 * and mount.arf), the node table that maps FUSE inode numbers to ARF file
 * handles (ino, gen), open-file handles, and the low-level operation
 * handlers split by what they touch (nodes, namespace, files, directories,
 * extended attributes).
 *
 * Consistency (DESIGN.md §6) is NFS's: the kernel caches attributes and
 * names for the ac* timeouts, open() revalidates with the server
 * (close-to-open), and LOOKUP and GETATTR are answered from the server's
 * current state (the uncached client), so the kernel's timeouts are the
 * only cache of names and attributes on a mount; libarf's caches of the
 * main client serve the data path only.
 * Locks (fcntl and flock) are held by arfd, so they exclude across mounts
 * (locks.c); POSIX ACLs are enforced by the kernel from what arfd stores
 * (xattr.c).  Not installed; libarf's arf.h is the only interface used.
 */
#ifndef ARF_FUSE_H
#define ARF_FUSE_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "arf.h"

#define ARF_FUSE_MAX_IO   (1u << 20)  /* max_read / max_write per request */
#define ARF_FUSE_WSIZE    ARF_FUSE_MAX_IO /* wsize's default: smaller pieces cost more CPU */
#define ARF_FUSE_WSIZE_STR "1048576"
#define ARF_FUSE_BLKSIZE  (1u << 20)  /* st_blksize: the preferred I/O size */
#define ARF_FUSE_HIDDEN   ".arf-hidden-"
#define ARF_FUSE_XATTR_MAX 65536u     /* largest value or name list (XATTR_SIZE_MAX) */

/* ----- options (options.c) ----- */

/** Everything a mount is told, from -o and the command line. */
struct arf_fuse_opts {
	char url[4352];          /* server URL (arf://, arf+shm://), with the export path */
	char mountpoint[4096];
	char fsname[4352];       /* fsname=: shown in /proc/mounts (mount.arf passes SPEC) */
	int foreground;          /* -f: do not daemonize */
	int debug;               /* `debug` or -d: libfuse and libarf chatter on stderr */
	int ac;                  /* attribute caching on (default) */
	uint32_t acregmin, acregmax, acdirmin, acdirmax; /* seconds */
	int writeback;           /* kernel writeback cache (single-client semantics) */
	int acl;                 /* POSIX ACLs (acl, default; noacl) */
	int soft;                /* soft: give up after timeo x (retrans + 1); else hard */
	uint32_t timeo;          /* tenths of a second a reply is waited for (NFS's timeo) */
	uint32_t retrans;        /* soft: tries after the first before EIO (NFS's retrans) */
	char lookupcache[12];    /* lookupcache=: "positive" (default), "all" or "none" */
	int neg_cache;           /* from lookupcache: the kernel caches failed lookups */
	int spin_set;            /* spin_us was given */
	uint32_t spin_us;        /* libarf: poll this long before sleeping */
	uint32_t rsize, wsize;   /* bytes per READ / WRITE request (NFS's rsize, wsize) */
	uint32_t port;           /* port= (0 = from the URL) */
	char transport[8];       /* transport= ("" = from the URL) */
	char socket[256];        /* socket= (shm) */
	char volume[64];         /* volume= ("" = from the URL, else the root volume) */
	char secret[256];        /* secret=: file holding the export's shared secret ("" = none) */
	int allow_other;         /* allow_other (default when mounted by root) */
	int sloppy;              /* mount.arf -s: ignore unknown options */
	char kernel[256];        /* generic options for the kernel: ro,nosuid,... */
};

void arf_fuse_opts_init(struct arf_fuse_opts *o);
/** Parse one comma-separated -o string into o.  Returns 0, or -EINVAL with
 * the reason ("unknown option 'foo'", "acregmin: not a number") in err. */
int arf_fuse_opts_parse(struct arf_fuse_opts *o, const char *optstr, char *err, size_t errlen);
/** Resolve the transport options into o->url and check the timeouts.
 * Returns 0 or -EINVAL with the reason in err. */
int arf_fuse_opts_finish(struct arf_fuse_opts *o, char *err, size_t errlen);
/** Print the option table (for --help). */
void arf_fuse_opts_help(FILE *f);

/** mount.arf: turn SPEC (HOST[:PORT]:/PATH, [V6ADDR][:PORT]:/PATH, or an
 * arf:// URL) into a URL.  Returns 0 or -EINVAL with the reason in err. */
int arf_fuse_spec_to_url(const char *spec, char *url, size_t cap, char *err, size_t errlen);

/* ----- the mounted filesystem ----- */

/** One file the kernel knows (nlookup > 0) or that is open. */
struct arf_fuse_node {
	uint64_t ino;            /* ARF inode number (st_ino) */
	uint32_t gen;            /* ARF generation */
	uint64_t nlookup;        /* kernel references (lookup count); under fs->lock */
	uint32_t nopen;          /* open handles on this mount; under fs->lock */
	int64_t seen_mtime_ns;   /* attributes the kernel was last given ... */
	uint64_t seen_size;      /* ... (close-to-open compares against them) */
	int64_t seen_ctime_ns;   /* (a change of ctime alone: the attributes, not the pages;
				  * or an ACL another client set) */
	uint64_t fresh_until_ms; /* until then read through the uncached client */
	int64_t list_ctime_ns;   /* a directory's ctime and mtime at the opendir */
	int64_t list_mtime_ns;   /* ... that last let the kernel cache its listing */
	uint64_t list_fill_ms;   /* when the kernel last fetched it from the start */
	char *hidden;            /* silly-renamed to this name in (hdir, hgen); NULL if not */
	uint64_t hdir;
	uint32_t hgen;
	struct arf_cred hcred;   /* of the unlinker: removes the hidden name at last close */
	struct arf_fuse_node *next; /* hash chain */
};

/** An open file. */
struct arf_fuse_file {
	struct arf_fuse_node *node;
	struct arf_cred cred;    /* the opener's: reads and writes use them, as NFS does */
	int append;              /* O_APPEND: write at the server's end of file */
	struct arf_fuse_file *prev, *next; /* fs->files (under fs->lock) */
};

struct arf_fuse {
	struct arf_fuse_opts opts;
	arf_client *c;           /* main client: mutations, and reads through its caches */
	arf_client *cf;          /* uncached client (== c under noac): LOOKUP, GETATTR,
				  * readdirplus attributes and open()'s revalidation */
	uint32_t cache_ms;       /* libarf attr/entry timeout of c */
	struct fuse_session *se;  /* NULL once destroyed */
	int se_over;             /* the session loop has ended (atomic): every hard wait
				  * ends (hardmount.c), the last commits' at arf_close too */
	pthread_mutex_t lock;    /* the node table, nlookup, nopen, hidden */
	struct arf_fuse_node **table;
	size_t nbuckets;
	size_t nnodes;
	uint64_t open_files;     /* handles open on this mount (under lock) */
	struct arf_fuse_file *files; /* those handles: freed at the end if the kernel
				      * never released them (an unmount drops the
				      * RELEASE of a file closed just before it) */
	uint64_t hidden_seq;     /* silly-rename counter */
	int acl;                 /* the kernel enforces POSIX ACLs (FUSE_CAP_POSIX_ACL) */
	struct arf_fuse_names *names; /* names.c: directories' names known (NULL: none kept) */
	struct arf_fuse_node root;
	struct arf_fuse_aio *aio;/* aio.c: asynchronous replies to reads (NULL: none) */
	unsigned io_busy;        /* reads and writes being served (atomic) */
	int c_leaked;            /* aio.c: reads were still in c's queue at the end */
	int killpriv_v2;         /* kernelio.c: the kernel was told FUSE_HANDLE_KILLPRIV_V2 */
};

/* kernelio.c: after fuse_session_mount, before the loop: the session's
 * reads and writes of /dev/fuse go through arf-fuse (to add
 * FUSE_HANDLE_KILLPRIV_V2 to the INIT reply).  0 or -errno. */
int arf_fuse_kernel_io(struct arf_fuse *fs);

/* nodes.c */
int arf_fuse_nodes_init(struct arf_fuse *fs, const struct arf_stat *root);
void arf_fuse_nodes_fini(struct arf_fuse *fs);
/* ops_file.c: free the handles the kernel never released (after the session) */
void arf_fuse_files_fini(struct arf_fuse *fs);
/** The node for a FUSE inode number (never NULL for a number the kernel holds). */
struct arf_fuse_node *arf_fuse_node(struct arf_fuse *fs, uint64_t nodeid);
/** Find or make the node for (ino, gen) and count one kernel reference;
 * returns its FUSE inode number, 0 on ENOMEM. */
uint64_t arf_fuse_node_ref(struct arf_fuse *fs, uint64_t ino, uint32_t gen);
void arf_fuse_node_forget(struct arf_fuse *fs, uint64_t nodeid, uint64_t nlookup);
/** The node for (ino, gen) if the kernel or an open file holds it, else NULL;
 * with *nopen set from under the lock. */
struct arf_fuse_node *arf_fuse_node_find(struct arf_fuse *fs, uint64_t ino, uint32_t gen,
					 uint32_t *nopen);
void arf_fuse_node_open(struct arf_fuse *fs, struct arf_fuse_node *n);
/** Drop one open; returns the hidden name to remove (malloc'd, caller frees)
 * when this was the last open of a silly-renamed file, else NULL. */
char *arf_fuse_node_close(struct arf_fuse *fs, struct arf_fuse_node *n, uint64_t *hdir,
			  uint32_t *hgen, struct arf_cred *hcred);
/** Record that (ino, gen) now lives on as name in (dir, dgen), taking name.
 * Returns 0, or -ENOENT if no file of this mount holds it open any more
 * (the caller then removes the name itself, and still owns it). */
int arf_fuse_node_hide(struct arf_fuse *fs, uint64_t ino, uint32_t gen, char *name, uint64_t dir,
		       uint32_t dgen, const struct arf_cred *cred);
/** Take every hidden name left (at unmount); calls fn for each. */
void arf_fuse_node_hidden_each(struct arf_fuse *fs,
			       void (*fn)(struct arf_fuse *fs, struct arf_fuse_node *n));
/** Remember the attributes handed to the kernel. */
void arf_fuse_node_seen(struct arf_fuse *fs, struct arf_fuse_node *n, const struct arf_stat *st);
/** The client to read n through: cf while c may hold a stale copy. */
arf_client *arf_fuse_reader(struct arf_fuse *fs, struct arf_fuse_node *n);

/* names.c: the names of directories this mount made and changed alone,
 * so a lookup of a free name costs no round trip.  init: 0 or -ENOMEM
 * (fs->names stays NULL: nothing is known, which is always right). */
int arf_fuse_names_init(struct arf_fuse *fs);
void arf_fuse_names_fini(struct arf_fuse *fs);
/** 1 when name is known not to be in (dir, dgen) now, else 0 (ask). */
enum { ARF_FUSE_NAME_UNKNOWN, ARF_FUSE_NAME_ABSENT, ARF_FUSE_NAME_PRESENT };
/** What this mount knows of name in (dir, dgen): ARF_FUSE_NAME_* (known
 * only within the name-cache time after the last proof). */
int arf_fuse_names_state(struct arf_fuse *fs, uint64_t dir, uint32_t dgen, const char *name);
/** Forget every directory's names (after an ESTALE). */
void arf_fuse_names_forget_all(struct arf_fuse *fs);
/** A directory this mount just made (its attributes from the reply). */
void arf_fuse_names_new_dir(struct arf_fuse *fs, const struct arf_stat *st);
/** One directory's part of a change of names: del went away, add came. */
struct arf_fuse_names_change {
	uint64_t dir;
	uint32_t gen;
	const char *del, *add;   /* NULL: none */
};
/** After this thread's change on fs->c with result rc: apply it where the
 * reply's wcc proves nobody else changed the directory, forget it where not. */
void arf_fuse_names_after(struct arf_fuse *fs, int rc, const struct arf_fuse_names_change *ch,
			  int n);

/* listing.c: an open directory's listing, fetched ahead in large batches
 * with each entry's attributes, so that the kernel's page-sized readdir
 * and readdirplus requests are answered from memory. */
struct arf_fuse_listing;
struct arf_fuse_listing *arf_fuse_listing_new(void);
void arf_fuse_listing_free(struct arf_fuse_listing *l);
/** Forget what was fetched (a new pass: rewinddir). */
void arf_fuse_listing_reset(struct arf_fuse_listing *l);
/** The entry after cookie (0 = from the start) of directory dn: 0 with *de
 * and *st (NULL when the server gave no attributes for it: stat it), 1 at
 * the end, or libarf's error.  The pointers stay valid until the next call. */
int arf_fuse_listing_next(struct arf_fuse *fs, struct arf_fuse_node *dn,
			  struct arf_fuse_listing *l, uint64_t cookie,
			  const struct arf_dirent **de, const struct arf_stat **st);
/** Serve one kernel request on l: lock and unlock around everything done
 * with it (the kernel may send the next request while the last one's
 * worker still reads ahead). */
void arf_fuse_listing_lock(struct arf_fuse_listing *l);
void arf_fuse_listing_unlock(struct arf_fuse_listing *l);
/** After a reply (l locked): fetch the next batches while the kernel takes
 * in what it got, unless the end is held or enough is held already. */
void arf_fuse_listing_ahead(struct arf_fuse *fs, struct arf_fuse_node *dn,
			    struct arf_fuse_listing *l);

/* attr.c: conversions, cache timeouts and error codes */
void arf_fuse_stat(const struct arf_stat *a, struct stat *st);
double arf_fuse_attr_timeout(const struct arf_fuse *fs, const struct arf_stat *a);
double arf_fuse_entry_timeout(const struct arf_fuse *fs);
/** Reply with an entry for a looked-up or created file (one kernel reference). */
int arf_fuse_reply_entry(struct arf_fuse *fs, fuse_req_t req, const struct arf_stat *a);
/** Fill e for a file and count a kernel reference; -ENOMEM if out of memory. */
int arf_fuse_fill_entry(struct arf_fuse *fs, struct fuse_entry_param *e, const struct arf_stat *a);
/** libarf's -errno or ARF code -> positive errno for fuse_reply_err. */
int arf_fuse_errno(int rc);
/** The same for a file named by handle: a vanished file is ESTALE. */
int arf_fuse_errno_fh(int rc);

/* cred.c: every request runs with the caller's uid, gid and groups (or an
 * open file's: the opener's), and its waits answer to the caller's fate */
void arf_fuse_cred_req(fuse_req_t req, struct arf_cred *cred);
void arf_fuse_cred_set(fuse_req_t req);
/* the same, and the credentials in *cred (an open keeps them: reading the
 * groups again is another open and read of /proc/PID/task/TID/status) */
void arf_fuse_cred_set_keep(fuse_req_t req, struct arf_cred *cred);
void arf_fuse_cred_file(fuse_req_t req, const struct arf_cred *cred);
/* the uid and gid alone, for a request whose refusal says whether the
 * groups matter (cred.c); arf_fuse_cred_again: after such a request, 1 if
 * rc is EACCES or EPERM -- the groups are now read into *cred and set,
 * and the request is to be made once more -- else 0; arf_fuse_cred_fill:
 * read and set them now */
void arf_fuse_cred_lean(fuse_req_t req, struct arf_cred *cred);
int arf_fuse_cred_again(fuse_req_t req, struct arf_cred *cred, int rc);
void arf_fuse_cred_fill(fuse_req_t req, struct arf_cred *cred);

/* aio.c: asynchronous replies to reads.  start: after the session is
 * made, before its loop (0, or -errno: reads are then all synchronous);
 * stop: after the loop, before the session is destroyed. */
int arf_fuse_aio_start(struct arf_fuse *fs);
void arf_fuse_aio_stop(struct arf_fuse *fs);
/** Submit a read of h to be answered later: 0, or -1 when it is not one
 * served so (the caller serves it synchronously). */
int arf_fuse_aio_read(struct arf_fuse *fs, fuse_req_t req, struct arf_fuse_file *h, size_t size,
		      off_t off);
int arf_fuse_aio_write(struct arf_fuse *fs, fuse_req_t req, struct arf_fuse_file *h,
		       const void *buf, size_t size, off_t off);

/* hardmount.c: hard and soft mounts.  Note req as the request this thread
 * serves: a wait of its libarf calls for the server ends only when its
 * caller has a fatal signal pending (or is gone), or when the session
 * ends; then the call fails with EINTR.  wait_session: for work outside a
 * request (unmount), which ends when the session has. */
void arf_fuse_wait_for(fuse_req_t req);
void arf_fuse_wait_session(struct arf_fuse *fs);
/** Work this thread does for its request after the reply (a listing's
 * read ahead): its waits also end as soon as also(arg) says so (NULL: no
 * more; the next arf_fuse_wait_for clears it too). */
void arf_fuse_wait_also(int (*also)(void *), void *arg);
/** Does pid (a thread id) have a fatal signal pending, or is it gone? */
int arf_fuse_caller_killed(pid_t pid);
/* The libarf options of a mount's timeo, retrans and hard/soft. */
void arf_fuse_wait_opts(const struct arf_fuse_opts *o, struct arf_client_opts *co);

/* hidden.c: NFS's silly rename, for files unlinked while open here */
/** If name in (dir, dgen) is the last name of a file open on this mount,
 * rename it to a hidden name first.  Returns 1 (hidden), 0 (nothing to do)
 * or the rename's error. */
int arf_fuse_hide_if_open(struct arf_fuse *fs, uint64_t dir, uint32_t dgen, const char *name,
			  const struct arf_cred *cred);
/** Remove a hidden name at the last close. */
void arf_fuse_hidden_remove(struct arf_fuse *fs, uint64_t dir, uint32_t dgen, char *name,
			    const struct arf_cred *cred);
/** Remove every hidden name left (at unmount). */
void arf_fuse_hidden_cleanup(struct arf_fuse *fs);

/* ops_file.c: close-to-open.  Ask the server for n's attributes; read n
 * through the uncached client while the main one may hold an older copy;
 * *keep_cache says whether the kernel's pages still match, and if not the
 * kernel's attributes are dropped too.  Returns 0 or libarf's error. */
int arf_fuse_revalidate(struct arf_fuse *fs, fuse_ino_t ino, struct arf_fuse_node *n,
			int *keep_cache);
/* names.c: CLOCK_MONOTONIC in milliseconds (the clock of every timeout here). */
uint64_t arf_fuse_now_ms(void);
/* The same, giving the fresh attributes in *fresh. */
int arf_fuse_revalidate_st(struct arf_fuse *fs, fuse_ino_t ino, struct arf_fuse_node *n,
			   int *keep_cache, struct arf_stat *fresh);

/* locks.c: advisory locks at arfd.  want: ask the kernel to pass locks on
 * (op_init); flush: an owner's fcntl locks go (FLUSH); release: a file's
 * flock lock goes (RELEASE), and with the last open a lost lock is
 * forgotten; io: EIO when the file's locks were lost (the lease ran out),
 * else 0; fini: end the threads that wait for locks (the session ends). */
void arf_fuse_ops_locks(struct fuse_lowlevel_ops *ops);
void arf_fuse_locks_want(struct arf_fuse *fs, struct fuse_conn_info *conn);
void arf_fuse_locks_flush(struct arf_fuse *fs, struct arf_fuse_node *n, struct fuse_file_info *fi);
void arf_fuse_locks_release(struct arf_fuse *fs, struct arf_fuse_node *n, struct fuse_file_info *fi);
int arf_fuse_locks_io(struct arf_fuse *fs, struct arf_fuse_node *n);
void arf_fuse_locks_fini(struct arf_fuse *fs);

/* xattr.c: POSIX ACLs enforced by the kernel, when it can (op_init sets
 * fs->acl); a ctime that changed since the kernel last saw it may be an
 * ACL set by another client: the kernel's cached ACLs of n are dropped. */
void arf_fuse_xattr_want(struct arf_fuse *fs, struct fuse_conn_info *conn);
void arf_fuse_acl_changed(struct arf_fuse *fs, struct arf_fuse_node *n);

/* handlers: ops_node.c, ops_ns.c, ops_file.c, ops_dir.c, xattr.c, ioctl.c, locks.c, ops_copy.c,
 * ops_space.c */
void arf_fuse_ops_node(struct fuse_lowlevel_ops *ops);
void arf_fuse_ops_ns(struct fuse_lowlevel_ops *ops);
void arf_fuse_ops_file(struct fuse_lowlevel_ops *ops);
void arf_fuse_ops_dir(struct fuse_lowlevel_ops *ops);
void arf_fuse_ops_xattr(struct fuse_lowlevel_ops *ops);
void arf_fuse_ops_ioctl(struct fuse_lowlevel_ops *ops); /* ioctl.c: ARF_IOC_CRED */
void arf_fuse_ops_copy(struct fuse_lowlevel_ops *ops);  /* ops_copy.c: copy_file_range */
void arf_fuse_ops_space(struct fuse_lowlevel_ops *ops); /* ops_space.c: fallocate, lseek */

static inline struct arf_fuse *arf_fuse_of(fuse_req_t req)
{
	return (struct arf_fuse *)fuse_req_userdata(req);
}

/* session.c / daemon.c */
/** Connect, mount and serve until unmounted.  ready_fd (-1 if none) gets
 * one status byte and an error line once the mount is up or has failed. */
int arf_fuse_run(struct arf_fuse_opts *o, int ready_fd);
/** Fork: the parent waits on a pipe for the child's report and exits with
 * it; the child returns the pipe's write end.  Returns -errno on failure. */
int arf_fuse_daemonize(void);
/** Child side: report success (msg NULL) or failure. */
void arf_fuse_report(int ready_fd, int status, const char *msg);
/** Stdio to /dev/null, cwd to /, logs to syslog (stderr kept if asked). */
void arf_fuse_detach(int keep_stderr);
/** Logs through libfuse's log sink (stderr, or syslog once daemonized). */
void arf_fuse_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* ARF_FUSE_H */

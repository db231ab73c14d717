/* SPDX-License-Identifier: MIT */
/*
 * ioctl: ARF_IOC_CRED, how a tool acts as the user who runs it.
 *
 * A tool such as arf-grep, run by an ordinary user on a file of this
 * mount, wants to talk to arfd itself (to ship a program beside the data)
 * without being able to claim any identity: arfd believes claimed
 * credentials only from a connection that proved root.  Here the kernel
 * vouches for the caller: the ioctl arrives with the uid, gid (and pid,
 * for the groups) of the process that made it, this mount's connection is
 * root-proven, so it asks arfd to mint a credential token for exactly
 * those ids (CRED_MINT), and hands the token back with the mount's URL and
 * the file's handle.  The tool presents the token on its own connection
 * (arf_connect_fd), where it acts as that user, for ARF_IOC_CRED's ttl.
 *
 * The ioctl is a restricted one (_IOR, fixed size well under FUSE's 16
 * KiB, no retry): programs and their output never pass through it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arf_fuse.h"

/* Recent tokens by credentials, so that a tool's ioctl on every file of a
 * tree costs arfd one CRED_MINT per user per half-lifetime, not one per
 * file.  One mount per arf-fuse process: the cache is the process's. */
#define TOKEN_CACHE 8
static struct {
	struct arf_cred cred;
	uint8_t token[ARF_TOKEN_SIZE];
	uint32_t ttl_s;
	uint64_t until_ms;             /* 0 = empty */
} tcache[TOKEN_CACHE];
static pthread_mutex_t tcache_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned tcache_next;

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int same_cred(const struct arf_cred *a, const struct arf_cred *b)
{
	return a->uid == b->uid && a->gid == b->gid && a->ngroups == b->ngroups &&
	       !memcmp(a->groups, b->groups, a->ngroups * sizeof(a->groups[0]));
}

/* A token for cred: from the cache while it has half its life left, else
 * minted by arfd.  0 or libarf's error. */
static int token_for(struct arf_fuse *fs, const struct arf_cred *cred, uint8_t *token,
		     uint32_t *ttl_s)
{
	uint64_t now = mono_ms();
	int rc;

	pthread_mutex_lock(&tcache_lock);
	for (unsigned i = 0; i < TOKEN_CACHE; i++)
		if (tcache[i].until_ms > now && same_cred(&tcache[i].cred, cred)) {
			memcpy(token, tcache[i].token, ARF_TOKEN_SIZE);
			*ttl_s = (uint32_t)((tcache[i].until_ms - now) / 1000u) + tcache[i].ttl_s / 2;
			pthread_mutex_unlock(&tcache_lock);
			return 0;
		}
	pthread_mutex_unlock(&tcache_lock);
	arf_set_thread_cred(cred);
	rc = arf_cred_token(fs->c, token, ttl_s);
	arf_set_thread_cred(NULL);
	if (rc)
		return rc;
	pthread_mutex_lock(&tcache_lock);
	unsigned i = tcache_next++ % TOKEN_CACHE;
	tcache[i].cred = *cred;
	memcpy(tcache[i].token, token, ARF_TOKEN_SIZE);
	tcache[i].ttl_s = *ttl_s;
	tcache[i].until_ms = now + (uint64_t)*ttl_s * 1000u / 2;
	pthread_mutex_unlock(&tcache_lock);
	return 0;
}

static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	struct arf_ioc_cred *ic;
	struct arf_cred cred;
	int rc;

	(void)arg;
	(void)fi;
	(void)in_buf;
	(void)in_bufsz;
	if (cmd != (unsigned int)ARF_IOC_CRED || (flags & FUSE_IOCTL_COMPAT)) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (out_bufsz < sizeof(*ic)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	ic = calloc(1, sizeof(*ic));
	if (!ic) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	arf_fuse_cred_req(req, &cred); /* the kernel's word for who asks */
	if (n->ino > UINT32_MAX) {
		/* behind a mount point: a token of that volume's server, which may
		 * be another (the cache holds the mount's server's) */
		arf_set_thread_cred(&cred);
		rc = arf_cred_token_at(fs->c, n->ino, ic->token, &ic->ttl_s);
		arf_set_thread_cred(NULL);
	} else {
		rc = token_for(fs, &cred, ic->token, &ic->ttl_s);
	}
	if (rc) {
		arf_fuse_log(FUSE_LOG_WARNING, "ARF_IOC_CRED for uid %u: %s", cred.uid,
			     arf_strerror(rc));
		free(ic);
		fuse_reply_err(req, rc == -EPERM ? EPERM : arf_fuse_errno(rc));
		return;
	}
	ic->version = ARF_IOC_CRED_VERSION;
	ic->ino = n->ino;
	ic->gen = n->gen;
	snprintf(ic->url, sizeof(ic->url), "%s", fs->opts.url);
	/* a file of a volume reached through a mount point (arfd's own inode
	 * numbers are below 2^32): that volume's URL, and the handle there */
	if (n->ino > UINT32_MAX &&
	    (rc = arf_volume_url(fs->c, n->ino, ic->url, sizeof(ic->url), &ic->ino))) {
		free(ic);
		fuse_reply_err(req, arf_fuse_errno(rc));
		return;
	}
	fuse_reply_ioctl(req, 0, ic, sizeof(*ic));
	memset(ic->token, 0, sizeof(ic->token));
	free(ic);
}

void arf_fuse_ops_ioctl(struct fuse_lowlevel_ops *ops)
{
	ops->ioctl = op_ioctl;
}

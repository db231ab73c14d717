/* SPDX-License-Identifier: MIT */
/*
 * Credentials: libarf requests carry the uid, gid and supplementary groups
 * of the process that made the FUSE request (AUTH_SYS, as NFS), set per
 * worker thread before any libarf call, and the umask of creates.  The
 * kernel has already checked permissions (default_permissions); the server
 * checks again.  Setting them also names the request the thread serves,
 * whose caller's fate ends a hard mount's wait (hardmount.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/types.h>

#include "arf_fuse.h"

void arf_fuse_cred_req(fuse_req_t req, struct arf_cred *cred)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[16];

	arf_fuse_wait_for(req);
	memset(cred, 0, sizeof(*cred));
	cred->uid = (uint32_t)ctx->uid;
	cred->gid = (uint32_t)ctx->gid;
	/* supplementary groups come from /proc/PID/task/TID/status; a request
	 * from the kernel itself (pid 0) or a vanished process has none */
	int n = ctx->pid ? fuse_req_getgroups(req, 16, groups) : 0;
	if (n > 16)
		n = 16;
	for (int i = 0; i < n; i++)
		cred->groups[cred->ngroups++] = (uint32_t)groups[i];
}

void arf_fuse_cred_set(fuse_req_t req)
{
	struct arf_cred cred;
	arf_fuse_cred_set_keep(req, &cred);
}

void arf_fuse_cred_set_keep(fuse_req_t req, struct arf_cred *cred)
{
	arf_fuse_cred_req(req, cred);
	arf_set_thread_cred(cred);
	/* with ACLs the kernel leaves the umask to us (FUSE_CAP_DONT_MASK):
	 * arfd applies it unless the directory has a default ACL */
	arf_set_thread_umask(arf_fuse_of(req)->acl ? (int)fuse_req_ctx(req)->umask : -1);
}

/* Supplementary groups only when they can matter.  The kernel has checked
 * the caller's rights with all its credentials before the request came
 * (default_permissions); the server checks again, and for most requests
 * the groups could there only allow what the uid and gid alone do not.
 * Reading them is an open, read and close of /proc/PID/task/TID/status
 * (15-25 us on the 2-core VM, for the lookup and the create or unlink of
 * every file a tar extraction makes).  So such a request goes first with
 * the uid and gid alone; an EACCES or EPERM then reads the groups and has
 * the request made again (a refused request changed nothing), so the
 * answer is the one the groups give. */
void arf_fuse_cred_lean(fuse_req_t req, struct arf_cred *cred)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	arf_fuse_wait_for(req);
	memset(cred, 0, sizeof(*cred));
	cred->uid = (uint32_t)ctx->uid;
	cred->gid = (uint32_t)ctx->gid;
	arf_set_thread_cred(cred);
	arf_set_thread_umask(arf_fuse_of(req)->acl ? (int)ctx->umask : -1);
}

int arf_fuse_cred_again(fuse_req_t req, struct arf_cred *cred, int rc)
{
	if (rc != -EACCES && rc != -EPERM)
		return 0;
	arf_fuse_cred_fill(req, cred);
	return 1;
}

void arf_fuse_cred_fill(fuse_req_t req, struct arf_cred *cred)
{
	arf_fuse_cred_req(req, cred);
	arf_set_thread_cred(cred);
}

void arf_fuse_cred_file(fuse_req_t req, const struct arf_cred *cred)
{
	arf_fuse_wait_for(req);
	arf_set_thread_cred(cred);
}

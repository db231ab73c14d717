/* SPDX-License-Identifier: MIT */
/*
 * Credentials: libarf requests carry the uid, gid and supplementary groups
 * of the process that made the FUSE request (AUTH_SYS, as NFS), set per
 * worker thread before any libarf call, and the umask of creates.  The
 * kernel has already checked permissions (default_permissions); the server
 * checks again.  Setting them also names the request the thread serves,
 * whose caller's fate ends a hard mount's wait (hardmount.c).
 */
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

void arf_fuse_cred_file(fuse_req_t req, const struct arf_cred *cred)
{
	arf_fuse_wait_for(req);
	arf_set_thread_cred(cred);
}

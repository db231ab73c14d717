/* SPDX-License-Identifier: MIT */
/*
 * The session's reads and writes of /dev/fuse (libfuse's custom I/O), to
 * say one thing in the INIT reply that libfuse 3.14 cannot:
 * FUSE_HANDLE_KILLPRIV_V2.
 *
 * Why.  Before every write the kernel asks whether the file carries
 * privileges to remove (file_remove_privs: the security.capability
 * attribute, a GETXATTR request to us) unless the inode is marked as
 * having none (S_NOSEC), which it marks only on a filesystem that says it
 * removes them itself.  So every 4 KiB write through the mount cost two
 * FUSE requests, a WRITE and a GETXATTR that arf-fuse answers ENODATA
 * without asking arfd: a crossing of the kernel and a worker's wake-up
 * each (xattr.c answers security.* so).  With KILLPRIV_V2 the kernel
 * marks the inode after its first look and asks again only after the
 * attributes were refreshed (another client may have set bits).
 *
 * What it promises, and why it holds.  The server removes set-id bits
 * on write, truncate and chown (arfd's ops, as a local filesystem does),
 * whatever the kernel asks; and no security.* attribute is stored
 * (xattr.c), so there is no capability to remove.
 *
 * Only the INIT reply is touched, only when the kernel offered the flag,
 * and every other read and write is the plain system call.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "arf_fuse.h"

/* The INIT request's id, while its reply is due (0: none), and whether
 * the kernel offered KILLPRIV_V2.  One session per process. */
static uint64_t init_unique;
static int init_offered;

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	ssize_t r = read(fd, buf, len);
	if (r >= (ssize_t)(sizeof(struct fuse_in_header) + 16)) {
		struct fuse_in_header h;
		memcpy(&h, buf, sizeof(h));
		if (h.opcode == FUSE_INIT) {
			struct fuse_init_in in;
			memset(&in, 0, sizeof(in));
			size_t n = (size_t)r - sizeof(h);
			memcpy(&in, (char *)buf + sizeof(h), n < sizeof(in) ? n : sizeof(in));
			__atomic_store_n(&init_offered, (in.flags & FUSE_HANDLE_KILLPRIV_V2) != 0,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&init_unique, h.unique, __ATOMIC_RELEASE);
		}
	}
	return r;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct arf_fuse *fs = userdata;
	uint64_t want = __atomic_load_n(&init_unique, __ATOMIC_ACQUIRE);

	if (want && count >= 2 && iov[0].iov_len >= sizeof(struct fuse_out_header) &&
	    iov[1].iov_len >= offsetof(struct fuse_init_out, max_background)) {
		struct fuse_out_header oh;
		memcpy(&oh, iov[0].iov_base, sizeof(oh));
		if (oh.unique == want) {
			__atomic_store_n(&init_unique, 0, __ATOMIC_RELAXED);
			if (!oh.error && __atomic_load_n(&init_offered, __ATOMIC_RELAXED)) {
				struct fuse_init_out *out = iov[1].iov_base;
				out->flags |= FUSE_HANDLE_KILLPRIV_V2;
				fs->killpriv_v2 = 1;
			}
		}
	}
	return writev(fd, iov, count);
}

int arf_fuse_kernel_io(struct arf_fuse *fs)
{
	static const struct fuse_custom_io io = { .read = io_read, .writev = io_writev };

	return fuse_session_custom_io(fs->se, &io, fuse_session_fd(fs->se));
}

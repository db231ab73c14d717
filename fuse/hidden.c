/* SPDX-License-Identifier: MIT */
/*
 * Unlinked but open: NFS's "silly rename".  ARF frees a file with its last
 * name, but POSIX keeps an unlinked file alive while it is open.  So when
 * a name about to be removed (unlink, or rename over it) is the last name
 * of a file open on this mount, the file is first renamed to
 * .arf-hidden-<ino>-<n> in the same directory, and that name is removed at
 * the file's last close here (or when the mount goes away).  Processes on
 * this mount keep reading and writing it; other mounts see the name gone
 * (ENOENT), or ESTALE on handles to it once it is finally removed — never
 * another file's data, since (ino, gen) names the file.  Like NFS's
 * .nfsXXXX files, hidden names show in listings, and a directory holding
 * one cannot be removed until the file is closed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf_fuse.h"

int arf_fuse_hide_if_open(struct arf_fuse *fs, uint64_t dir, uint32_t dgen, const char *name,
			  const struct arf_cred *cred)
{
	struct arf_stat st;
	char hname[64];
	uint32_t nopen;
	int rc;

	if (!__atomic_load_n(&fs->open_files, __ATOMIC_RELAXED))
		return 0;
	/* the uncached client: the name must be resolved as the server has it now */
	if (arf_lookup(fs->cf, dir, dgen, name, &st) || S_ISDIR(st.mode) || st.nlink > 1)
		return 0;
	if (!arf_fuse_node_find(fs, st.ino, st.gen, &nopen) || !nopen)
		return 0;
	for (int tries = 0;; tries++) {
		uint64_t seq = __atomic_add_fetch(&fs->hidden_seq, 1, __ATOMIC_RELAXED);
		snprintf(hname, sizeof(hname), ARF_FUSE_HIDDEN "%" PRIu64 "-%" PRIu64, st.ino, seq);
		rc = arf_rename(fs->c, dir, dgen, name, dir, dgen, hname, ARF_RENAME_NOREPLACE);
		if (rc != -EEXIST || tries >= 8)
			break;
	}
	if (rc)
		return rc;
	char *copy = strdup(hname);
	if (!copy || arf_fuse_node_hide(fs, st.ino, st.gen, copy, dir, dgen, cred)) {
		/* closed meanwhile (or no memory to remember it): remove it now */
		free(copy);
		arf_unlink(fs->c, dir, dgen, hname);
	}
	return 1;
}

void arf_fuse_hidden_remove(struct arf_fuse *fs, uint64_t dir, uint32_t dgen, char *name,
			    const struct arf_cred *cred)
{
	arf_set_thread_cred(cred);
	int rc = arf_unlink(fs->c, dir, dgen, name);
	if (rc && rc != -ENOENT && rc != -ESTALE)
		arf_fuse_log(FUSE_LOG_WARNING, "arf-fuse: removing %s: %s", name, arf_strerror(rc));
	free(name);
}

static void cleanup_one(struct arf_fuse *fs, struct arf_fuse_node *n)
{
	/* called under fs->lock: take the name, the unlink needs no lock */
	arf_set_thread_cred(&n->hcred);
	arf_unlink(fs->c, n->hdir, n->hgen, n->hidden);
	free(n->hidden);
	n->hidden = NULL;
}

void arf_fuse_hidden_cleanup(struct arf_fuse *fs)
{
	arf_fuse_node_hidden_each(fs, cleanup_one);
	arf_set_thread_cred(NULL);
}

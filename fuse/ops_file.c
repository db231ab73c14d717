/* SPDX-License-Identifier: MIT */
/*
 * Handlers on open files: create, open, read, write, flush, release, fsync.
 *
 * Close-to-open (DESIGN.md §6): open() asks the server for the file's
 * attributes through the uncached client.  If they differ from what the
 * kernel was last told, the kernel's cached attributes are dropped and its
 * page cache is not kept, so the first read sees every write acknowledged
 * before the open; if they differ from the main client's cached copy, the
 * file is read through the uncached client until that copy has expired.
 * Writes are requests answered at once but unstable, as NFSv3's: arfd
 * makes them durable at a COMMIT, which FLUSH sends when this mount has
 * writes of the file not yet committed (so that close() reports a write
 * that cannot be made durable, as on NFS), and fsync always.
 * Reads and writes use the opener's credentials, as NFS does.
 *
 * O_APPEND: the kernel would append at its own idea of the size, which
 * another client may have outgrown since; so (without the writeback cache)
 * such files are opened for direct I/O and each write is an APPEND request:
 * the server writes it at its own end of file under its lock, so appends
 * from any number of clients never overwrite each other (NFS cannot
 * promise that), and its reply says where the bytes went.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arf_fuse.h"

static int same_attr(const struct arf_stat *a, const struct arf_stat *b)
{
	return a->gen == b->gen && a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       a->ctime_ns == b->ctime_ns && a->mode == b->mode && a->nlink == b->nlink;
}

int arf_fuse_revalidate(struct arf_fuse *fs, fuse_ino_t ino, struct arf_fuse_node *n,
			int *keep_cache)
{
	struct arf_stat fresh;
	return arf_fuse_revalidate_st(fs, ino, n, keep_cache, &fresh);
}

int arf_fuse_revalidate_st(struct arf_fuse *fs, fuse_ino_t ino, struct arf_fuse_node *n,
			   int *keep_cache, struct arf_stat *out)
{
	struct arf_stat cached;
	struct arf_stat fresh;
	int rc = arf_getattr(fs->cf, n->ino, n->gen, &fresh);

	if (rc == -ESTALE)
		arf_fuse_names_forget_all(fs); /* the kernel looks the name up again: ask */
	if (rc)
		return rc;
	/* what a reply of this mount's own left for the kernel's next GETATTR
	 * is older than this: the kernel asks again after open, and must get
	 * these */
	arf_reply_attr_drop(fs->c, n->ino);
	if (fs->cf != fs->c &&
	    (arf_getattr(fs->c, n->ino, n->gen, &cached) || !same_attr(&cached, &fresh)))
		__atomic_store_n(&n->fresh_until_ms, arf_fuse_now_ms() + fs->cache_ms + 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&fs->lock);
	*keep_cache = n->seen_mtime_ns == fresh.mtime_ns && n->seen_size == fresh.size;
	/* ctime moves with every change of attributes (mode, owner, links) */
	int same = *keep_cache && n->seen_ctime_ns == fresh.ctime_ns;
	pthread_mutex_unlock(&fs->lock);
	if (!same && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0); /* attributes only */
	*out = fresh;
	return 0;
}

static struct arf_fuse_file *file_of(struct fuse_file_info *fi)
{
	return (struct arf_fuse_file *)(uintptr_t)fi->fh;
}

static struct arf_fuse_file *file_new(struct arf_fuse *fs, const struct arf_cred *cred,
				      struct arf_fuse_node *n, struct fuse_file_info *fi)
{
	struct arf_fuse_file *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->node = n;
	h->cred = *cred;
	pthread_mutex_lock(&fs->lock);
	h->next = fs->files;
	if (fs->files)
		fs->files->prev = h;
	fs->files = h;
	pthread_mutex_unlock(&fs->lock);
	if ((fi->flags & O_APPEND) && !fs->opts.writeback) {
		h->append = 1;
		fi->direct_io = 1;
	}
	arf_fuse_node_open(fs, n);
	return h;
}

static void file_free(struct arf_fuse *fs, struct arf_fuse_file *h)
{
	uint64_t hdir = 0;
	uint32_t hgen = 0;
	struct arf_cred hcred;
	char *hidden = arf_fuse_node_close(fs, h->node, &hdir, &hgen, &hcred);

	if (hidden)
		arf_fuse_hidden_remove(fs, hdir, hgen, hidden, &hcred);
	pthread_mutex_lock(&fs->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->files = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->lock);
	free(h);
}

void arf_fuse_files_fini(struct arf_fuse *fs)
{
	while (fs->files) {
		struct arf_fuse_file *h = fs->files;
		fs->files = h->next;
		free(h);
	}
}

static int truncate0(struct arf_fuse *fs, struct arf_fuse_node *n)
{
	struct arf_setattr sa;
	struct arf_stat st;

	memset(&sa, 0, sizeof(sa));
	sa.valid = ARF_SET_SIZE;
	return arf_setattr(fs->c, n->ino, n->gen, &sa, &st);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *p = arf_fuse_node(fs, parent);
	struct fuse_entry_param e;
	struct arf_stat st;
	struct arf_cred cred;
	int rc;

	/* the groups change nothing but the rights (cred.c), unless a setgid
	 * bit is asked for (kept only for a member of the file's group) */
	if (mode & S_ISGID)
		arf_fuse_cred_set_keep(req, &cred);
	else
		arf_fuse_cred_lean(req, &cred);
	rc = arf_create(fs->c, p->ino, p->gen, name, mode & 07777, (fi->flags & O_EXCL) != 0, &st);
	if (arf_fuse_cred_again(req, &cred, rc))
		rc = arf_create(fs->c, p->ino, p->gen, name, mode & 07777, (fi->flags & O_EXCL) != 0,
				&st);
	else if (!rc && !cred.ngroups && st.uid != cred.uid)
		arf_fuse_cred_fill(req, &cred); /* another's file, opened: its writes need them */
	struct arf_fuse_names_change ch = { p->ino, p->gen, NULL, name };
	arf_fuse_names_after(fs, rc, &ch, 1); /* names.c: the name is there now */
	if (!rc && (fi->flags & O_TRUNC) && st.size) /* an existing file, reopened */
		rc = arf_setattr(fs->c, st.ino, st.gen,
				 &(struct arf_setattr){ .valid = ARF_SET_SIZE }, &st);
	if (rc) {
		fuse_reply_err(req, arf_fuse_errno(rc));
		return;
	}
	rc = arf_fuse_fill_entry(fs, &e, &st);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	struct arf_fuse_file *h = file_new(fs, &cred, arf_fuse_node(fs, e.ino), fi);
	if (!h) {
		arf_fuse_node_forget(fs, e.ino, 1);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uintptr_t)h;
	if (fuse_reply_create(req, &e, fi) == -ENOENT) { /* interrupted */
		file_free(fs, h);
		arf_fuse_node_forget(fs, e.ino, 1);
	}
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	struct arf_cred cred;
	int keep = 0, rc;

	arf_fuse_cred_set_keep(req, &cred);
	rc = arf_fuse_revalidate(fs, ino, n, &keep);
	if (!rc && (fi->flags & O_TRUNC)) {
		rc = truncate0(fs, n);
		keep = 0;
	}
	if (rc) {
		fuse_reply_err(req, arf_fuse_errno_fh(rc));
		return;
	}
	struct arf_fuse_file *h = file_new(fs, &cred, n, fi);
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uintptr_t)h;
	fi->keep_cache = keep;
	if (fuse_reply_open(req, fi) == -ENOENT)
		file_free(fs, h);
}

/* One read buffer per worker thread: reads are up to 1 MiB, and a fresh
 * malloc of that size per request would be an mmap and munmap each time. */
static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;

static void buf_key_init(void)
{
	pthread_key_create(&buf_key, free);
}

static void *read_buf(size_t size, int *owned)
{
	*owned = 0;
	if (size > ARF_FUSE_MAX_IO) {
		*owned = 1;
		return malloc(size);
	}
	pthread_once(&buf_once, buf_key_init);
	void *b = pthread_getspecific(buf_key);
	if (!b) {
		b = malloc(ARF_FUSE_MAX_IO);
		if (b && pthread_setspecific(buf_key, b)) {
			*owned = 1;
		}
	}
	return b;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_file *h = file_of(fi);
	struct arf_fuse_node *n = h->node;
	int owned;

	(void)ino;
	if (arf_fuse_locks_io(fs, n)) { /* the file's locks were lost: as NFS, EIO */
		fuse_reply_err(req, EIO);
		return;
	}
	/* a read beside others is answered later, holding no thread (aio.c) */
	if (__atomic_fetch_add(&fs->io_busy, 1, __ATOMIC_RELAXED) &&
	    !arf_fuse_aio_read(fs, req, h, size, off))
		return;
	void *buf = read_buf(size, &owned);
	if (!buf) {
		__atomic_sub_fetch(&fs->io_busy, 1, __ATOMIC_RELAXED);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	arf_fuse_cred_file(req, &h->cred);
	ssize_t r = arf_read(arf_fuse_reader(fs, n), n->ino, n->gen, (uint64_t)off, buf, size);
	__atomic_sub_fetch(&fs->io_busy, 1, __ATOMIC_RELAXED);
	if (r < 0)
		fuse_reply_err(req, arf_fuse_errno_fh((int)r));
	else
		fuse_reply_buf(req, buf, (size_t)r);
	if (owned)
		free(buf);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_file *h = file_of(fi);
	struct arf_fuse_node *n = h->node;

	(void)ino;
	if (arf_fuse_locks_io(fs, n)) { /* the file's locks were lost: as NFS, EIO */
		fuse_reply_err(req, EIO);
		return;
	}
	/* a write beside others is answered later, holding no thread (aio.c) */
	if (__atomic_fetch_add(&fs->io_busy, 1, __ATOMIC_RELAXED) && !h->append &&
	    !arf_fuse_aio_write(fs, req, h, buf, size, off))
		return;
	arf_fuse_cred_file(req, &h->cred);
	ssize_t w = h->append ? arf_append(fs->c, n->ino, n->gen, buf, size, NULL)
			      : arf_write(fs->c, n->ino, n->gen, (uint64_t)off, buf, size);
	__atomic_sub_fetch(&fs->io_busy, 1, __ATOMIC_RELAXED);
	if (w < 0)
		fuse_reply_err(req, arf_fuse_errno_fh((int)w));
	else
		fuse_reply_write(req, (size_t)w);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_file *h = file_of(fi);
	struct arf_fuse_node *n = h->node;

	/* the closing process's fcntl locks on the file go (locks.c); then
	 * the COMMIT of what this mount wrote to the file (none: no round
	 * trip), whose error is close()'s */
	(void)ino;
	arf_fuse_locks_flush(fs, n, fi);
	arf_fuse_cred_file(req, &h->cred); /* a COMMIT waiting on the server ends by SIGKILL */
	fuse_reply_err(req, arf_fuse_errno_fh(arf_flush(fs->c, n->ino, n->gen)));
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);

	arf_fuse_wait_for(req); /* the last close may remove a hidden name */
	arf_fuse_locks_release(fs, arf_fuse_node(fs, ino), fi); /* its flock lock goes */
	file_free(fs, file_of(fi));
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);

	(void)datasync;
	if (fi && fi->fh)
		arf_fuse_cred_file(req, &file_of(fi)->cred);
	else
		arf_fuse_cred_set(req);
	fuse_reply_err(req, arf_fuse_errno_fh(arf_fsync(fs->c, n->ino, n->gen)));
}

void arf_fuse_ops_file(struct fuse_lowlevel_ops *ops)
{
	ops->create = op_create;
	ops->open = op_open;
	ops->read = op_read;
	ops->write = op_write;
	ops->flush = op_flush;
	ops->release = op_release;
	ops->fsync = op_fsync;
}

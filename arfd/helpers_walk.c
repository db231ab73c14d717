/* SPDX-License-Identifier: MIT */
/*
 * arfd/helpers_walk — the helpers that tree-walking tools ship programs
 * around: dir_read (a batch of a directory's entries with their
 * attributes) and file_digest (a file's digest where its bytes are).
 *
 * arf-find, arf-du and arf-sum run for ordinary users, whose runs see no
 * regions (arfd_identity_sees_regions), so they cannot walk the chains
 * themselves as the root-only readdir program does.  These helpers do the
 * walking in C with the run's credentials, exactly as the requests would:
 * dir_read lists as READDIR does (arf_ops_readdir checks read permission)
 * and gives each child's attributes only when the caller may search the
 * directory (as stat(2) of the child would need); file_digest reads as
 * READ does (arf_ops_read's permission check).  The contracts, with the
 * record layouts, are in mobilecode/progs/arf_prog_abi.h.
 *
 * Both take the filesystem lock for a bounded piece of work at a time (a
 * batch of at most ARF_PROG_DR_BATCH entries; a MiB of a file) and pay
 * for it in instructions like every helper (arfd/helpers.c), so a walk or
 * a digest is bounded by the run's budget and wall clock.  A digest takes
 * the lock once per MiB, not for the whole file: a file hashed for a
 * second would stop every request for that second.  It stays one state
 * of the file by comparing size, mtime and ctime before each piece with
 * those at the start (every change to a file's bytes sets its mtime and
 * ctime), giving -EAGAIN when they moved.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <openssl/evp.h>

#include "arf_meta.h"
#include "arf_prog_abi.h"
#include "arfd.h"
#include "helpers.h"

/* What one entry costs besides its bytes: the lock's share, a getattr (a
 * RocksDB or region read), about what LOOKUP costs in helpers.c. */
#define COST_ENTRY 128u

#define PAD8(n) (((n) + 7u) & ~(size_t)7u)

static int ret_err(uint64_t *ret, int err)
{
	*ret = (uint64_t)(int64_t)err;
	return 0;
}

/* dir_read(rd, rd_len, buf, buf_len) -> bytes written or -errno. */
static int h_dir_read(struct arf_mc_call *c, uint64_t *ret)
{
	struct arfd_exec *ex = c->user;
	struct arfd *d = ex->d;
	struct arf_prog_dir_read *rd = c->ptr[0];
	uint8_t *buf = c->ptr[2];
	size_t cap = c->arg[3], used = 0, n = 0, max;
	struct arf_ops_dirent *ents;
	int eof = 0, rc, search = 0, stop;

	if (c->arg[1] < sizeof(*rd))
		return ret_err(ret, -EINVAL);
	max = rd->max && rd->max < ARF_PROG_DR_BATCH ? rd->max : ARF_PROG_DR_BATCH;
	/* no more than could fit, each record at least a header and 8 bytes of name */
	if (max > cap / (sizeof(struct arf_prog_dirent) + 8))
		max = cap / (sizeof(struct arf_prog_dirent) + 8);
	if (max == 0)
		return ret_err(ret, -ENOSPC);
	ents = malloc(max * sizeof(*ents));
	if (!ents)
		return ret_err(ret, -ENOMEM);

	arfd_fs_rdlock(d);
	rc = arfd_failed(d) ? -EIO /* commit.c */
			    : arf_ops_readdir(&d->fs, &ex->cr, rd->dir, rd->dgen, rd->cookie, ents,
					      max, &n, &eof);
	if (!rc)
		search = arf_ops_access(&d->fs, &ex->cr, rd->dir, rd->dgen, X_OK) == 0;
	size_t i;
	for (i = 0; !rc && i < n; i++) {
		/* without search permission no handle either: the child could
		 * not be looked up, so it may not be named (knfsd's READDIRPLUS
		 * leaves such handles out too) */
		struct arf_prog_dirent h = { .ino = ents[i].ino, .cookie = ents[i].cookie,
					     .gen = search ? ents[i].gen : 0, .type = ents[i].type,
					     .namelen = ents[i].namelen };
		struct arf_ops_attr a;
		char target[4096];
		size_t tlen = 0;

		if (search && (rd->flags & ARF_PROG_DR_ATTRS) &&
		    arf_ops_getattr(&d->fs, ents[i].ino, ents[i].gen, &a) == 0) {
			h.has_attr = 1;
			if ((rd->flags & ARF_PROG_DR_LINKS) && S_ISLNK(a.mode) &&
			    arf_ops_readlink(&d->fs, ents[i].ino, ents[i].gen, target,
					     sizeof(target), &tlen) == 0)
				h.has_link = 1;
		}
		size_t need = sizeof(h) + (h.has_attr ? sizeof(struct arf_prog_attr) : 0) +
			      PAD8(h.namelen) + (h.has_link ? 8 + PAD8(tlen) : 0);
		if (need > cap - used)
			break; /* the next call lists it */
		memcpy(buf + used, &h, sizeof(h));
		used += sizeof(h);
		if (h.has_attr) {
			struct arf_prog_attr pa;

			memset(&pa, 0, sizeof(pa));
			ARF_META_ATTR_COPY(&pa, &a);
			memcpy(buf + used, &pa, sizeof(pa));
			used += sizeof(pa);
		}
		memset(buf + used, 0, PAD8(h.namelen));
		memcpy(buf + used, ents[i].name, h.namelen);
		used += PAD8(h.namelen);
		if (h.has_link) {
			uint32_t l[2] = { (uint32_t)tlen, 0 };

			memcpy(buf + used, l, sizeof(l));
			used += sizeof(l);
			memset(buf + used, 0, PAD8(tlen));
			memcpy(buf + used, target, tlen);
			used += PAD8(tlen);
		}
		rd->cookie = ents[i].cookie;
	}
	arfd_fs_rdunlock(d);
	free(ents);
	if (rc)
		return ret_err(ret, rc);
	if (i == 0 && n > 0)
		return ret_err(ret, -ENOSPC); /* not even one record fits */
	rd->n = (uint32_t)i;
	rd->eof = i == n && eof;
	*ret = used;
	if ((stop = arf_mc_call_charge(c, i * COST_ENTRY + used / ARF_MC_BYTES_PER_INSN)))
		return stop;
	return arf_mc_call_check(c); /* the lock may have taken a while */
}

static const EVP_MD *digest_md(uint32_t alg)
{
	switch (alg) {
	case ARF_PROG_DG_MD5: return EVP_md5();
	case ARF_PROG_DG_SHA1: return EVP_sha1();
	case ARF_PROG_DG_SHA224: return EVP_sha224();
	case ARF_PROG_DG_SHA256: return EVP_sha256();
	case ARF_PROG_DG_SHA384: return EVP_sha384();
	case ARF_PROG_DG_SHA512: return EVP_sha512();
	case ARF_PROG_DG_BLAKE2B512: return EVP_blake2b512();
	default: return NULL;
	}
}

/* The worker thread's piece buffer (a MiB, kept to the thread's end). */
static pthread_key_t piece_key;
static pthread_once_t piece_once = PTHREAD_ONCE_INIT;
static int piece_key_rc;

static void piece_key_make(void)
{
	piece_key_rc = pthread_key_create(&piece_key, free);
}

static uint8_t *piece_buf(void)
{
	uint8_t *p;

	pthread_once(&piece_once, piece_key_make);
	if (piece_key_rc)
		return NULL;
	p = pthread_getspecific(piece_key);
	if (!p && (p = malloc(ARF_MC_CHUNK)) && pthread_setspecific(piece_key, p)) {
		free(p);
		p = NULL;
	}
	return p;
}

/* file_digest(dg, dg_len) -> 0 or -errno. */
static int h_file_digest(struct arf_mc_call *c, uint64_t *ret)
{
	struct arfd_exec *ex = c->user;
	struct arfd *d = ex->d;
	struct arf_prog_file_digest *dg = c->ptr[0];
	struct arf_ops_attr first = { 0 }, now;
	const EVP_MD *md;
	EVP_MD_CTX *ctx;
	uint64_t off, end;
	uint8_t *piece;
	int rc = 0, stop = 0;
	unsigned dlen = 0;

	if (c->arg[1] < sizeof(*dg) || !(md = digest_md(dg->alg)))
		return ret_err(ret, -EINVAL);
	if (!(piece = piece_buf()) || !(ctx = EVP_MD_CTX_new()))
		return ret_err(ret, -ENOMEM);
	if (!EVP_DigestInit_ex(ctx, md, NULL)) {
		EVP_MD_CTX_free(ctx);
		return ret_err(ret, -EINVAL);
	}
	off = dg->off;
	end = 0;
	for (int k = 0;; k++) {
		size_t got = 0;
		int last = 0;

		arfd_fs_rdlock(d);
		rc = arfd_failed(d) ? -EIO /* commit.c */
				    : arf_ops_getattr(&d->fs, dg->ino, dg->gen, &now);
		if (!rc && k == 0) {
			first = now;
			if (S_ISDIR(first.mode))
				rc = -EISDIR;
			else if (!S_ISREG(first.mode))
				rc = -EINVAL;
			end = dg->len && dg->off + dg->len < first.size ? dg->off + dg->len
								    : first.size;
			if (!rc && end > off && end - off > ARF_PROG_DIGEST_MAX)
				rc = -EFBIG;
		} else if (!rc && (now.size != first.size || now.mtime_ns != first.mtime_ns ||
				   now.ctime_ns != first.ctime_ns)) {
			rc = -EAGAIN; /* changed while hashed: no digest of a mix */
		}
		/* read at least once, so that an empty range is permission-checked too */
		if (!rc) {
			size_t n = end > off ? (end - off < ARF_MC_CHUNK ? end - off : ARF_MC_CHUNK) : 0;

			rc = arf_ops_read(&d->fs, &ex->cr, dg->ino, dg->gen, off, piece, n, &got);
			last = got < n || off + got >= end;
		}
		arfd_fs_rdunlock(d);
		if (rc)
			break;
		if (got && !EVP_DigestUpdate(ctx, piece, got)) {
			rc = -EIO;
			break;
		}
		off += got;
		if ((stop = arf_mc_call_charge_bytes(c, got)))
			break;
		if (last)
			break;
	}
	if (!rc && !stop && !EVP_DigestFinal_ex(ctx, dg->digest, &dlen))
		rc = -EIO;
	EVP_MD_CTX_free(ctx);
	if (stop)
		return stop;
	if (!rc) {
		dg->dlen = dlen;
		dg->size = first.size;
		dg->mtime_ns = first.mtime_ns;
		dg->ctime_ns = first.ctime_ns;
	}
	return ret_err(ret, rc);
}

int arfd_helpers_walk_register(struct arf_mc_helpers *h, char *err, size_t errlen)
{
	const struct arf_mc_helper_def defs[] = {
		{ ARF_PH_DIR_READ, "dir_read",
		  { ARF_MC_ARG_PTR_RW, ARF_MC_ARG_SIZE, ARF_MC_ARG_PTR_RW, ARF_MC_ARG_SIZE },
		  h_dir_read, NULL },
		{ ARF_PH_FILE_DIGEST, "file_digest", { ARF_MC_ARG_PTR_RW, ARF_MC_ARG_SIZE },
		  h_file_digest, NULL },
	};

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		int rc = arf_mc_helpers_add(h, &defs[i], err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

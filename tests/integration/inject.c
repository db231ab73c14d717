/* SPDX-License-Identifier: MIT */
/*
 * arf-inject DIR KIND — damage a stopped server's RocksDB on purpose, for
 * the fsck tests: the regions are rebuilt from DIR as arfd would, one
 * object is changed and re-sealed (so only its meaning is wrong), and it is
 * written back with arfd's own store code (RocksDB, or the data log for a
 * data block), as a transaction of an incarnation of its own.
 *
 *   dangling     free the inode of a file that still has a name
 *   linkcount    add one to a file's link count
 *   leakedblock  tag a free block as used by a file
 *   doubleblock  point a second file's first extent at the first file's block
 *   tagmismatch  change the file block index in a block's tag
 *   blockbytes   change a byte of a file's data block
 *   oldformat    mark the store as written by an older arfd (format 0)
 *   format3      mark it as written by the arfd before seeded data log
 *                segments (format 3, which this arfd reads and upgrades)
 *   showformat   print the store's format (changes nothing)
 *
 * Prints what it changed; exits 1 if the filesystem has nothing to damage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <rocksdb/c.h>

#include "arf_meta_fs.h"
#include "store.h"

/* Rewrite the store's format record, as an arfd of another format would
 * have left it; arfd must refuse the directory, not misread it. */
static int set_format(const char *dir, uint32_t fmt)
{
	char *rerr = NULL;
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(wo, 1);
	rocksdb_t *db = rocksdb_open(o, dir, &rerr);
	if (db) {
		rocksdb_put(db, wo, "format", 6, (const char *)&fmt, 4, &rerr);
		rocksdb_close(db);
	}
	rocksdb_writeoptions_destroy(wo);
	rocksdb_options_destroy(o);
	if (rerr) {
		fprintf(stderr, "arf-inject: %s: %s\n", dir, rerr);
		free(rerr);
		return 1;
	}
	printf("store format set to %u\n", fmt);
	return 0;
}

static int show_format(const char *dir)
{
	char *rerr = NULL, *v;
	size_t vlen = 0;
	uint32_t fmt = 0;
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_t *db = rocksdb_open_for_read_only(o, dir, 0, &rerr);
	if (db) {
		if ((v = rocksdb_get(db, ro, "format", 6, &vlen, &rerr)) && vlen == 4)
			memcpy(&fmt, v, 4);
		free(v);
		rocksdb_close(db);
	}
	rocksdb_readoptions_destroy(ro);
	rocksdb_options_destroy(o);
	if (rerr) {
		fprintf(stderr, "arf-inject: %s: %s\n", dir, rerr);
		free(rerr);
		return 1;
	}
	printf("store format %u\n", fmt);
	return 0;
}

static struct arf_meta_fs fs;

/* The n-th live regular file with inline extents and data (1-based). */
static struct arf_meta_inode *file_with_data(int nth)
{
	for (uint64_t ino = 2; ino <= fs.sb->n_inodes; ino++) {
		struct arf_meta_inode *in = arf_meta_inode_ptr(&fs, ino);
		if (in->ino && S_ISREG(in->mode) && in->nlink == 1 && in->blocks &&
		    !(in->flags & ARF_META_INO_EXTPAGES) && in->u.ext[0].len && --nth == 0)
			return in;
	}
	fprintf(stderr, "arf-inject: no file with data to damage\n");
	exit(1);
}

int main(int argc, char **argv)
{
	struct arfd_store *st;
	struct arf_meta_super sb;
	char err[512];
	uint64_t nobj;

	if (argc != 3) {
		fprintf(stderr, "usage: arf-inject DIR dangling|linkcount|leakedblock|doubleblock|"
				"tagmismatch|blockbytes|oldformat|format3|showformat\n");
		return 2;
	}
	const char *kind = argv[2];
	if (!strcmp(kind, "oldformat"))
		return set_format(argv[1], 0);
	if (!strcmp(kind, "format3"))
		return set_format(argv[1], 3);
	if (!strcmp(kind, "showformat"))
		return show_format(argv[1]);
	if (arfd_store_open(argv[1], 0, &st, err, sizeof(err)) || arfd_store_super(st, &sb, err, sizeof(err)) != 1) {
		fprintf(stderr, "arf-inject: %s: %s\n", argv[1], err);
		return 1;
	}
	uint8_t *meta = mmap(NULL, sb.meta_size, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *data = mmap(NULL, sb.data_size, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (meta == MAP_FAILED || data == MAP_FAILED ||
	    arfd_store_load(st, meta, sb.meta_size, data, sb.data_size, &nobj, err, sizeof(err)) ||
	    arf_meta_fs_attach(&fs, meta, sb.meta_size, data, sb.data_size, err, sizeof(err))) {
		fprintf(stderr, "arf-inject: load: %s\n", err);
		return 1;
	}
	struct arf_meta_dirty d = { .region = ARF_REGION_META };
	void *obj = NULL;
	size_t len = 0;
	struct arf_meta_inode *a = file_with_data(1);

	if (!strcmp(kind, "dangling")) {
		obj = a;
		len = sizeof(*a);
		arf_meta_obj_begin(obj, len);
		uint32_t gen = a->gen;
		uint64_t ino = a->ino;
		memset((uint8_t *)a + sizeof(a->h), 0, sizeof(*a) - sizeof(a->h));
		a->gen = gen;
		printf("freed inode %llu, which still has a name\n", (unsigned long long)ino);
	} else if (!strcmp(kind, "linkcount")) {
		obj = a;
		len = sizeof(*a);
		arf_meta_obj_begin(obj, len);
		a->nlink++;
		printf("inode %llu: nlink %u\n", (unsigned long long)a->ino, a->nlink);
	} else if (!strcmp(kind, "leakedblock")) {
		uint32_t b = fs.sb->n_blocks;
		while (b-- > 0 && arf_meta_tag_ptr(&fs, b)->ino)
			;
		struct arf_meta_tag *t = arf_meta_tag_ptr(&fs, b);
		obj = t;
		len = sizeof(*t);
		arf_meta_obj_begin(obj, len);
		t->ino = a->ino;
		t->gen = a->gen;
		t->fblk = 999;
		printf("block %u tagged as inode %llu's\n", b, (unsigned long long)a->ino);
	} else if (!strcmp(kind, "doubleblock")) {
		struct arf_meta_inode *b = file_with_data(2);
		obj = b;
		len = sizeof(*b);
		arf_meta_obj_begin(obj, len);
		b->u.ext[0].pblk = a->u.ext[0].pblk;
		printf("inode %llu's first extent now starts at inode %llu's block %u\n",
		       (unsigned long long)b->ino, (unsigned long long)a->ino, a->u.ext[0].pblk);
	} else if (!strcmp(kind, "tagmismatch")) {
		struct arf_meta_tag *t = arf_meta_tag_ptr(&fs, a->u.ext[0].pblk);
		obj = t;
		len = sizeof(*t);
		arf_meta_obj_begin(obj, len);
		t->fblk += 7;
		printf("tag of block %u now says file block %llu\n", a->u.ext[0].pblk,
		       (unsigned long long)t->fblk);
	} else if (!strcmp(kind, "blockbytes")) {
		uint8_t *blk = arf_meta_block_ptr(&fs, a->u.ext[0].pblk);
		blk[17] ^= 0xff;
		d.region = ARF_REGION_DATA;
		d.off = arf_meta_block_off(a->u.ext[0].pblk);
		d.len = ARF_BLOCK_SIZE;
		printf("byte 17 of block %u changed\n", a->u.ext[0].pblk);
	} else {
		fprintf(stderr, "arf-inject: unknown kind '%s'\n", kind);
		return 2;
	}
	if (obj) {
		arf_meta_obj_seal(obj, len);
		d.off = (uint64_t)((uint8_t *)obj - meta);
		d.len = (uint32_t)len;
	}
	/* written as arfd would: a new incarnation, a transaction after the last */
	uint64_t inc;
	if (arfd_store_begin(st, sb.n_blocks, &inc, err, sizeof(err)) ||
	    arfd_store_put_txn(st, &fs, &d, 1, arfd_store_seq(st) + 1, 0, err, sizeof(err)) ||
	    arfd_store_sync(st, err, sizeof(err))) {
		fprintf(stderr, "arf-inject: write: %s\n", err);
		return 1;
	}
	arf_meta_fs_detach(&fs);
	arfd_store_close(st);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The find walker's contract (find.c, run by arf-find): argument and output
 * layouts, fixed-size and little-endian like the rest of arf_prog_abi.h.
 *
 * The client keeps the queue of directories still to list; each run takes
 * a batch of them (struct arf_find_item), lists each with ARF_PH_DIR_READ
 * (the run's credentials: an unprivileged user walks only what it may
 * read), evaluates a filter on every entry and emits the entries that may
 * be printed and the subdirectories the client descends into.  The filter
 * is a postfix program of struct arf_find_node over three values (false,
 * true, unknown): it is what the client's expression needs to print
 * anything, with every test the walker cannot decide (-path, -regex, ...)
 * unknown, so an entry is left behind only when no action of the
 * expression could fire for it.  The client evaluates the whole expression
 * again on what arrives, so the walker only ever saves work, never decides.
 * A symbolic link of a mode other than 0777 may be a volume's mount point
 * (docs/volumes.md), which the client crosses: it is always sent, with its
 * attributes even under ARF_FIND_F_NOATTR; so is a link without attributes
 * (in a directory the caller may not search), which may be one too.
 *
 * Argument: struct arf_find_arg, then nitems struct arf_find_item, then
 * nnodes struct arf_find_node, then the strings the nodes name (str_len
 * bytes).  Output: records, each a struct arf_find_rec: ARF_FIND_REC_ENT
 * followed by len bytes (the dir_read record: struct arf_prog_dirent,
 * attributes, name, link), or ARF_FIND_REC_DIR (no bytes) when the walker
 * leaves an item: listed to its end, failed, or stopped by the run's
 * limits (eof 0: resume at cookie).  Items after the last DIR record were
 * not reached.  r0: 0, or -EINVAL for a malformed argument.
 */
#ifndef ARF_PROG_FIND_H
#define ARF_PROG_FIND_H

#include <stdint.h>

struct arf_find_arg {
	uint32_t nitems;            /* directories to list, in order */
	uint32_t nnodes;            /* filter nodes (0: every entry is emitted) */
	uint32_t str_len;           /* bytes of strings after the nodes */
	uint32_t flags;             /* ARF_FIND_F_* */
	uint32_t maxdepth;          /* entries deeper are not looked at */
	uint32_t mindepth;          /* entries shallower are emitted only as directories */
	uint32_t max_out;           /* stop taking batches past this many output bytes */
	uint32_t max_ents;          /* entries looked at per run, at most */
};

#define ARF_FIND_F_LINKS 1u         /* symbolic links' targets (ARF_PROG_DR_LINKS) */
#define ARF_FIND_F_EMPTY 2u         /* say whether each directory listed is empty */
#define ARF_FIND_F_NOATTR 4u        /* send entries without their attributes (the client
				     * needs names and types only): has_attr 0 and the
				     * record's cookie 1 say they were left out */

struct arf_find_item {
	uint64_t ino;
	uint64_t cookie;            /* resume after this entry (0 = start) */
	uint32_t gen;
	uint32_t depth;             /* the directory's; its entries are depth + 1 */
	uint32_t id;                /* the client's name for it, echoed in records */
	uint32_t pad0;
};

enum arf_find_op {
	ARF_FIND_TRUE = 0,
	ARF_FIND_FALSE,
	ARF_FIND_UNKNOWN,           /* a test the walker does not decide */
	ARF_FIND_AND,               /* pops two, pushes one */
	ARF_FIND_OR,
	ARF_FIND_NOT,
	ARF_FIND_NAME,              /* glob str[a .. a + y) on the name; cmp 1: ASCII case folded */
	ARF_FIND_TYPE,              /* a: mask of 1 << (S_IFMT >> 12) */
	ARF_FIND_SIZE,              /* ceil(size / y) cmp x */
	ARF_FIND_TIME,              /* a: 0 atime, 1 ctime, 2 mtime: x < t <= y (ns, signed) */
	ARF_FIND_UID,               /* uid cmp x */
	ARF_FIND_GID,
	ARF_FIND_LINKS,             /* nlink cmp x */
	ARF_FIND_INUM,              /* ino cmp x */
	ARF_FIND_PERM,              /* cmp 0: mode & 07777 == x; 1: all of x; 2: any of x (or x 0) */
	ARF_FIND_EMPTY,             /* empty regular file or directory */
	ARF_FIND_NOPS,
};

enum arf_find_cmp { ARF_FIND_EQ = 0, ARF_FIND_LT = 1, ARF_FIND_GT = 2 };

struct arf_find_node {
	uint8_t  op;                /* enum arf_find_op */
	uint8_t  cmp;               /* enum arf_find_cmp, or as op says */
	uint16_t pad0;
	uint32_t a;
	uint64_t x, y;
};

#define ARF_FIND_STACK 32           /* filter stack depth at most */
#define ARF_FIND_MAX_NODES 512

enum arf_find_rec_kind { ARF_FIND_REC_ENT = 1, ARF_FIND_REC_DIR = 2 };

/* Directory emptiness, in struct arf_find_rec's err for an ENT record of a
 * directory (ARF_FIND_F_EMPTY); a negative value is the errno listing it. */
#define ARF_FIND_EMPTY_UNKNOWN 0
#define ARF_FIND_EMPTY_YES 1
#define ARF_FIND_EMPTY_NO 2

struct arf_find_rec {
	uint32_t kind;              /* enum arf_find_rec_kind */
	uint32_t id;                /* ENT: the parent item's id; DIR: the item's */
	int32_t  err;               /* ENT: emptiness; DIR: 0 or -errno of its listing */
	uint32_t len;               /* ENT: bytes that follow; DIR: 1 = listed to its end */
	uint64_t cookie;            /* DIR: resume after this entry; ENT: 1 when the
				     * attributes were left out (ARF_FIND_F_NOATTR) */
};

#ifndef __bpf__
_Static_assert(sizeof(struct arf_find_arg) == 32, "arf_find_arg");
_Static_assert(sizeof(struct arf_find_item) == 32, "arf_find_item");
_Static_assert(sizeof(struct arf_find_node) == 24, "arf_find_node");
_Static_assert(sizeof(struct arf_find_rec) == 24, "arf_find_rec");
#endif

#endif /* ARF_PROG_FIND_H */

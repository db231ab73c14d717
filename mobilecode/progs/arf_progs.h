/* SPDX-License-Identifier: MIT */
/*
 * The standard programs, built at build time from the restricted C in this
 * folder (clang -O2 -target bpf -mcpu=v3) and embedded as ELF objects, so
 * that libarf can ship them and arfctl can name them.  Their argument and
 * output layouts are in arf_prog_abi.h.
 */
#ifndef ARF_PROGS_H
#define ARF_PROGS_H

#include <stddef.h>

enum arf_std_prog {
	ARF_STD_PROG_LOOKUP = 0,  /* lookup.c: chain lookup of one name */
	ARF_STD_PROG_RESOLVE,     /* resolve.c: whole-path resolution */
	ARF_STD_PROG_READDIR,     /* readdir.c: batched readdir with attributes */
	ARF_STD_PROG_MKDIRP,      /* mkdirp.c: mkdir -p through the mkdir hook */
	ARF_STD_PROG_FIND,        /* find.c: arf-find's walker (arf_prog_find.h) */
	ARF_STD_PROG_DU,          /* du.c: arf-du's walk of a batch of directories */
	ARF_STD_PROG_SUM,         /* sum.c: arf-sum's digests of a batch of files */
	ARF_STD_PROG_COUNT,
};

struct arf_std_prog_image {
	const char *name;          /* "lookup", "resolve", "readdir", "mkdirp", "find", "du", "sum" */
	const unsigned char *elf;  /* the ELF object, as clang wrote it */
	size_t len;                /* 0 (elf NULL): built without clang */
};

/* Indexed by enum arf_std_prog; static storage. */
extern const struct arf_std_prog_image arf_std_progs[ARF_STD_PROG_COUNT];

#endif /* ARF_PROGS_H */

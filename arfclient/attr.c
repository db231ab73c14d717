/* SPDX-License-Identifier: MIT */
/*
 * libarf's attribute conversions: each form the client receives
 * attributes in -- an inode record read one-sidedly, a reply's
 * struct arf_proto_attr, a standard program's struct arf_prog_attr --
 * to the struct arf_stat the API hands out.  One function per form; the
 * field list itself is meta's (ARF_META_ATTR_COPY), shared with arfd.
 */
#include "arf_prog_abi.h"
#include "client_int.h"

void arf_stat_from_inode(const struct arf_meta_inode *in, struct arf_stat *st)
{
	ARF_META_ATTR_FROM_INODE(st, in);
}

void arf_stat_from_proto(const struct arf_proto_attr *a, struct arf_stat *st)
{
	ARF_META_ATTR_COPY(st, a);
}

void arf_stat_from_prog(const struct arf_prog_attr *a, struct arf_stat *st)
{
	ARF_META_ATTR_COPY(st, a);
}

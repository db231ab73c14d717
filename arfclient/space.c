/* SPDX-License-Identifier: MIT */
/*
 * libarf file space: O_APPEND writes placed by the server (arf_append),
 * fallocate (arf_fallocate) and SEEK_DATA / SEEK_HOLE (arf_seek), each a
 * request to arfd's ops/space.c hooks.  An append is one request, so it
 * lands whole at the end of file whatever other clients append; a re-send
 * after a reconnect carries the same request id, and arfd answers it from
 * its reply cache with the offset it chose the first time, instead of
 * appending again at a new end of file.
 */
#include <errno.h>
#include <string.h>

#include "client_int.h"

/* Preallocation and punching go in pieces of this much, each its own
 * transaction: a 10 GiB fallocate is not one 10 GiB RocksDB batch. */
#define FALLOC_PIECE (64ull << 20)

static void put_fh(struct arf_proto_wr *w, uint64_t ino, uint32_t gen)
{
	struct arf_proto_fh fh = { ino, gen };
	arf_proto_put_fh(w, &fh);
}

ssize_t arf_v_append(arf_client *c, uint64_t ino, uint32_t gen, const void *buf, size_t len,
		   uint64_t *off)
{
	struct arf_proto_wr w;
	struct arf_net_buf resp;
	struct arf_proto_rd r;
	struct arf_proto_attr a;
	struct arf_stat st;

	if (len > c->info.max_io)
		return -EINVAL; /* one request, or it would not be one append */
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	arf_proto_put_bytes(&w, buf, (uint32_t)len);
	int rc = arf_req(c, ARF_OP_APPEND, &w, &resp);
	arf_proto_wr_free(&w);
	arf_icache_drop(c, ino);
	if (rc) {
		arf_net_buf_free(&resp);
		return rc;
	}
	arf_proto_rd_init(&r, resp.data, resp.len);
	uint64_t at = arf_proto_get_u64(&r);
	uint32_t written = arf_proto_get_u32(&r);
	arf_proto_get_attr(&r, &a);
	arf_net_buf_free(&resp);
	if (r.err || written > len)
		return ARF_EPROTO;
	arf_stat_from_proto(&a, &st);
	arf_icache_update_stat(c, &st);
	if (off)
		*off = at;
	return (ssize_t)written;
}

int arf_v_fallocate(arf_client *c, uint64_t ino, uint32_t gen, int mode, uint64_t off, uint64_t len,
		  struct arf_stat *out)
{
	struct arf_stat st;
	int rc = 0;

	if (mode < 0 || len == 0)
		return -EINVAL;
	for (uint64_t done = 0; done < len && !rc;) {
		struct arf_proto_wr w;
		struct arf_net_buf resp;
		uint64_t piece = len - done > FALLOC_PIECE ? FALLOC_PIECE : len - done;
		arf_proto_wr_init(&w);
		put_fh(&w, ino, gen);
		arf_proto_put_u32(&w, (uint32_t)mode);
		arf_proto_put_u64(&w, off + done);
		arf_proto_put_u64(&w, piece);
		rc = arf_req(c, ARF_OP_FALLOCATE, &w, &resp);
		arf_proto_wr_free(&w);
		if (!rc) {
			struct arf_proto_rd r;
			struct arf_proto_attr a;
			arf_proto_rd_init(&r, resp.data, resp.len);
			arf_proto_get_attr(&r, &a);
			if (r.err)
				rc = ARF_EPROTO;
			else
				arf_stat_from_proto(&a, &st);
		}
		arf_net_buf_free(&resp);
		done += piece;
	}
	arf_icache_drop(c, ino);
	if (!rc && out)
		*out = st;
	return rc;
}

int arf_v_seek(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, int whence,
	     uint64_t *result)
{
	struct arf_proto_wr w;
	struct arf_net_buf resp;

	if (whence < 0)
		return -EINVAL;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	arf_proto_put_u64(&w, off);
	arf_proto_put_u32(&w, (uint32_t)whence);
	int rc = arf_req(c, ARF_OP_SEEK, &w, &resp);
	arf_proto_wr_free(&w);
	if (!rc) {
		struct arf_proto_rd r;
		arf_proto_rd_init(&r, resp.data, resp.len);
		*result = arf_proto_get_u64(&r);
		if (!arf_proto_rd_done(&r))
			rc = ARF_EPROTO;
	}
	arf_net_buf_free(&resp);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * libarf requests that do in one round trip what would take several:
 * arf_create_write (a small file made whole: CREATE_WRITE) and arf_copy
 * (server-side copy: COPY, the bytes stay in the server).  Both are
 * mutations: like requests.c's, they carry the thread's credentials and
 * keep the caches right with the attributes their replies carry.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "client_int.h"

static void put_fh(struct arf_proto_wr *w, uint64_t ino, uint32_t gen)
{
	struct arf_proto_fh fh = { ino, gen };
	arf_proto_put_fh(w, &fh);
}

int arf_v_create_write(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
		     const void *data, size_t len, const struct arf_setattr *sa,
		     struct arf_stat *out)
{
	struct arf_proto_setattr ps = { 0 };
	struct arf_proto_wr w;
	struct arf_net_buf resp;
	size_t nlen = strlen(name);
	int rc;

	arf_change_begin(c);
	if (nlen == 0)
		return -ENOENT;
	if (len > c->info.max_io || (sa && (sa->valid & ARF_SET_SIZE)))
		return -EINVAL;
	if (sa) {
		ps.valid = sa->valid;
		ps.mode = sa->mode;
		ps.uid = sa->uid;
		ps.gid = sa->gid;
		ps.atime_ns = sa->atime_ns;
		ps.mtime_ns = sa->mtime_ns;
	}
	arf_proto_wr_init(&w);
	put_fh(&w, dir, dgen);
	arf_proto_put_bytes(&w, name, (uint32_t)nlen);
	arf_proto_put_u32(&w, mode);
	arf_proto_put_setattr(&w, &ps);
	arf_proto_put_bytes(&w, data, (uint32_t)len);
	arf_icache_drop(c, dir);
	/* sent again after a reconnect, it is answered from arfd's reply
	 * cache (conn.c keeps its request id): never made twice */
	rc = arf_req(c, ARF_OP_CREATE_WRITE, &w, &resp);
	arf_proto_wr_free(&w);
	if (!rc) {
		struct arf_proto_rd r;
		struct arf_proto_attr a;
		struct arf_stat st;
		arf_proto_rd_init(&r, resp.data, resp.len);
		arf_proto_get_attr(&r, &a);
		if (r.err) {
			rc = ARF_EPROTO;
		} else {
			arf_stat_from_proto(&a, &st);
			arf_icache_update_stat(c, &st);
			arf_ecache_put(c, dir, name, nlen, st.ino, st.gen, DT_REG);
			arf_change_wcc(c, &r);
			if (out)
				*out = st;
		}
	}
	arf_net_buf_free(&resp);
	return rc;
}

ssize_t arf_v_copy(arf_client *c, uint64_t src, uint32_t sgen, uint64_t soff, uint64_t dst,
		 uint32_t dgen, uint64_t doff, size_t len, unsigned flags, struct arf_stat *dst_st)
{
	size_t done = 0;

	if (flags)
		return -EINVAL;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	/* len 0 is still one request: the server checks the handles and rights */
	do {
		struct arf_proto_wr w;
		struct arf_net_buf resp;
		uint64_t want = len - done > ARF_COPY_CHUNK ? ARF_COPY_CHUNK : len - done;
		arf_proto_wr_init(&w);
		put_fh(&w, src, sgen);
		arf_proto_put_u64(&w, soff + done);
		put_fh(&w, dst, dgen);
		arf_proto_put_u64(&w, doff + done);
		arf_proto_put_u64(&w, want);
		arf_proto_put_u32(&w, 0);
		int rc = arf_req(c, ARF_OP_COPY, &w, &resp);
		arf_proto_wr_free(&w);
		arf_icache_drop(c, dst);
		if (rc) {
			arf_net_buf_free(&resp);
			return done ? (ssize_t)done : rc;
		}
		struct arf_proto_rd r;
		struct arf_proto_attr a;
		struct arf_stat st;
		arf_proto_rd_init(&r, resp.data, resp.len);
		uint64_t copied = arf_proto_get_u64(&r);
		arf_proto_get_attr(&r, &a);
		arf_net_buf_free(&resp);
		if (r.err || copied > want)
			return done ? (ssize_t)done : ARF_EPROTO;
		arf_stat_from_proto(&a, &st);
		arf_icache_update_stat(c, &st);
		if (dst_st)
			*dst_st = st;
		done += (size_t)copied;
		if (copied < want)
			break; /* the source's end, or the space's */
	} while (done < len);
	return (ssize_t)done;
}

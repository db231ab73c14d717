/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the request protocol decoder (net/proto.c) over
 * untrusted bytes, in the sequences its users decode them.  The first byte
 * picks a message: a request body as arfd/dispatch.c reads it (credentials,
 * then the fields of its kind, then "whole body consumed"), or a reply body
 * as libarf reads it (attr, statfs, the WRITE, READDIR and lock replies, a
 * change's attr with its directories' wcc and objs), or the
 * handshake's hello and info blobs.  Besides "no crash, no stray read" it
 * checks two properties: the decoder never moves past its buffer, and a
 * request body it accepts whole encodes back to the same bytes with the
 * arf_proto_put_* encoders (so decoder and encoder agree on the format).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arf_meta.h"
#include "arf_proto.h"

/* The fields of a request after the credentials, as dispatch.c reads them. */
enum field { F_END, F_FH, F_NAME, F_U32, F_U64, F_PATH, F_IO, F_SETATTR, F_LOCKREQ, F_VALUE };

static const struct {
	uint16_t op;
	uint8_t f[8];
} reqs[] = {
	{ ARF_OP_GETATTR, { F_FH } },
	{ ARF_OP_LOOKUP, { F_FH, F_NAME } },
	{ ARF_OP_READDIR, { F_FH, F_U64, F_U32 } },
	{ ARF_OP_READ, { F_FH, F_U64, F_U32 } },
	{ ARF_OP_READLINK, { F_FH } },
	{ ARF_OP_STATFS, { F_END } },
	{ ARF_OP_ACCESS, { F_FH, F_U32 } },
	{ ARF_OP_CREATE, { F_FH, F_NAME, F_U32, F_U32 } },
	{ ARF_OP_MKDIR, { F_FH, F_NAME, F_U32 } },
	{ ARF_OP_MKNOD, { F_FH, F_NAME, F_U32, F_U64 } },
	{ ARF_OP_UNLINK, { F_FH, F_NAME } },
	{ ARF_OP_RMDIR, { F_FH, F_NAME } },
	{ ARF_OP_RENAME, { F_FH, F_NAME, F_FH, F_NAME, F_U32 } },
	{ ARF_OP_LINK, { F_FH, F_FH, F_NAME } },
	{ ARF_OP_SYMLINK, { F_FH, F_NAME, F_PATH } },
	{ ARF_OP_SETATTR, { F_FH, F_SETATTR } },
	{ ARF_OP_WRITE, { F_FH, F_U64, F_IO } },
	{ ARF_OP_FSYNC, { F_FH } },
	{ ARF_OP_STATUS, { F_END } },
	{ ARF_OP_CREATE_WRITE, { F_FH, F_NAME, F_U32, F_SETATTR, F_IO } },
	{ ARF_OP_COPY, { F_FH, F_U64, F_FH, F_U64, F_U64, F_U32 } },
	{ ARF_OP_LOCK, { F_FH, F_LOCKREQ } },
	{ ARF_OP_UNLOCK, { F_FH, F_U64, F_U64, F_U64, F_U32, F_U64, F_U64 } },
	{ ARF_OP_LOCK_RENEW, { F_U64, F_U64, F_U32 } },
	{ ARF_OP_LOCK_CANCEL, { F_U64, F_U64 } },
	{ ARF_OP_XATTR_GET, { F_FH, F_NAME, F_U32 } },
	{ ARF_OP_XATTR_SET, { F_FH, F_NAME, F_VALUE, F_U32 } },
	{ ARF_OP_XATTR_LIST, { F_FH, F_U32 } },
	{ ARF_OP_XATTR_REMOVE, { F_FH, F_NAME } },
	{ ARF_OP_READDIRPLUS, { F_FH, F_U64, F_U32 } },
};
#define NREQS (sizeof(reqs) / sizeof(reqs[0]))

enum { M_ATTR = NREQS, M_STATFS, M_WRITE_REPLY, M_READDIR_REPLY, M_HELLO, M_INFO, M_LOCK_REPLY, M_WCC_REPLY,
       M_LOCATION, M_READDIRPLUS_REPLY,
       NMSG };

static void check_pos(const struct arf_proto_rd *r)
{
	if (r->pos > r->len)
		abort(); /* the decoder moved past its buffer */
}

/* A request body: decode as dispatch does, then re-encode and compare. */
static void request(unsigned k, const uint8_t *data, size_t size)
{
	struct arf_proto_rd r;
	struct arf_proto_wr w;
	struct arf_proto_cred cred;

	if (arf_proto_op_index(reqs[k].op) < 0 || !strcmp(arf_proto_op_name(reqs[k].op), "unknown"))
		abort(); /* every request kind has a name and a counter */
	arf_proto_rd_init(&r, data, size);
	arf_proto_wr_init(&w);
	arf_proto_get_cred(&r, &cred);
	if (cred.ngroups > ARF_PROTO_NGROUPS)
		abort();
	arf_proto_put_cred(&w, &cred);
	for (int i = 0; i < 8 && reqs[k].f[i] != F_END; i++) {
		struct arf_proto_fh fh;
		struct arf_proto_setattr sa;
		struct arf_proto_lock_req lr;
		const uint8_t *p;
		uint32_t n = 0;

		switch (reqs[k].f[i]) {
		case F_FH:
			arf_proto_get_fh(&r, &fh);
			arf_proto_put_fh(&w, &fh);
			break;
		case F_NAME:
			p = (const uint8_t *)arf_proto_get_name(&r, &n);
			if (!r.err && (!p || n == 0 || n > 4096 || p < data || p + n > data + size))
				abort(); /* an accepted name is 1..4096 bytes inside the body */
			if (p)
				arf_proto_put_bytes(&w, p, n);
			break;
		case F_U32:
			arf_proto_put_u32(&w, arf_proto_get_u32(&r));
			break;
		case F_U64:
			arf_proto_put_u64(&w, arf_proto_get_u64(&r));
			break;
		case F_PATH:
		case F_IO:
		case F_VALUE:
			p = arf_proto_get_bytes(&r, reqs[k].f[i] == F_PATH ? ARF_PATH_MAX :
						reqs[k].f[i] == F_IO ? ARF_PROTO_MAX_IO : UINT32_MAX, &n);
			if (p && (p < data || p + n > data + size))
				abort();
			if (!p && n)
				abort();
			if (p)
				arf_proto_put_bytes(&w, p, n);
			break;
		case F_SETATTR:
			arf_proto_get_setattr(&r, &sa);
			arf_proto_put_setattr(&w, &sa);
			break;
		case F_LOCKREQ:
			arf_proto_get_lock_req(&r, &lr);
			arf_proto_put_lock_req(&w, &lr);
			break;
		}
		check_pos(&r);
	}
	if (arf_proto_rd_done(&r)) {
		if (w.err || w.len != size || memcmp(w.buf, data, size))
			abort(); /* accepted, but not what the encoder writes */
	}
	arf_proto_wr_free(&w);
}

/* Reply bodies and handshake blobs, decoded as libarf and arfd do. */
static void message(unsigned k, const uint8_t *data, size_t size)
{
	struct arf_proto_rd r;
	struct arf_proto_attr a;
	struct arf_proto_statfs s;
	struct arf_proto_hello h;
	static struct arf_proto_info info;
	char name[ARF_NAME_MAX + 1];

	arf_proto_rd_init(&r, data, size);
	switch (k) {
	case M_ATTR:
		arf_proto_get_attr(&r, &a);
		break;
	case M_STATFS:
		arf_proto_get_statfs(&r, &s);
		break;
	case M_WRITE_REPLY:
		(void)arf_proto_get_u32(&r);
		arf_proto_get_attr(&r, &a);
		break;
	case M_READDIR_REPLY: /* arfclient/api.c req_readdir */
	case M_READDIRPLUS_REPLY: {
		uint32_t cnt = arf_proto_get_u32(&r);
		(void)arf_proto_get_u32(&r);
		for (uint32_t i = 0; i < cnt && !r.err && i < ARF_PROTO_MAX_READDIR; i++) {
			uint32_t nl = 0;
			(void)arf_proto_get_u64(&r);
			(void)arf_proto_get_u32(&r);
			(void)arf_proto_get_u32(&r);
			(void)arf_proto_get_u64(&r);
			const uint8_t *nm = arf_proto_get_bytes(&r, ARF_NAME_MAX, &nl);
			if (r.err)
				break;
			if (nl > ARF_NAME_MAX)
				abort();
			memcpy(name, nm, nl);
			name[nl] = 0;
			if (k == M_READDIRPLUS_REPLY) {
				uint32_t has = arf_proto_get_u32(&r);
				if (has == 1)
					arf_proto_get_attr(&r, &a);
				else if (has)
					break; /* libarf: ARF_EPROTO */
			}
			check_pos(&r);
		}
		break;
	}
	case M_HELLO: /* arfd/server.c on_hello */
		arf_proto_get_hello(&r, &h);
		if (strnlen(h.path, sizeof(h.path)) >= sizeof(h.path) ||
		    strnlen(h.volume, sizeof(h.volume)) >= sizeof(h.volume))
			abort();
		break;
	case M_LOCATION: { /* arfclient/requests.c arf_locate: LOCATE's reply */
		struct arf_proto_location l;
		arf_proto_get_location(&r, &l);
		if (strnlen(l.server, sizeof(l.server)) >= sizeof(l.server) ||
		    strnlen(l.address, sizeof(l.address)) >= sizeof(l.address) ||
		    strnlen(l.state, sizeof(l.state)) >= sizeof(l.state))
			abort();
		break;
	}
	case M_WCC_REPLY: { /* arfclient/requests.c: a change of names' attr, wcc and objs */
		struct arf_proto_wcc v[ARF_PROTO_MAX_WCC];
		arf_proto_get_attr(&r, &a);
		uint32_t n = arf_proto_get_wcc(&r, v, ARF_PROTO_MAX_WCC);
		if (n > ARF_PROTO_MAX_WCC)
			abort();
		check_pos(&r);
		if (!r.err && r.pos < r.len) {
			uint32_t nobj = arf_proto_get_u32(&r);
			for (uint32_t i = 0; i < nobj && i < ARF_PROTO_MAX_WCC && !r.err; i++) {
				struct arf_proto_fh fh;
				arf_proto_get_fh(&r, &fh);
				if (arf_proto_get_u32(&r))
					arf_proto_get_attr(&r, &a);
			}
		}
		break;
	}
	case M_INFO: /* arfclient/client.c */
		arf_proto_get_info(&r, &info);
		if (strnlen(info.export_name, sizeof(info.export_name)) >= sizeof(info.export_name))
			abort();
		break;
	case M_LOCK_REPLY: { /* arfclient/locks.c: header, a TEST's conflict, ranges */
		struct arf_proto_lock_hdr lh;
		arf_proto_get_lock_hdr(&r, &lh);
		if (lh.result == ARF_LOCK_R_CONFLICT) {
			(void)arf_proto_get_u32(&r);
			(void)arf_proto_get_u64(&r);
			(void)arf_proto_get_u64(&r);
			(void)arf_proto_get_u32(&r);
		}
		uint32_t nr = arf_proto_get_u32(&r);
		for (uint32_t i = 0; i < nr && i <= ARF_LOCK_MAX_RANGES && !r.err; i++) {
			(void)arf_proto_get_u32(&r);
			(void)arf_proto_get_u64(&r);
			(void)arf_proto_get_u64(&r);
		}
		break;
	}
	}
	check_pos(&r);
	if (r.err && r.err != ARF_EPROTO)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned k = data[0] % NMSG;
	/* A copy of exactly the body's size, so ASan sees any overrun. */
	size_t n = size - 1;
	uint8_t *body = malloc(n ? n : 1);
	if (!body)
		return 0;
	memcpy(body, data + 1, n);
	if (k < NREQS)
		request(k, body, n);
	else
		message(k, body, n);
	free(body);
	/* names of arbitrary ops (frame op field is 16 bits) */
	if (size >= 3) {
		uint16_t op = (uint16_t)(data[1] | data[2] << 8);
		int i = arf_proto_op_index(op);
		if (i >= ARF_PROTO_NKINDS || !arf_proto_op_name(op))
			abort();
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Writes the binary seed corpora of the fuzz targets (run by hand through
 * tests/fuzz/mkcorpus.sh, whose output is kept in tests/fuzz/corpus/):
 * valid request and reply bodies made with the arf_proto encoders, streams
 * of frames, HELLO replies with a real info blob, and bytecode assembled
 * from the conformance suite's programs.
 *
 *   mkcorpus proto|frame|handshake OUTDIR
 *   mkcorpus mc OUT ASMFILE [MEMHEX]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf_mc.h"
#include "arf_meta.h"
#include "arf_proto.h"
#include "net_int.h"

static void write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* selector byte + body */
static void seed(const char *dir, const char *name, unsigned sel, const struct arf_proto_wr *w)
{
	uint8_t *b = malloc(w->len + 1);
	b[0] = (uint8_t)sel;
	memcpy(b + 1, w->buf, w->len);
	write_file(dir, name, b, w->len + 1);
	free(b);
}

/* the order of reqs[] in fuzz_proto.c: the seed's first byte picks the
 * request kind there */
static const uint16_t ops[] = {
	ARF_OP_GETATTR, ARF_OP_LOOKUP, ARF_OP_READDIR, ARF_OP_READ, ARF_OP_READLINK,
	ARF_OP_STATFS, ARF_OP_ACCESS, ARF_OP_CREATE, ARF_OP_MKDIR, ARF_OP_MKNOD,
	ARF_OP_UNLINK, ARF_OP_RMDIR, ARF_OP_RENAME, ARF_OP_LINK, ARF_OP_SYMLINK,
	ARF_OP_SETATTR, ARF_OP_WRITE, ARF_OP_FSYNC, ARF_OP_STATUS,
	ARF_OP_CREATE_WRITE, ARF_OP_COPY, ARF_OP_LOCK, ARF_OP_UNLOCK, ARF_OP_LOCK_RENEW, ARF_OP_LOCK_CANCEL,
	ARF_OP_XATTR_GET, ARF_OP_XATTR_SET, ARF_OP_XATTR_LIST, ARF_OP_XATTR_REMOVE,
	ARF_OP_READDIRPLUS,
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static void request_body(struct arf_proto_wr *w, uint16_t op)
{
	struct arf_proto_cred cred = { 1000, 1000, 2, { 4, 27 } };
	struct arf_proto_fh fh = { 1, 1 }, fh2 = { 42, 3 };
	struct arf_proto_setattr sa = { 0x3, 0644, 1000, 1000, 4096, 0, 0 };

	arf_proto_put_cred(w, &cred);
	switch (op) {
	case ARF_OP_GETATTR: case ARF_OP_READLINK: case ARF_OP_FSYNC:
		arf_proto_put_fh(w, &fh2);
		break;
	case ARF_OP_LOOKUP: case ARF_OP_UNLINK: case ARF_OP_RMDIR:
		arf_proto_put_fh(w, &fh);
		arf_proto_put_bytes(w, "hello.txt", 9);
		break;
	case ARF_OP_READDIR: case ARF_OP_READDIRPLUS:
		arf_proto_put_fh(w, &fh);
		arf_proto_put_u64(w, 0);
		arf_proto_put_u32(w, 128);
		break;
	case ARF_OP_READ:
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_u64(w, 8192);
		arf_proto_put_u32(w, 4096);
		break;
	case ARF_OP_ACCESS:
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_u32(w, 4);
		break;
	case ARF_OP_CREATE:
		arf_proto_put_fh(w, &fh);
		arf_proto_put_bytes(w, "new", 3);
		arf_proto_put_u32(w, 0100644);
		arf_proto_put_u32(w, 1);
		break;
	case ARF_OP_MKDIR:
		arf_proto_put_fh(w, &fh);
		arf_proto_put_bytes(w, "dir", 3);
		arf_proto_put_u32(w, 040755);
		break;
	case ARF_OP_MKNOD:
		arf_proto_put_fh(w, &fh);
		arf_proto_put_bytes(w, "fifo", 4);
		arf_proto_put_u32(w, 010644);
		arf_proto_put_u64(w, 0);
		break;
	case ARF_OP_RENAME:
		arf_proto_put_fh(w, &fh);
		arf_proto_put_bytes(w, "a", 1);
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_bytes(w, "b", 1);
		arf_proto_put_u32(w, 0);
		break;
	case ARF_OP_LINK:
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_fh(w, &fh);
		arf_proto_put_bytes(w, "link", 4);
		break;
	case ARF_OP_SYMLINK:
		arf_proto_put_fh(w, &fh);
		arf_proto_put_bytes(w, "sym", 3);
		arf_proto_put_bytes(w, "../target/file", 14);
		break;
	case ARF_OP_SETATTR:
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_setattr(w, &sa);
		break;
	case ARF_OP_WRITE:
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_u64(w, 100);
		arf_proto_put_bytes(w, "some file contents\n", 19);
		break;
	case ARF_OP_CREATE_WRITE:
		arf_proto_put_fh(w, &fh);
		arf_proto_put_bytes(w, "small.txt", 9);
		arf_proto_put_u32(w, 0100644);
		arf_proto_put_setattr(w, &sa);
		arf_proto_put_bytes(w, "a small file\n", 13);
		break;
	case ARF_OP_COPY:
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_u64(w, 0);
		arf_proto_put_fh(w, &fh);
		arf_proto_put_u64(w, 4096);
		arf_proto_put_u64(w, 1 << 20);
		arf_proto_put_u32(w, 0);
		break;
	case ARF_OP_LOCK: {
		struct arf_proto_lock_req lr = { 0x1122334455667788ull, 7, 0xabcdefull, 4242,
						 ARF_LOCK_POSIX, ARF_LOCK_WR, ARF_LOCK_F_WAIT, 0, 99,
						 3, 15000 };
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_lock_req(w, &lr);
		break;
	}
	case ARF_OP_UNLOCK:
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_u64(w, 0x1122334455667788ull);
		arf_proto_put_u64(w, 7);
		arf_proto_put_u64(w, 0xabcdefull);
		arf_proto_put_u32(w, ARF_LOCK_FLOCK);
		arf_proto_put_u64(w, 0);
		arf_proto_put_u64(w, ARF_LOCK_EOF);
		break;
	case ARF_OP_LOCK_RENEW:
		arf_proto_put_u64(w, 0x1122334455667788ull);
		arf_proto_put_u64(w, 7);
		arf_proto_put_u32(w, ARF_LOCK_RENEW_RECLAIMED);
		break;
	case ARF_OP_LOCK_CANCEL:
		arf_proto_put_u64(w, 0x1122334455667788ull);
		arf_proto_put_u64(w, 3);
		break;
	case ARF_OP_XATTR_GET:
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_bytes(w, "user.comment", 12);
		arf_proto_put_u32(w, 4096);
		break;
	case ARF_OP_XATTR_SET:
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_bytes(w, "system.posix_acl_access", 23);
		arf_proto_put_bytes(w, "\x02\0\0\0\x01\0\x06\0\xff\xff\xff\xff"
				    "\x04\0\x04\0\xff\xff\xff\xff\x20\0\x04\0\xff\xff\xff\xff", 28);
		arf_proto_put_u32(w, ARF_XATTR_CREATE);
		break;
	case ARF_OP_XATTR_LIST:
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_u32(w, 0);
		break;
	case ARF_OP_XATTR_REMOVE:
		arf_proto_put_fh(w, &fh2);
		arf_proto_put_bytes(w, "user.comment", 12);
		break;
	default: /* STATFS, STATUS: credentials only */
		break;
	}
}

/* A READDIR reply of two entries; with plus (READDIRPLUS), each followed
 * by u32 has_attr: the first with attributes, the second without. */
static void put_listing(struct arf_proto_wr *w, const struct arf_proto_attr *plus)
{
	arf_proto_put_u32(w, 2);
	arf_proto_put_u32(w, 1);
	for (int i = 0; i < 2; i++) {
		arf_proto_put_u64(w, 10 + i);
		arf_proto_put_u32(w, 1);
		arf_proto_put_u32(w, 8);
		arf_proto_put_u64(w, 100 + i);
		arf_proto_put_bytes(w, i ? "second" : "first", i ? 6 : 5);
		if (plus) {
			arf_proto_put_u32(w, !i);
			if (!i)
				arf_proto_put_attr(w, plus);
		}
	}
}

static void make_info(struct arf_proto_info *info)
{
	struct arf_meta_super sb;

	memset(info, 0, sizeof(*info));
	info->version = ARF_PROTO_INFO_VERSION;
	info->flags = ARF_PROTO_INFO_SYNC;
	info->incarnation = 0x1122334455667788ull;
	info->max_io = ARF_PROTO_MAX_IO;
	info->root_gen = 1;
	strcpy(info->export_name, "/");
	memset(&sb, 0, sizeof(sb));
	arf_meta_super_layout(&sb, 64, 64, 64, 16, 64, 0);
	memcpy(info->super, &sb, sizeof(sb));
}

static void proto(const char *dir)
{
	struct arf_proto_wr w;
	char name[64];

	for (unsigned k = 0; k < NOPS; k++) {
		arf_proto_wr_init(&w);
		request_body(&w, ops[k]);
		snprintf(name, sizeof(name), "req-%s", arf_proto_op_name(ops[k]));
		seed(dir, name, k, &w);
		arf_proto_wr_free(&w);
	}
	struct arf_proto_attr a = { 42, 3, 0100644, 1, 1000, 1000, 12345, 32, 1, 2, 3, 0 };
	arf_proto_wr_init(&w);
	arf_proto_put_attr(&w, &a);
	seed(dir, "reply-attr", NOPS + 0, &w);
	arf_proto_wr_free(&w);

	struct arf_proto_statfs s = { 4096, 1000, 500, 100, 50, 255 };
	arf_proto_wr_init(&w);
	arf_proto_put_statfs(&w, &s);
	seed(dir, "reply-statfs", NOPS + 1, &w);
	arf_proto_wr_free(&w);

	arf_proto_wr_init(&w);
	arf_proto_put_u32(&w, 19);
	arf_proto_put_attr(&w, &a);
	seed(dir, "reply-write", NOPS + 2, &w);
	arf_proto_wr_free(&w);

	arf_proto_wr_init(&w);
	put_listing(&w, NULL);
	seed(dir, "reply-readdir", NOPS + 3, &w);
	arf_proto_wr_free(&w);

	struct arf_proto_hello h = { ARF_PROTO_INFO_VERSION, 0, "/export" };
	arf_proto_wr_init(&w);
	arf_proto_put_hello(&w, &h);
	seed(dir, "hello", NOPS + 4, &w);
	arf_proto_wr_free(&w);

	static struct arf_proto_info info;
	make_info(&info);
	arf_proto_wr_init(&w);
	arf_proto_put_info(&w, &info);
	seed(dir, "info", NOPS + 5, &w);
	arf_proto_wr_free(&w);

	arf_proto_wr_init(&w);
	struct arf_proto_lock_hdr lh = { ARF_LOCK_R_CONFLICT, 7, 30000, 5ull << 40 | 9 };
	arf_proto_put_lock_hdr(&w, &lh);
	arf_proto_put_u32(&w, ARF_LOCK_WR);
	arf_proto_put_u64(&w, 0);
	arf_proto_put_u64(&w, 99);
	arf_proto_put_u32(&w, 4242);
	arf_proto_put_u32(&w, 1);
	arf_proto_put_u32(&w, ARF_LOCK_RD);
	arf_proto_put_u64(&w, 100);
	arf_proto_put_u64(&w, ARF_LOCK_EOF);
	seed(dir, "reply-lock", NOPS + 6, &w);
	arf_proto_wr_free(&w);

	arf_proto_wr_init(&w);
	put_listing(&w, &a);
	seed(dir, "reply-readdirplus", NOPS + 9, &w);
	arf_proto_wr_free(&w);
}

/* A frame: header + body, appended to w. */
static void frame(struct arf_proto_wr *w, uint16_t op, uint16_t flags, uint64_t id, uint32_t aux,
		  const void *body, size_t len)
{
	struct arf_net_hdr h = { (uint32_t)(24 + len), op, flags, id, 0, aux };
	uint8_t hb[24];
	arf_net_hdr_encode(&h, hb);
	arf_proto_put(w, hb, 24);
	if (len)
		arf_proto_put(w, body, len);
}

static void frames(const char *dir)
{
	struct arf_proto_wr w, body;
	uint8_t step;

	/* a client's stream: HELLO, a batch of two one-sided reads, a request */
	arf_proto_wr_init(&w);
	step = 7;
	arf_proto_put(&w, &step, 1);
	frame(&w, ARF_NET_OP_HELLO, 0, 0, ARF_NET_PROTO_VERSION, "\1\0\0\0\0\0\0\0/", 9);
	struct arf_net_wire_read rd[2] = { { 1, 256, 0xabcdef, 0 }, { 2, 4096, 0xabcdef, 8192 } };
	frame(&w, ARF_NET_OP_READ, 0, 1, 2, rd, sizeof(rd));
	arf_proto_wr_init(&body);
	request_body(&body, ARF_OP_LOOKUP);
	frame(&w, ARF_OP_LOOKUP, 0, 2, 0, body.buf, body.len);
	arf_proto_wr_free(&body);
	write_file(dir, "client-stream", w.buf, w.len);
	arf_proto_wr_free(&w);

	/* a server's stream: replies, one with an empty body */
	arf_proto_wr_init(&w);
	step = 24;
	arf_proto_put(&w, &step, 1);
	frame(&w, ARF_NET_OP_READ, ARF_NET_F_REPLY, 1, 0, NULL, 0);
	frame(&w, ARF_OP_GETATTR, ARF_NET_F_REPLY, 2, 0, "0123456789abcdef", 16);
	write_file(dir, "server-stream", w.buf, w.len);
	arf_proto_wr_free(&w);

	/* a WRITE and a CAS, then half a frame */
	arf_proto_wr_init(&w);
	step = 1;
	arf_proto_put(&w, &step, 1);
	struct arf_net_wire_rmw rmw = { 3, 5, 0x1234, 64, 0, 0 };
	uint8_t wb[sizeof(rmw) + 5];
	memcpy(wb, &rmw, sizeof(rmw));
	memcpy(wb + sizeof(rmw), "bytes", 5);
	frame(&w, ARF_NET_OP_WRITE, 0, 9, 0, wb, sizeof(wb));
	struct arf_net_wire_rmw cas = { 3, 8, 0x1234, 128, 1, 2 };
	frame(&w, ARF_NET_OP_CAS, 0, 10, 0, &cas, sizeof(cas));
	frame(&w, ARF_OP_STATFS, 0, 11, 0, "\0\0\0\0\0\0\0\0\0\0\0\0", 12);
	w.len -= 5; /* truncated */
	write_file(dir, "rmw-truncated", w.buf, w.len);
	arf_proto_wr_free(&w);
}

static void hello_reply(const char *dir, const char *name, unsigned flags, unsigned nfds,
			unsigned nregions, int with_info, int challenge)
{
	struct arf_proto_wr w, body, iw;
	static struct arf_proto_info info;

	arf_proto_wr_init(&body);
	arf_proto_put_u32(&body, nregions);
	for (unsigned i = 0; i < nregions; i++) {
		arf_proto_put_u32(&body, i + 1);
		arf_proto_put_u32(&body, i ? ARF_NET_REGION_WRITABLE : 0);
		arf_proto_put_u64(&body, 65536);
		arf_proto_put_u64(&body, 0x5eed0000u + i);
	}
	arf_proto_wr_init(&iw);
	if (with_info) {
		make_info(&info);
		arf_proto_put_info(&iw, &info);
	} else {
		arf_proto_put(&iw, "tiny", 4);
	}
	arf_proto_put_u32(&body, (uint32_t)iw.len);
	arf_proto_put(&body, iw.buf, iw.len);
	arf_proto_wr_free(&iw);

	arf_proto_wr_init(&w);
	uint8_t pre[2] = { (uint8_t)flags, (uint8_t)nfds };
	arf_proto_put(&w, pre, 2);
	if (challenge) { /* round one: a 32-byte nonce to prove */
		struct arf_net_hdr h = { 24 + 32, ARF_NET_OP_HELLO, ARF_NET_F_REPLY | ARF_NET_F_CHALLENGE,
					 0, arf_net_status_from_err(ARF_EAUTH), ARF_NET_PROTO_VERSION };
		uint8_t hb[24];
		arf_net_hdr_encode(&h, hb);
		arf_proto_put(&w, hb, 24);
		arf_proto_put(&w, "0123456789abcdef0123456789abcdef", 32);
	}
	frame(&w, ARF_NET_OP_HELLO, ARF_NET_F_REPLY, challenge ? 1 : 0, ARF_NET_PROTO_VERSION,
	      body.buf, body.len);
	write_file(dir, name, w.buf, w.len);
	arf_proto_wr_free(&w);
	arf_proto_wr_free(&body);
}

static void handshake(const char *dir)
{
	hello_reply(dir, "ok-info", 0, 0, 0, 1, 0);
	hello_reply(dir, "ok-patched", 7, 0, 0, 0, 0);
	hello_reply(dir, "regions-fds", 8 | 7, 2, 2, 1, 0);
	hello_reply(dir, "regions-nofds", 0, 0, 3, 0, 0);
	hello_reply(dir, "challenge-proved", 16, 0, 0, 1, 1);
	hello_reply(dir, "challenge-no-secret", 0, 0, 0, 0, 1);

	/* a refusal with a message */
	struct arf_proto_wr w;
	arf_proto_wr_init(&w);
	uint8_t pre[2] = { 0, 0 };
	arf_proto_put(&w, pre, 2);
	static const char msg[] = "client 10.0.0.9 is not in the export's list";
	struct arf_net_hdr h = { 24 + sizeof(msg) - 1, ARF_NET_OP_HELLO, ARF_NET_F_REPLY, 0,
				 arf_net_status_from_err(ARF_EAUTH), ARF_NET_PROTO_VERSION };
	uint8_t hb[24];
	arf_net_hdr_encode(&h, hb);
	arf_proto_put(&w, hb, 24);
	arf_proto_put(&w, msg, sizeof(msg) - 1);
	write_file(dir, "refused", w.buf, w.len);
	arf_proto_wr_free(&w);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* fuzz_mc's input: u8 ctx_len, u8 rodata_len (0), ctx, code */
static void mc(const char *out, const char *asmfile, const char *memhex)
{
	FILE *f = fopen(asmfile, "r");
	static char text[1 << 16];
	size_t tl = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
	if (!f) {
		perror(asmfile);
		exit(1);
	}
	fclose(f);
	text[tl] = 0;
	struct arf_mc_insn *insns = NULL;
	size_t n = 0;
	char err[256];
	if (arf_mc_asm(text, &insns, &n, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", asmfile, err);
		exit(1);
	}
	uint8_t mem[255];
	size_t ml = 0;
	for (const char *p = memhex ? memhex : ""; *p && ml < sizeof(mem);) {
		if (hexval(p[0]) < 0 || !p[1] || hexval(p[1]) < 0) {
			p++;
			continue;
		}
		mem[ml++] = (uint8_t)(hexval(p[0]) << 4 | hexval(p[1]));
		p += 2;
	}
	size_t len = 2 + ml + n * sizeof(*insns);
	uint8_t *b = malloc(len);
	b[0] = (uint8_t)ml;
	b[1] = 0;
	memcpy(b + 2, mem, ml);
	memcpy(b + 2 + ml, insns, n * sizeof(*insns));
	write_file(".", out, b, len);
	free(b);
	free(insns);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "proto"))
		proto(argv[2]);
	else if (argc >= 3 && !strcmp(argv[1], "frame"))
		frames(argv[2]);
	else if (argc >= 3 && !strcmp(argv[1], "handshake"))
		handshake(argv[2]);
	else if (argc >= 4 && !strcmp(argv[1], "mc"))
		mc(argv[2], argv[3], argc > 4 ? argv[4] : NULL);
	else {
		fprintf(stderr, "usage: mkcorpus proto|frame|handshake OUTDIR | mc OUT ASMFILE [MEMHEX]\n");
		return 2;
	}
	return 0;
}

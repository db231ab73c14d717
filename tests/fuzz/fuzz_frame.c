/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: frame decoding (net/frame.c), the first thing both
 * sides do with bytes from a socket.  The input is a byte stream as a peer
 * might send it; it is cut into frames three ways that must agree: all at
 * once from a receive buffer, with the buffer growing a few bytes at a time
 * (as partial reads fill it), and through a real socket with
 * arf_net_rbuf_fill (which grows and compacts the buffer from the length
 * in a half-received header).  Every frame's body must lie inside the
 * buffer; the header must encode back to the same 24 bytes; and the
 * wire-status conversions must be stable for any status a peer sends.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_int.h"

#define MAXF 256 /* frames compared per input */

struct seen {
	size_t n;
	int end;                 /* last return: 0 or ARF_EPROTO */
	uint32_t len[MAXF];
	uint16_t op[MAXF];
};

static void one_frame(const struct arf_net_rbuf *rb, const struct arf_net_hdr *h,
		      const uint8_t *body, struct seen *s)
{
	if (h->len < sizeof(*h) || h->len > ARF_NET_MAX_FRAME)
		abort();
	if (body < rb->buf + sizeof(*h) || body + (h->len - sizeof(*h)) > rb->buf + rb->end)
		abort(); /* body outside the buffered bytes */
	uint8_t enc[24];
	struct arf_net_hdr h2;
	arf_net_hdr_encode(h, enc);
	arf_net_hdr_decode(enc, &h2);
	if (memcmp(enc, body - sizeof(*h), sizeof(enc)) || memcmp(h, &h2, sizeof(h2)))
		abort();
	if (s->n < MAXF) {
		s->len[s->n] = h->len;
		s->op[s->n] = h->op;
	}
	s->n++;
}

/* Pop every whole frame now buffered; returns 0 or ARF_EPROTO. */
static int drain(struct arf_net_rbuf *rb, struct seen *s)
{
	struct arf_net_hdr h;
	const uint8_t *body;
	int rc;

	while ((rc = arf_net_rbuf_frame(rb, &h, &body)) == 1)
		one_frame(rb, &h, body, s);
	if (rc != 0 && rc != ARF_EPROTO)
		abort();
	if (rb->start > rb->end)
		abort();
	return rc;
}

static void same(const struct seen *a, const struct seen *b)
{
	size_t n = a->n < MAXF ? a->n : MAXF;
	if (a->n != b->n || a->end != b->end || memcmp(a->len, b->len, n * sizeof(a->len[0])) ||
	    memcmp(a->op, b->op, n * sizeof(a->op[0])))
		abort(); /* the cut into frames depends on how the bytes arrived */
}

static int sv[2] = { -1, -1 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen whole = { 0 }, parts = { 0 }, sock = { 0 };
	struct arf_net_rbuf rb = { 0 };

	if (size < 1)
		return 0;
	size_t step = data[0] % 61u + 1u;
	data++;
	size--;

	/* 1: all at once, from a buffer of exactly the input's size */
	rb.buf = malloc(size ? size : 1);
	if (!rb.buf)
		return 0;
	memcpy(rb.buf, data, size);
	rb.cap = rb.end = size;
	whole.end = drain(&rb, &whole);

	/* 2: the same buffer, filled step bytes at a time */
	rb.start = rb.end = 0;
	for (size_t have = 0; have < size && !parts.end;) {
		have = have + step < size ? have + step : size;
		rb.end = have;
		parts.end = drain(&rb, &parts);
	}
	free(rb.buf);
	same(&whole, &parts);

	/* 3: through a socket and arf_net_rbuf_fill */
	if (sv[0] < 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	memset(&rb, 0, sizeof(rb));
	size_t chunk = step * 13u; /* fewer system calls; still cuts headers */
	for (size_t off = 0; off < size && !sock.end;) {
		size_t n = size - off < chunk ? size - off : chunk;
		if (write(sv[0], data + off, n) != (ssize_t)n)
			abort();
		off += n;
		ssize_t got;
		do
			got = arf_net_rbuf_fill(&rb, sv[1]);
		while (got > 0);
		if (got < 0)
			abort(); /* the socket stays open: only "nothing more" is expected */
		if (rb.end > rb.cap)
			abort();
		sock.end = drain(&rb, &sock);
	}
	/* leave no bytes behind for the next input */
	char junk[4096];
	while (recv(sv[1], junk, sizeof(junk), MSG_DONTWAIT) > 0)
		;
	arf_net_rbuf_free(&rb);
	same(&whole, &sock);

	/* status conversions: any status a peer sends maps to an error and back */
	if (size >= 4) {
		int32_t st;
		memcpy(&st, data, 4);
		int e = arf_net_status_to_err(st);
		if (e > 0)
			abort();
		int32_t st2 = arf_net_status_from_err(e);
		if (arf_net_status_to_err(st2) != e)
			abort();
	}
	return 0;
}

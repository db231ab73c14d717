/* SPDX-License-Identifier: MIT */
/*
 * mckernels.c — the kernels of bench/mcbench.c, written once in restricted C
 * and compiled twice: natively (cc -O2, linked into mcbench) and for the
 * eBPF ISA (clang -O2 -target bpf -mcpu=v3, loaded at run time into ARF's
 * interpreter and, for the loop-free ones, into DPDK's librte_bpf).  So the
 * interpreter/native ratio compares the same logic, instruction for
 * statement.
 *
 * Every kernel takes one argument, a pointer to its context (r1), and
 * returns a 64-bit result (r0); all its data lives in the context, so the
 * eBPF code needs no read-only data and no helpers, and DPDK's validator
 * (which refuses to read r2) accepts the loop-free ones.  No switch
 * statements (jump tables would need .rodata) and no calls.
 *
 *   mck_scan   count one byte value in a 4 KiB buffer        (loop)
 *   mck_chain  walk a linked hash chain to a key, 32 hops     (loop)
 *   mck_dfa    run a 8-state DFA table over 1 KiB of input    (loop)
 *   mck_csum   Internet checksum of a 64-byte header          (loop-free)
 *   mck_parse  parse Ethernet/IPv4/TCP, return the ports      (loop-free)
 *   mck_null   return 0: what a run costs before any work      (loop-free)
 */
#include "mckernels.h"

#define MCK_FN __attribute__((noinline))

MCK_FN uint64_t mck_scan(void *ctx)
{
	struct mck_scan_ctx *c = ctx;
	uint64_t n = 0;
	uint32_t len = c->len < MCK_SCAN_MAX ? c->len : MCK_SCAN_MAX;

	for (uint32_t i = 0; i < len; i++)
		n += c->buf[i] == c->needle;
	return n;
}

MCK_FN uint64_t mck_chain(void *ctx)
{
	struct mck_chain_ctx *c = ctx;
	uint32_t idx = c->head;

	for (uint32_t hops = 1; hops <= MCK_CHAIN_NODES; hops++) {
		if (idx >= MCK_CHAIN_NODES)
			return 0;
		if (c->nodes[idx].key == c->key)
			return ((uint64_t)hops << 32) | c->nodes[idx].value;
		idx = c->nodes[idx].next;
	}
	return 0;
}

MCK_FN uint64_t mck_dfa(void *ctx)
{
	struct mck_dfa_ctx *c = ctx;
	uint32_t len = c->len < MCK_DFA_INPUT ? c->len : MCK_DFA_INPUT;
	uint32_t s = 0;
	uint64_t accepts = 0;

	for (uint32_t i = 0; i < len; i++) {
		s = c->table[s & (MCK_DFA_STATES - 1)][c->input[i]];
		accepts += s == MCK_DFA_STATES - 1;
	}
	return (accepts << 8) | s;
}

MCK_FN uint64_t mck_csum(void *ctx)
{
	const uint8_t *p = ctx;
	uint64_t sum = 0;

#if defined(__clang__)
#pragma clang loop unroll(full)
#else
#pragma GCC unroll 32
#endif
	for (int i = 0; i < MCK_CSUM_LEN; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

MCK_FN uint64_t mck_parse(void *ctx)
{
	const uint8_t *p = ctx;

	if ((p[12] << 8 | p[13]) != 0x0800)   /* EtherType IPv4 */
		return 0;
	const uint8_t *ip = p + 14;
	if ((ip[0] >> 4) != 4 || (ip[0] & 15) < 5)
		return 0;
	if (ip[9] != 6)                       /* TCP */
		return 1;
	if ((ip[6] & 0x3f) | ip[7])           /* a fragment: no ports */
		return 2;
	const uint8_t *tcp = ip + (ip[0] & 15) * 4; /* at most 60 bytes in: within the context */
	uint64_t sport = (uint64_t)(tcp[0] << 8 | tcp[1]), dport = (uint64_t)(tcp[2] << 8 | tcp[3]);
	uint64_t flags = tcp[13];
	return sport << 32 | dport << 16 | flags << 8 | ip[8];
}

MCK_FN uint64_t mck_null(void *ctx)
{
	(void)ctx;
	return 0;
}

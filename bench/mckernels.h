/* SPDX-License-Identifier: MIT */
/*
 * mckernels.h — contexts of the kernels in bench/mckernels.c (shared by the
 * native build, the eBPF build and bench/mcbench.c, which fills them).
 */
#ifndef MCKERNELS_H
#define MCKERNELS_H

#ifdef __bpf__
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#else
#include <stdint.h>
#endif

#define MCK_SCAN_MAX    4096u
#define MCK_CHAIN_NODES 64u
#define MCK_CHAIN_HOPS  32u   /* where the key sits in the chain mcbench builds */
#define MCK_DFA_STATES  8u
#define MCK_DFA_INPUT   1024u
#define MCK_CSUM_LEN    64
#define MCK_PARSE_LEN   128   /* Ethernet + IPv4 with options + TCP */

struct mck_scan_ctx {
	uint32_t len;              /* bytes of buf to scan */
	uint8_t needle;            /* the byte counted */
	uint8_t pad[3];
	uint8_t buf[MCK_SCAN_MAX];
};

struct mck_chain_node {
	uint64_t key;
	uint32_t next;             /* index of the next node; >= MCK_CHAIN_NODES ends the chain */
	uint32_t value;
};

struct mck_chain_ctx {
	uint64_t key;              /* the key looked for */
	uint32_t head;             /* first node of the chain */
	uint32_t pad;
	struct mck_chain_node nodes[MCK_CHAIN_NODES];
};

struct mck_dfa_ctx {
	uint32_t len;              /* bytes of input to run */
	uint32_t pad;
	uint8_t table[MCK_DFA_STATES][256]; /* next state by (state, byte) */
	uint8_t input[MCK_DFA_INPUT];
};

uint64_t mck_scan(void *ctx);
uint64_t mck_chain(void *ctx);
uint64_t mck_dfa(void *ctx);
uint64_t mck_csum(void *ctx);
uint64_t mck_parse(void *ctx);
uint64_t mck_null(void *ctx);

#endif /* MCKERNELS_H */

/* SPDX-License-Identifier: MIT */
/*
 * The --stats line of a connection: what libarf counted on it (programs
 * run and loaded, instructions, requests, rounds, bytes moved one-sided,
 * sent and received), one line per server, so that tests and benchmarks
 * can read what a run cost from the tool's standard error.
 */
#include <inttypes.h>

#include "arf_tool.h"

void arf_tool_stats(FILE *f, const char *prog, const char *url, arf_client *c)
{
	struct arf_client_stats s;

	arf_stats(c, &s);
	fprintf(f,
		"%s: stats %s: execs %" PRIu64 " prog_loads %" PRIu64 " exec_insns %" PRIu64
		" requests %" PRIu64 " rounds %" PRIu64 " one_sided_bytes %" PRIu64
		" bytes_sent %" PRIu64 " bytes_received %" PRIu64 "\n",
		prog, url, s.execs, s.prog_loads, s.exec_insns, s.requests, s.rounds,
		s.one_sided_bytes, s.bytes_sent, s.bytes_received);
}

/* SPDX-License-Identifier: MIT */
/*
 * arfctl's output: JSON strings, the client's counters and policy (--stats)
 * as JSON or as "name value" lines, the one-line failure message every
 * command prints, and the attribute formats that stat and ls share.  The
 * file commands print through these so that --json and --stats mean the
 * same thing for each of them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "arfctl_int.h"

void arfctl_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

void arfctl_stats_json(FILE *f, arf_client *c)
{
	struct arf_client_stats s;
	arf_stats(c, &s);
	fprintf(f,
		"{\"one_sided_reads\":%" PRIu64 ",\"one_sided_bytes\":%" PRIu64 ",\"rounds\":%" PRIu64
		",\"requests\":%" PRIu64 ",\"execs\":%" PRIu64 ",\"retries\":%" PRIu64
		",\"fallbacks\":%" PRIu64 ",\"bytes_sent\":%" PRIu64 ",\"bytes_received\":%" PRIu64
		",\"cache_hits\":%" PRIu64 ",\"cache_misses\":%" PRIu64 ",\"commits\":%" PRIu64
		",\"resent_bytes\":%" PRIu64 ",\"unstable_bytes\":%" PRIu64 ",\"requests_by_kind\":{",
		s.one_sided_reads, s.one_sided_bytes, s.rounds, s.requests, s.execs, s.retries,
		s.fallbacks, s.bytes_sent, s.bytes_received, s.cache_hits, s.cache_misses, s.commits,
		s.resent_bytes, s.unstable_bytes);
	int first = 1;
	for (int i = 0; i < ARF_NKINDS; i++) {
		if (!s.requests_by_kind[i])
			continue;
		fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", arf_request_kind_name(i),
			s.requests_by_kind[i]);
		first = 0;
	}
	fprintf(f, "},\"fallbacks_by_reason\":{");
	for (int i = 0; i < ARF_FALLBACK_NREASONS; i++)
		fprintf(f, "%s\"%s\":%" PRIu64, i ? "," : "", arf_fallback_reason_name(i),
			s.fallbacks_by_reason[i]);
	fprintf(f, "},\"prog_loads\":%" PRIu64 ",\"exec_insns\":%" PRIu64 ",\"execs_by_reason\":{",
		s.prog_loads, s.exec_insns);
	for (int i = 0; i < ARF_EXEC_NREASONS; i++)
		fprintf(f, "%s\"%s\":%" PRIu64, i ? "," : "", arf_exec_reason_name(i),
			s.execs_by_reason[i]);
	/* the thresholds behind those decisions, as set for this transport */
	struct arf_client_policy p;
	arf_client_policy(c, &p);
	fprintf(f, "},\"policy\":{\"max_hops\":%u,\"resolve_exec_depth\":%u,"
		"\"readdir_exec_min\":%u,\"readdirplus_exec_min\":%u,\"readdir_req_min\":%u}}",
		p.max_hops, p.resolve_exec_depth, p.readdir_exec_min, p.readdirplus_exec_min,
		p.readdir_req_min);
}

void arfctl_stats_text(FILE *f, arf_client *c)
{
	struct arf_client_stats s;
	arf_stats(c, &s);
	fprintf(f,
		"one_sided_reads %" PRIu64 "\none_sided_bytes %" PRIu64 "\nrounds %" PRIu64
		"\nrequests %" PRIu64 "\nexecs %" PRIu64 "\nretries %" PRIu64 "\nfallbacks %" PRIu64
		"\nbytes_sent %" PRIu64 "\nbytes_received %" PRIu64 "\ncommits %" PRIu64
		"\nresent_bytes %" PRIu64 "\nunstable_bytes %" PRIu64 "\n",
		s.one_sided_reads, s.one_sided_bytes, s.rounds, s.requests, s.execs, s.retries,
		s.fallbacks, s.bytes_sent, s.bytes_received, s.commits, s.resent_bytes,
		s.unstable_bytes);
	for (int i = 0; i < ARF_NKINDS; i++)
		if (s.requests_by_kind[i])
			fprintf(f, "requests.%s %" PRIu64 "\n", arf_request_kind_name(i),
				s.requests_by_kind[i]);
	for (int i = 0; i < ARF_FALLBACK_NREASONS; i++)
		if (s.fallbacks_by_reason[i])
			fprintf(f, "fallbacks.%s %" PRIu64 "\n", arf_fallback_reason_name(i),
				s.fallbacks_by_reason[i]);
	fprintf(f, "prog_loads %" PRIu64 "\nexec_insns %" PRIu64 "\n", s.prog_loads, s.exec_insns);
	for (int i = 0; i < ARF_EXEC_NREASONS; i++)
		if (s.execs_by_reason[i])
			fprintf(f, "execs.%s %" PRIu64 "\n", arf_exec_reason_name(i), s.execs_by_reason[i]);
	struct arf_client_policy p;
	arf_client_policy(c, &p);
	fprintf(f, "policy.max_hops %u\npolicy.resolve_exec_depth %u\npolicy.readdir_exec_min %u\n"
		"policy.readdirplus_exec_min %u\npolicy.readdir_req_min %u\n", p.max_hops,
		p.resolve_exec_depth, p.readdir_exec_min, p.readdirplus_exec_min, p.readdir_req_min);
}

/* Close a JSON object that the command opened on stdout, adding stats. */
void arfctl_json_end(arf_client *c)
{
	if (arfctl_opt.stats) {
		printf(",\"stats\":");
		arfctl_stats_json(stdout, c);
	}
	printf("}\n");
}

void arfctl_text_end(arf_client *c)
{
	if (arfctl_opt.stats)
		arfctl_stats_text(stdout, c);
}

int arfctl_fail(const char *cmd, const char *what, int err)
{
	fprintf(stderr, "arfctl: %s %s: %s\n", cmd, what, arf_strerror(err));
	return 1;
}

const char *arfctl_type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFCHR: return "char";
	case S_IFBLK: return "block";
	default: return "unknown";
	}
}

void arfctl_print_time(const char *label, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	char buf[64];
	localtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s: %s.%09lld\n", label, buf, (long long)(ns % 1000000000));
}


/* SPDX-License-Identifier: MIT */
/*
 * arfctl — the ARF command-line client: file commands on arf:// URLs
 * (files.c, exec.c) with --json output and the client's counters
 * (output.c), and the management commands (admin.c) through arfd's control
 * socket.  This file holds the options, --help and the dispatch.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "arfctl_int.h"

struct arfctl_opts arfctl_opt = { .out_max = 1u << 20 };

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: arfctl [OPTIONS] COMMAND ARGS\n"
		"\n"
		"Commands (URL = arf://HOST[:PORT]/PATH or arf+shm:///PATH[?socket=SOCK]):\n"
		"  ls URL               list a directory (or name a file)\n"
		"  stat URL             attributes of a file (symbolic links are not followed)\n"
		"  cat URL              write a file's bytes to standard output\n"
		"  put LOCALFILE URL    copy a local file (\"-\" = standard input) to URL\n"
		"                       (into it, if URL is a directory)\n"
		"  mkdir [-p] URL       make a directory (-p: with its parents, no error if it exists)\n"
		"  rm URL               remove a file, or an empty directory\n"
		"  mv URL URL           rename within one server\n"
		"  status URL, stats URL  the server's summary and counters, over the data connection\n"
		"  exec PROGRAM URL [ARG...]  load PROGRAM into the server, run it once with the\n"
		"                       ARGs as its context, print r0, the instructions executed\n"
		"                       and the output as a hex dump (raw bytes with --raw).\n"
		"                       PROGRAM: FILE.o (ELF from clang -target bpf), FILE.s\n"
		"                       (arf-asm text), other files raw bytecode, or @lookup,\n"
		"                       @resolve, @readdir, @mkdirp (libarf's standard\n"
		"                       programs, mobilecode/progs/arf_prog_abi.h).  ARG:\n"
		"                       u8:N u16:N u32:N u64:N (little-endian), str:TEXT,\n"
		"                       strz:TEXT (with a NUL), hex:HEXDIGITS, zero:N (N zero\n"
		"                       bytes), align:N (zeros to a multiple of N), ino and gen\n"
		"                       (u64 inode and u32 generation of URL's path)\n"
		"\n"
		"Management (through arfd's control socket: root or its control group):\n"
		"  status               the server's summary: incarnation, uptime, regions, clients\n"
		"  stats [--prometheus] the server's counters (JSON, or the Prometheus text format)\n"
		"  clients              the connected clients, their transport and counters\n"
		"  exports              the export: path, options, transports\n"
		"  progs list           the cached programs, most recently used first, one a line:\n"
		"                       hash, size (instructions/bytes), loads, runs, instructions\n"
		"                       executed, last use (--json: an array of objects)\n"
		"  progs show HASH      one cached program's details and counters\n"
		"  progs disasm HASH    its disassembly (arf-asm syntax, assembles back)\n"
		"  progs unload HASH    drop it from the cache (clients load it again on next use)\n"
		"                       HASH: its hex digits, or a unique prefix of them\n"
		"  fsck                 check the live filesystem and compare it with RocksDB\n"
		"  fsck --data-dir DIR  check a stopped server's data directory\n"
		"  checkpoint           sync and compact RocksDB\n"
		"  config check FILE    check an arfd.conf without starting anything\n"
		"  (fsck exits 1 when it finds damage, listing each problem)\n"
		"\n"
		"Options:\n"
		"  --json               print one JSON object on standard output\n"
		"  --stats              add the client's counters (under \"stats\" with --json;\n"
		"                       on standard error for cat)\n"
		"  --requests-only      no one-sided reads: every read is a request\n"
		"  --no-resvport        tcp: never connect from a reserved port (which proves\n"
		"                       root to an export with one_sided = root)\n"
		"  --max-hops N         one-sided hash-chain hops before shipping the lookup\n"
		"                       (default: by transport, 11 over tcp and rdma, 256 over shm)\n"
		"  --spin-us N          poll this long for a reply before sleeping (default 50)\n"
		"  --timeout-ms N       connect and reply timeout (default 30000)\n"
		"  --control PATH       arfd's control socket (default /run/arf/arfd.ctl)\n"
		"  --secret-file FILE   prove the export's shared secret (arfd.conf secret_file)\n"
		"  --reconnect-ms N     wait this long for a restarted server (default 30000)\n"
		"  --uid N, --gid N     identity claimed in requests (AUTH_SYS; default: yours;\n"
		"                       root squashing and shm peer credentials still apply)\n"
		"  --prometheus         stats in the Prometheus text format\n"
		"  --raw                exec: write the output bytes alone, unformatted\n"
		"  --out-max N          exec: output bytes to accept (default 1048576)\n"
		"  -h, --help           show this help\n"
		"  -V, --version        show the version\n"
		"\n"
		"Exit status: 0 on success, 1 on failure (with a one-line message), 2 on bad usage.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, 0, 'j' },
		{ "stats", no_argument, 0, 's' },
		{ "requests-only", no_argument, 0, 'r' },
		{ "no-resvport", no_argument, 0, 'N' },
		{ "max-hops", required_argument, 0, 'H' },
		{ "spin-us", required_argument, 0, 'S' },
		{ "timeout-ms", required_argument, 0, 'T' },
		{ "control", required_argument, 0, 'C' },
		{ "secret-file", required_argument, 0, 'K' },
		{ "reconnect-ms", required_argument, 0, 'R' },
		{ "uid", required_argument, 0, 'u' },
		{ "gid", required_argument, 0, 'g' },
		{ "prometheus", no_argument, 0, 'P' },
		{ "raw", no_argument, 0, 'W' },
		{ "out-max", required_argument, 0, 'O' },
		{ "help", no_argument, 0, 'h' },
		{ "version", no_argument, 0, 'V' },
		{ 0, 0, 0, 0 },
	};
	int opt;
	struct arfctl_admin adm = { .control = "/run/arf/arfd.ctl" };
	struct arf_cred claim = { .uid = (uint32_t)geteuid(), .gid = (uint32_t)getegid() };
	int claimed = 0;

	arf_client_opts_init(&arfctl_opt.client);
	/* options come before the command; stop at the first non-option */
	while ((opt = getopt_long(argc, argv, "+hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j': arfctl_opt.json = 1; break;
		case 's': arfctl_opt.stats = 1; break;
		case 'r': arfctl_opt.client.one_sided = 0; break;
		case 'N': arfctl_opt.client.resvport = 0; break;
		case 'H': arfctl_opt.client.max_hops = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'S': arfctl_opt.client.spin_us = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'T': arfctl_opt.client.timeout_ms = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'C': adm.control = optarg; break;
		case 'K': arfctl_opt.client.secret_file = optarg; break;
		case 'R': arfctl_opt.client.reconnect_ms = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'u': claim.uid = (uint32_t)strtoul(optarg, NULL, 10); claimed = 1; break;
		case 'g': claim.gid = (uint32_t)strtoul(optarg, NULL, 10); claimed = 1; break;
		case 'P': adm.prometheus = 1; break;
		case 'W': arfctl_opt.raw = 1; break;
		case 'O': arfctl_opt.out_max = (size_t)strtoull(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("arfctl %s\n", ARF_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[optind++];
	int parents = 0;
	if (claimed)
		arf_set_thread_cred(&claim); /* AUTH_SYS: the server decides whether to believe it */
	/* management commands (status without a URL goes to the control socket) */
	int by_url = (!strcmp(cmd, "status") || !strcmp(cmd, "stats")) && argc - optind == 1;
	if (by_url && adm.prometheus) {
		fprintf(stderr, "arfctl: --prometheus needs the control socket (stats without a URL)\n");
		return 2;
	}
	if (!by_url) {
		adm.json = arfctl_opt.json;
		int arc = arfctl_admin(&adm, cmd, argc - optind, argv + optind);
		if (arc >= 0)
			return arc;
	}
	if (!strcmp(cmd, "exec")) {
		if (argc - optind < 2) {
			fprintf(stderr, "arfctl: exec takes PROGRAM URL [ARG...] (see arfctl --help)\n");
			return 2;
		}
		arf_client *c = NULL;
		struct arf_url u;
		int rc = arfctl_open_url(argv[optind + 1], &c, &u);
		if (rc)
			return rc;
		rc = arfctl_cmd_exec(c, &u, argv[optind], argc - optind - 2, argv + optind + 2);
		arf_close(c);
		return rc;
	}
	if (!strcmp(cmd, "mkdir") && optind < argc && !strcmp(argv[optind], "-p")) {
		parents = 1;
		optind++;
	}
	int nargs = argc - optind;
	int want = !strcmp(cmd, "put") || !strcmp(cmd, "mv") ? 2 : 1;
	static const char *const known[] = { "ls", "stat", "cat", "put", "mkdir", "rm", "mv", "status",
					     "stats" };
	int ok = 0;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		ok |= !strcmp(cmd, known[i]);
	if (!ok) {
		fprintf(stderr, "arfctl: unknown command '%s' (see arfctl --help)\n", cmd);
		return 2;
	}
	if (nargs != want) {
		fprintf(stderr, "arfctl: %s takes %d argument%s (see arfctl --help)\n", cmd, want,
			want > 1 ? "s" : "");
		return 2;
	}
	const char *url = !strcmp(cmd, "put") ? argv[optind + 1] : argv[optind];
	arf_client *c = NULL;
	struct arf_url u;
	int rc = arfctl_open_url(url, &c, &u);
	if (rc)
		return rc;
	if (!strcmp(cmd, "stat"))
		rc = arfctl_cmd_stat(c, &u);
	else if (!strcmp(cmd, "ls"))
		rc = arfctl_cmd_ls(c, &u);
	else if (!strcmp(cmd, "cat"))
		rc = arfctl_cmd_cat(c, &u);
	else if (!strcmp(cmd, "put"))
		rc = arfctl_cmd_put(c, argv[optind], &u);
	else if (!strcmp(cmd, "mkdir"))
		rc = arfctl_cmd_mkdir(c, &u, parents);
	else if (!strcmp(cmd, "rm"))
		rc = arfctl_cmd_rm(c, &u);
	else if (!strcmp(cmd, "mv"))
		rc = arfctl_cmd_mv(c, &u, argv[optind + 1]);
	else
		rc = arfctl_cmd_status(c, &u);
	arf_close(c);
	return rc;
}

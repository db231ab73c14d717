/* SPDX-License-Identifier: MIT */
/*
 * arfctl — the ARF command-line client: file commands on arf:// URLs
 * (files.c, exec.c) with --json output and the client's counters
 * (output.c), and the management commands (admin.c) through arfd's control
 * socket.  This file holds the options, --help and the dispatch.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
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
		"  cp URL URL           copy a file within one server, by the server: the bytes\n"
		"                       never come to this host (into URL, if a directory)\n"
		"  chmod MODE URL       set a file's permission bits (MODE in octal, e.g. 0644)\n"
		"  chown UID[:GID] URL  set a file's owner and group (numeric; :GID: the group alone)\n"
		"  ln TARGET LINK       a hard link LINK to the file TARGET (two URLs on one server;\n"
		"                       into LINK, if it is a directory)\n"
		"  status URL, stats URL  the server's summary and counters, over the data connection\n"
		"  exec PROGRAM URL [ARG...]  load PROGRAM into the server, run it once with the\n"
		"                       ARGs as its context, print r0, the instructions executed\n"
		"                       and the output as a hex dump (raw bytes with --raw).\n"
		"                       PROGRAM: FILE.o (ELF from clang -target bpf), FILE.s\n"
		"                       (arf-asm text), other files raw bytecode, or @lookup,\n"
		"                       @resolve, @readdir, @mkdirp, @find, @du, @sum (libarf's\n"
		"                       standard programs, mobilecode/progs/arf_prog_abi.h,\n"
		"                       arf_prog_find.h, arf_prog_dusum.h).  ARG:\n"
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
		"  fsck [--volume NAME] check the live filesystem (the root volume, or NAME) and\n"
		"                       compare it with RocksDB\n"
		"  fsck --data-dir DIR  check a stopped server's data directory\n"
		"  checkpoint [--volume NAME]  sync and compact RocksDB (the root volume's, or NAME's)\n"
		"  vol list             the volumes this arfd serves (root, each [volume NAME]\n"
		"                       of arfd.conf, each made by vol create): state, inodes\n"
		"                       and data used, clients,\n"
		"                       requests, data directory (--json: an object)\n"
		"  vol show NAME        one volume's summary (as status), with its data directory\n"
		"  vol create NAME [KEY=VALUE ...]  make a volume and serve it at once, in\n"
		"                       DATA_DIR/volumes/NAME (KEY: a [regions] key of\n"
		"                       arfd.conf(5)); arfd serves it again at each start\n"
		"  vol rm [--force] NAME  remove a volume vol create made, and its data: refused\n"
		"                       while a client is connected, and unless --force while\n"
		"                       it holds a file\n"
		"  vol release NAME [SERVER]  make NAME's read-only replica NAME.readonly on\n"
		"                       this server, or on SERVER of the cell, from a snapshot of\n"
		"                       it (again: replaced under its clients, who reconnect);\n"
		"                       clients reach it by that name\n"
		"  vol move NAME SERVER  send volume NAME, made by vol create, to SERVER of the\n"
		"                       cell while its clients use it, and record it there\n"
		"                       (both servers need [cell] move_secret_file); its clients\n"
		"                       are sent on\n"
		"  vol locate NAME URL  where volume NAME lives, as the arfd at URL knows it (in a\n"
		"                       cell: its record and its server's address; else whether\n"
		"                       that arfd serves it)\n"
		"  vol mkmount URL VOLUME  make URL's last name a mount point for VOLUME\n"
		"                       (root only): clients cross it into that volume\n"
		"  vol lsmount URL      whether URL's last name is a mount point, and for what\n"
		"  vol rmmount URL      remove a mount point (not its volume)\n"
		"  config check FILE    check an arfd.conf without starting anything\n"
		"  cell status [--etcd URL] [--cell NAME] [--config FILE]\n"
		"                       a cell's live servers and volume records, from etcd\n"
		"                       (default: arfd.conf's [cell], else http://127.0.0.1:2379)\n"
		"    [--user NAME --password-file FILE]  etcd user (read-only on /arf/NAME/ will\n"
		"                       do); the file's first line is its password (mode 0600)\n"
		"    [--cacert FILE] [--cert FILE [--key FILE]]  https: etcd's CA (default:\n"
		"                       arfd.conf's ca_file), a client certificate and its key\n"
		"  (fsck exits 1 when it finds damage, listing each problem)\n"
		"\n"
		"Options (before or after the command; \"--\" ends them):\n"
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

/* What the options set beside arfctl_opt. */
struct opt_state {
	struct arfctl_admin adm;
	struct arf_cred claim;
	int claimed;
};

/* A decimal number that is all of arg and at most max; else exit status 2
 * with a message (strtoul alone reads "abc" as 0 and "-1" as a huge one). */
static int number(int code, const char *arg, unsigned long long max, unsigned long long *out)
{
	char *end;
	errno = 0;
	*out = strtoull(arg, &end, 10);
	if (!errno && end != arg && !*end && arg[0] != '-' && arg[0] != '+' && *out <= max)
		return 0;
	const char *name = "?";
	for (const struct option *o = longopts; o->name; o++)
		if (o->val == code)
			name = o->name;
	fprintf(stderr, "arfctl: --%s: '%s' is not a number from 0 to %llu\n", name, arg, max);
	return 2;
}

/* Apply one option (all but --help and --version): 0, or 2 on bad usage. */
static int apply(int code, const char *arg, struct opt_state *st)
{
	struct arf_client_opts *co = &arfctl_opt.client;
	unsigned long long v = 0;
	int rc = 0;

	switch (code) {
	case 'j': arfctl_opt.json = 1; break;
	case 's': arfctl_opt.stats = 1; break;
	case 'r': co->one_sided = 0; break;
	case 'N': co->resvport = 0; break;
	case 'C': st->adm.control = arg; break;
	case 'K': co->secret_file = arg; break;
	case 'P': st->adm.prometheus = 1; break;
	case 'W': arfctl_opt.raw = 1; break;
	case 'H': case 'S': case 'T': case 'R': case 'u': case 'g':
		/* UINT32_MAX is libarf's "by transport" (ARF_OPT_AUTO) and no uid */
		if ((rc = number(code, arg, UINT32_MAX - 1, &v)))
			break;
		if (code == 'H')
			co->max_hops = (uint32_t)v;
		else if (code == 'S')
			co->spin_us = (uint32_t)v;
		else if (code == 'T')
			co->timeout_ms = (uint32_t)v;
		else if (code == 'R')
			co->reconnect_ms = (uint32_t)v;
		else if (code == 'u')
			st->claim.uid = (uint32_t)v;
		else
			st->claim.gid = (uint32_t)v;
		st->claimed |= code == 'u' || code == 'g';
		break;
	case 'O':
		if (!(rc = number(code, arg, SIZE_MAX / 2, &v)))
			arfctl_opt.out_max = (size_t)v;
		break;
	default:
		usage(stderr);
		rc = 2;
	}
	return rc;
}

/* Options after the command ("arfctl stats --prometheus", "arfctl ls URL
 * --json"): the long options above wherever they stand, up to "--".  What
 * is not one of them stays an argument of the command: "-p" of mkdir,
 * "--data-dir" of fsck, "-" (standard input) of put.  The arguments left
 * are moved to the front of args; *nargs says how many.  Returns 0, -1 for
 * --help or --version (printed), or 2 on bad usage. */
static int late_options(int argc, char **argv, int *nargs, struct opt_state *st)
{
	int n = 0, rc = 0;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		const struct option *o = NULL;
		if (!strcmp(a, "--")) {
			while (++i < argc)
				argv[n++] = argv[i];
			break;
		}
		size_t len = eq ? (size_t)(eq - a) : strlen(a);
		for (const struct option *p = longopts; a[0] == '-' && a[1] == '-' && p->name; p++)
			if (strlen(p->name) == len - 2 && !strncmp(p->name, a + 2, len - 2))
				o = p;
		if (!o) {
			argv[n++] = argv[i];
			continue;
		}
		const char *val = eq ? eq + 1 : NULL;
		if (o->has_arg == required_argument && !val && i + 1 < argc)
			val = argv[++i];
		if ((o->has_arg == required_argument) != (val != NULL)) {
			fprintf(stderr, "arfctl: --%s %s\n", o->name,
				val ? "takes no value" : "needs a value");
			return 2;
		}
		if (o->val == 'h' || o->val == 'V') {
			if (o->val == 'h')
				usage(stdout);
			else
				printf("arfctl %s\n", ARF_VERSION);
			return -1;
		}
		if ((rc = apply(o->val, val, st)))
			return rc;
	}
	*nargs = n;
	return 0;
}

/* The file commands: how many arguments each takes (after mkdir's -p; a
 * negative number: at least that many) and which is the URL to connect to. */
static const struct file_cmd {
	const char *name;
	int nargs, url_arg;
} file_cmds[] = {
	{ "ls", 1, 0 },    { "stat", 1, 0 },  { "cat", 1, 0 },   { "put", 2, 1 },
	{ "mkdir", 1, 0 }, { "rm", 1, 0 },    { "mv", 2, 0 },    { "status", 1, 0 },
	{ "stats", 1, 0 }, { "chmod", 2, 1 }, { "chown", 2, 1 }, { "ln", 2, 0 },
	{ "exec", -2, 1 },  { "cp", 2, 0 },
};

static int run_file_cmd(const char *cmd, int nargs, char **args)
{
	const struct file_cmd *fc = NULL;
	struct arf_setattr sa;
	int parents = 0, rc;

	for (size_t i = 0; i < sizeof(file_cmds) / sizeof(file_cmds[0]); i++)
		if (!strcmp(cmd, file_cmds[i].name))
			fc = &file_cmds[i];
	if (!fc) {
		fprintf(stderr, "arfctl: unknown command '%s' (see arfctl --help)\n", cmd);
		return 2;
	}
	if (!strcmp(cmd, "mkdir") && nargs && !strcmp(args[0], "-p")) {
		parents = 1;
		args++;
		nargs--;
	}
	if (fc->nargs < 0 ? nargs < -fc->nargs : nargs != fc->nargs) {
		if (!strcmp(cmd, "exec"))
			fprintf(stderr, "arfctl: exec takes PROGRAM URL [ARG...] (see arfctl --help)\n");
		else
			fprintf(stderr, "arfctl: %s takes %d argument%s (see arfctl --help)\n", cmd,
				fc->nargs, fc->nargs > 1 ? "s" : "");
		return 2;
	}
	if ((!strcmp(cmd, "chmod") || !strcmp(cmd, "chown")) &&
	    (rc = arfctl_setattr_arg(cmd, args[0], &sa)))
		return rc;
	arf_client *c = NULL;
	struct arf_url u;
	if ((rc = arfctl_open_url(args[fc->url_arg], &c, &u)))
		return rc;
	if (!strcmp(cmd, "stat"))
		rc = arfctl_cmd_stat(c, &u);
	else if (!strcmp(cmd, "ls"))
		rc = arfctl_cmd_ls(c, &u);
	else if (!strcmp(cmd, "cat"))
		rc = arfctl_cmd_cat(c, &u);
	else if (!strcmp(cmd, "put"))
		rc = arfctl_cmd_put(c, args[0], &u);
	else if (!strcmp(cmd, "mkdir"))
		rc = arfctl_cmd_mkdir(c, &u, parents);
	else if (!strcmp(cmd, "rm"))
		rc = arfctl_cmd_rm(c, &u);
	else if (!strcmp(cmd, "mv"))
		rc = arfctl_cmd_mv(c, &u, args[1]);
	else if (!strcmp(cmd, "ln"))
		rc = arfctl_cmd_ln(c, &u, args[1]);
	else if (!strcmp(cmd, "cp"))
		rc = arfctl_cmd_cp(c, &u, args[1]);
	else if (!strcmp(cmd, "chmod") || !strcmp(cmd, "chown"))
		rc = arfctl_cmd_setattr(c, &u, cmd, &sa);
	else if (!strcmp(cmd, "exec"))
		rc = arfctl_cmd_exec(c, &u, args[0], nargs - 2, args + 2);
	else
		rc = arfctl_cmd_status(c, &u);
	arf_close(c);
	return rc;
}

static int run(int argc, char **argv)
{
	struct opt_state st = {
		.adm = { .control = "/run/arf/arfd.ctl" },
		.claim = { .uid = (uint32_t)geteuid(), .gid = (uint32_t)getegid() },
	};
	int opt, rc, nargs;

	arf_client_opts_init(&arfctl_opt.client);
	/* the options before the command; those after it below */
	while ((opt = getopt_long(argc, argv, "+hV", longopts, NULL)) != -1) {
		if (opt == 'h' || opt == 'V') {
			if (opt == 'h')
				usage(stdout);
			else
				printf("arfctl %s\n", ARF_VERSION);
			return 0;
		}
		if ((rc = apply(opt, optarg, &st)))
			return rc;
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[optind++];
	char **args = argv + optind;
	if ((rc = late_options(argc - optind, args, &nargs, &st)))
		return rc < 0 ? 0 : rc;
	if (st.claimed)
		arf_set_thread_cred(&st.claim); /* AUTH_SYS: the server decides whether to believe it */
	/* management commands (status without a URL goes to the control socket) */
	int by_url = (!strcmp(cmd, "status") || !strcmp(cmd, "stats")) && nargs == 1;
	if (by_url && st.adm.prometheus) {
		fprintf(stderr, "arfctl: --prometheus needs the control socket (stats without a URL)\n");
		return 2;
	}
	if (!strcmp(cmd, "cell"))
		return arfctl_cell(nargs, args, arfctl_opt.json);
	if (!by_url) {
		st.adm.json = arfctl_opt.json;
		int arc = arfctl_admin(&st.adm, cmd, nargs, args);
		if (arc >= 0)
			return arc;
	}
	return run_file_cmd(cmd, nargs, args);
}

int main(int argc, char **argv)
{
	int rc = run(argc, argv);

	/* what stdio still holds may not reach a full disk or a closed pipe */
	int err = fflush(stdout) ? errno : ferror(stdout) ? EIO : 0;
	if (err) {
		fprintf(stderr, "arfctl: standard output: %s\n", strerror(err));
		return 1;
	}
	return rc;
}

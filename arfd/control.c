/* SPDX-License-Identifier: MIT */
/*
 * arfd/control — the management socket that arfctl's administrative
 * commands use (status, stats, clients, exports, progs, fsck, checkpoint).
 *
 * A UNIX stream socket (default /run/arf/arfd.ctl), mode 0600, or 0660 and
 * owned by `control_group` when one is configured; every connection is also
 * checked with SO_PEERCRED (uid 0, or the configured group as primary or
 * supplementary group), so a socket file made accessible by mistake still
 * lets nobody else in.  The exchange is one line in ("fsck\n",
 * "progs show 3fa2\n"), one JSON
 * object or Prometheus text out, then the connection closes.  Commands run
 * on this thread, one at a time; fsck and checkpoint take the filesystem
 * lock, so requests wait while they run.
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "arf_proto.h"
#include "arfd.h"
#include "log.h"
#include "arf_ops.h"

struct arfd_control {
	int fd, evfd;
	gid_t gid;               /* control_group, or (gid_t)-1 */
	pthread_t thr;
	char path[256];
};

/* A growing text buffer. */
struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = 1;
			return;
		}
		if (b->p && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *np = realloc(b->p, cap);
		if (!np) {
			b->err = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
}

/* JSON string: the characters that need it escaped. */
static void sb_json_str(struct sbuf *b, const char *s)
{
	sb_printf(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			sb_printf(b, "\\%c", c);
		else if (c < 0x20)
			sb_printf(b, "\\u%04x", c);
		else
			sb_printf(b, "%c", c);
	}
	sb_printf(b, "\"");
}

static int peer_allowed(struct arfd_control *ctl, int fd, char *who, size_t wlen)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
		return 0;
	snprintf(who, wlen, "pid %d uid %u", (int)cr.pid, (unsigned)cr.uid);
	if (cr.uid == 0)
		return 1;
	if (ctl->gid == (gid_t)-1)
		return 0;
	if (cr.gid == ctl->gid)
		return 1;
	/* supplementary groups of the peer, from /proc */
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)cr.pid);
	FILE *f = fopen(path, "r");
	int ok = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Groups:", 7))
			continue;
		char *save = NULL;
		for (char *t = strtok_r(line + 7, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
			if ((gid_t)strtoul(t, NULL, 10) == ctl->gid)
				ok = 1;
	}
	fclose(f);
	return ok;
}

/* ---- commands ---------------------------------------------------------- */

static void cmd_status(struct arfd *d, struct sbuf *b)
{
	struct arf_proto_wr w;
	arf_proto_wr_init(&w);
	pthread_mutex_lock(&d->fs_lock);
	arfd_status_json(d, &w);
	pthread_mutex_unlock(&d->fs_lock);
	sb_printf(b, "%.*s", (int)w.len, (const char *)w.buf);
	arf_proto_wr_free(&w);
}

struct stat_snap {
	struct arfd_counters ctr;
	struct arf_net_server_counters nc;
	struct arf_ops_statfs sf;
	double uptime;
	uint64_t clients;
};

static void snap(struct arfd *d, struct stat_snap *s)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&d->fs_lock);
	s->ctr = d->ctr;
	arf_ops_statfs(&d->fs, &s->sf);
	pthread_mutex_unlock(&d->fs_lock);
	arf_net_server_counters(d->net, &s->nc);
	s->uptime = (double)(now.tv_sec - d->started.tv_sec) +
		    (double)(now.tv_nsec - d->started.tv_nsec) / 1e9;
	s->clients = __atomic_load_n(&d->clients, __ATOMIC_RELAXED);
}

/* The name of counter i, NULL for the kinds no index names (those are in
 * the error counts, not listed by kind). */
static const char *kind_name(int i)
{
	return i >= 0 && i < ARF_PROTO_NKINDS - 1 ? arf_proto_kind_name(i) : NULL;
}

static void cmd_stats(struct arfd *d, struct sbuf *b, int prometheus)
{
	struct stat_snap s;
	snap(d, &s);
	if (!prometheus) {
		sb_printf(b, "{\"uptime_s\":%.3f,\"incarnation\":%llu,\"requests\":{", s.uptime,
			  (unsigned long long)d->incarnation);
		int first = 1;
		for (int i = 0; i < ARF_PROTO_NKINDS; i++) {
			const char *k = kind_name(i);
			if (!k || !s.ctr.requests[i])
				continue;
			sb_printf(b, "%s\"%s\":%llu", first ? "" : ",", k,
				  (unsigned long long)s.ctr.requests[i]);
			first = 0;
		}
		sb_printf(b, "},\"errors\":%llu,\"bad_requests\":%llu,\"mutations\":%llu,"
			  "\"objects_written\":%llu,\"wal_syncs\":%llu,\"synced_txns\":%llu,"
			  "\"connections\":{\"open\":%llu,\"accepted\":%llu,\"refused\":%llu,"
			  "\"refused_limit\":%llu,\"closed_idle\":%llu,\"closed_midframe\":%llu,"
			  "\"preauth_oversize\":%llu,\"stalls\":%llu,\"stalled\":%llu},"
			  "\"one_sided\":{\"reads\":%llu,\"bytes\":%llu,\"writes\":%llu,\"refused\":%llu,"
			  "\"rounds\":%llu},"
			  "\"net_requests\":%llu,\"bad_frames\":%llu,"
			  "\"inodes\":{\"total\":%llu,\"free\":%llu},"
			  "\"blocks\":{\"total\":%llu,\"free\":%llu},"
			  "\"programs\":{\"loads\":%llu,\"load_hits\":%llu,\"rejected\":%llu,"
			  "\"jitted\":%llu,\"jit_failed\":%llu,"
			  "\"evictions\":%llu,\"execs\":%llu,\"insns\":%llu,\"failures\":%llu,"
			  "\"budget_stops\":%llu}}",
			  (unsigned long long)s.ctr.errors, (unsigned long long)s.ctr.bad_requests,
			  (unsigned long long)s.ctr.mutations, (unsigned long long)s.ctr.objects_written,
			  (unsigned long long)s.ctr.syncs, (unsigned long long)s.ctr.synced_txns,
			  (unsigned long long)s.nc.conns_open, (unsigned long long)s.nc.conns_accepted,
			  (unsigned long long)s.nc.conns_refused,
			  (unsigned long long)s.nc.conns_refused_limit,
			  (unsigned long long)s.nc.conns_closed_idle,
			  (unsigned long long)s.nc.conns_closed_midframe,
			  (unsigned long long)s.nc.preauth_oversize, (unsigned long long)s.nc.stalls,
			  (unsigned long long)s.nc.conns_stalled, (unsigned long long)s.nc.one_sided_reads,
			  (unsigned long long)s.nc.one_sided_bytes,
			  (unsigned long long)s.nc.one_sided_writes,
			  (unsigned long long)s.nc.one_sided_refused,
			  (unsigned long long)s.nc.one_sided_rounds, (unsigned long long)s.nc.requests,
			  (unsigned long long)s.nc.bad_frames, (unsigned long long)s.sf.files,
			  (unsigned long long)s.sf.ffree, (unsigned long long)s.sf.blocks,
			  (unsigned long long)s.sf.bfree, (unsigned long long)s.ctr.prog_loads,
			  (unsigned long long)s.ctr.prog_load_hits, (unsigned long long)s.ctr.prog_rejected,
			  (unsigned long long)s.ctr.prog_jitted, (unsigned long long)s.ctr.prog_jit_failed,
			  (unsigned long long)s.ctr.prog_evictions, (unsigned long long)s.ctr.prog_execs,
			  (unsigned long long)s.ctr.prog_insns, (unsigned long long)s.ctr.prog_failures,
			  (unsigned long long)s.ctr.prog_budget_stops);
		return;
	}
	/* Prometheus text format: arf_ prefix, _total for counters, units in names. */
#define METRIC(name, type, help) sb_printf(b, "# HELP " name " " help "\n# TYPE " name " " type "\n")
	METRIC("arf_uptime_seconds", "gauge", "Seconds since arfd started.");
	sb_printf(b, "arf_uptime_seconds %.3f\n", s.uptime);
	METRIC("arf_incarnation", "gauge", "Incarnation number, changed at every start.");
	sb_printf(b, "arf_incarnation %llu\n", (unsigned long long)d->incarnation);
	METRIC("arf_requests_total", "counter", "Requests served, by kind.");
	for (int i = 0; i < ARF_PROTO_NKINDS; i++) {
		const char *k = kind_name(i);
		if (k)
			sb_printf(b, "arf_requests_total{kind=\"%s\"} %llu\n", k,
				  (unsigned long long)s.ctr.requests[i]);
	}
	METRIC("arf_request_errors_total", "counter", "Requests answered with a failure status.");
	sb_printf(b, "arf_request_errors_total %llu\n", (unsigned long long)s.ctr.errors);
	METRIC("arf_bad_requests_total", "counter", "Request bodies that could not be decoded.");
	sb_printf(b, "arf_bad_requests_total %llu\n", (unsigned long long)s.ctr.bad_requests);
	METRIC("arf_mutations_total", "counter", "Changes made durable in RocksDB.");
	sb_printf(b, "arf_mutations_total %llu\n", (unsigned long long)s.ctr.mutations);
	METRIC("arf_wal_syncs_total", "counter", "Write-ahead log syncs (group commits).");
	sb_printf(b, "arf_wal_syncs_total %llu\n", (unsigned long long)s.ctr.syncs);
	METRIC("arf_program_execs_total", "counter", "Mobile-code programs run.");
	sb_printf(b, "arf_program_execs_total %llu\n", (unsigned long long)s.ctr.prog_execs);
	METRIC("arf_program_instructions_total", "counter", "Instructions those programs executed.");
	sb_printf(b, "arf_program_instructions_total %llu\n", (unsigned long long)s.ctr.prog_insns);
	METRIC("arf_program_failures_total", "counter",
	       "Program runs that failed (budget, bad memory access, output, helper).");
	sb_printf(b, "arf_program_failures_total %llu\n", (unsigned long long)s.ctr.prog_failures);
	METRIC("arf_program_loads_total", "counter", "Programs verified and cached.");
	sb_printf(b, "arf_program_loads_total %llu\n", (unsigned long long)s.ctr.prog_loads);
	METRIC("arf_program_jit_compiles_total", "counter",
	       "Loaded programs compiled to native code by the JIT.");
	sb_printf(b, "arf_program_jit_compiles_total %llu\n", (unsigned long long)s.ctr.prog_jitted);
	METRIC("arf_program_jit_failures_total", "counter",
	       "Loaded programs the JIT could not compile (interpreted instead).");
	sb_printf(b, "arf_program_jit_failures_total %llu\n",
		  (unsigned long long)s.ctr.prog_jit_failed);
	METRIC("arf_connections_open", "gauge", "Client connections open.");
	sb_printf(b, "arf_connections_open %llu\n", (unsigned long long)s.nc.conns_open);
	METRIC("arf_connections_accepted_total", "counter", "Client connections accepted.");
	sb_printf(b, "arf_connections_accepted_total %llu\n", (unsigned long long)s.nc.conns_accepted);
	METRIC("arf_connections_refused_total", "counter",
	       "Connections refused (limit, handshake, access).");
	sb_printf(b, "arf_connections_refused_total %llu\n", (unsigned long long)s.nc.conns_refused);
	METRIC("arf_connections_refused_limit_total", "counter",
	       "Connections refused by max_conns, max_conns_per_client or the reserved root slots.");
	sb_printf(b, "arf_connections_refused_limit_total %llu\n",
		  (unsigned long long)s.nc.conns_refused_limit);
	METRIC("arf_connections_closed_idle_total", "counter", "Connections closed after idle_timeout_s.");
	sb_printf(b, "arf_connections_closed_idle_total %llu\n",
		  (unsigned long long)s.nc.conns_closed_idle);
	METRIC("arf_connections_closed_midframe_total", "counter",
	       "Connections closed with a frame unfinished past frame_timeout_s.");
	sb_printf(b, "arf_connections_closed_midframe_total %llu\n",
		  (unsigned long long)s.nc.conns_closed_midframe);
	METRIC("arf_preauth_oversize_total", "counter",
	       "Connections closed for a frame over 4 KiB before the handshake.");
	sb_printf(b, "arf_preauth_oversize_total %llu\n", (unsigned long long)s.nc.preauth_oversize);
	METRIC("arf_connection_stalls_total", "counter",
	       "Times a connection stopped being read at max_conn_requests or max_conn_request_bytes.");
	sb_printf(b, "arf_connection_stalls_total %llu\n", (unsigned long long)s.nc.stalls);
	METRIC("arf_connections_stalled", "gauge", "Connections not read now, at their request cap.");
	sb_printf(b, "arf_connections_stalled %llu\n", (unsigned long long)s.nc.conns_stalled);
	METRIC("arf_one_sided_reads_total", "counter", "One-sided reads served by the soft-NIC.");
	sb_printf(b, "arf_one_sided_reads_total %llu\n", (unsigned long long)s.nc.one_sided_reads);
	METRIC("arf_one_sided_read_bytes_total", "counter", "Bytes read one-sidedly (soft-NIC).");
	sb_printf(b, "arf_one_sided_read_bytes_total %llu\n",
		  (unsigned long long)s.nc.one_sided_bytes);
	METRIC("arf_one_sided_rounds_total", "counter",
	       "Round trips of one-sided operations served (a batched read is one).");
	sb_printf(b, "arf_one_sided_rounds_total %llu\n",
		  (unsigned long long)s.nc.one_sided_rounds);
	METRIC("arf_one_sided_refused_total", "counter",
	       "One-sided operations refused (key, bounds, rights).");
	sb_printf(b, "arf_one_sided_refused_total %llu\n",
		  (unsigned long long)s.nc.one_sided_refused);
	METRIC("arf_bad_frames_total", "counter", "Malformed frames received.");
	sb_printf(b, "arf_bad_frames_total %llu\n", (unsigned long long)s.nc.bad_frames);
	METRIC("arf_inodes", "gauge", "Inode slots.");
	sb_printf(b, "arf_inodes %llu\n", (unsigned long long)s.sf.files);
	METRIC("arf_inodes_free", "gauge", "Free inode slots.");
	sb_printf(b, "arf_inodes_free %llu\n", (unsigned long long)s.sf.ffree);
	METRIC("arf_data_bytes", "gauge", "Size of the data region.");
	sb_printf(b, "arf_data_bytes %llu\n", (unsigned long long)(s.sf.blocks * s.sf.bsize));
	METRIC("arf_data_free_bytes", "gauge", "Free bytes in the data region.");
	sb_printf(b, "arf_data_free_bytes %llu\n", (unsigned long long)(s.sf.bfree * s.sf.bsize));
#undef METRIC
}

struct clients_ctx {
	struct sbuf *b;
	int n;
};

static void one_client(void *ctx, const struct arf_net_conn_info *ci)
{
	struct clients_ctx *cc = ctx;
	sb_printf(cc->b, "%s{\"address\":", cc->n++ ? "," : "");
	sb_json_str(cc->b, ci->peer.addr);
	sb_printf(cc->b, ",\"transport\":\"%s\",\"ready\":%s,\"connected_s\":%.1f,"
		  "\"requests\":%llu,\"one_sided_reads\":%llu,\"one_sided_bytes\":%llu,"
		  "\"one_sided_writes\":%llu,\"refused\":%llu,\"bytes_sent\":%llu,"
		  "\"bytes_received\":%llu", ci->peer.transport, ci->ready ? "true" : "false",
		  ci->connected_s, (unsigned long long)ci->requests,
		  (unsigned long long)ci->one_sided_reads, (unsigned long long)ci->one_sided_bytes,
		  (unsigned long long)ci->one_sided_writes, (unsigned long long)ci->refused,
		  (unsigned long long)ci->bytes_sent, (unsigned long long)ci->bytes_received);
	if (ci->peer.has_cred)
		sb_printf(cc->b, ",\"pid\":%u,\"uid\":%u", ci->peer.pid, ci->peer.uid);
	sb_printf(cc->b, "}");
}

static void cmd_clients(struct arfd *d, struct sbuf *b)
{
	struct clients_ctx cc = { b, 0 };
	sb_printf(b, "{\"clients\":[");
	arf_net_server_foreach_conn(d->net, one_client, &cc);
	sb_printf(b, "]}");
}

static void cmd_exports(struct arfd *d, struct sbuf *b)
{
	sb_printf(b, "{\"exports\":[{\"name\":");
	sb_json_str(b, d->cfg.export_name);
	sb_printf(b, ",\"data_dir\":");
	sb_json_str(b, d->cfg.data_dir);
	sb_printf(b, ",\"sync\":%s,\"read_only\":%s,\"root_squash\":%s,\"anon_uid\":%d,"
		  "\"anon_gid\":%d,\"transports\":[", d->cfg.sync ? "true" : "false",
		  d->cfg.read_only ? "true" : "false", d->cfg.root_squash ? "true" : "false",
		  d->cfg.anon_uid, d->cfg.anon_gid);
	int n = 0;
	if (d->cfg.listen[0]) {
		char where[160];
		snprintf(where, sizeof(where), "tcp %s (port %u)", d->cfg.listen,
			 arf_net_server_port(d->net));
		sb_json_str(b, where);
		n++;
	}
	if (d->cfg.socket[0]) {
		char where[300];
		snprintf(where, sizeof(where), "shm %s", d->cfg.socket);
		if (n)
			sb_printf(b, ",");
		sb_json_str(b, where);
	}
	sb_printf(b, "]}]}");
}

/* ---- programs ------------------------------------------------------------ */

static void prog_json(struct sbuf *b, const struct arfd_prog_info *pi)
{
	sb_printf(b, "{\"hash\":\"");
	for (size_t i = 0; i < sizeof(pi->hash); i++)
		sb_printf(b, "%02x", pi->hash[i]);
	sb_printf(b, "\",\"format\":\"%s\",\"engine\":\"%s\",\"native_bytes\":%llu,"
		  "\"bytes\":%llu,\"insns\":%llu,\"entry\":%llu,"
		  "\"rodata_bytes\":%llu,\"loads\":%llu,\"runs\":%llu,\"failures\":%llu,"
		  "\"insns_executed\":%llu,\"running\":%u,\"loaded_at\":%lld,\"last_used\":%lld}",
		  pi->elf ? "elf" : "bytecode", pi->native ? "jit" : "interpreter",
		  (unsigned long long)pi->native_bytes, (unsigned long long)pi->bytes,
		  (unsigned long long)pi->insns, (unsigned long long)pi->entry,
		  (unsigned long long)pi->rodata, (unsigned long long)pi->loads,
		  (unsigned long long)pi->runs, (unsigned long long)pi->failures,
		  (unsigned long long)pi->insns_run, pi->running, (long long)pi->loaded_at,
		  (long long)pi->last_used);
}

/* "progs list", "progs show|disasm|unload PREFIX". */
static void cmd_progs(struct arfd *d, struct sbuf *b, char *args)
{
	struct arfd_prog_info pi;
	char err[256] = "", *text = NULL;
	char *sub = args, *prefix = strchr(args, ' ');
	int rc;

	if (prefix)
		*prefix++ = 0;
	else
		prefix = args + strlen(args);
	if (!strcmp(sub, "list") && !*prefix) {
		struct arfd_prog_info *v;
		size_t n, cap;
		if (arfd_progs_list(d, &v, &n, &cap)) {
			sb_printf(b, "{\"error\":\"out of memory\"}");
			return;
		}
		sb_printf(b, "{\"programs\":[");
		for (size_t i = 0; i < n; i++) {
			sb_printf(b, "%s", i ? "," : "");
			prog_json(b, &v[i]);
		}
		sb_printf(b, "],\"count\":%zu,\"cache_size\":%zu,\"enabled\":%s}", n, cap,
			  d->cfg.prog_enable ? "true" : "false");
		free(v);
		return;
	}
	if (!*prefix || strchr(prefix, ' ') ||
	    (strcmp(sub, "show") && strcmp(sub, "disasm") && strcmp(sub, "unload"))) {
		sb_printf(b, "{\"error\":\"usage: progs list | progs show|disasm|unload HASH\"}");
		return;
	}
	if (!strcmp(sub, "unload")) {
		rc = arfd_progs_unload(d, prefix, &pi, err, sizeof(err));
		if (!rc)
			arfd_log(ARFD_LOG_INFO, "control: program %02x%02x%02x%02x%02x%02x%02x%02x... "
				 "unloaded after %llu runs", pi.hash[0], pi.hash[1], pi.hash[2],
				 pi.hash[3], pi.hash[4], pi.hash[5], pi.hash[6], pi.hash[7],
				 (unsigned long long)pi.runs);
	} else {
		rc = arfd_progs_show(d, prefix, &pi, !strcmp(sub, "disasm") ? &text : NULL, err,
				     sizeof(err));
	}
	if (rc) {
		sb_printf(b, "{\"error\":");
		sb_json_str(b, err[0] ? err : strerror(-rc));
		sb_printf(b, "}");
	} else if (text) {
		sb_printf(b, "{\"program\":");
		prog_json(b, &pi);
		sb_printf(b, ",\"disassembly\":");
		sb_json_str(b, text);
		sb_printf(b, "}");
	} else {
		sb_printf(b, "{\"%s\":", !strcmp(sub, "unload") ? "unloaded" : "program");
		prog_json(b, &pi);
		sb_printf(b, "}");
	}
	free(text);
}

struct fsck_ctx {
	struct sbuf *b;
	int n;
};

static void fsck_report(void *ctx, const char *kind, const char *msg)
{
	struct fsck_ctx *fc = ctx;
	if (fc->n++ >= 1000)
		return; /* the count says how many more */
	sb_printf(fc->b, "%s{\"kind\":\"%s\",\"what\":", fc->n > 1 ? "," : "", kind);
	sb_json_str(fc->b, msg);
	sb_printf(fc->b, "}");
}

/* Wait until every applied change is durable and sealed (caller holds
 * fs_lock; returns with it held). */
static void quiesce(struct arfd *d)
{
	while (d->durable_seq < d->applied_seq) {
		if (d->sync_wanted < d->applied_seq)
			d->sync_wanted = d->applied_seq;
		pthread_cond_signal(&d->commit_cond);
		pthread_mutex_unlock(&d->fs_lock);
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&d->fs_lock);
	}
}

static void cmd_fsck(struct arfd *d, struct sbuf *b)
{
	struct fsck_ctx fc = { b, 0 };
	struct arf_meta_fsck r = { .report = fsck_report, .ctx = &fc };
	char err[256] = "";
	uint64_t compared = 0;

	sb_printf(b, "{\"problems\":[");
	pthread_mutex_lock(&d->fs_lock);
	quiesce(d);
	int rc = arf_meta_fsck(&d->fs, &r);
	int src = rc < 0 ? 0 : arfd_store_compare(d->store, d->meta, d->meta_size, d->data,
						   d->data_size, fsck_report, &fc, &compared, err,
						   sizeof(err));
	pthread_mutex_unlock(&d->fs_lock);
	uint64_t problems = r.problems + (uint64_t)(src > 0 ? src : 0);
	sb_printf(b, "],\"count\":%llu,\"inodes\":%llu,\"directories\":%llu,\"files\":%llu,"
		  "\"entries\":%llu,\"blocks\":%llu,\"rocksdb_objects_compared\":%llu",
		  (unsigned long long)problems, (unsigned long long)r.inodes,
		  (unsigned long long)r.dirs, (unsigned long long)r.files,
		  (unsigned long long)r.entries, (unsigned long long)r.blocks,
		  (unsigned long long)compared);
	if (rc < 0 || src < 0) {
		sb_printf(b, ",\"error\":");
		sb_json_str(b, rc < 0 ? strerror(-rc) : err);
	}
	sb_printf(b, "}");
}

static void cmd_checkpoint(struct arfd *d, struct sbuf *b)
{
	char err[256] = "";
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_mutex_lock(&d->fs_lock);
	quiesce(d);
	int rc = arfd_store_sync(d->store, err, sizeof(err));
	pthread_mutex_unlock(&d->fs_lock);
	if (!rc)
		arfd_store_compact(d->store); /* RocksDB is thread-safe; requests go on */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (rc) {
		sb_printf(b, "{\"ok\":false,\"error\":");
		sb_json_str(b, err);
		sb_printf(b, "}");
	} else {
		sb_printf(b, "{\"ok\":true,\"seconds\":%.3f}", s);
	}
}

/* Test hook (server.test_hooks only): change one byte of a live region
 * without persisting it, so that fsck's comparison with RocksDB has
 * something to find. */
static void cmd_scribble(struct arfd *d, struct sbuf *b, const char *args)
{
	char region[8];
	unsigned long long off;
	if (!d->cfg.test_hooks || sscanf(args, "%7s %llu", region, &off) != 2 ||
	    (strcmp(region, "meta") && strcmp(region, "data"))) {
		sb_printf(b, "{\"error\":\"scribble needs server.test_hooks and 'meta|data OFFSET'\"}");
		return;
	}
	uint8_t *base = !strcmp(region, "meta") ? d->meta : d->data;
	uint64_t size = !strcmp(region, "meta") ? d->meta_size : d->data_size;
	if (off >= size) {
		sb_printf(b, "{\"error\":\"offset past the region\"}");
		return;
	}
	pthread_mutex_lock(&d->fs_lock);
	base[off] ^= 0x5a;
	pthread_mutex_unlock(&d->fs_lock);
	sb_printf(b, "{\"ok\":true}");
}

static void serve_one(struct arfd *d, struct arfd_control *ctl, int fd)
{
	char line[512], who[64] = "?";
	size_t n = 0;
	struct sbuf b = { 0 };

	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (!peer_allowed(ctl, fd, who, sizeof(who))) {
		arfd_log(ARFD_LOG_WARN, "control: refused %s (not root or the control group)", who);
		const char *m = "{\"error\":\"permission denied: root or the control group only\"}\n";
		if (write(fd, m, strlen(m)) < 0) { /* the peer went away */ }
		return;
	}
	while (n < sizeof(line) - 1) {
		if (poll(&p, 1, 5000) <= 0)
			return;
		ssize_t r = read(fd, line + n, sizeof(line) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (memchr(line, '\n', n))
			break;
	}
	line[n] = 0;
	char *nl = strchr(line, '\n');
	if (nl)
		*nl = 0;
	char *args = strchr(line, ' ');
	if (args)
		*args++ = 0;
	else
		args = line + strlen(line);
	arfd_log(ARFD_LOG_DEBUG, "control: %s from %s", line, who);
	if (!strcmp(line, "status"))
		cmd_status(d, &b);
	else if (!strcmp(line, "stats"))
		cmd_stats(d, &b, !strcmp(args, "prometheus"));
	else if (!strcmp(line, "clients"))
		cmd_clients(d, &b);
	else if (!strcmp(line, "exports"))
		cmd_exports(d, &b);
	else if (!strcmp(line, "progs"))
		cmd_progs(d, &b, args);
	else if (!strcmp(line, "fsck"))
		cmd_fsck(d, &b);
	else if (!strcmp(line, "checkpoint"))
		cmd_checkpoint(d, &b);
	else if (!strcmp(line, "scribble"))
		cmd_scribble(d, &b, args);
	else {
		sb_printf(&b, "{\"error\":\"unknown command '");
		for (char *c = line; *c; c++)
			if (*c >= 0x20 && *c != '"' && *c != '\\' && c - line < 64)
				sb_printf(&b, "%c", *c);
		sb_printf(&b, "'\"}");
	}
	if (b.err) {
		free(b.p);
		b = (struct sbuf){ 0 };
		sb_printf(&b, "{\"error\":\"out of memory\"}");
	}
	sb_printf(&b, "\n");
	for (size_t off = 0; off < b.len;) {
		ssize_t w = write(fd, b.p + off, b.len - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(b.p);
}

static void *control_main(void *arg)
{
	struct arfd *d = arg;
	struct arfd_control *ctl = d->control;
	struct pollfd p[2] = { { .fd = ctl->fd, .events = POLLIN }, { .fd = ctl->evfd, .events = POLLIN } };

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		int fd = accept4(ctl->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_one(d, ctl, fd);
		close(fd);
	}
	return NULL;
}

int arfd_control_path(const struct arfd_config *cfg, char *out, size_t cap)
{
	if (!cfg->control[0])
		return -1;
	if (strcmp(cfg->control, "auto")) {
		snprintf(out, cap, "%s", cfg->control);
		return 0;
	}
	if (!cfg->socket[0]) {
		snprintf(out, cap, "%s", ARFD_DEFAULT_CONTROL);
		return 0;
	}
	size_t n = strlen(cfg->socket);
	if (n > 5 && !strcmp(cfg->socket + n - 5, ".sock"))
		snprintf(out, cap, "%.*s.ctl", (int)(n - 5), cfg->socket);
	else
		snprintf(out, cap, "%s.ctl", cfg->socket);
	return 0;
}

int arfd_control_start(struct arfd *d, char *err, size_t errlen)
{
	struct arfd_control *ctl;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	char path[sizeof(sa.sun_path) + 8];
	if (arfd_control_path(&d->cfg, path, sizeof(path)))
		return 0; /* none */
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "control socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ctl->fd = ctl->evfd = -1;
	ctl->gid = (gid_t)-1;
	d->control = ctl;
	snprintf(ctl->path, sizeof(ctl->path), "%s", path);
	if (d->cfg.control_group[0]) {
		struct group *g = getgrnam(d->cfg.control_group);
		if (!g) {
			snprintf(err, errlen, "control_group '%s': no such group", d->cfg.control_group);
			return -EINVAL;
		}
		ctl->gid = g->gr_gid;
	}
	memcpy(sa.sun_path, ctl->path, strlen(ctl->path) + 1);
	/* a socket left by an arfd that died is replaced; a live one is not */
	struct stat st;
	if (lstat(ctl->path, &st) == 0) {
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int live = S_ISSOCK(st.st_mode) && probe >= 0 &&
			   connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (probe >= 0)
			close(probe);
		if (live || !S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "control socket %s: %s", ctl->path,
				 live ? "in use by a running arfd" : "exists and is not a socket");
			return -EADDRINUSE;
		}
		unlink(ctl->path);
	}
	char dir[sizeof(ctl->path)];
	snprintf(dir, sizeof(dir), "%s", ctl->path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		mkdir(dir, 0755); /* its parent, as for the data socket */
	}
	ctl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ctl->evfd = eventfd(0, EFD_CLOEXEC);
	mode_t old = umask(0177);
	int brc = ctl->fd < 0 ? -1 : bind(ctl->fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (ctl->fd < 0 || ctl->evfd < 0 || brc < 0 || listen(ctl->fd, 16) < 0) {
		int e = errno;
		snprintf(err, errlen, "control socket %s: %s", ctl->path, strerror(e));
		return -e;
	}
	if (ctl->gid != (gid_t)-1 &&
	    (chown(ctl->path, 0, ctl->gid) < 0 || chmod(ctl->path, 0660) < 0)) {
		int e = errno;
		snprintf(err, errlen, "control socket %s: group %s: %s", ctl->path,
			 d->cfg.control_group, strerror(e));
		return -e;
	}
	int rc = pthread_create(&ctl->thr, NULL, control_main, d);
	if (rc) {
		snprintf(err, errlen, "control thread: %s", strerror(rc));
		return -rc;
	}
	return 0;
}

void arfd_control_stop(struct arfd *d)
{
	struct arfd_control *ctl = d->control;
	if (!ctl)
		return;
	if (ctl->thr) {
		uint64_t one = 1;
		if (write(ctl->evfd, &one, sizeof(one)) < 0) { /* then poll fails too */ }
		pthread_join(ctl->thr, NULL);
	}
	if (ctl->fd >= 0) {
		close(ctl->fd);
		unlink(ctl->path);
	}
	if (ctl->evfd >= 0)
		close(ctl->evfd);
	free(ctl);
	d->control = NULL;
}

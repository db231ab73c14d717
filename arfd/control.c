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
 * "progs show 3fa2\n"), one JSON object (built with json-c; arfctl's
 * admin.c reads it with json-c, and this file is the schema: an object with
 * "error" is a failure) or Prometheus text out, then the connection closes.
 * The stats object and the Prometheus text come from one table of metrics.
 * Commands run on this thread, one at a time; fsck and checkpoint take the
 * filesystem lock, so requests wait while they run.
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

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

/*
 * Replies are json-c objects, serialized once at the end (no spaces, "/"
 * left unescaped); arfctl reads them with json-c too.  Building never stops
 * half-way: a failed allocation is latched in reply_oom (the control thread
 * is the only builder) and the whole reply becomes {"error":"out of
 * memory"}.
 */
static int reply_oom;

/* v under key in o; o owns v after (v is freed when that fails). */
static void put(json_object *o, const char *key, json_object *v)
{
	if (!o || !v || json_object_object_add(o, key, v)) {
		json_object_put(v);
		reply_oom = 1;
	}
}

static void push(json_object *a, json_object *v)
{
	if (!a || !v || json_object_array_add(a, v)) {
		json_object_put(v);
		reply_oom = 1;
	}
}

static json_object *u64(uint64_t v) { return json_object_new_uint64(v); }
static json_object *str(const char *s) { return json_object_new_string(s); }
static json_object *boolean(int b) { return json_object_new_boolean(b); }

/* A number written with prec decimals (json-c would write all 17). */
static json_object *fixed(double v, int prec)
{
	char text[64];
	snprintf(text, sizeof(text), "%.*f", prec, v);
	return json_object_new_double_s(v, text);
}

/* {"error": msg}: the form arfctl reports as a failure. */
static json_object *error_reply(const char *msg)
{
	json_object *r = json_object_new_object();
	put(r, "error", str(msg));
	return r;
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
	/* supplementary groups as the kernel has them for the socket, not
	 * /proc/PID (which races with the pid's reuse) */
	gid_t g[256];
	socklen_t gl = sizeof(g);
	int ok = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &gl) == 0)
		for (size_t i = 0; i < gl / sizeof(g[0]); i++)
			ok |= g[i] == ctl->gid;
	return ok;
}

/* ---- commands ---------------------------------------------------------- */

static json_object *cmd_status(struct arfd *d)
{
	arfd_lock_for_control(d);
	json_object *r = arfd_status_object(d); /* what a data connection's STATUS says */
	arfd_fs_unlock(d);
	reply_oom |= !r;
	return r;
}

/* ---- stats: one table for the JSON object and the Prometheus text ------- */

struct stat_snap {
	struct arfd_counters ctr;
	struct arf_net_server_counters nc;
	struct arf_ops_statfs sf;
	struct arfd_store_stats store;
	double uptime;
	uint64_t incarnation, data_bytes, data_free_bytes, cpu_us, applied_seq, durable_seq;
};

static void snap(struct arfd *d, struct stat_snap *s)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	arfd_lock_for_control(d);
	s->ctr = d->ctr;
	arf_ops_statfs(&d->fs, &s->sf);
	arfd_store_stats(d->store, &s->store);
	s->applied_seq = d->applied_seq;
	s->durable_seq = d->durable_seq;
	arfd_fs_unlock(d);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	s->cpu_us = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
		    (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	arf_net_server_counters(d->net, &s->nc);
	s->uptime = (double)(now.tv_sec - d->started.tv_sec) +
		    (double)(now.tv_nsec - d->started.tv_nsec) / 1e9;
	s->incarnation = d->incarnation;
	s->data_bytes = s->sf.blocks * s->sf.bsize;
	s->data_free_bytes = s->sf.bfree * s->sf.bsize;
}

/* How a metric's value is read from the snapshot. */
enum metric_kind {
	METRIC_U64,     /* the uint64_t at off */
	METRIC_SECONDS, /* the uptime: a double, three decimals */
	METRIC_BY_KIND, /* ctr.requests by request kind: in JSON the kinds seen, in
			 * Prometheus every kind as a label */
};

struct metric {
	const char *json;  /* its path in the stats object ("connections.open"); NULL:
			    * Prometheus only */
	const char *prom;  /* its Prometheus name (arf_, _total on counters, units in the
			    * name); NULL: JSON only */
	const char *type;  /* Prometheus type: "counter" or "gauge" */
	const char *help;
	enum metric_kind kind;
	size_t off;        /* METRIC_U64: where in struct stat_snap */
};

/* A uint64_t field of struct stat_snap: its offset, and a compile error
 * (distinct pointer types) when the field is not a uint64_t. */
#define U64(f) METRIC_U64, offsetof(struct stat_snap, f) + \
	0 * sizeof(&((struct stat_snap *)0)->f == (uint64_t *)0)

/* Every counter arfd shows, in the order the JSON object lists them.  The
 * regions' sizes go to Prometheus in bytes and to JSON in blocks. */
static const struct metric metrics[] = {
	{ "uptime_s", "arf_uptime_seconds", "gauge", "Seconds since arfd started.",
	  METRIC_SECONDS, 0 },
	{ "incarnation", "arf_incarnation", "gauge", "Incarnation number, changed at every start.",
	  U64(incarnation) },
	{ "requests", "arf_requests_total", "counter", "Requests served, by kind.",
	  METRIC_BY_KIND, 0 },
	{ "errors", "arf_request_errors_total", "counter",
	  "Requests answered with a failure status.", U64(ctr.errors) },
	{ "bad_requests", "arf_bad_requests_total", "counter",
	  "Request bodies that could not be decoded.", U64(ctr.bad_requests) },
	{ "inline_requests", "arf_inline_requests_total", "counter",
	  "Requests the transport's thread served itself, with no hand-off to a worker.",
	  U64(ctr.inline_requests) },
	{ "mutations", "arf_mutations_total", "counter", "Changes made durable in RocksDB.",
	  U64(ctr.mutations) },
	{ "objects_written", "arf_objects_written_total", "counter",
	  "Objects those changes wrote (META objects to RocksDB, data blocks to the data log).",
	  U64(ctr.objects_written) },
	{ "wal_syncs", "arf_wal_syncs_total", "counter",
	  "Syncs of the data log and the write-ahead log (group commits).", U64(ctr.syncs) },
	{ "synced_txns", "arf_synced_changes_total", "counter",
	  "Changes made durable by those syncs.", U64(ctr.synced_txns) },
	{ "applied_seq", "arf_applied_sequence", "gauge",
	  "Sequence of the last change applied (it goes on across restarts).", U64(applied_seq) },
	{ "durable_seq", "arf_durable_sequence", "gauge",
	  "Sequence through which every change is durable.", U64(durable_seq) },
	{ "writes.unstable", "arf_unstable_writes_total", "counter",
	  "WRITEs answered before they were durable (durable at the next COMMIT).",
	  U64(ctr.unstable_writes) },
	{ "writes.stable", "arf_stable_writes_total", "counter",
	  "WRITEs answered once durable ([export] sync).", U64(ctr.stable_writes) },
	{ "writes.commits", "arf_commits_total", "counter",
	  "COMMITs answered (everything before each durable).", U64(ctr.commits) },
	{ "store.wal_bytes", "arf_wal_bytes_total", "counter",
	  "Bytes of RocksDB write batches (metadata: the write-ahead log's payload).",
	  U64(store.wal_bytes) },
	{ "store.batches", "arf_store_batches_total", "counter",
	  "RocksDB write batches of transactions (held unstable writes go with the next).",
	  U64(store.batches) },
	{ "store.held_txns", "arf_store_held_writes_total", "counter",
	  "Unstable writes whose RocksDB part was held back for a later batch.",
	  U64(store.held_txns) },
	{ "store.log_bytes", "arf_data_log_bytes", "gauge", "Bytes in the data log's segments.",
	  U64(store.log_bytes) },
	{ "store.log_live_bytes", "arf_data_log_live_bytes", "gauge",
	  "Of those, the live block records.", U64(store.log_live_bytes) },
	{ "store.log_segments", "arf_data_log_segments", "gauge", "Data log segment files.",
	  U64(store.log_segments) },
	{ "store.log_appended_bytes", "arf_data_log_appended_bytes_total", "counter",
	  "Bytes appended to the data log by writes.", U64(store.log_appended_bytes) },
	{ "store.log_syncs", "arf_data_log_syncs_total", "counter", "Data log fdatasync rounds.",
	  U64(store.log_syncs) },
	{ "store.log_reclaims", "arf_data_log_reclaims_total", "counter",
	  "Data log segments whose live records were copied out by reclamation.",
	  U64(ctr.reclaims) },
	{ "store.log_reclaimed_bytes", "arf_data_log_reclaimed_bytes_total", "counter",
	  "Data log segment bytes deleted by reclamation.", U64(store.log_reclaimed_bytes) },
	{ "store.log_copied_bytes", "arf_data_log_copied_bytes_total", "counter",
	  "Live records reclamation rewrote.", U64(store.log_copied_bytes) },
	{ "store.log_recycled", "arf_data_log_recycled_total", "counter",
	  "Data log heads made from a deleted segment's file (no allocation).",
	  U64(store.log_recycled) },
	{ "cpu_us", NULL, "counter",
	  "CPU time arfd used (user and system, getrusage).", U64(cpu_us) },
	{ "connections.open", "arf_connections_open", "gauge", "Client connections open.",
	  U64(nc.conns_open) },
	{ "connections.accepted", "arf_connections_accepted_total", "counter",
	  "Client connections accepted.", U64(nc.conns_accepted) },
	{ "connections.refused", "arf_connections_refused_total", "counter",
	  "Connections refused (limit, handshake, access).", U64(nc.conns_refused) },
	{ "connections.refused_limit", "arf_connections_refused_limit_total", "counter",
	  "Connections refused by max_conns, max_conns_per_client or the reserved root slots.",
	  U64(nc.conns_refused_limit) },
	{ "connections.closed_idle", "arf_connections_closed_idle_total", "counter",
	  "Connections closed after idle_timeout_s.", U64(nc.conns_closed_idle) },
	{ "connections.closed_midframe", "arf_connections_closed_midframe_total", "counter",
	  "Connections closed with a frame unfinished past frame_timeout_s.",
	  U64(nc.conns_closed_midframe) },
	{ "connections.preauth_oversize", "arf_preauth_oversize_total", "counter",
	  "Connections closed for a frame over 4 KiB before the handshake.",
	  U64(nc.preauth_oversize) },
	{ "connections.stalls", "arf_connection_stalls_total", "counter",
	  "Times a connection stopped being read at max_conn_requests or max_conn_request_bytes.",
	  U64(nc.stalls) },
	{ "connections.stalled", "arf_connections_stalled", "gauge",
	  "Connections not read now, at their request cap.", U64(nc.conns_stalled) },
	{ "one_sided.reads", "arf_one_sided_reads_total", "counter",
	  "One-sided reads served by the soft-NIC.", U64(nc.one_sided_reads) },
	{ "one_sided.bytes", "arf_one_sided_read_bytes_total", "counter",
	  "Bytes read one-sidedly (soft-NIC).", U64(nc.one_sided_bytes) },
	{ "one_sided.writes", "arf_one_sided_writes_total", "counter",
	  "One-sided writes served by the soft-NIC.", U64(nc.one_sided_writes) },
	{ "one_sided.refused", "arf_one_sided_refused_total", "counter",
	  "One-sided operations refused (key, bounds, rights).", U64(nc.one_sided_refused) },
	{ "one_sided.rounds", "arf_one_sided_rounds_total", "counter",
	  "Round trips of one-sided operations served (a batched read is one).",
	  U64(nc.one_sided_rounds) },
	{ "net_requests", "arf_net_requests_total", "counter",
	  "Request frames the transports received.", U64(nc.requests) },
	{ "bad_frames", "arf_bad_frames_total", "counter", "Malformed frames received.",
	  U64(nc.bad_frames) },
	{ "inodes.total", "arf_inodes", "gauge", "Inode slots.", U64(sf.files) },
	{ "inodes.free", "arf_inodes_free", "gauge", "Free inode slots.", U64(sf.ffree) },
	{ "blocks.total", NULL, "gauge", "Blocks of the data region.", U64(sf.blocks) },
	{ "blocks.free", NULL, "gauge", "Free blocks of the data region.", U64(sf.bfree) },
	{ NULL, "arf_data_bytes", "gauge", "Size of the data region.", U64(data_bytes) },
	{ NULL, "arf_data_free_bytes", "gauge", "Free bytes in the data region.",
	  U64(data_free_bytes) },
	{ "programs.loads", "arf_program_loads_total", "counter", "Programs verified and cached.",
	  U64(ctr.prog_loads) },
	{ "programs.load_hits", "arf_program_load_hits_total", "counter",
	  "Program loads answered from the cache.", U64(ctr.prog_load_hits) },
	{ "programs.rejected", "arf_program_rejected_total", "counter",
	  "Program loads refused by the loader or the verifier.", U64(ctr.prog_rejected) },
	{ "programs.jitted", "arf_program_jit_compiles_total", "counter",
	  "Loaded programs compiled to native code by the JIT.", U64(ctr.prog_jitted) },
	{ "programs.jit_failed", "arf_program_jit_failures_total", "counter",
	  "Loaded programs the JIT could not compile (interpreted instead).",
	  U64(ctr.prog_jit_failed) },
	{ "programs.evictions", "arf_program_evictions_total", "counter",
	  "Programs dropped from the full cache.", U64(ctr.prog_evictions) },
	{ "programs.execs", "arf_program_execs_total", "counter", "Mobile-code programs run.",
	  U64(ctr.prog_execs) },
	{ "programs.insns", "arf_program_instructions_total", "counter",
	  "Instructions those programs executed.", U64(ctr.prog_insns) },
	{ "programs.failures", "arf_program_failures_total", "counter",
	  "Program runs that failed (budget, bad memory access, output, helper).",
	  U64(ctr.prog_failures) },
	{ "programs.budget_stops", "arf_program_budget_stops_total", "counter",
	  "Program runs stopped at their instruction or wall-clock budget.",
	  U64(ctr.prog_budget_stops) },
};
#undef U64

static uint64_t metric_u64(const struct metric *m, const struct stat_snap *s)
{
	uint64_t v;
	memcpy(&v, (const char *)s + m->off, sizeof(v));
	return v;
}

/* The name of counter i, NULL for the kinds no index names (those are in
 * the error counts, not listed by kind). */
static const char *kind_name(int i)
{
	return i >= 0 && i < ARF_PROTO_NKINDS - 1 ? arf_proto_kind_name(i) : NULL;
}

/* The object at a metric's path ("a.b": root's "a", made when missing) and
 * the key left ("b"), in key (cap bytes). */
static json_object *metric_parent(json_object *root, const char *path, char *key, size_t cap)
{
	const char *dot;
	json_object *o = root;

	while ((dot = strchr(path, '.'))) {
		json_object *sub;
		snprintf(key, cap, "%.*s", (int)(dot - path), path);
		if (!json_object_object_get_ex(o, key, &sub)) {
			sub = json_object_new_object();
			put(o, key, sub);
			if (reply_oom)
				return NULL;
		}
		o = sub;
		path = dot + 1;
	}
	snprintf(key, cap, "%s", path);
	return o;
}

static json_object *stats_json(const struct stat_snap *s)
{
	json_object *r = json_object_new_object();
	char key[64];

	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		const struct metric *m = &metrics[i];
		if (!m->json)
			continue;
		json_object *parent = metric_parent(r, m->json, key, sizeof(key)), *v;
		if (m->kind == METRIC_SECONDS) {
			v = fixed(s->uptime, 3);
		} else if (m->kind == METRIC_BY_KIND) {
			v = json_object_new_object();
			for (int k = 0; k < ARF_PROTO_NKINDS; k++)
				if (kind_name(k) && s->ctr.requests[k])
					put(v, kind_name(k), u64(s->ctr.requests[k]));
		} else {
			v = u64(metric_u64(m, s));
		}
		put(parent, key, v);
	}
	return r;
}

/* The Prometheus text format (version 0.0.4), malloc'd; NULL when out of
 * memory. */
/* Is m one volume's, a line for each volume (labelled, where there are
 * several)?  Not the server's own: its uptime, its CPU and the transport. */
static int per_volume(const struct metric *m)
{
	size_t nc = offsetof(struct stat_snap, nc);

	if (m->kind != METRIC_U64)
		return m->kind == METRIC_BY_KIND;
	return !(m->off >= nc && m->off < nc + sizeof(struct arf_net_server_counters)) &&
	       m->off != offsetof(struct stat_snap, cpu_us);
}

/* The Prometheus text of n volumes' snapshots (s[0] the root's, which
 * alone gives the server's own metrics): with one volume no labels but
 * requests' kind, with several a volume label on each volume's line. */
static char *stats_prometheus(const struct stat_snap *s, const char *const *names, int n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		const struct metric *m = &metrics[i];
		if (!m->prom)
			continue;
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->prom, m->help, m->prom, m->type);
		int nv = per_volume(m) ? n : 1;
		for (int v = 0; v < nv; v++) {
			char lab[96] = "";
			if (nv > 1)
				snprintf(lab, sizeof(lab), "volume=\"%s\"", names[v]);
			if (m->kind == METRIC_SECONDS)
				fprintf(f, "%s %.3f\n", m->prom, s[v].uptime);
			else if (m->kind == METRIC_U64)
				fprintf(f, "%s%s%s%s %llu\n", m->prom, lab[0] ? "{" : "", lab,
					lab[0] ? "}" : "", (unsigned long long)metric_u64(m, &s[v]));
			else
				for (int k = 0; k < ARF_PROTO_NKINDS; k++)
					if (kind_name(k))
						fprintf(f, "%s{%s%skind=\"%s\"} %llu\n", m->prom, lab,
							lab[0] ? "," : "", kind_name(k),
							(unsigned long long)s[v].ctr.requests[k]);
		}
	}
	if (ferror(f) | fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

/* ---- clients, exports ---------------------------------------------------- */

static void one_client(void *ctx, const struct arf_net_conn_info *ci)
{
	json_object *c = json_object_new_object();

	put(c, "address", str(ci->peer.addr));
	put(c, "transport", str(ci->peer.transport));
	put(c, "ready", boolean(ci->ready));
	put(c, "connected_s", fixed(ci->connected_s, 1));
	put(c, "requests", u64(ci->requests));
	put(c, "one_sided_reads", u64(ci->one_sided_reads));
	put(c, "one_sided_bytes", u64(ci->one_sided_bytes));
	put(c, "one_sided_writes", u64(ci->one_sided_writes));
	put(c, "refused", u64(ci->refused));
	put(c, "bytes_sent", u64(ci->bytes_sent));
	put(c, "bytes_received", u64(ci->bytes_received));
	if (ci->peer.has_cred) {
		put(c, "pid", u64(ci->peer.pid));
		put(c, "uid", u64(ci->peer.uid));
	}
	push(ctx, c);
}

static json_object *cmd_clients(struct arfd *d)
{
	json_object *r = json_object_new_object(), *list = json_object_new_array();

	put(r, "clients", list);
	if (!reply_oom)
		arf_net_server_foreach_conn(d->net, one_client, list);
	return r;
}

static json_object *cmd_exports(struct arfd *d)
{
	json_object *r = json_object_new_object(), *list = json_object_new_array(),
		    *e = json_object_new_object(), *tr = json_object_new_array();
	char where[320];

	put(r, "exports", list);
	push(list, e);
	put(e, "name", str(d->cfg.export_name));
	put(e, "data_dir", str(d->cfg.data_dir));
	put(e, "sync", boolean(d->cfg.sync));
	put(e, "read_only", boolean(d->cfg.read_only));
	put(e, "root_squash", boolean(d->cfg.root_squash));
	put(e, "anon_uid", json_object_new_int(d->cfg.anon_uid));
	put(e, "anon_gid", json_object_new_int(d->cfg.anon_gid));
	put(e, "transports", tr);
	if (d->cfg.listen[0]) {
		snprintf(where, sizeof(where), "tcp %s (port %u)", d->cfg.listen,
			 arf_net_server_port(d->net));
		push(tr, str(where));
	}
	if (d->cfg.socket[0]) {
		snprintf(where, sizeof(where), "shm %s", d->cfg.socket);
		push(tr, str(where));
	}
	return r;
}

/* ---- programs ------------------------------------------------------------ */

static json_object *prog_json(const struct arfd_prog_info *pi)
{
	json_object *p = json_object_new_object();
	char hash[2 * sizeof(pi->hash) + 1];

	for (size_t i = 0; i < sizeof(pi->hash); i++)
		snprintf(hash + 2 * i, 3, "%02x", pi->hash[i]);
	put(p, "hash", str(hash));
	put(p, "format", str(pi->elf ? "elf" : "bytecode"));
	put(p, "engine", str(pi->native ? "jit" : "interpreter"));
	put(p, "native_bytes", u64(pi->native_bytes));
	put(p, "owner_uid", u64(pi->owner_uid));
	put(p, "bytes", u64(pi->bytes));
	put(p, "insns", u64(pi->insns));
	put(p, "entry", u64(pi->entry));
	put(p, "rodata_bytes", u64(pi->rodata));
	put(p, "loads", u64(pi->loads));
	put(p, "runs", u64(pi->runs));
	put(p, "failures", u64(pi->failures));
	put(p, "insns_executed", u64(pi->insns_run));
	put(p, "running", u64(pi->running));
	put(p, "loaded_at", json_object_new_int64(pi->loaded_at));
	put(p, "last_used", json_object_new_int64(pi->last_used));
	return p;
}

/* "progs list", "progs show|disasm|unload PREFIX". */
static json_object *cmd_progs(struct arfd *d, char *args)
{
	struct arfd_prog_info pi;
	char err[256] = "", *text = NULL;
	char *sub = args, *prefix = strchr(args, ' ');
	json_object *r;
	int rc;

	if (prefix)
		*prefix++ = 0;
	else
		prefix = args + strlen(args);
	if (!strcmp(sub, "list") && !*prefix) {
		struct arfd_prog_info *v;
		size_t n, cap;
		if (arfd_progs_list(d, &v, &n, &cap))
			return error_reply("out of memory");
		json_object *list = json_object_new_array();
		r = json_object_new_object();
		put(r, "programs", list);
		for (size_t i = 0; i < n && !reply_oom; i++)
			push(list, prog_json(&v[i]));
		put(r, "count", u64(n));
		put(r, "cache_size", u64(cap));
		put(r, "enabled", boolean(d->cfg.prog_enable));
		free(v);
		return r;
	}
	if (!*prefix || strchr(prefix, ' ') ||
	    (strcmp(sub, "show") && strcmp(sub, "disasm") && strcmp(sub, "unload")))
		return error_reply("usage: progs list | progs show|disasm|unload HASH");
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
	if (rc)
		return error_reply(err[0] ? err : strerror(-rc));
	r = json_object_new_object();
	put(r, !strcmp(sub, "unload") ? "unloaded" : "program", prog_json(&pi));
	if (text)
		put(r, "disassembly", str(text));
	free(text);
	return r;
}

/* ---- fsck, checkpoint ------------------------------------------------------ */

struct fsck_ctx {
	json_object *problems;
	uint64_t n;
};

static void fsck_report(void *ctx, const char *kind, const char *msg)
{
	struct fsck_ctx *fc = ctx;
	if (fc->n++ >= 1000)
		return; /* the count says how many more */
	json_object *p = json_object_new_object();
	put(p, "kind", str(kind));
	put(p, "what", str(msg));
	push(fc->problems, p);
}

/* Wait until every applied change is durable and sealed (caller holds
 * fs_lock; returns with it held). */
void arfd_quiesce(struct arfd *d)
{
	/* a failed sync makes nothing durable any more (commit.c): the caller
	 * finds the failure when it syncs itself */
	while (d->durable_seq < d->applied_seq && !d->sync_failed && !arfd_failed(d)) {
		if (d->sync_wanted < d->applied_seq)
			d->sync_wanted = d->applied_seq;
		pthread_cond_signal(&d->commit_cond);
		arfd_fs_unlock(d);
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
		arfd_lock_for_control(d);
	}
}

static json_object *cmd_fsck(struct arfd *d)
{
	json_object *r = json_object_new_object();
	struct fsck_ctx fc = { json_object_new_array(), 0 };
	struct arf_meta_fsck f = { .report = fsck_report, .ctx = &fc };
	char err[256] = "";
	uint64_t compared = 0;

	put(r, "problems", fc.problems);
	arfd_lock_for_control(d);
	arfd_quiesce(d);
	int rc = arf_meta_fsck(&d->fs, &f);
	int src = rc < 0 ? 0 : arfd_store_compare(d->store, d->meta, d->meta_size, d->data,
						   d->data_size, fsck_report, &fc, &compared, err,
						   sizeof(err));
	arfd_fs_unlock(d);
	put(r, "count", u64(f.problems + (uint64_t)(src > 0 ? src : 0)));
	put(r, "inodes", u64(f.inodes));
	put(r, "directories", u64(f.dirs));
	put(r, "files", u64(f.files));
	put(r, "entries", u64(f.entries));
	put(r, "blocks", u64(f.blocks));
	put(r, "rocksdb_objects_compared", u64(compared));
	if (rc < 0 || src < 0)
		put(r, "error", str(rc < 0 ? strerror(-rc) : err));
	return r;
}

static json_object *cmd_checkpoint(struct arfd *d)
{
	json_object *r = json_object_new_object();
	char err[256] = "";
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	arfd_lock_for_control(d);
	arfd_quiesce(d);
	int rc = arfd_failed(d) ? 0 : arfd_store_flush(d->store, &d->fs, err, sizeof(err));
	if (!rc)
		rc = arfd_store_sync(d->store, err, sizeof(err));
	arfd_fs_unlock(d);
	if (!rc)
		arfd_store_compact(d->store); /* RocksDB is thread-safe; requests go on */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	put(r, "ok", boolean(!rc));
	if (rc)
		put(r, "error", str(err));
	else
		put(r, "seconds", fixed((double)(t1.tv_sec - t0.tv_sec) +
					(double)(t1.tv_nsec - t0.tv_nsec) / 1e9, 3));
	return r;
}

/* Test hook (server.test_hooks only): change one byte of a live region
 * without persisting it, so that fsck's comparison with RocksDB has
 * something to find. */
static json_object *cmd_scribble(struct arfd *d, const char *args)
{
	char region[8];
	unsigned long long off;
	if (!d->cfg.test_hooks || sscanf(args, "%7s %llu", region, &off) != 2 ||
	    (strcmp(region, "meta") && strcmp(region, "data")))
		return error_reply("scribble needs server.test_hooks and 'meta|data OFFSET'");
	uint8_t *base = !strcmp(region, "meta") ? d->meta : d->data;
	uint64_t size = !strcmp(region, "meta") ? d->meta_size : d->data_size;
	if (off >= size)
		return error_reply("offset past the region");
	arfd_lock_for_control(d);
	base[off] ^= 0x5a;
	arfd_fs_unlock(d);
	json_object *r = json_object_new_object();
	put(r, "ok", boolean(1));
	return r;
}

/* ---- one exchange ---------------------------------------------------------- */

/* The answer to one command line: JSON text, or the Prometheus text;
 * malloc'd, NULL when out of memory. */
static char *answer(struct arfd *d, char *line, char *args)
{
	json_object *r = NULL;
	char *text = NULL;

	reply_oom = 0;
	if (!strcmp(line, "stats")) {
		struct stat_snap s[1 + ARFD_MAX_VOLUMES];
		const char *names[1 + ARFD_MAX_VOLUMES];
		int all = !strcmp(args, "prometheus") ? 1 + __atomic_load_n(&d->nvols, __ATOMIC_ACQUIRE)
						      : 1, n = 0;
		for (int v = 0; v < all; v++) {
			struct arfd *x = v ? d->vols[v - 1] : d;
			if (__atomic_load_n(&x->removed, __ATOMIC_SEQ_CST))
				continue; /* vol rm: closed */
			snap(x, &s[n]);
			names[n++] = x->volume;
		}
		if (!strcmp(args, "prometheus"))
			return stats_prometheus(s, names, n);
		r = stats_json(&s[0]);
	} else if (!strcmp(line, "status")) {
		r = cmd_status(d);
	} else if (!strcmp(line, "clients")) {
		r = cmd_clients(d);
	} else if (!strcmp(line, "volumes")) {
		r = arfd_volumes_object(d, args[0] ? args : NULL);
		reply_oom |= !r;
	} else if (!strcmp(line, "volume-create") || !strcmp(line, "volume-remove")) {
		r = line[7] == 'c' ? arfd_volume_create(d, args) : arfd_volume_remove(d, args);
		reply_oom |= !r;
	} else if (!strcmp(line, "volume-release")) {
		r = arfd_volume_release(d, args);
		reply_oom |= !r;
	} else if (!strcmp(line, "volume-move")) {
		r = arfd_volume_move(d, args); /* move_out.c */
		reply_oom |= !r;
	} else if (!strcmp(line, "exports")) {
		r = cmd_exports(d);
	} else if (!strcmp(line, "progs")) {
		r = cmd_progs(d, args);
	} else if (!strcmp(line, "fsck") || !strcmp(line, "checkpoint")) {
		/* the root volume, or the one args names */
		struct arfd *v = arfd_volume_find(d, args);
		if (!v) {
			char msg[128];
			snprintf(msg, sizeof(msg), "no volume '%.63s' on this server", args);
			r = error_reply(msg);
		} else {
			r = line[0] == 'f' ? cmd_fsck(v) : cmd_checkpoint(v);
		}
	} else if (!strcmp(line, "scribble")) {
		r = cmd_scribble(d, args);
	} else {
		char msg[96];
		size_t n = 0;
		n += (size_t)snprintf(msg, sizeof(msg), "unknown command '");
		for (const char *c = line; *c && n < 80; c++)
			if (*c >= 0x20 && *c < 0x7f) /* what a log line and a terminal show safely */
				msg[n++] = *c;
		snprintf(msg + n, sizeof(msg) - n, "'");
		r = error_reply(msg);
	}
	if (r && !reply_oom) {
		const char *s = json_object_to_json_string_ext(
			r, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		text = s ? strdup(s) : NULL;
	}
	json_object_put(r);
	return text;
}

/* All of buf to fd: 0, or -1 when the peer is gone. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

static void serve_one(struct arfd *d, struct arfd_control *ctl, int fd)
{
	static const char oom[] = "{\"error\":\"out of memory\"}";
	char line[512], who[64] = "?";
	size_t n = 0;

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
	else if (n == sizeof(line) - 1) { /* cut short: never run a part of a command */
		const char *m = "{\"error\":\"command longer than 510 bytes\"}\n";
		if (write(fd, m, strlen(m)) < 0) { /* the peer went away */ }
		return;
	}
	char *args = strchr(line, ' ');
	if (args)
		*args++ = 0;
	else
		args = line + strlen(line);
	arfd_log(ARFD_LOG_DEBUG, "control: %s from %s", line, who);
	char *text = answer(d, line, args);
	const char *out = text ? text : oom;
	size_t len = strlen(out);
	/* one answer, then the connection closes: a failed write is the peer leaving */
	if (!write_all(fd, out, len) && (!len || out[len - 1] != '\n'))
		write_all(fd, "\n", 1);
	free(text);
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
		if (ctl->fd >= 0 && brc < 0) { /* the path is not ours: stop leaves it */
			close(ctl->fd);
			ctl->fd = -1;
		}
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
		ctl->thr = 0; /* glibc may have stored a descriptor it freed: stop joins none */
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

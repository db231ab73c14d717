/* SPDX-License-Identifier: MIT */
/*
 * arfd configuration from one typed table: see config.h.  Unknown sections
 * and keys, values of the wrong type and values out of bounds are errors
 * naming the file and line.
 */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "access.h"
#include "cell.h"
#include "config.h"
#include "log.h"

enum ctype { C_STR, C_INT, C_BOOL, C_LEVEL, C_CLIENTS, C_CHOICE, C_ADDRPORT };

struct centry {
	const char *section;
	const char *key;
	enum ctype type;
	size_t off;      /* offset in struct arfd_config */
	size_t size;     /* C_STR: buffer size */
	int64_t min, max;
	const char *def; /* default, as text */
	const char *help;
};

#define S(f) offsetof(struct arfd_config, f), sizeof(((struct arfd_config *)0)->f)

static const struct centry table[] = {
	{ "server", "listen", C_STR, S(listen), 0, 0, ARFD_DEFAULT_LISTEN,
	  "tcp address and port to listen on (ADDR:PORT; empty = no tcp; port 0 = any free port)" },
	{ "server", "socket", C_STR, S(socket), 0, 0, ARFD_DEFAULT_SOCKET,
	  "UNIX socket for shm clients on this host (empty = none)" },
	{ "server", "rdma_listen", C_ADDRPORT, S(rdma_listen), 0, 0, "",
	  "rdma (verbs) address and port to listen on, beside tcp and shm (ADDR:PORT; "
	  ":20491 = every RDMA-capable address; empty = no rdma); with no RDMA device arfd "
	  "warns and serves the others" },
	{ "server", "data_dir", C_STR, S(data_dir), 0, 0, ARFD_DEFAULT_DATA_DIR,
	  "directory holding the RocksDB database (created if missing)" },
	{ "server", "pid_file", C_STR, S(pid_file), 0, 0, "", "write arfd's pid here (empty = none)" },
	{ "server", "port_file", C_STR, S(port_file), 0, 0, "",
	  "write the bound tcp port here once serving (empty = none)" },
	{ "server", "log_level", C_LEVEL, S(log_level), 0, 3, "info", "error, warn, info or debug" },
	{ "server", "spin_us", C_INT, S(spin_us), 0, 100000, "50",
	  "microseconds the workers poll before sleeping when idle; the soft-NIC polls 4x (0 = never spin)" },
	{ "server", "workers", C_INT, S(workers), 1, 64, "1", "request worker threads" },
	{ "server", "control", C_STR, S(control), 0, 0, "auto",
	  "management socket for arfctl's status, stats, clients, exports, fsck, checkpoint; "
	  "auto = beside the UNIX socket (arfd.sock -> arfd.ctl, so " ARFD_DEFAULT_CONTROL
	  " by default); empty = none" },
	{ "server", "control_group", C_STR, S(control_group), 0, 0, "",
	  "group allowed on the management socket besides root (empty = root only)" },
	{ "server", "test_hooks", C_BOOL, S(test_hooks), 0, 1, "false",
	  "test only: let the management socket damage the live regions (for fsck tests)" },
	{ "server", "test_fail_write", C_INT, S(test_fail_write), 0, 1LL << 40, "0",
	  "test only: the Nth RocksDB transaction write after start, and every later one, fails "
	  "(0 = never)" },
	{ "server", "test_fail_sync", C_INT, S(test_fail_sync), 0, 1LL << 40, "0",
	  "test only: the Nth RocksDB WAL sync after start, and every later one, fails "
	  "(0 = never)" },
	{ "server", "test_fail_append", C_INT, S(test_fail_append), 0, 1LL << 40, "0",
	  "test only: the data log's Nth append of a transaction's blocks after start, and every "
	  "later one, fails (0 = never)" },
	{ "server", "test_power_loss", C_BOOL, S(test_power_loss), 0, 1, "false",
	  "test only: keep what is not yet synced in arfd's memory (RocksDB's WAL, the data log), "
	  "so that a SIGKILL loses what a power cut would" },
	{ "server", "test_blob_store", C_BOOL, S(test_blob_store), 0, 1, "false",
	  "bench only: keep file data in RocksDB's integrated BlobDB instead of the data log "
	  "(the alternative bench/writecost.py measures); a data directory keeps its choice" },
	{ "server", "test_exit_after", C_INT, S(test_exit_after), 0, 1LL << 40, "0",
	  "test only: exit at once, as if killed, once the Nth mutation after start is written to "
	  "RocksDB and before it is answered (0 = never)" },
	{ "server", "test_move_drop", C_BOOL, S(test_move_drop), 0, 1, "false",
	  "test only: vol move closes its connection to the receiving server right after END, "
	  "before it flips the record (as a network failure would)" },
	{ "server", "test_commit_hold_ms", C_INT, S(test_commit_hold_ms), 0, 3600000, "0",
	  "test only: from the first COMMIT on, every sync waits this long before it starts, "
	  "on the committer thread with no lock held, so that a COMMIT stays in flight while "
	  "writes are answered (0 = never)" },
	{ "server", "max_conns", C_INT, S(max_conns), 1, 65536, "1024",
	  "client connections open at once, all transports together" },
	{ "server", "max_conns_per_client", C_INT, S(max_conns_per_client), 0, 65536, "256",
	  "connections one client may hold: per uid on the UNIX socket, per address on tcp and "
	  "rdma (IPv6 by /64); root-evident peers (shm uid 0, tcp from a port below 1024) are not "
	  "counted (0 = no per-client limit)" },
	{ "server", "reserved_root_conns", C_INT, S(reserved_root_conns), 0, 65535, "32",
	  "of max_conns, slots only root-evident peers may take, so that no user can lock out "
	  "root (must be below max_conns)" },
	{ "server", "max_conn_requests", C_INT, S(max_conn_requests), 1, 65536, "64",
	  "requests one connection may have waiting for an answer; past it arfd stops reading "
	  "that connection until answers bring it under (back-pressure)" },
	{ "server", "max_conn_request_bytes", C_INT, S(max_conn_request_bytes), 65536, 1LL << 32,
	  "33554432", "bytes of the requests one connection may have waiting (one request always "
	  "fits, however big: a frame is at most 16 MiB)" },
	{ "server", "idle_timeout_s", C_INT, S(idle_timeout_s), 0, 604800, "600",
	  "close a connection with nothing in flight and no frame for this long (clients "
	  "reconnect transparently; 0 = never)" },
	{ "server", "frame_timeout_s", C_INT, S(frame_timeout_s), 1, 3600, "10",
	  "close a connection whose frame stays unfinished this long after the previous one "
	  "(its buffer is freed)" },
	{ "export", "name", C_STR, S(export_name), 0, 0, "/", "export path clients name in URLs" },
	{ "export", "sync", C_BOOL, S(sync), 0, 1, "false",
	  "false: data writes are unstable (applied and visible at once, durable at the next "
	  "COMMIT: fsync, close), as NFSv3's; true: every write is durable before its reply.  "
	  "Every other change is durable before its reply either way (group commit)" },
	{ "export", "read_only", C_BOOL, S(read_only), 0, 1, "false", "refuse every change (EROFS)" },
	{ "export", "root_squash", C_BOOL, S(root_squash), 0, 1, "true",
	  "map uid 0 to anon_uid/anon_gid, as NFS, and give a client's root no region keys "
	  "(the embedded configuration, used when there is no file, does not squash)" },
	{ "export", "insecure", C_BOOL, S(insecure), 0, 1, "false",
	  "believe the uid and gid that clients from unprivileged tcp ports claim, as NFS's "
	  "insecure (false: such clients act as anon_uid/anon_gid unless they present a "
	  "credential token from a mount)" },
	{ "export", "clients", C_CLIENTS, S(clients), 0, 0, "127.0.0.0/8 ::1 unix",
	  "who may connect: addresses, networks (ADDR/BITS), 'unix' (the UNIX socket), '*' (anyone)" },
	{ "export", "one_sided", C_CHOICE, S(one_sided), 0, 0, "root",
	  "who gets region keys (one-sided reads bypass file permissions): root (shm uid 0, "
	  "tcp from a reserved port, or the secret), all or none; others use requests" },
	{ "export", "secret_file", C_STR, S(secret_file), 0, 0, "",
	  "file with a shared secret every client must prove (challenge-response; readable by "
	  "root only); empty = none" },
	{ "export", "anon_uid", C_INT, S(anon_uid), 0, 2147483647LL, "65534", "uid for squashed and anonymous requests" },
	{ "export", "anon_gid", C_INT, S(anon_gid), 0, 2147483647LL, "65534", "gid for squashed and anonymous requests" },
	{ "export", "xattr_mib", C_INT, S(xattr_mib), 0, 1LL << 20, "64",
	  "MiB that extended attributes (names and values, ACLs included) may take in all "
	  "(ENOSPC past it; 0 = none can be set)" },
	{ "regions", "inodes", C_INT, S(inodes), 16, 1LL << 30, "262144", "inode slots (256 bytes each)" },
	{ "regions", "dir_buckets", C_INT, S(dir_buckets), 1, 1LL << 30, "262144",
	  "directory hash buckets (320 bytes each)" },
	{ "regions", "dir_entries", C_INT, S(dir_entries), 16, 1LL << 30, "262144",
	  "overflow directory entries (320 bytes each)" },
	{ "regions", "pages", C_INT, S(pages), 16, 1LL << 28, "16384",
	  "4 KiB meta pages for directory listings and extent maps" },
	{ "regions", "data_blocks", C_INT, S(data_blocks), 16, 4294967294LL, "524288",
	  "4 KiB data blocks (524288 = 2 GiB)" },
	{ "regions", "dir_hash_mask", C_INT, S(dir_hash_mask), 0, 4294967295LL, "0",
	  "test only: mask applied to name hashes to force long chains (0 = off)" },
	{ "regions", "test_torn_delay_us", C_INT, S(test_torn_delay_us), 0, 1000000, "0",
	  "test only: widen the window in which data blocks are being written" },
	{ "programs", "enable", C_BOOL, S(prog_enable), 0, 1, "true",
	  "accept mobile code (PROG_LOAD, PROG_EXEC); false: refuse it" },
	{ "programs", "jit", C_BOOL, S(prog_jit), 0, 1, "true",
	  "compile each program to native code once when it is loaded (x86-64), keeping every "
	  "check the interpreter makes (on/true); off/false, or a program the JIT cannot "
	  "compile: interpret it" },
	{ "programs", "cache_size", C_INT, S(prog_cache_size), 1, 65536, "256",
	  "verified programs kept by hash; the least recently used is evicted (its client reloads it)" },
	{ "programs", "max_insns", C_INT, S(prog_max_insns), 1000, 1LL << 40, "250000000",
	  "instruction budget of one run (ARF_EBUDGET past it)" },
	{ "programs", "max_output", C_INT, S(prog_max_output), 64, 16LL << 20, "1048576",
	  "output bytes of one run (ARF_EOUTPUT past it)" },
	{ "programs", "max_wall_ms", C_INT, S(prog_max_wall_ms), 0, 600000, "1000",
	  "wall-clock limit of one run in milliseconds (ARF_EBUDGET past it; 0 = none)" },
	{ "programs", "workers", C_INT, S(prog_workers), 1, 64, "1",
	  "program worker threads: PROG_LOAD and PROG_EXEC run on these, never on the request "
	  "workers, taken in turn from each (connection, uid)" },
	{ "programs", "nice", C_INT, S(prog_nice), 0, 19, "10",
	  "niceness of the program workers (0 = the daemon's own priority), so that requests "
	  "win the CPU over programs" },
	{ "programs", "quota_count", C_INT, S(prog_quota_count), 1, 65536, "64",
	  "cached programs one identity (the uid its loads act as) may hold; a load past it "
	  "evicts that identity's least recently used program" },
	{ "programs", "quota_mib", C_INT, S(prog_quota_mib), 1, 1LL << 20, "64",
	  "MiB of native code (JIT) one identity's cached programs may hold; past it, its own "
	  "least recently used are evicted; one program larger than this is refused" },
	{ "programs", "root_quota_mib", C_INT, S(prog_root_quota_mib), 1, 1LL << 20, "256",
	  "quota_mib for root proven on its host (uid 0, not squashed)" },
	{ "programs", "cache_mib", C_INT, S(prog_cache_mib), 1, 1LL << 20, "512",
	  "MiB of native code all cached programs together may hold; past it, the largest "
	  "holder's least recently used program is evicted" },
	{ "locks", "lease_s", C_INT, S(lock_lease_s), 1, 3600, "30",
	  "seconds a client's locks outlive its last word (libarf renews every third of it): "
	  "a dead or cut-off client's locks are released this long after it went silent" },
	{ "locks", "grace_s", C_INT, S(lock_grace_s), 0, 3600, "30",
	  "after a restart, seconds in which clients that held locks reclaim them while new "
	  "locks wait (ends sooner when every such client has reclaimed; 0 = no grace period)" },
	{ "cell", "etcd", C_STR, S(cell_etcd), 0, 0, "",
	  "etcd endpoints of the cell (http://HOST:PORT, comma-separated): arfd registers itself "
	  "there under a lease and keeps it alive; empty = no cell (one server, as always)" },
	{ "cell", "name", C_STR, S(cell_name), 0, 0, "", "the cell's name (its records are under "
	  "/arf/NAME/ in etcd; 1 to 63 of A-Z a-z 0-9 . _ -)" },
	{ "cell", "server_id", C_STR, S(cell_server_id), 0, 0, "",
	  "this server's id in the cell (empty = the host name)" },
	{ "cell", "address", C_STR, S(cell_address), 0, 0, "",
	  "the address clients reach this server at, as registered (empty = listen's address, or "
	  "the host name when that is a wildcard)" },
	{ "cell", "root_volume", C_STR, S(cell_root_volume), 0, 0, "",
	  "the name under which this server's root volume (data_dir itself) is recorded in the "
	  "cell (\"root\" for the cell's root); empty = not recorded. Its [volume NAME] "
	  "sections are recorded by their names" },
	{ "cell", "lease_ttl_s", C_INT, S(cell_lease_ttl_s), 1, 3600, "10",
	  "seconds the registration outlives arfd's last renewal (renewed every third of it)" },
	{ "cell", "user", C_STR, S(cell_user), 0, 0, "",
	  "etcd user arfd authenticates as (a role with readwrite on /arf/NAME/); empty = "
	  "etcd without authentication" },
	{ "cell", "password_file", C_STR, S(cell_password_file), 0, 0, "",
	  "file whose first line is user's password; refused if group or others may read it "
	  "(chmod 600); a password goes over https:// only, or http:// to loopback" },
	{ "cell", "ca_file", C_STR, S(cell_ca_file), 0, 0, "",
	  "https:// endpoints: CA certificates (PEM) that etcd's certificate must chain to "
	  "(empty = the system's)" },
	{ "cell", "cert_file", C_STR, S(cell_cert_file), 0, 0, "",
	  "https:// endpoints: client certificate (PEM) for an etcd run with "
	  "--client-cert-auth (empty = none)" },
	{ "cell", "key_file", C_STR, S(cell_key_file), 0, 0, "",
	  "the client certificate's private key (PEM; empty = in cert_file)" },
	{ "cell", "move_secret_file", C_STR, S(cell_move_secret_file), 0, 0, "",
	  "file holding the secret the cell's servers share, and its clients do not, which "
	  "authenticates a volume sent by arfctl vol move (both ends need it; mode 0600 or "
	  "stricter); empty = this server neither sends nor takes volumes" },
};

#define NTABLE (sizeof(table) / sizeof(table[0]))

static const struct centry *find(const char *section, const char *key)
{
	for (size_t i = 0; i < NTABLE; i++)
		if ((!section || strcasecmp(section, table[i].section) == 0) &&
		    strcasecmp(key, table[i].key) == 0)
			return &table[i];
	return NULL;
}

static int parse_bool(const char *v, int *out)
{
	if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") || !strcmp(v, "1"))
		*out = 1;
	else if (!strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off") || !strcmp(v, "0"))
		*out = 0;
	else
		return -1;
	return 0;
}

/* "" or ADDR:PORT, where ADDR may be empty (any), a name, an IPv4 address
 * or a bracketed IPv6 one, and PORT is 0..65535. */
static int addrport_ok(const char *v)
{
	if (!v[0])
		return 1;
	const char *colon = strrchr(v, ':');
	if (!colon || !colon[1])
		return 0;
	char *end;
	errno = 0;
	long p = strtol(colon + 1, &end, 10);
	if (errno || *end || p < 0 || p > 65535)
		return 0;
	if (v[0] == '[')
		return colon > v + 1 && colon[-1] == ']';
	return memchr(v, ':', (size_t)(colon - v)) == NULL; /* IPv6 needs brackets */
}

static int apply(struct arfd_config *cfg, const struct centry *e, const char *value, char *err,
		 size_t errlen)
{
	char *base = (char *)cfg + e->off;

	switch (e->type) {
	case C_CLIENTS: {
		struct arfd_nets nets;
		char why[200];
		if (arfd_access_parse(value, &nets, why, sizeof(why))) {
			snprintf(err, errlen, "'%s': %s", e->key, why);
			return -1;
		}
		if (!nets.n) {
			snprintf(err, errlen, "'%s' is empty: nobody could connect", e->key);
			return -1;
		}
	}
		/* fall through */
	case C_CHOICE:
	case C_ADDRPORT:
		if (e->type == C_ADDRPORT && !addrport_ok(value)) {
			snprintf(err, errlen, "'%s' must be ADDR:PORT (ADDR may be empty, [v6] in "
				 "brackets; empty = off), not '%s'", e->key, value);
			return -1;
		}
		if (e->type == C_CHOICE && strcmp(value, "all") && strcmp(value, "root") &&
		    strcmp(value, "none")) {
			snprintf(err, errlen, "'%s' must be all, root or none, not '%s'", e->key, value);
			return -1;
		}
		/* fall through */
	case C_STR:
		if (strlen(value) >= e->size) {
			snprintf(err, errlen, "value of '%s' is too long (at most %zu bytes)", e->key,
				 e->size - 1);
			return -1;
		}
		strcpy(base, value);
		return 0;
	case C_BOOL: {
		int b;
		if (parse_bool(value, &b)) {
			snprintf(err, errlen, "'%s' must be true or false, not '%s'", e->key, value);
			return -1;
		}
		*(int *)base = b;
		return 0;
	}
	case C_LEVEL: {
		int l = arfd_log_parse_level(value);
		if (l < 0) {
			snprintf(err, errlen, "'%s' must be error, warn, info or debug, not '%s'", e->key,
				 value);
			return -1;
		}
		*(int *)base = l;
		return 0;
	}
	case C_INT: {
		char *end;
		errno = 0;
		long long v = strtoll(value, &end, 0);
		if (errno || end == value || *end) {
			snprintf(err, errlen, "'%s' must be an integer, not '%s'", e->key, value);
			return -1;
		}
		if (v < e->min || v > e->max) {
			snprintf(err, errlen, "'%s' = %lld is out of range [%lld, %lld]", e->key, v,
				 (long long)e->min, (long long)e->max);
			return -1;
		}
		if (e->size == sizeof(int))
			*(int *)base = (int)v;
		else
			*(int64_t *)base = v;
		return 0;
	}
	}
	return -1;
}

void arfd_config_defaults(struct arfd_config *cfg)
{
	char err[256];

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < NTABLE; i++)
		if (apply(cfg, &table[i], table[i].def, err, sizeof(err)))
			abort(); /* a bad default is a programming error */
}

void arfd_config_embedded(struct arfd_config *cfg)
{
	arfd_config_defaults(cfg);
	cfg->root_squash = 0;
}

int arfd_config_set(struct arfd_config *cfg, const char *section, const char *key,
		    const char *value, char *err, size_t errlen)
{
	const struct centry *e = find(section, key);
	if (!e) {
		if (section)
			snprintf(err, errlen, "unknown key '%s' in [%s]", key, section);
		else
			snprintf(err, errlen, "unknown key '%s'", key);
		return -1;
	}
	return apply(cfg, e, value, err, errlen);
}

/* The longest line arfd.conf may have: inih's buffer (INI_MAX_LINE, 200)
 * holds it, its newline and the terminating NUL. */
#define MAX_LINE 198

struct load_ctx {
	struct arfd_config *cfg;
	char msg[256];
	int failed;
};

int arfd_volume_is_replica(const char *name)
{
	size_t n = strlen(name), k = strlen(".readonly");

	return n > k && !strcmp(name + n - k, ".readonly");
}

int arfd_volume_name_ok(const char *name)
{
	/* a cell's names (cell/records.c): the same volume names in etcd */
	return arf_cell_name_ok(name) && strcmp(name, "root");
}

/* Make the volume of a [volume NAME] header: 1, or 0 with lc->msg. */
static int add_volume(struct load_ctx *lc, const char *vname)
{
	struct arfd_config *cfg = lc->cfg;

	if (!arfd_volume_name_ok(vname)) {
		snprintf(lc->msg, sizeof(lc->msg), "[volume %.80s]: a volume's name is 1-63 "
			 "letters, digits, '.', '_' or '-', and not root, . or ..", vname);
		lc->failed = 1;
		return 0;
	}
	for (int i = 0; i < cfg->nvolumes; i++)
		if (!strcmp(cfg->volumes[i].name, vname)) {
			snprintf(lc->msg, sizeof(lc->msg), "[volume %s] appears twice", vname);
			lc->failed = 1;
			return 0;
		}
	if (cfg->nvolumes == ARFD_MAX_VOLUMES) {
		snprintf(lc->msg, sizeof(lc->msg), "[volume %s]: at most %d volumes besides the "
			 "root one", vname, ARFD_MAX_VOLUMES);
		lc->failed = 1;
		return 0;
	}
	snprintf(cfg->volumes[cfg->nvolumes++].name, ARFD_VOLUME_NAME_MAX, "%s", vname);
	return 1;
}

/* A [volume NAME] section: its header makes the volume (scan_volumes, or
 * here for one that scan did not see as inih does), its keys are
 * [regions] keys, checked now against a scratch configuration. */
static int on_volume(struct load_ctx *lc, const char *vname, const char *name, const char *value)
{
	struct arfd_config *cfg = lc->cfg;
	int i;

	if (!name) /* an inih that calls for headers: scan_volumes made them */
		return 1;
	for (i = 0; i < cfg->nvolumes; i++)
		if (!strcmp(cfg->volumes[i].name, vname))
			break;
	if (i == cfg->nvolumes && !add_volume(lc, vname))
		return 0;
	struct arfd_config *scratch = malloc(sizeof(*scratch));
	if (!scratch) {
		snprintf(lc->msg, sizeof(lc->msg), "out of memory");
		lc->failed = 1;
		return 0;
	}
	arfd_config_defaults(scratch);
	int bad = arfd_config_set(scratch, "regions", name, value, lc->msg, sizeof(lc->msg));
	free(scratch);
	struct arfd_volume_cfg *v = &cfg->volumes[i];
	size_t used = strlen(v->set);
	if (!bad && (strchr(value, '\n') ||
		     (size_t)snprintf(v->set + used, sizeof(v->set) - used, "%s=%s\n", name,
				      value) >= sizeof(v->set) - used)) {
		v->set[used] = 0;
		snprintf(lc->msg, sizeof(lc->msg), "[volume %s]: too many settings", vname);
		bad = 1;
	}
	if (bad) {
		size_t ml = strlen(lc->msg);
		snprintf(lc->msg + ml, sizeof(lc->msg) - ml, " (in [volume %s], which takes [regions] "
			 "keys)", vname);
		lc->failed = 1;
		return 0;
	}
	return 1;
}

int arfd_config_volume(const struct arfd_config *base, int i, struct arfd_config *out,
		       char *err, size_t errlen)
{
	return arfd_config_volume_of(base, &base->volumes[i], out, err, errlen);
}

int arfd_config_volume_of(const struct arfd_config *base, const struct arfd_volume_cfg *v,
			  struct arfd_config *out, char *err, size_t errlen)
{
	*out = *base;
	out->nvolumes = 0;
	if ((size_t)snprintf(out->data_dir, sizeof(out->data_dir), "%s/volumes/%s",
			     base->data_dir, v->name) >= sizeof(out->data_dir)) {
		snprintf(err, errlen, "[volume %s]: its data directory's path is too long", v->name);
		return -1;
	}
	char line[sizeof(v->set)];
	for (const char *p = v->set; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		memcpy(line, p, n);
		line[n] = 0;
		p += n + (nl != NULL);
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = 0;
		if (arfd_config_set(out, "regions", line, eq + 1, err, errlen))
			return -1;
	}
	return 0;
}

static int on_ini(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *lc = user;

	if (lc->failed)
		return 0;
	if (name && value && strlen(name) + 3 + strlen(value) > MAX_LINE) {
		/* it came on a line without the blanks around '=': written back
		 * as "key = value" (--dump-config) it would not fit one */
		snprintf(lc->msg, sizeof(lc->msg), "'%s = ...' is longer than a line may be (%d "
			 "bytes)", name, MAX_LINE);
		lc->failed = 1;
		return 0;
	}
	if (!strncasecmp(section, "volume ", 7))
		return on_volume(lc, section + 7, name, value);
	if (!name) /* a bare section header (inih INI_CALL_HANDLER_ON_NEW_SECTION) */
		return 1;
	int known_section = 0;
	for (size_t i = 0; i < NTABLE; i++)
		if (strcasecmp(section, table[i].section) == 0)
			known_section = 1;
	if (!known_section) {
		snprintf(lc->msg, sizeof(lc->msg), "unknown section [%s] (key '%s')", section, name);
		lc->failed = 1;
		return 0;
	}
	if (arfd_config_set(lc->cfg, section, name, value, lc->msg, sizeof(lc->msg))) {
		lc->failed = 1;
		return 0;
	}
	return 1;
}

/* The [volume NAME] headers first: inih (as Debian builds it) calls the
 * handler for keys only, and a volume section may have none.  And every
 * line's length: inih reads a line into INI_MAX_LINE (200) bytes, so a
 * longer one would be cut in two, its value silently short and its rest
 * read as another line.  0, or the line of a bad one (lc->msg says why). */
static int scan_volumes(FILE *f, struct load_ctx *lc)
{
	char *buf = NULL;
	size_t cap = 0;
	ssize_t got;
	int line = 0, bad = 0;

	while (!bad && (got = getline(&buf, &cap, f)) >= 0) {
		line++;
		if (got - (got && buf[got - 1] == '\n') > MAX_LINE) {
			snprintf(lc->msg, sizeof(lc->msg), "line longer than %d bytes", MAX_LINE);
			lc->failed = bad = 1;
			break;
		}
		char *p = buf, *end;
		while (isspace((unsigned char)*p)) /* as inih skips it */
			p++;
		if (*p != '[' || !(end = strchr(p, ']')) || strncasecmp(p + 1, "volume ", 7))
			continue;
		*end = 0;
		if (!add_volume(lc, p + 8))
			bad = 1;
	}
	free(buf);
	return bad ? line : 0;
}

int arfd_config_load(struct arfd_config *cfg, const char *path, char *err, size_t errlen)
{
	struct load_ctx lc = { .cfg = cfg };
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	int line = scan_volumes(f, &lc);
	if (!line) {
		rewind(f);
		line = ini_parse_file(f, on_ini, &lc);
	}
	fclose(f);
	if (line == 0)
		return 0;
	if (line < 0)
		snprintf(err, errlen, "%s: cannot read the file", path);
	else if (lc.failed)
		snprintf(err, errlen, "%s:%d: %s", path, line, lc.msg);
	else
		snprintf(err, errlen, "%s:%d: syntax error (expected [section] or key = value)", path,
			 line);
	return -1;
}

static int arfd_config_check_cell(const struct arfd_config *cfg, char *err, size_t errlen);

int arfd_config_check(const struct arfd_config *cfg, char *err, size_t errlen)
{
	if (cfg->root_squash && !strcmp(cfg->one_sided, "all")) {
		snprintf(err, errlen, "root_squash = true and one_sided = all contradict each other: "
			 "with all, every client (a squashed root too) reads every file "
			 "one-sidedly; use one_sided = root or none, or root_squash = false");
		return -1;
	}
	return arfd_config_check_cell(cfg, err, errlen);
}

/* [cell]: endpoints that parse and names etcd's keys can hold; both or neither;
 * user, password and TLS files that fit the endpoints. */
static int arfd_config_check_cell(const struct arfd_config *cfg, char *err, size_t errlen)
{
	if (!cfg->cell_etcd[0] != !cfg->cell_name[0]) {
		snprintf(err, errlen, "[cell] needs both etcd and name (or neither: no cell)");
		return -1;
	}
	if (!cfg->cell_etcd[0])
		return 0;
	/* the rules of user, TLS files and endpoints; the password file is
	 * read when arfd joins (arfctl loads this file without reading it) */
	struct arf_etcd_security sec;
	arfd_config_cell_security(cfg, &sec);
	if (arf_etcd_check(cfg->cell_etcd, &sec, err, errlen))
		return -1;
	if (!arf_cell_name_ok(cfg->cell_name) ||
	    (cfg->cell_server_id[0] && !arf_cell_name_ok(cfg->cell_server_id)) ||
	    (cfg->cell_root_volume[0] && !arf_cell_name_ok(cfg->cell_root_volume))) {
		snprintf(err, errlen, "[cell] name, server_id and root_volume are 1 to 63 of A-Z a-z "
			 "0-9 . _ -");
		return -1;
	}
	if (arfd_volume_is_replica(cfg->cell_root_volume)) {
		snprintf(err, errlen, "[cell] root_volume = %s: a name ending in .readonly is a "
			 "replica's (arfctl vol release)", cfg->cell_root_volume);
		return -1;
	}
	for (int i = 0; i < cfg->nvolumes; i++)
		if (!strcmp(cfg->volumes[i].name, cfg->cell_root_volume)) {
			snprintf(err, errlen, "[cell] root_volume = %s: the name of a [volume %s] "
				 "section too", cfg->cell_root_volume, cfg->volumes[i].name);
			return -1;
		}
	return 0;
}

void arfd_config_cell_security(const struct arfd_config *cfg, struct arf_etcd_security *sec)
{
	sec->user = cfg->cell_user;
	sec->password_file = cfg->cell_password_file;
	sec->ca_file = cfg->cell_ca_file;
	sec->cert_file = cfg->cell_cert_file;
	sec->key_file = cfg->cell_key_file;
}

/* A help text as '#' lines of at most 78 columns: libinih reads lines of
 * up to 200 bytes, and a longer comment would come back as a key. */
static void dump_comment(FILE *out, const char *text)
{
	const char *p = text;

	while (*p) {
		size_t n = strlen(p), cut = n;
		if (n > 76) {
			cut = 76;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (!cut)
				cut = 76;
		}
		fprintf(out, "# %.*s\n", (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
	}
}

void arfd_config_dump(const struct arfd_config *cfg, FILE *out)
{
	static const char *const levels[] = { "error", "warn", "info", "debug" };
	const char *section = "";

	for (size_t i = 0; i < NTABLE; i++) {
		const struct centry *e = &table[i];
		const char *base = (const char *)cfg + e->off;
		if (strcmp(section, e->section)) {
			fprintf(out, "%s[%s]\n", i ? "\n" : "", e->section);
			section = e->section;
		}
		dump_comment(out, e->help);
		switch (e->type) {
		case C_STR:
		case C_CLIENTS:
		case C_CHOICE:
		case C_ADDRPORT:
			fprintf(out, "%s = %s\n", e->key, base);
			break;
		case C_BOOL:
			fprintf(out, "%s = %s\n", e->key, *(const int *)base ? "true" : "false");
			break;
		case C_LEVEL:
			fprintf(out, "%s = %s\n", e->key, levels[*(const int *)base & 3]);
			break;
		case C_INT:
			if (e->size == sizeof(int))
				fprintf(out, "%s = %d\n", e->key, *(const int *)base);
			else
				fprintf(out, "%s = %lld\n", e->key, (long long)*(const int64_t *)base);
			break;
		}
	}
	for (int v = 0; v < cfg->nvolumes; v++) {
		fprintf(out, "\n[volume %s]\n", cfg->volumes[v].name);
		for (const char *p = cfg->volumes[v].set; *p;) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			const char *eq = memchr(p, '=', n);
			if (eq)
				fprintf(out, "%.*s = %.*s\n", (int)(eq - p), p, (int)(n - (size_t)(eq - p) - 1),
					eq + 1);
			p += n + (nl != NULL);
		}
	}
}

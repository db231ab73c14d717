/* SPDX-License-Identifier: MIT */
/*
 * arfd configuration: one typed table (section, key, type, bounds, default,
 * help) drives parsing of the INI file (libinih), command-line overrides,
 * checking, `--help`-style documentation and dumping (as Redis's config.c).
 * With no file and no flags the defaults serve a filesystem on loopback and
 * on a UNIX socket, from a data directory arfd creates.
 */
#ifndef ARFD_CONFIG_H
#define ARFD_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#define ARFD_DEFAULT_CONFIG   "/etc/arf/arfd.conf"
#define ARFD_DEFAULT_DATA_DIR "/var/lib/arf"
#define ARFD_DEFAULT_SOCKET   "/run/arf/arfd.sock"
#define ARFD_DEFAULT_LISTEN   "127.0.0.1:20490"
#define ARFD_DEFAULT_CONTROL  "/run/arf/arfd.ctl"

/*
 * Volumes besides the root one (issue 18): each [volume NAME] section makes
 * one, served by the same arfd from DATA_DIR/volumes/NAME with its own
 * regions and store; its keys are [regions] keys, its own limits (every
 * other setting is the server's).  A client names it when it connects
 * (libarf's URL ?volume=NAME, mount.arf -o volume=NAME).
 */
#define ARFD_MAX_VOLUMES 15      /* besides the root volume */
#define ARFD_VOLUME_NAME_MAX 64
struct arfd_volume_cfg {
	char name[ARFD_VOLUME_NAME_MAX];
	char set[512];           /* its [regions] settings, "key=value\n" each */
};

struct arfd_config {
	/* [server] */
	char listen[128];        /* tcp ADDR:PORT ("" = no tcp; port 0 = any free port) */
	char socket[256];        /* UNIX socket for shm clients ("" = none) */
	char rdma_listen[128];   /* rdma (verbs) ADDR:PORT ("" = no rdma; ":PORT" = every
				  * RDMA-capable address; port 0 = any free port) */
	char data_dir[256];      /* RocksDB and runtime state */
	char pid_file[256];      /* "" = none */
	char port_file[256];     /* write the bound tcp port here ("" = none; for tests) */
	int  log_level;          /* enum arfd_log_level */
	int  spin_us;            /* adaptive polling spin; 0 = never spin */
	int  workers;            /* request worker threads */
	char control[256];       /* management socket ("" = none) */
	char control_group[64];  /* group that may use it besides root ("" = root only) */
	int  test_hooks;         /* test only: allow the control socket's scribble command */
	int64_t test_fail_write; /* test only: RocksDB writes fail from the Nth on (0 = never) */
	int64_t test_fail_sync;  /* test only: WAL syncs fail from the Nth on (0 = never) */
	int64_t test_fail_append; /* test only: data log appends fail from the Nth on (0 = never) */
	int  test_power_loss;    /* test only: keep everything unsynced in memory, so that a
				  * SIGKILL loses what a power cut would */
	int  test_blob_store;    /* bench only: data blocks in RocksDB's BlobDB, not the data log */
	int64_t test_exit_after; /* test only: _exit once the Nth mutation is written, unanswered */
	int  test_move_drop;     /* test only: vol move drops its connection after END */
	int64_t test_commit_hold_ms; /* test only: from the first COMMIT, each sync waits first */
	int  max_conns;          /* connections open at once */
	int  max_conns_per_client; /* per uid (shm) or address (tcp, rdma); 0 = no limit */
	int  reserved_root_conns;  /* slots only root-evident peers may take */
	int  max_conn_requests;  /* requests in flight per connection (back-pressure) */
	int64_t max_conn_request_bytes; /* their bytes */
	int  idle_timeout_s;     /* close idle connections (0 = never) */
	int  frame_timeout_s;    /* close a connection mid-frame this long */
	/* [export] */
	char export_name[64];    /* export path clients name ("/") */
	int  sync;               /* 1 = every WRITE durable before its reply (stable);
				  * 0 = WRITEs unstable until a COMMIT.  Other changes are
				  * durable before their reply either way (group commit) */
	int  read_only;
	int  root_squash;        /* map uid 0 to anon_uid */
	int  insecure;           /* believe the credentials of unproven peers (NFS insecure) */
	int  anon_uid, anon_gid;
	char clients[512];       /* who may connect (see arfd/access.c) */
	char one_sided[8];       /* who gets region keys: all, root, none */
	char secret_file[256];   /* shared secret for challenge-response ("" = none) */
	/* [regions] */
	int64_t inodes;          /* inode slots */
	int64_t dir_buckets;     /* directory hash buckets */
	int64_t dir_entries;     /* overflow directory entries */
	int64_t pages;           /* 4 KiB meta pages (listings, extent maps) */
	int64_t data_blocks;     /* 4 KiB data blocks */
	int64_t dir_hash_mask;   /* test only: mask name hashes to force collisions */
	int64_t test_torn_delay_us; /* test only: pause between begin and seal of data writes */
	/* [programs] (mobile code) */
	int  prog_enable;        /* 0: PROG_LOAD and PROG_EXEC are refused (ENOSYS) */
	int  prog_jit;           /* 1: compile programs to native code when loaded */
	int64_t prog_cache_size; /* verified programs kept, least recently used evicted */
	int64_t prog_max_insns;  /* instruction budget of one run */
	int64_t prog_max_output; /* output bytes of one run */
	int64_t prog_max_wall_ms;/* wall-clock limit of one run (0 = none) */
	int  prog_workers;       /* program worker threads (the program lane) */
	int  prog_nice;          /* their niceness: below the request workers' priority */
	int64_t prog_quota_count;/* cached programs one identity may hold */
	int64_t prog_quota_mib;  /* native code one identity may hold (MiB) */
	int64_t prog_root_quota_mib; /* the same for root proven (uid 0) */
	int64_t prog_cache_mib;  /* native code all identities together may hold (MiB) */
	int64_t xattr_mib;       /* [export]: extended attributes in all (MiB) */
	/* [locks] */
	int  lock_lease_s;       /* a silent client's locks expire after this */
	int  lock_grace_s;       /* reclaim period after a restart */
	/* [cell] (issue 18: several arfd and etcd; off while etcd is "") */
	char cell_etcd[512];     /* etcd endpoints, http://HOST:PORT, comma-separated */
	char cell_name[64];      /* the cell's name: its records are under /arf/<name>/ */
	char cell_server_id[64]; /* this server's id in the cell ("" = the host name) */
	char cell_address[256];  /* address clients reach it at ("" = from listen) */
	char cell_root_volume[64]; /* its root volume's name in the cell ("" = not recorded) */
	char cell_user[64];      /* etcd user (readwrite on /arf/<name>/; "" = no auth) */
	char cell_password_file[256]; /* its password (mode 0600 or stricter) */
	char cell_ca_file[256];  /* https: CA etcd's certificate chains to ("" = system's) */
	char cell_cert_file[256]; /* https: client certificate ("" = none) */
	char cell_key_file[256]; /* https: its key ("" = in cert_file) */
	char cell_move_secret_file[256]; /* the servers' secret for vol move ("" = no moves) */
	int  cell_lease_ttl_s;   /* its record outlives its last renewal this long */
	/* [volume NAME] sections, in file order */
	struct arfd_volume_cfg volumes[ARFD_MAX_VOLUMES];
	int  nvolumes;
};

/* Whether volume name is a replica's (".readonly", made by arfctl vol
 * release): served read-only, always. */
int arfd_volume_is_replica(const char *name);
/* Is name a volume's name: 1-63 of [A-Za-z0-9._-], not "." or "..", not
 * "root" (the root volume's)? */
int arfd_volume_name_ok(const char *name);
/* The configuration of volume i of base (0 <= i < base->nvolumes): base's,
 * with the volume's data directory and [regions] settings.  0, or -1 with
 * the reason in err. */
int arfd_config_volume(const struct arfd_config *base, int i, struct arfd_config *out,
		       char *err, size_t errlen);
/* The same for a volume described by v (a name and its settings, as a
 * [volume NAME] section's), in base or not. */
int arfd_config_volume_of(const struct arfd_config *base, const struct arfd_volume_cfg *v,
			  struct arfd_config *out, char *err, size_t errlen);

/* Fill with the built-in defaults. */
void arfd_config_defaults(struct arfd_config *cfg);
/* The embedded configuration (no file at all): the defaults, except that a
 * root user on the server's own host is not squashed. */
void arfd_config_embedded(struct arfd_config *cfg);

/* Parse an INI file into cfg.  Returns 0, or -1 with "FILE:LINE: reason" in err. */
int arfd_config_load(struct arfd_config *cfg, const char *path, char *err, size_t errlen);

/* Set one key ("section.key" or "key") from a string, e.g. a flag.
 * Returns 0 or -1 with the reason in err. */
int arfd_config_set(struct arfd_config *cfg, const char *section, const char *key,
		    const char *value, char *err, size_t errlen);

/* What no single key can say: combinations that contradict each other.
 * Returns 0 or -1 with the reason in err. */
int arfd_config_check(const struct arfd_config *cfg, char *err, size_t errlen);

/* [cell]'s user, password and TLS files as the etcd client takes them
 * (pointers into cfg, valid while it is). */
struct arf_etcd_security;
void arfd_config_cell_security(const struct arfd_config *cfg, struct arf_etcd_security *sec);

/* Write every key with its value as INI, with help comments. */
void arfd_config_dump(const struct arfd_config *cfg, FILE *out);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * arfd/server — start and stop: regions as memfds, the filesystem formatted
 * or rebuilt from RocksDB, the transport server with its regions and
 * handshake, the worker and committer threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "arf_proto.h"
#include "arfd.h"
#include "cell.h"
#include "locks.h"
#include "log.h"
#include "xattr.h"

#define SCRATCH_SIZE (64u << 10)
#define NIC_SPIN_FACTOR 4u /* the soft-NIC polls this many times spin_us (arfd_start) */

int arfd_map_region(const char *name, uint64_t size, int *fd, void **base, char *err,
		    size_t errlen)
{
	/* sealable: net/ seals the read-only regions against writes before
	 * handing them to shm clients (our own mapping, made here, stays) */
	*fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0 || ftruncate(*fd, (off_t)size) < 0) {
		snprintf(err, errlen, "region %s (%llu bytes): %s", name, (unsigned long long)size,
			 strerror(errno));
		return -errno;
	}
	*base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, *fd, 0);
	if (*base == MAP_FAILED) {
		*base = NULL;
		snprintf(err, errlen, "map region %s (%llu bytes): %s", name,
			 (unsigned long long)size, strerror(errno));
		return -errno;
	}
	return 0;
}

/* mkdir -p for the data directory and the socket's directory. */
static int make_dirs(const char *path)
{
	char tmp[512];
	size_t n = strlen(path);

	if (n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * In a cell, a volume whose record names another server is that server's:
 * a client that asks for it here is sent there (NFSv4's MOVED, AFS's
 * VMOVED), with EREMOTE and a message that holds the URL libarf goes on
 * to; or told that its server is down (EHOSTDOWN).  The root volume ("")
 * counts as [cell] root_volume.  0 when the volume is not another's.
 */
static int moved(struct arfd *root, const char *volume, char *msg, size_t msglen)
{
	struct arf_cell_view *cv = __atomic_load_n(&root->cellview, __ATOMIC_ACQUIRE);
	const char *name = volume[0] ? volume : root->cfg.cell_root_volume;
	struct arf_cell_volume vol;
	struct arf_cell_server srv;

	if (!cv || !name[0] || arf_cell_view_locate(cv, name, &vol, &srv) ||
	    !strcmp(vol.server, root->cell_id))
		return 0;
	if (!srv.id[0] || !srv.port) {
		snprintf(msg, msglen, "volume '%s' is on server '%s', which is not live in the cell",
			 name, vol.server);
		return -EHOSTDOWN;
	}
	int v6 = strchr(srv.address, ':') != NULL;
	snprintf(msg, msglen, "volume '%s' is on server '%s': arf://%s%s%s:%u/", name, vol.server,
		 v6 ? "[" : "", srv.address, v6 ? "]" : "", srv.port);
	return -EREMOTE;
}

static int on_hello(void *ctx, struct arf_net_sconn *c, const struct arf_net_peer *peer,
		    const void *hello, size_t hello_len, char *msg, size_t msglen)
{
	struct arfd *d;
	int rc;
	struct arf_proto_rd r;
	struct arf_proto_hello h;

	arf_proto_rd_init(&r, hello, hello_len);
	arf_proto_get_hello(&r, &h);
	if (r.err) {
		snprintf(msg, msglen, "malformed hello");
		return ARF_EPROTO;
	}
	if (h.version != ARF_PROTO_INFO_VERSION) {
		snprintf(msg, msglen, "client speaks request protocol %u, arfd speaks %u", h.version,
			 ARF_PROTO_INFO_VERSION);
		return ARF_EVERSION;
	}
	/* who may connect first (every volume has the server's [export]
	 * clients): nothing about volumes is told to anyone else */
	struct arfd *root = ctx;
	arfd_fs_lock(root); /* SIGHUP may change the lists */
	int allowed = arfd_access_allowed(&root->nets, peer);
	arfd_fs_unlock(root);
	if (!allowed) {
		snprintf(msg, msglen, "client %s is not in this export's clients list", peer->addr);
		arfd_log_limited(ARFD_LOG_WARN, "refused %s over %s: not in [export] clients",
				 peer->addr, peer->transport);
		return ARF_EAUTH;
	}
	const char *want = h.volume[0] ? h.volume : root->cfg.cell_root_volume;
	if (__atomic_load_n(&root->arriving_set, __ATOMIC_ACQUIRE) && want[0] &&
	    !strcmp(want, root->arriving)) {
		/* vol move or release is handing it over (move_in.c): in a moment */
		snprintf(msg, msglen, "volume '%s' is being moved or released to this server: try "
			 "again", want);
		return -EAGAIN;
	}
	if ((rc = moved(root, h.volume, msg, msglen)))
		return rc;
	d = arfd_volume_find(root, h.volume);
	if (d && __atomic_load_n(&d->moved, __ATOMIC_ACQUIRE)) {
		/* vol move sent it away (move_out.c): before the cell's copy
		 * says so, this server knows where */
		snprintf(msg, msglen, "%s", d->moved_to);
		return -EREMOTE;
	}
	if (d && d->view && !strcmp(peer->transport, "rdma")) {
		/* net refuses it after this hello (the rdma pump grants view 0's
		 * regions alone), and a connection refused after its hello is
		 * never closed through on_close: refused here, before it counts */
		snprintf(msg, msglen, "this volume is not served over rdma: use tcp or shm");
		return -EOPNOTSUPP;
	}
	/* counted before anything of the volume is used, and then looked at
	 * again: a vol rm (volumes.c) marks it removed and then counts its
	 * clients, so one of the two sees the other */
	if (d) {
		__atomic_add_fetch(&d->clients, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&d->removed, __ATOMIC_SEQ_CST)) {
			__atomic_sub_fetch(&d->clients, 1, __ATOMIC_SEQ_CST);
			d = NULL;
		}
	}
	if (!d) {
		snprintf(msg, msglen, "no volume '%s' on this server", h.volume);
		return -ENOENT;
	}
	size_t en = strlen(d->cfg.export_name);
	struct arfd_conn *ac = NULL;
	if (strcmp(d->cfg.export_name, "/") != 0 &&
	    (strncmp(h.path, d->cfg.export_name, en) != 0 || (h.path[en] && h.path[en] != '/'))) {
		snprintf(msg, msglen, "no export matches path '%s' (arfd exports '%s')", h.path,
			 d->cfg.export_name);
		rc = -ENOENT;
		goto refuse;
	}
	if (!(ac = calloc(1, sizeof(*ac)))) {
		snprintf(msg, msglen, "out of memory");
		rc = -ENOMEM;
		goto refuse;
	}
	ac->d = d;
	if ((rc = arfd_identity_hello(d, peer, &h, ac, msg, msglen)))
		goto refuse;
	if (h.flags & ARF_PROTO_HELLO_CLIENT) {
		memcpy(ac->client_id, h.client, sizeof(ac->client_id));
		ac->has_client_id = 1;
	}
	arf_net_sconn_set_grant(c, ac->grant);
	arf_net_sconn_set_view(c, d->view);
	arf_net_sconn_set_udata(c, ac, free); /* freed with c: queued requests still read it */
	arfd_log(ARFD_LOG_DEBUG, "client %s connected over %s to volume %s as %s%s%s", peer->addr,
		 peer->transport, d->volume, arfd_identity_trust_name(ac->trust),
		 ac->grant ? "" : " (requests only)", peer->authenticated ? ", secret proven" : "");
	return 0;
refuse:
	free(ac);
	__atomic_sub_fetch(&d->clients, 1, __ATOMIC_SEQ_CST);
	return rc;
}

static void on_close(void *ctx, struct arf_net_sconn *c)
{
	struct arfd_conn *ac = arf_net_sconn_udata(c);
	struct arfd *d = ac ? ac->d : ctx; /* the volume it was connected to */
	arfd_locks_conn_closed(d, c); /* its waiting lock requests go; its locks stay */
	if (ac && !d->host)
		arfd_move_in_closed(d, ac); /* a volume it was sending (move_in.c) */
	if (ac) /* ac itself goes with c's last reference (set_udata) */
		__atomic_sub_fetch(&d->clients, 1, __ATOMIC_SEQ_CST);
}

/* A secret file (the shared secret, the cell's move secret): readable by
 * root only, hashed to the 32-byte key the challenge-response or the move
 * stream's MACs use (libsodium BLAKE2b). */
static int load_secret(const char *what, const char *path, uint8_t key[ARF_NET_AUTH_KEY_BYTES],
		       int *has, char *err, size_t errlen)
{
	struct stat st;
	uint8_t buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	if (st.st_mode & 077) {
		close(fd);
		snprintf(err, errlen, "%s %s is readable by others (mode %o): chmod 600 it",
			 what, path, st.st_mode & 0777);
		return -EPERM;
	}
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n <= 0) {
		snprintf(err, errlen, "%s %s is empty", what, path);
		return -EINVAL;
	}
	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium failed to initialise");
		return -EIO;
	}
	crypto_generichash(key, ARF_NET_AUTH_KEY_BYTES, buf, (size_t)n, NULL, 0);
	sodium_memzero(buf, sizeof(buf));
	*has = 1;
	return 0;
}

static int set_info(struct arfd *d)
{
	struct arf_proto_info info;
	struct arf_proto_wr w;
	int rc;

	memset(&info, 0, sizeof(info));
	info.version = ARF_PROTO_INFO_VERSION;
	info.flags = (d->cfg.read_only ? ARF_PROTO_INFO_RO : 0) | (d->cfg.sync ? ARF_PROTO_INFO_SYNC : 0);
	info.incarnation = d->incarnation;
	info.max_io = ARF_PROTO_MAX_IO;
	info.root_gen = arf_meta_inode_ptr(&d->fs, ARF_ROOT_INO)->gen;
	snprintf(info.export_name, sizeof(info.export_name), "%s", d->cfg.export_name);
	memcpy(info.super, d->meta, sizeof(info.super));
	arf_proto_wr_init(&w);
	arf_proto_put_info(&w, &info);
	rc = w.err ? w.err : arf_net_server_set_view_info(d->net, d->view, w.buf, w.len);
	arf_proto_wr_free(&w);
	return rc;
}

/* Format a new filesystem or rebuild the regions from RocksDB. */
static int open_fs(struct arfd *d, char *err, size_t errlen)
{
	struct arf_meta_super sb;
	const struct arfd_config *cfg = &d->cfg;
	int found, rc;

	found = arfd_store_super(d->store, &sb, err, errlen);
	if (found < 0)
		return found;
	if (!found) {
		arf_meta_super_layout(&sb, (uint32_t)cfg->inodes, (uint32_t)cfg->dir_buckets,
				      (uint32_t)cfg->dir_entries, (uint32_t)cfg->pages,
				      (uint32_t)cfg->data_blocks, (uint32_t)cfg->dir_hash_mask);
	} else {
		rc = arf_meta_super_check(&sb, err, errlen);
		if (rc)
			return rc;
	}
	d->meta_size = sb.meta_size;
	d->data_size = sb.data_size;
	d->scratch_size = SCRATCH_SIZE;
	/* vol move's receiver may have filled the data region already from
	 * the volume's first round (move_in.c): its memory is taken over */
	struct arfd_prefill *pf = d->host ? d->host->prefill : NULL;
	if (pf && found && pf->data && !strcmp(pf->name, d->volume) &&
	    pf->size == sb.data_size && pf->nblocks == sb.n_blocks) {
		d->data_fd = pf->fd;
		d->data = pf->data;
		pf->fd = -1;
		pf->data = NULL;
		arfd_store_prefill(d->store, pf->inc, pf->seq);
	} else {
		pf = NULL;
	}
	if ((rc = arfd_map_region("arf-meta", d->meta_size, &d->meta_fd, &d->meta, err, errlen)) ||
	    (!pf && (rc = arfd_map_region("arf-data", d->data_size, &d->data_fd, &d->data, err,
					  errlen))) ||
	    (rc = arfd_map_region("arf-scratch", d->scratch_size, &d->scratch_fd, &d->scratch, err,
				  errlen))) {
		arfd_store_prefill(d->store, NULL, NULL);
		return rc;
	}

	if (!found) {
		const struct arf_meta_dirty *list;
		if ((rc = arfd_store_begin(d->store, sb.n_blocks, &d->incarnation, err, errlen)))
			return rc;
		rc = arf_meta_fs_format(&d->fs, d->meta, d->meta_size, d->data, d->data_size, &sb,
					0, 0);
		if (rc) {
			snprintf(err, errlen, "format: %s", strerror(-rc));
			return rc;
		}
		list = d->fs.dirty; /* format ran as one transaction */
		size_t n = d->fs.ndirty;
		rc = arfd_store_put_format(d->store, &d->fs, list, n,
					   arfd_store_seq(d->store) + 1, err, errlen);
		if (!rc)
			rc = arfd_store_sync(d->store, err, errlen);
		if (rc)
			return rc;
		arfd_log(ARFD_LOG_INFO, "formatted a new filesystem in %s: %u inodes, %u blocks",
			 cfg->data_dir, sb.n_inodes, sb.n_blocks);
	} else {
		uint64_t nobj = 0;
		struct arfd_store_recovery rec;
		rc = arfd_store_load(d->store, d->meta, d->meta_size, d->data, d->data_size, &nobj,
				     err, errlen);
		arfd_store_prefill(d->store, NULL, NULL);
		if (rc)
			return rc;
		arfd_store_recovered(d->store, &rec);
		if ((rc = arfd_store_begin(d->store, sb.n_blocks, &d->incarnation, err, errlen)))
			return rc;
		rc = arf_meta_fs_attach(&d->fs, d->meta, d->meta_size, d->data, d->data_size, err,
					errlen);
		if (rc)
			return rc;
		arfd_log(ARFD_LOG_INFO, "rebuilt the regions from %s: %llu objects; incarnation "
			 "%llu was durable through transaction %llu", cfg->data_dir,
			 (unsigned long long)nobj, (unsigned long long)rec.prev_inc,
			 (unsigned long long)rec.through);
		if (rec.through < rec.seq && rec.repaired)
			arfd_log(ARFD_LOG_WARN, "RocksDB recovered transactions up to %llu, the data "
				 "log up to %llu: the writes in between are lost (%llu blocks zeroed); "
				 "their clients re-send them", (unsigned long long)rec.seq,
				 (unsigned long long)rec.through, (unsigned long long)rec.repaired);
		else if (rec.through < rec.seq) /* a metadata-only tail: datalog.c's unsynced mark */
			arfd_log(ARFD_LOG_INFO, "RocksDB recovered transactions up to %llu, the data "
				 "log's mark up to %llu: every block checked against its tag, none lost",
				 (unsigned long long)rec.seq, (unsigned long long)rec.through);
	}
	d->applied_seq = d->durable_seq = d->sync_wanted = arfd_store_seq(d->store);
	/* objects are sealed by commit.c: at once for unstable writes, once
	 * durable for everything else */
	d->fs.defer_seal = 1;
	return 0;
}

static int split_listen(const char *listen, char *addr, size_t alen, uint16_t *port)
{
	const char *colon = strrchr(listen, ':');
	if (!colon || (size_t)(colon - listen) >= alen)
		return -EINVAL;
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (*end || p < 0 || p > 65535)
		return -EINVAL;
	memcpy(addr, listen, (size_t)(colon - listen));
	addr[colon - listen] = 0;
	if (addr[0] == '[') { /* [::1]:port */
		size_t n = strlen(addr);
		if (n < 2 || addr[n - 1] != ']')
			return -EINVAL;
		memmove(addr, addr + 1, n - 2);
		addr[n - 2] = 0;
	}
	*port = (uint16_t)p;
	return 0;
}

/*
 * RocksDB's LOCK is held by a process until it has exited; an arfd killed
 * a moment ago may still be exiting (unmapping large regions takes a
 * while) when the next one starts, as systemd's Restart= or an operator
 * does.  So a busy data directory is waited for, up to STORE_LOCK_WAIT_MS,
 * saying so once, before it is reported as in use.
 */
#define STORE_LOCK_WAIT_MS 30000

static int open_store(struct arfd *d, char *err, size_t errlen)
{
	struct timespec start, now, pause = { 0, 100 * 1000000L };
	int said = 0, rc;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		rc = arfd_store_open(d->cfg.data_dir,
				     (d->cfg.test_power_loss ? ARFD_STORE_POWER_LOSS : 0) |
				     (d->cfg.test_blob_store ? ARFD_STORE_BLOB : 0), &d->store, err, errlen);
		if (rc != -EBUSY)
			return rc;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long waited = (now.tv_sec - start.tv_sec) * 1000L +
			      (now.tv_nsec - start.tv_nsec) / 1000000L;
		if (waited >= STORE_LOCK_WAIT_MS)
			return rc; /* err says who holds it */
		if (!said) {
			arfd_log(ARFD_LOG_WARN, "data directory %s is locked by another process (an "
				 "arfd still exiting?): waiting up to %d s for it", d->cfg.data_dir,
				 STORE_LOCK_WAIT_MS / 1000);
			said = 1;
		}
		nanosleep(&pause, NULL);
	}
}

/* The pid a pid file holds (0: none, unreadable or not a number). */
static long pid_file_read(const char *path)
{
	char buf[32];
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *end;
	long pid = strtol(buf, &end, 10);
	return end != buf && (*end == '\n' || !*end) && pid > 0 ? pid : 0;
}

/* Has pid finished (a zombie) or been killed (SIGKILL pending)? */
static int pid_exiting(long pid)
{
	char path[64], line[256];
	FILE *f;
	int dying = 0;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if (!(f = fopen(path, "r")))
		return 1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long mask;
		if (!strncmp(line, "State:", 6) && (strchr(line, 'Z') || strchr(line, 'X')))
			dying = 1;
		if ((!strncmp(line, "SigPnd:", 7) || !strncmp(line, "ShdPnd:", 7)) &&
		    sscanf(line + 7, "%llx", &mask) == 1 && (mask & (1ull << (SIGKILL - 1))))
			dying = 1;
	}
	fclose(f);
	return dying;
}

/* A pid file naming another arfd that runs belongs to that daemon: refuse
 * to start on it (a second start of the same configuration), rather than
 * take the file over.  A file left by a daemon that died, or naming a pid
 * that some other program has since been given, is stale. */
static int pid_file_check(const char *path, char *err, size_t errlen)
{
	long pid = pid_file_read(path);
	char comm[64], proc[64];

	if (!pid || pid == (long)getpid())
		return 0;
	snprintf(proc, sizeof(proc), "/proc/%ld/comm", pid);
	FILE *f = fopen(proc, "r");
	if (!f)
		return 0; /* no such process */
	int is_arfd = fgets(comm, sizeof(comm), f) && !strcmp(comm, "arfd\n");
	fclose(f);
	if (!is_arfd || pid_exiting(pid))
		return 0; /* an arfd on its way out: the data directory's lock is waited for */
	snprintf(err, errlen, "pid file %s: arfd %ld is running with it (is this configuration "
		 "already served?)", path, pid);
	return -EEXIST;
}

static int write_file(const char *path, const char *text)
{
	char tmp[300];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fputs(text, f);
	if (fclose(f))
		return -errno;
	return rename(tmp, path) ? -errno : 0;
}

/* What every volume has of its own, up to its regions' registration:
 * the filesystem lock, the store and the rebuilt regions, the reply
 * cache, extended attributes and locks. */
static int volume_open(struct arfd *d, char *err, size_t errlen)
{
	int rc;

	d->meta_fd = d->data_fd = d->scratch_fd = -1;
	clock_gettime(CLOCK_MONOTONIC, &d->started);
	if ((rc = arfd_fs_lock_init(d))) {
		snprintf(err, errlen, "the filesystem lock: %s", strerror(-rc));
		return rc;
	}
	pthread_cond_init(&d->commit_cond, NULL);
	d->pending = arfd_pending_create();
	if (!d->pending) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if ((rc = make_dirs(d->cfg.data_dir))) {
		snprintf(err, errlen, "data directory %s: %s", d->cfg.data_dir, strerror(-rc));
		return rc;
	}
	if ((rc = arfd_access_parse(d->cfg.clients, &d->nets, err, errlen)))
		return rc;
	if ((rc = arfd_identity_start(d))) {
		snprintf(err, errlen, "identity keys: %s", strerror(-rc));
		return rc;
	}
	if ((rc = open_store(d, err, errlen)))
		return rc;
	if ((rc = open_fs(d, err, errlen)))
		return rc;
	if ((rc = arfd_replies_start(d, err, errlen)) || (rc = arfd_xattr_start(d, err, errlen)) ||
	    (rc = arfd_locks_start(d, err, errlen)))
		return rc;
	/* test only: RocksDB failing from here on (commit.c's fail-stop) */
	arfd_store_inject_faults(d->store, (uint64_t)d->cfg.test_fail_write,
				 (uint64_t)d->cfg.test_fail_sync, (uint64_t)d->cfg.test_fail_append);
	return 0;
}

/* A volume's regions in its view of net, its info, and its threads. */
static int volume_serve(struct arfd *d, char *err, size_t errlen)
{
	int rc;

	if ((rc = arf_net_server_add_region_in(d->net, d->view, ARF_REGION_META, d->meta,
					       d->meta_size, d->meta_fd, 0)) ||
	    (rc = arf_net_server_add_region_in(d->net, d->view, ARF_REGION_DATA, d->data,
					       d->data_size, d->data_fd, 0)) ||
	    (rc = arf_net_server_add_region_in(d->net, d->view, ARF_REGION_SCRATCH, d->scratch,
					       d->scratch_size, d->scratch_fd,
					       ARF_NET_REGION_WRITABLE))) {
		snprintf(err, errlen, "register regions: %s", strerror(-rc));
		return rc;
	}
	if ((rc = set_info(d))) {
		snprintf(err, errlen, "server info: %s", strerror(-rc));
		return rc;
	}
	if ((rc = arfd_progs_start(d, err, errlen)))
		return rc;
	if ((rc = arfd_lanes_start(d, err, errlen)))
		return rc;
	/* syncs count as slow until some have been timed (commit.c) */
	d->sync_ns_avg = d->sync_ns_last = ARFD_SYNC_NS_UNKNOWN;
	if ((rc = pthread_create(&d->committer, NULL, arfd_committer_main, d))) {
		snprintf(err, errlen, "committer thread: %s", strerror(rc));
		return -rc;
	}
	d->committer_started = 1;
	return 0;
}

static void volume_close(struct arfd *d);

int arfd_volume_add(struct arfd *d, const char *name, const struct arfd_config *vcfg, char *err,
		    size_t errlen)
{
	int n = d->nvols; /* only this thread adds (the start, then the control thread) */
	char why[400];
	int rc;

	if (n >= ARFD_MAX_VOLUMES) {
		snprintf(err, errlen, "volume %s: at most %d volumes besides the root one (volumes "
			 "removed by vol rm count until arfd restarts)", name, ARFD_MAX_VOLUMES);
		return -ENOSPC;
	}
	struct arfd *v = calloc(1, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	v->meta_fd = v->data_fd = v->scratch_fd = -1;
	v->host = d;
	if (!d->next_view)
		d->next_view = 1;
	if (d->next_view >= ARF_NET_MAX_VIEWS) {
		free(v);
		snprintf(err, errlen, "volume %s: no view left for its regions (a volume that "
			 "failed to start while arfd served keeps its view until a restart)", name);
		return -ENOSPC;
	}
	v->view = d->next_view++;
	v->net = d->net;
	v->cfg = *vcfg;
	if (arfd_volume_is_replica(name)) /* vol release's: read-only, always */
		v->cfg.read_only = 1;
	snprintf(v->volume, sizeof(v->volume), "%s", name);
	if ((rc = volume_open(v, why, sizeof(why))) || (rc = volume_serve(v, why, sizeof(why)))) {
		snprintf(err, errlen, "volume %s: %s", v->volume, why);
		/* no client can reach it (its name is not published): closed
		 * now, its view retired in net (its regions' descriptors closed,
		 * so a start skips them) and not used again */
		volume_close(v);
		arf_net_server_retire_view(d->net, v->view);
		free(v);
		return rc;
	}
	/* whole before it is found: on_hello (the soft-NIC thread) looks
	 * volumes up without a lock */
	d->vols[n] = v;
	__atomic_store_n(&d->nvols, n + 1, __ATOMIC_RELEASE);
	arfd_log(ARFD_LOG_INFO, "volume %s from %s, incarnation %llu", v->volume, v->cfg.data_dir,
		 (unsigned long long)v->incarnation);
	return 0;
}

int arfd_volume_room(const struct arfd *d)
{
	int by_slot = ARFD_MAX_VOLUMES - __atomic_load_n(&d->nvols, __ATOMIC_ACQUIRE);
	int by_view = ARF_NET_MAX_VIEWS - (int)(d->next_view ? d->next_view : 1);

	return by_slot < by_view ? by_slot : by_view;
}

/* The [volume NAME] sections, then the volumes made by arfctl vol create
 * (volumes.c), each one more struct arfd on d's server. */
static int volumes_start(struct arfd *d, char *err, size_t errlen)
{
	for (int i = 0; i < d->cfg.nvolumes; i++) {
		struct arfd_config vc;
		int rc;

		if (arfd_config_volume(&d->cfg, i, &vc, err, errlen))
			return -EINVAL;
		if ((rc = arfd_volume_add(d, d->cfg.volumes[i].name, &vc, err, errlen)))
			return rc;
	}
	return arfd_volumes_made_start(d, err, errlen);
}

struct arfd *arfd_volume_find(struct arfd *root, const char *name)
{
	/* the root volume: also by its name in the cell ([cell] root_volume),
	 * as a mount point names it */
	if (!name[0] || !strcmp(name, "root") ||
	    (root->cfg.cell_root_volume[0] && !strcmp(name, root->cfg.cell_root_volume)))
		return root;
	for (int i = 0, n = __atomic_load_n(&root->nvols, __ATOMIC_ACQUIRE); i < n; i++)
		if (!strcmp(root->vols[i]->volume, name) &&
		    !__atomic_load_n(&root->vols[i]->removed, __ATOMIC_SEQ_CST))
			return root->vols[i];
	return NULL;
}

void arfd_volume_retire(struct arfd *v)
{
	struct arf_net_server *net = v->net;

	__atomic_store_n(&v->prog_abort, 1, __ATOMIC_RELEASE); /* a run in progress stops now */
	volume_close(v);
	arf_net_server_retire_view(net, v->view);
}

int arfd_start(struct arfd *d, char *err, size_t errlen)
{
	struct arf_net_server_opts so;
	char addr[128];
	uint16_t port = 0;
	int rc;

	d->meta_fd = d->data_fd = d->scratch_fd = -1; /* for arfd_stop, whatever fails */
	snprintf(d->volume, sizeof(d->volume), "root");
	pthread_mutex_init(&d->vol_lock, NULL);
	pthread_mutex_init(&d->move_lock, NULL);
	pthread_mutex_init(&d->out_lock, NULL);
	if (d->cfg.listen[0] && split_listen(d->cfg.listen, addr, sizeof(addr), &port)) {
		snprintf(err, errlen, "listen = '%s': expected ADDR:PORT", d->cfg.listen);
		return -EINVAL;
	}
	if (!d->cfg.listen[0] && !d->cfg.socket[0] && !d->cfg.rdma_listen[0]) {
		snprintf(err, errlen,
			 "neither listen, socket nor rdma_listen is set: nothing to serve on");
		return -EINVAL;
	}
	/* rdma beside tcp and shm.  A host without an RDMA device (or a build
	 * without rdma-core) is not a configuration error while something else
	 * is served: as rpc.nfsd does with rdma, say so and serve the rest. */
	char raddr[128];
	uint16_t rport = 0;
	int serve_rdma = 0;
	if (d->cfg.rdma_listen[0]) {
		char why[200];
		if (split_listen(d->cfg.rdma_listen, raddr, sizeof(raddr), &rport)) {
			snprintf(err, errlen, "rdma_listen = '%s': expected ADDR:PORT",
				 d->cfg.rdma_listen);
			return -EINVAL;
		}
		if (arf_net_rdma_available(why, sizeof(why))) {
			serve_rdma = 1;
		} else if (!d->cfg.listen[0] && !d->cfg.socket[0]) {
			snprintf(err, errlen, "rdma_listen = '%s': rdma is not available here: %s; "
				 "and neither listen nor socket is set: nothing to serve on",
				 d->cfg.rdma_listen, why);
			return -ENODEV;
		} else {
			const char *rest = !d->cfg.socket[0] ? "tcp"
					   : !d->cfg.listen[0] ? "shm" : "tcp and shm";
			arfd_log(ARFD_LOG_WARN, "rdma_listen = '%s': not serving rdma: %s; serving "
				 "%s only", d->cfg.rdma_listen, why, rest);
		}
	}
	if ((rc = make_dirs(d->cfg.data_dir))) {
		snprintf(err, errlen, "data directory %s: %s", d->cfg.data_dir, strerror(-rc));
		return rc;
	}
	if (d->cfg.socket[0]) {
		char dir[256];
		snprintf(dir, sizeof(dir), "%s", d->cfg.socket);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = 0;
			if ((rc = make_dirs(dir))) {
				snprintf(err, errlen, "socket directory %s: %s", dir, strerror(-rc));
				return rc;
			}
		}
	}
	if (d->cfg.pid_file[0] && (rc = pid_file_check(d->cfg.pid_file, err, errlen)))
		return rc;
	if (d->cfg.secret_file[0] &&
	    (rc = load_secret("secret_file", d->cfg.secret_file, d->auth_key, &d->has_auth_key,
			      err, errlen)))
		return rc;
	if (d->cfg.cell_move_secret_file[0] &&
	    (rc = load_secret("[cell] move_secret_file", d->cfg.cell_move_secret_file, d->move_key,
			      &d->has_move_key, err, errlen)))
		return rc;
	if (d->has_auth_key && d->has_move_key &&
	    !sodium_memcmp(d->auth_key, d->move_key, ARF_NET_AUTH_KEY_BYTES)) {
		/* clients hold the first: they could make the servers' keys */
		snprintf(err, errlen, "[cell] move_secret_file holds the same secret as [export] "
			 "secret_file, which clients hold: the servers' secret must be their own");
		return -EINVAL;
	}
	if ((rc = volume_open(d, err, errlen)))
		return rc;

	memset(&so, 0, sizeof(so));
	so.listen_addr = d->cfg.listen[0] ? addr : NULL;
	so.port = port;
	so.unix_path = d->cfg.socket[0] ? d->cfg.socket : NULL;
	so.rdma_addr = serve_rdma ? raddr : NULL;
	so.rdma_port = rport;
	/* The soft-NIC (and the rdma server's completion loop) polls four
	 * times spin_us after its last message: a mount's next request comes
	 * a FUSE crossing and a system call after the reply, 50-100 us later
	 * on the 2-core machine, which a 50 us window misses every time, so
	 * the thread slept and each request paid its wake-up (arf-fuse 4 KiB
	 * random writes at queue depth 1: 6.3-7.3k/s with 50, 10.9-11.7k/s
	 * with 200; bench/README).  Workers keep spin_us (lanes.c): longer
	 * spins there took the cores that requests at depth 16 need.  After
	 * a request handed to a worker (lanes.c) the soft-NIC polls spin_us
	 * only: the client's next request waits for that worker's reply, and
	 * the long poll took its core (mount creates 3.4k/s with 50 us,
	 * 3.2k/s with 200 us after every request, 3.5k/s so; medians of
	 * four interleaved runs). */
	so.spin_us = (uint32_t)d->cfg.spin_us * NIC_SPIN_FACTOR;
	so.spin_handoff_us = (uint32_t)d->cfg.spin_us;
	so.max_conns = (uint32_t)d->cfg.max_conns;
	so.max_conns_per_client = (uint32_t)d->cfg.max_conns_per_client;
	so.reserved_root_conns = (uint32_t)d->cfg.reserved_root_conns;
	so.max_conn_requests = (uint32_t)d->cfg.max_conn_requests;
	so.max_conn_request_bytes = (uint64_t)d->cfg.max_conn_request_bytes;
	so.idle_timeout_ms = (uint32_t)d->cfg.idle_timeout_s * 1000u;
	so.frame_timeout_ms = (uint32_t)d->cfg.frame_timeout_s * 1000u;
	so.ctx = d;
	so.on_hello = on_hello;
	so.auth_key = d->has_auth_key ? d->auth_key : NULL;
	so.on_request = arfd_on_request;
	so.on_close = on_close;
	if ((rc = arf_net_server_create(&so, &d->net, err, errlen)))
		return rc;
	if ((rc = volume_serve(d, err, errlen)) || (rc = volumes_start(d, err, errlen)))
		return rc;
	if ((rc = arf_net_server_start(d->net, err, errlen)))
		return rc;
	__atomic_store_n(&d->serving, 1, __ATOMIC_RELEASE); /* volumes made from here on: volumes.c */
	if ((rc = arfd_control_start(d, err, errlen)))
		return rc;

	/* the pid file before the port file: whoever waits for the port (the
	 * tests, scripts) then finds the pid file current too */
	char buf[64];
	if (d->cfg.pid_file[0]) {
		snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
		if ((rc = write_file(d->cfg.pid_file, buf))) {
			snprintf(err, errlen, "pid file %s: %s", d->cfg.pid_file, strerror(-rc));
			return rc;
		}
		d->pid_file_written = 1;
	}
	if (d->cfg.port_file[0]) {
		snprintf(buf, sizeof(buf), "%u\n", arf_net_server_port(d->net));
		if ((rc = write_file(d->cfg.port_file, buf))) {
			snprintf(err, errlen, "port file %s: %s", d->cfg.port_file, strerror(-rc));
			return rc;
		}
	}
	char where[400] = "";
	if (d->cfg.listen[0])
		snprintf(where, sizeof(where), "tcp %s%s%s:%u", strchr(addr, ':') ? "[" : "", addr,
			 strchr(addr, ':') ? "]" : "", arf_net_server_port(d->net));
	if (d->cfg.socket[0]) {
		size_t wl = strlen(where);
		snprintf(where + wl, sizeof(where) - wl, "%sshm %.200s", wl ? " and " : "", d->cfg.socket);
	}
	if (serve_rdma) {
		size_t wl = strlen(where);
		snprintf(where + wl, sizeof(where) - wl, "%srdma %s%s%s:%u", wl ? " and " : "",
			 strchr(raddr, ':') ? "[" : "", raddr[0] ? raddr : "*",
			 strchr(raddr, ':') ? "]" : "", arf_net_server_rdma_port(d->net));
	}
	arfd_log(ARFD_LOG_INFO, "serving export '%s' (%s) on %s, incarnation %llu",
		 d->cfg.export_name, d->cfg.sync ? "sync: stable writes"
						 : "unstable writes until COMMIT", where,
		 (unsigned long long)d->incarnation);
	return 0;
}

/* Drain a volume's workers and committer (which syncs what is still
 * waiting), then close its store and free its regions: once net is gone. */
static void volume_close(struct arfd *d)
{
	d->net = NULL;
	__atomic_store_n(&d->stopping, 1, __ATOMIC_RELEASE);
	arfd_lanes_stop(d);
	if (d->committer_started) {
		arfd_fs_lock(d);
		pthread_cond_signal(&d->commit_cond);
		arfd_fs_unlock(d);
		pthread_join(d->committer, NULL);
		d->committer_started = 0;
	}
	if (d->store) {
		char err[256];
		/* the workers and the committer are gone: the regions hold still */
		if ((!arfd_failed(d) && arfd_store_flush(d->store, &d->fs, err, sizeof(err))) ||
		    arfd_store_sync(d->store, err, sizeof(err)))
			arfd_log(ARFD_LOG_ERROR, "%s", err);
	}
	arfd_pending_destroy(d->pending);
	arfd_locks_stop(d);
	arfd_xattr_stop(d);
	arfd_replies_stop(d);
	arfd_progs_stop(d);
	arfd_identity_stop(d);
	arf_meta_fs_detach(&d->fs);
	arfd_store_close(d->store);
	if (d->meta)
		munmap(d->meta, d->meta_size);
	if (d->data)
		munmap(d->data, d->data_size);
	if (d->scratch)
		munmap(d->scratch, d->scratch_size);
	if (d->meta_fd >= 0)
		close(d->meta_fd);
	if (d->data_fd >= 0)
		close(d->data_fd);
	if (d->scratch_fd >= 0)
		close(d->scratch_fd);
}

void arfd_stop(struct arfd *d)
{
	/* Stop taking requests first, then drain every volume. */
	arfd_move_in_stop(d); /* no vol move session ends beside what follows */
	__atomic_store_n(&d->prog_abort, 1, __ATOMIC_RELEASE); /* runs stop at their next clock check */
	for (int i = 0; i < d->nvols; i++)
		__atomic_store_n(&d->vols[i]->prog_abort, 1, __ATOMIC_RELEASE);
	arfd_control_stop(d);
	arf_net_server_destroy(d->net);
	for (int i = 0; i < d->nvols; i++) {
		if (!d->vols[i]->removed) /* a removed one is closed already (volumes.c) */
			volume_close(d->vols[i]);
		free(d->vols[i]);
		d->vols[i] = NULL;
	}
	d->nvols = 0;
	volume_close(d);
	arf_cell_view_stop(d->cellview); /* LOCATE's (locate.c): no worker is left to ask */
	d->cellview = NULL;
	sodium_memzero(d->move_key, sizeof(d->move_key));
	sodium_memzero(d->auth_key, sizeof(d->auth_key));
	/* Only what this process made: a start that failed because another
	 * arfd holds the socket, the port or the data directory must leave
	 * that daemon's files alone.  The UNIX socket is net/'s, removed by
	 * arf_net_server_destroy when it bound it; the control socket is
	 * control.c's; the pid file is ours while it holds our pid. */
	if (d->pid_file_written && pid_file_read(d->cfg.pid_file) == (long)getpid())
		unlink(d->cfg.pid_file);
	d->pid_file_written = 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * arfd/move_out — `arfctl vol move NAME SERVER` (issue 18 point 4, AFS's
 * `vos move`): volume NAME, served here, sent to SERVER of the cell while
 * its clients use it, and its record flipped there in one etcd
 * transaction.  The receiving end is move_in.c; the steps and the MAC,
 * move.h.
 *
 * 1. Refused unless NAME is a volume vol create made (not the root, a
 *    replica or an arfd.conf section: arfd_volume_movable), the cell
 *    records it here, SERVER is live in the cell, and this server has the
 *    cell's move secret ([cell] move_secret_file; SERVER must have it too).
 * 2. A session with SERVER over tcp (the shared secret as any client's, if
 *    set; then CHALLENGE, and every step MAC'd with the move secret), and
 *    BEGIN with NAME's settings.
 * 3. Round 1, while NAME serves on: a snapshot (vol release's: a RocksDB
 *    checkpoint and the data log, their immutable files hard links; NAME
 *    waits only for that) in DATA_DIR/volumes/+NAME.out.1, every file of it
 *    sent.
 * 4. Round 2, the freeze: NAME's requests wait from here (one-sided reads
 *    go on: nothing changes).  Everything applied is made durable, a second
 *    snapshot taken, and only what differs from the first sent: a file of
 *    the same name and inode is the same immutable file (an SST, a closed
 *    data log segment), so the catch-up is what changed during round 1 --
 *    new SSTs, the data log's head, RocksDB's MANIFEST.  KEEP names the
 *    whole volume; END makes SERVER serve it (sending hellos here until the
 *    record says otherwise).
 * 5. NAME is marked moved (a hello here is sent to SERVER), its
 *    connections are shut down (tcp's one-sided reads fail with them; an
 *    shm client's reads look at the socket every 5 ms, so 10 ms are waited
 *    before anything can change on SERVER), and the record flipped
 *    (compare-and-swap).  The freeze ends: requests that waited are
 *    answered on closed connections, and their clients send them again to
 *    SERVER.  Their unstable writes were made durable before the snapshot:
 *    on SERVER's new write verifier, COMMIT says so, and nothing is sent
 *    twice.  A failed flip gives NAME back to its clients here (ABORT).
 * 6. DONE: SERVER's copy of the cell shows the volume there; then NAME's
 *    copy here is closed and deleted (arfd_volume_let_go) and the
 *    snapshots removed.
 *
 * Not built (docs/volumes.md): catching up from the stream of committed
 * transactions instead of files (so the freeze is the last round's files
 * and SERVER's opening of the volume, which rebuilds its regions), several
 * unfrozen rounds, and carrying a byte-range lock's lease (a moved volume's
 * locks are reclaimed as after a restart).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "arf_net.h"
#include "arf_proto.h"
#include "arfd.h"
#include "cell.h"
#include "log.h"
#include "move.h"
#include "store.h"

#define MAX_FILES 4096 /* files of one snapshot, at most */
#define fail arfd_volume_error

struct file {
	char path[ARFD_MOVE_PATH]; /* "F" or "datalog/F" */
	uint64_t ino, size;
};

struct snap {
	char dir[PATH_MAX];
	struct file *f;
	size_t n;
};

struct out {
	struct arfd *root;
	struct arf_net_conn *conn;
	uint8_t nonce[ARFD_MOVE_NONCE];
	uint64_t counter;
	uint64_t bytes, files;
	char err[700];
};

static const char *step_name(uint32_t step)
{
	static const char *names[] = { "challenge", "begin", "file", "data", "keep", "end",
				       "done", "abort" };
	return step < sizeof(names) / sizeof(names[0]) ? names[step] : "?";
}

/* A request of step with fields (what the caller put in w after
 * start_step), MAC'd, sent, its answer in *resp (may be NULL): 0 or
 * -errno with o->err. */
static void start_step(struct arf_proto_wr *w, uint32_t step)
{
	struct arf_proto_cred none;

	memset(&none, 0, sizeof(none));
	arf_proto_wr_init(w);
	arf_proto_put_cred(w, &none);
	arf_proto_put_u32(w, step);
}

static int call(struct out *o, struct arf_proto_wr *w, uint32_t step, struct arf_net_buf *resp)
{
	struct arf_net_buf got = { 0 };
	/* the body from the step on: after the credentials */
	struct arf_proto_wr c;
	struct arf_proto_cred none;

	memset(&none, 0, sizeof(none));
	arf_proto_wr_init(&c);
	arf_proto_put_cred(&c, &none);
	size_t start = c.len;
	arf_proto_wr_free(&c);
	if (step != ARFD_MOVE_CHALLENGE) {
		uint8_t mac[ARFD_MOVE_MAC];
		arfd_move_mac(mac, o->root->move_key, o->nonce, o->counter++, w->buf + start,
			      w->len - start);
		arf_proto_put(w, mac, sizeof(mac));
	}
	if (w->err) {
		arf_proto_wr_free(w);
		snprintf(o->err, sizeof(o->err), "out of memory");
		return -ENOMEM;
	}
	struct iovec iov = { w->buf, w->len };
	int rc = arf_net_call(o->conn, ARF_OP_VOLUME_IN, &iov, 1, &got);
	arf_proto_wr_free(w);
	if (rc)
		snprintf(o->err, sizeof(o->err), "the receiving server answered %s with: %s "
			 "(its log says more)", step_name(step), rc == -EACCES
			 ? "permission denied (is its [cell] move_secret_file the same?)"
			 : strerror(rc < 0 ? -rc : EIO));
	if (resp && !rc)
		*resp = got;
	else
		arf_net_buf_free(&got);
	return rc;
}

/* A snapshot's files, by path. */
static int list_files(struct snap *s, char *err, size_t errlen)
{
	s->n = 0;
	if (!(s->f = calloc(MAX_FILES, sizeof(*s->f))))
		return -ENOMEM;
	for (int sub = 0; sub < 2; sub++) {
		char dir[PATH_MAX + 16];
		snprintf(dir, sizeof(dir), "%s%s", s->dir, sub ? "/datalog" : "");
		DIR *dh = opendir(dir);
		struct dirent *e;
		if (!dh) {
			if (sub && errno == ENOENT)
				break; /* a store without a data log */
			snprintf(err, errlen, "%.300s: %s", dir, strerror(errno));
			return -errno;
		}
		while ((e = readdir(dh))) {
			struct stat st;
			if (e->d_name[0] == '.' || fstatat(dirfd(dh), e->d_name, &st,
							   AT_SYMLINK_NOFOLLOW))
				continue;
			if (S_ISDIR(st.st_mode) && !sub && !strcmp(e->d_name, "datalog"))
				continue;
			struct file *f = &s->f[s->n];
			int fit = (size_t)snprintf(f->path, sizeof(f->path), "%s%.*s",
						   sub ? "datalog/" : "", ARFD_MOVE_PATH - 1,
						   e->d_name) < sizeof(f->path);
			if (!fit || !S_ISREG(st.st_mode) || !arfd_move_path_ok(f->path) ||
			    s->n == MAX_FILES) {
				snprintf(err, errlen, "%.300s/%.100s: a file vol move cannot send", dir,
					 e->d_name);
				closedir(dh);
				return -EINVAL;
			}
			f->ino = st.st_ino;
			f->size = (uint64_t)st.st_size;
			s->n++;
		}
		closedir(dh);
	}
	return 0;
}

/* The volume's state into s->dir: what vol release does, under the lock
 * the caller holds (arfd_lock_for_control). */
static int snapshot(struct arfd *v, struct snap *s, char *err, size_t errlen)
{
	arfd_quiesce(v);
	if (arfd_failed(v)) {
		snprintf(err, errlen, "volume %s has failed: %s", v->volume, v->failure);
		return -EIO;
	}
	int rc = arfd_store_flush(v->store, &v->fs, err, errlen);
	if (!rc)
		rc = arfd_store_sync(v->store, err, errlen);
	if (!rc)
		rc = arfd_store_clone(v->store, s->dir, err, errlen);
	if (!rc)
		rc = list_files(s, err, errlen);
	return rc;
}

static int send_file(struct out *o, const struct snap *s, const struct file *f, uint8_t *buf)
{
	char path[PATH_MAX + ARFD_MOVE_PATH];
	struct arf_proto_wr w;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", s->dir, f->path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(o->err, sizeof(o->err), "%.400s: %s", path, strerror(errno));
		return -errno;
	}
	start_step(&w, ARFD_MOVE_FILE);
	arf_proto_put_bytes(&w, f->path, (uint32_t)strlen(f->path));
	arf_proto_put_u64(&w, f->size);
	rc = call(o, &w, ARFD_MOVE_FILE, NULL);
	for (uint64_t off = 0; !rc && off < f->size;) {
		size_t want = f->size - off < ARFD_MOVE_CHUNK ? (size_t)(f->size - off)
							      : ARFD_MOVE_CHUNK;
		ssize_t n = pread(fd, buf, want, (off_t)off);
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			snprintf(o->err, sizeof(o->err), "reading %.400s: %s", path,
				 n < 0 ? strerror(errno) : "shorter than it was");
			break;
		}
		start_step(&w, ARFD_MOVE_DATA);
		arf_proto_put_u64(&w, off);
		arf_proto_put_bytes(&w, buf, (uint32_t)n);
		rc = call(o, &w, ARFD_MOVE_DATA, NULL);
		off += (uint64_t)n;
		o->bytes += (uint64_t)n;
	}
	close(fd);
	o->files += !rc;
	return rc;
}

/* Every file of s that prev (NULL: none) does not have as the same inode. */
static int send_round(struct out *o, const struct snap *s, const struct snap *prev)
{
	uint8_t *buf = malloc(ARFD_MOVE_CHUNK);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; !rc && i < s->n; i++) {
		int same = 0;
		for (size_t j = 0; prev && j < prev->n && !same; j++)
			same = !strcmp(prev->f[j].path, s->f[i].path) &&
			       prev->f[j].ino == s->f[i].ino && prev->f[j].size == s->f[i].size;
		if (!same)
			rc = send_file(o, s, &s->f[i], buf);
	}
	free(buf);
	if (rc)
		return rc;
	struct arf_proto_wr w;
	start_step(&w, ARFD_MOVE_KEEP);
	arf_proto_put_u32(&w, (uint32_t)s->n);
	for (size_t i = 0; i < s->n; i++) {
		arf_proto_put_bytes(&w, s->f[i].path, (uint32_t)strlen(s->f[i].path));
		arf_proto_put_u64(&w, s->f[i].size);
	}
	return call(o, &w, ARFD_MOVE_KEEP, NULL);
}

/* volume.conf's settings: its KEY=VALUE lines. */
static int settings_of(struct arfd *d, const char *name, char *out, size_t len)
{
	char path[PATH_MAX], line[512];
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/volumes/%s/volume.conf", d->cfg.data_dir, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	out[0] = 0;
	while (fgets(line, sizeof(line), f))
		if (line[0] != '#' && line[0] != '\n' && n + strlen(line) < len)
			n += (size_t)snprintf(out + n, len - n, "%s", line);
	fclose(f);
	return 0;
}

static double secs(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static int dial(struct out *o, const struct arf_cell_server *srv)
{
	struct arf_proto_hello h;
	struct arf_proto_wr hw;
	struct arf_net_client_opts no;

	memset(&h, 0, sizeof(h));
	h.version = ARF_PROTO_INFO_VERSION;
	snprintf(h.path, sizeof(h.path), "%s", o->root->cfg.export_name);
	arf_proto_wr_init(&hw);
	arf_proto_put_hello(&hw, &h);
	memset(&no, 0, sizeof(no));
	no.transport = "tcp";
	no.host = srv->address;
	no.port = srv->port;
	no.timeout_ms = 30000;
	no.hello = hw.buf;
	no.hello_len = hw.len;
	no.auth_key = o->root->has_auth_key ? o->root->auth_key : NULL;
	int rc = hw.err ? -ENOMEM : arf_net_connect(&no, &o->conn, o->err, sizeof(o->err));
	arf_proto_wr_free(&hw);
	return rc;
}

json_object *arfd_volume_move(struct arfd *d, const char *args)
{
	char buf[200], settings[4096], err[700], parent[PATH_MAX];
	char *save = NULL;
	struct out o = { .root = d };
	struct snap s1 = { 0 }, s2 = { 0 };
	json_object *r = NULL;
	int rc;

	snprintf(buf, sizeof(buf), "%s", args);
	const char *name = strtok_r(buf, " ", &save);
	const char *to = name ? strtok_r(NULL, " ", &save) : NULL;
	if (!to || strtok_r(NULL, " ", &save))
		return fail("usage: volume-move NAME SERVER");
	struct arf_cell_view *cv = __atomic_load_n(&d->cellview, __ATOMIC_ACQUIRE);
	if (!d->cell || !cv)
		return fail("vol move: this server is in no cell ([cell] etcd and name)");
	if (!d->has_move_key)
		return fail("vol move: no [cell] move_secret_file: this server sends no volumes");
	if (!arf_cell_name_ok(to) || !strcmp(to, d->cell_id))
		return fail("vol move %.63s: '%.63s' is not another server of the cell", name, to);

	pthread_mutex_lock(&d->vol_lock);
	struct arfd *v = arfd_volume_find(d, name);
	struct arf_cell_volume rec;
	struct arf_cell_server srv;
	struct timespec t0, t1, t2, t3;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!v) {
		r = fail("no volume '%.63s' on this server", name);
		goto out;
	}
	if (arfd_volume_movable(d, v, name, err, sizeof(err))) {
		r = fail("vol move: %s", err);
		goto out;
	}
	if ((rc = arf_cell_view_locate(cv, name, &rec, &srv)) || strcmp(rec.server, d->cell_id)) {
		r = fail("vol move %s: the cell records it %s%.63s%s", name, rc ? "nowhere yet" :
			 "on server '", rc ? "" : rec.server, rc ? "" : "'");
		goto out;
	}
	if (arf_cell_view_server(cv, to, &srv)) {
		r = fail("vol move %s: server '%.63s' is not live in the cell", name, to);
		goto out;
	}
	if ((rc = settings_of(d, name, settings, sizeof(settings)))) {
		r = fail("vol move %s: its volume.conf: %s", name, strerror(-rc));
		goto out;
	}
	snprintf(parent, sizeof(parent), "%s/volumes", d->cfg.data_dir);
	if ((size_t)snprintf(s1.dir, sizeof(s1.dir), "%.3900s/+%s.out.1", parent, name) >=
	    sizeof(s1.dir) - 8) {
		r = fail("vol move %s: its data directory's path is too long", name);
		goto out;
	}
	snprintf(s2.dir, sizeof(s2.dir), "%.3900s/+%s.out.2", parent, name);
	if (arfd_volume_remove_dir(s1.dir) || arfd_volume_remove_dir(s2.dir)) {
		r = fail("vol move %s: a snapshot of an earlier move is in the way (see the log)",
			 name);
		goto out;
	}
	if ((rc = dial(&o, &srv))) {
		r = fail("vol move %s: connecting to server '%s' at %s:%u: %s", name, to,
			 srv.address, srv.port, o.err);
		goto out;
	}
	struct arf_proto_wr w;
	struct arf_net_buf nb = { 0 };
	start_step(&w, ARFD_MOVE_CHALLENGE);
	if ((rc = call(&o, &w, ARFD_MOVE_CHALLENGE, &nb)))
		goto failed;
	if (nb.len != ARFD_MOVE_NONCE) {
		arf_net_buf_free(&nb);
		snprintf(o.err, sizeof(o.err), "the receiving server's nonce is malformed");
		rc = -EPROTO;
		goto failed;
	}
	memcpy(o.nonce, nb.data, ARFD_MOVE_NONCE);
	arf_net_buf_free(&nb);
	o.counter = 1;
	start_step(&w, ARFD_MOVE_BEGIN);
	arf_proto_put_bytes(&w, name, (uint32_t)strlen(name));
	arf_proto_put_bytes(&w, d->cell_id, (uint32_t)strlen(d->cell_id));
	arf_proto_put_bytes(&w, settings, (uint32_t)strlen(settings));
	if ((rc = call(&o, &w, ARFD_MOVE_BEGIN, NULL)))
		goto failed;

	/* round 1: NAME serves on */
	arfd_lock_for_control(v);
	rc = snapshot(v, &s1, o.err, sizeof(o.err));
	arfd_fs_unlock(v);
	if (rc || (rc = send_round(&o, &s1, NULL)))
		goto failed;
	uint64_t bytes1 = o.bytes;

	/* round 2: frozen */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	arfd_lock_for_control(v);
	rc = snapshot(v, &s2, o.err, sizeof(o.err));
	if (!rc)
		rc = send_round(&o, &s2, &s1);
	if (!rc) {
		start_step(&w, ARFD_MOVE_END);
		rc = call(&o, &w, ARFD_MOVE_END, NULL);
	}
	if (rc) {
		arfd_fs_unlock(v);
		goto failed;
	}
	int v6 = strchr(srv.address, ':') != NULL;
	snprintf(v->moved_to, sizeof(v->moved_to), "volume '%s' is on server '%s': arf://%s%s%s:%u/",
		 name, to, v6 ? "[" : "", srv.address, v6 ? "]" : "", srv.port);
	__atomic_store_n(&v->moved, 1, __ATOMIC_RELEASE);
	int dropped = arf_net_server_drop_view(d->net, v->view);
	struct timespec shm_ts = { 0, 10 * 1000 * 1000 }; /* shm readers look every 5 ms */
	nanosleep(&shm_ts, NULL);
	int64_t version = 0;
	rc = arf_cell_member_move(d->cell, name, to, &version, o.err, sizeof(o.err));
	if (rc && rc != -EREMOTE && rc != -ESTALE && rc != -ENOENT) {
		/* no answer: did the swap happen?  The record says */
		struct arf_cell_volume now;
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		for (int i = 0; i < 10 && rc; i++) {
			nanosleep(&ts, NULL);
			if (!arf_cell_view_locate(cv, name, &now, &srv) && !strcmp(now.server, to))
				rc = 0;
		}
	}
	if (rc) {
		__atomic_store_n(&v->moved, 0, __ATOMIC_RELEASE); /* its clients dial here again */
		arfd_fs_unlock(v);
		char why[sizeof(o.err)];
		snprintf(why, sizeof(why), "%s", o.err);
		snprintf(o.err, sizeof(o.err), "flipping its record in the cell: %.600s", why);
		goto failed;
	}
	arfd_fs_unlock(v);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	arfd_log(ARFD_LOG_INFO, "vol move %s: sent to server '%s' (%llu bytes, %llu in the "
		 "freeze; %d connections closed; record version %lld); its requests waited %.3f s",
		 name, to, (unsigned long long)o.bytes, (unsigned long long)(o.bytes - bytes1),
		 dropped, (long long)version, secs(&t1, &t2));
	start_step(&w, ARFD_MOVE_DONE);
	if ((rc = call(&o, &w, ARFD_MOVE_DONE, NULL)))
		arfd_log(ARFD_LOG_WARN, "vol move %s: %s (the cell records it on '%s': it is "
			 "served there once that server's copy of the cell says so)", name, o.err,
			 to);
	arf_net_close(o.conn);
	o.conn = NULL;
	arfd_volume_let_go(d, v, "vol move");
	arfd_volume_remove_dir(s1.dir);
	arfd_volume_remove_dir(s2.dir);
	clock_gettime(CLOCK_MONOTONIC, &t3);
	r = json_object_new_object();
	if (r) {
		json_object_object_add(r, "volume", json_object_new_string(name));
		json_object_object_add(r, "server", json_object_new_string(to));
		json_object_object_add(r, "version", json_object_new_int64(version));
		json_object_object_add(r, "pause_seconds", json_object_new_double(secs(&t1, &t2)));
		json_object_object_add(r, "seconds", json_object_new_double(secs(&t0, &t3)));
		json_object_object_add(r, "bytes_sent", json_object_new_int64((int64_t)o.bytes));
		json_object_object_add(r, "bytes_in_freeze",
				       json_object_new_int64((int64_t)(o.bytes - bytes1)));
		json_object_object_add(r, "files_sent", json_object_new_int64((int64_t)o.files));
	}
	goto out;
failed:
	if (o.conn) {
		start_step(&w, ARFD_MOVE_ABORT);
		char keep[700];
		snprintf(keep, sizeof(keep), "%s", o.err);
		call(&o, &w, ARFD_MOVE_ABORT, NULL); /* best effort: its end removes it too */
		snprintf(o.err, sizeof(o.err), "%s", keep);
	}
	arfd_log(ARFD_LOG_WARN, "vol move %s to '%s' failed: %s (it is served here as before)",
		 name, to, o.err);
	r = fail("vol move %s to '%s': %s (it is served here as before)", name, to, o.err);
	arfd_volume_remove_dir(s1.dir);
	arfd_volume_remove_dir(s2.dir);
out:
	if (o.conn)
		arf_net_close(o.conn);
	free(s1.f);
	free(s2.f);
	pthread_mutex_unlock(&d->vol_lock);
	return r;
}

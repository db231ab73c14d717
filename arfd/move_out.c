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
 * 3. Rounds while NAME serves on: a snapshot (vol release's: a RocksDB
 *    checkpoint and the data log, their immutable files hard links; NAME
 *    waits only for that) in DATA_DIR/volumes/+NAME.out.N; the first sent
 *    whole, each later one only what differs from the one before: a file
 *    of the same name and inode is the same immutable file (an SST, a
 *    closed data log segment), and one that grew from the last round's (the
 *    data log's head) is sent from where that ended, once its first bytes
 *    compare equal.  Up to LIVE_ROUNDS, until one sends less than
 *    LIVE_ENOUGH.
 * 4. The last round, frozen: NAME's requests wait from here (one-sided
 *    reads go on: nothing changes); everything applied is made durable, a
 *    last snapshot taken and what changed sent; KEEP names the whole
 *    volume; END makes SERVER serve it (telling hellos to try again until
 *    the record says it is there).
 * 5. NAME is marked moved (a hello here is sent to SERVER), its
 *    connections are shut down (tcp's one-sided reads fail with them; an
 *    shm client's reads look at the socket every 5 ms, so 10 ms are waited
 *    before anything can change on SERVER), and the record flipped
 *    (compare-and-swap).  The freeze ends: requests that waited are
 *    answered on closed connections, and their clients send them again to
 *    SERVER.  Their unstable writes were made durable before the snapshot:
 *    on SERVER's new write verifier, COMMIT says so, and nothing is sent
 *    twice.  A failed flip gives NAME back to its clients here (ABORT); a
 *    flip that got no answer is settled by reading the record from etcd.
 * 6. DONE: SERVER's copy of the cell shows the volume there; then NAME's
 *    copy here is closed and deleted (arfd_volume_let_go) and the
 *    snapshots removed.
 *
 * One move out at a time (out_lock; arfd's stop waits for it); vol_lock
 * only to look NAME up and to let it go, NAME marked moving meanwhile.
 *
 * The last round, frozen, carries the volume's lock table too (locks.c
 * arfd_locks_save: its clients, leases and locks), which SERVER takes in
 * at its opening: no grace period for them there.
 *
 * Not built (docs/volumes.md): catching up from the stream of committed
 * transactions instead of files (the freeze still holds SERVER's opening
 * of the volume, its data region filled ahead: move_in.c).
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
#include "locks.h"
#include "log.h"
#include "move.h"
#include "store.h"

#define MAX_FILES 4096 /* files of one snapshot, at most */
#define LIVE_ROUNDS 4  /* rounds while the volume serves on, at most */
#define LIVE_ENOUGH (8u << 20) /* a live round that sent less is the last one */
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
 * the caller holds (arfd_lock_for_control); frozen (the last round of a
 * move), with its lock table too. */
static int snapshot(struct arfd *v, struct snap *s, int frozen, char *err, size_t errlen)
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
	char why[256];
	if (!rc && frozen && arfd_locks_save(v, s->dir, why, sizeof(why)))
		arfd_log(ARFD_LOG_WARN, "vol move %s: %s: its lock clients will reclaim after the "
			 "move instead", v->volume, why); /* a grace period there, as before */
	if (!rc)
		rc = list_files(s, err, errlen);
	return rc;
}

/* Does file a (of size alen) begin with the whole of file b (blen <= alen)? */
static int starts_with(const char *a, const char *b, uint64_t blen, uint8_t *buf)
{
	int fa = open(a, O_RDONLY | O_CLOEXEC), fb = open(b, O_RDONLY | O_CLOEXEC), same = 1;
	uint8_t *other = fa >= 0 && fb >= 0 ? malloc(ARFD_MOVE_CHUNK) : NULL;

	for (uint64_t off = 0; other && same && off < blen;) {
		size_t want = blen - off < ARFD_MOVE_CHUNK ? (size_t)(blen - off) : ARFD_MOVE_CHUNK;
		same = pread(fa, buf, want, (off_t)off) == (ssize_t)want &&
		       pread(fb, other, want, (off_t)off) == (ssize_t)want &&
		       !memcmp(buf, other, want);
		off += want;
	}
	free(other);
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return other != NULL && same;
}

/* File f of s, from byte keep on (the receiver has the first keep bytes
 * staged under its name already). */
static int send_file(struct out *o, const struct snap *s, const struct file *f, uint64_t keep,
		     uint8_t *buf)
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
	arf_proto_put_u64(&w, keep);
	rc = call(o, &w, ARFD_MOVE_FILE, NULL);
	for (uint64_t off = keep; !rc && off < f->size;) {
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

/* Every file of s that prev (NULL: none) does not have as the same inode;
 * one that grew from prev's (the data log's head: appended to, and copied
 * by each snapshot) from where prev's ended. */
static int send_round(struct out *o, const struct snap *s, const struct snap *prev)
{
	char a[PATH_MAX + ARFD_MOVE_PATH], b[PATH_MAX + ARFD_MOVE_PATH];
	uint8_t *buf = malloc(ARFD_MOVE_CHUNK);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; !rc && i < s->n; i++) {
		const struct file *f = &s->f[i], *was = NULL;
		for (size_t j = 0; prev && j < prev->n && !was; j++)
			if (!strcmp(prev->f[j].path, f->path))
				was = &prev->f[j];
		if (was && was->ino == f->ino && was->size == f->size)
			continue; /* the same immutable file, linked by both snapshots */
		uint64_t keep = 0;
		snprintf(a, sizeof(a), "%s/%s", s->dir, f->path);
		if (was && prev) {
			snprintf(b, sizeof(b), "%s/%s", prev->dir, was->path);
			if (was->size && was->size <= f->size && starts_with(a, b, was->size, buf))
				keep = was->size;
		}
		rc = send_file(o, s, f, keep, buf);
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

static void snap_dir(struct snap *s, const char *parent, const char *name, int round)
{
	snprintf(s->dir, sizeof(s->dir), "%.3900s/+%s.out.%d", parent, name, round);
}

/* A snapshot's directory deleted and its list freed (NULL ok). */
static void drop_snap(struct snap *s)
{
	if (!s)
		return;
	if (s->dir[0])
		arfd_volume_remove_dir(s->dir);
	free(s->f);
	s->f = NULL;
	s->n = 0;
	s->dir[0] = 0;
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

/* The session with srv: dialled, CHALLENGE's nonce, and BEGIN for volume
 * name with its settings and flags.  0, or -errno with o->err (o->conn
 * set once dialled: the caller sends ABORT). */
static int open_session(struct out *o, const struct arf_cell_server *srv, const char *name,
			const char *settings, uint32_t flags)
{
	struct arf_proto_wr w;
	struct arf_net_buf nb = { 0 };
	int rc;

	if ((rc = dial(o, srv))) {
		char why[sizeof(o->err)];
		snprintf(why, sizeof(why), "%s", o->err);
		snprintf(o->err, sizeof(o->err), "connecting to server '%.63s' at %.255s:%u: %.300s",
			 srv->id, srv->address, srv->port, why);
		return rc;
	}
	start_step(&w, ARFD_MOVE_CHALLENGE);
	if ((rc = call(o, &w, ARFD_MOVE_CHALLENGE, &nb)))
		return rc;
	if (nb.len != ARFD_MOVE_NONCE) {
		arf_net_buf_free(&nb);
		snprintf(o->err, sizeof(o->err), "the receiving server's nonce is malformed");
		return -EPROTO;
	}
	memcpy(o->nonce, nb.data, ARFD_MOVE_NONCE);
	arf_net_buf_free(&nb);
	o->counter = 1;
	start_step(&w, ARFD_MOVE_BEGIN);
	arf_proto_put_bytes(&w, name, (uint32_t)strlen(name));
	arf_proto_put_bytes(&w, o->root->cell_id, (uint32_t)strlen(o->root->cell_id));
	arf_proto_put_bytes(&w, settings, (uint32_t)strlen(settings));
	arf_proto_put_u32(&w, flags);
	return call(o, &w, ARFD_MOVE_BEGIN, NULL);
}

json_object *arfd_volume_move(struct arfd *d, const char *args)
{
	char buf[200], settings[4096], err[700], parent[PATH_MAX];
	char *save = NULL;
	struct out o = { .root = d };
	struct snap snaps[2] = { { .f = NULL }, { .f = NULL } }, *prev = NULL, *cur = &snaps[0];
	int round = 1, stuck = 0;
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

	/* one move out at a time, and arfd's stop waits for it; vol_lock only
	 * while volumes are looked up or let go (a receiver's END takes it:
	 * two servers moving a volume each to the other must not wait on each
	 * other), the volume marked moving meanwhile (vol rm and vol release
	 * refuse it) */
	pthread_mutex_lock(&d->out_lock);
	pthread_mutex_lock(&d->vol_lock);
	struct arfd *v = arfd_volume_find(d, name);
	struct arf_cell_volume rec;
	struct arf_cell_server srv;
	struct timespec t0, t1, t2, t3;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!v || arfd_volume_movable(d, v, name, err, sizeof(err))) {
		pthread_mutex_unlock(&d->vol_lock);
		if (!v)
			r = fail("no volume '%.63s' on this server", name);
		else
			r = fail("vol move: %s", err);
		v = NULL;
		goto out;
	}
	v->moving = 1;
	pthread_mutex_unlock(&d->vol_lock);
	if ((rc = arf_cell_view_locate(cv, name, &rec, &srv)) || strcmp(rec.server, d->cell_id)) {
		r = fail("vol move %s: the cell records it %s%.63s%s", name, rc ? "nowhere yet" :
			 "on server '", rc ? "" : rec.server, rc ? "" : "'");
		goto out;
	}
	if (arf_cell_view_server(cv, to, &srv)) {
		r = fail("vol move %s: server '%.63s' is not live in the cell", name, to);
		goto out;
	}
	/* etcd itself, not the watched copy: a move is a change, and changes
	 * wait while etcd is away (serving goes on from the copy) */
	if ((rc = arf_cell_member_read(d->cell, name, &rec, err, sizeof(err))) ||
	    strcmp(rec.server, d->cell_id)) {
		r = rc ? fail("vol move %s: etcd cannot be asked (%s): a move waits until it can",
			      name, err)
		       : fail("vol move %s: etcd records it on server '%.63s'", name, rec.server);
		goto out;
	}
	if ((rc = settings_of(d, name, settings, sizeof(settings)))) {
		r = fail("vol move %s: its volume.conf: %s", name, strerror(-rc));
		goto out;
	}
	snprintf(parent, sizeof(parent), "%s/volumes", d->cfg.data_dir);
	if (strlen(parent) + strlen(name) + 16 >= sizeof(snaps[0].dir)) {
		r = fail("vol move %s: its data directory's path is too long", name);
		goto out;
	}
	for (int k = 1; k <= LIVE_ROUNDS + 1; k++) { /* an earlier move's, left by a crash */
		snap_dir(&snaps[0], parent, name, k);
		if (arfd_volume_remove_dir(snaps[0].dir)) {
			r = fail("vol move %s: a snapshot of an earlier move is in the way (see the "
				 "log)", name);
			goto out;
		}
	}
	struct arf_proto_wr w;
	if ((rc = open_session(&o, &srv, name, settings, 0)))
		goto failed;

	/* rounds while NAME serves on: a snapshot (NAME waits for it alone),
	 * sent whole, then what changed since, until a round sends little */
	uint64_t sent = 0;
	for (;; round++) {
		snap_dir(cur, parent, name, round);
		arfd_lock_for_control(v);
		rc = snapshot(v, cur, 0, o.err, sizeof(o.err));
		arfd_fs_unlock(v);
		sent = o.bytes;
		if (rc || (rc = send_round(&o, cur, prev)))
			goto failed;
		sent = o.bytes - sent;
		drop_snap(prev);
		prev = cur;
		cur = cur == &snaps[0] ? &snaps[1] : &snaps[0];
		if (round == LIVE_ROUNDS || sent < LIVE_ENOUGH)
			break;
	}
	uint64_t bytes1 = o.bytes;

	/* the last round: frozen */
	struct timespec f1, f2, f3;
	round++;
	snap_dir(cur, parent, name, round);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	arfd_lock_for_control(v);
	rc = snapshot(v, cur, 1, o.err, sizeof(o.err));
	clock_gettime(CLOCK_MONOTONIC, &f1);
	if (!rc)
		rc = send_round(&o, cur, prev);
	clock_gettime(CLOCK_MONOTONIC, &f2);
	if (!rc) {
		start_step(&w, ARFD_MOVE_END);
		rc = call(&o, &w, ARFD_MOVE_END, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &f3);
	if (rc) {
		arfd_fs_unlock(v);
		goto failed;
	}
	if (d->cfg.test_move_drop) { /* test only: the network fails here */
		arfd_log(ARFD_LOG_WARN, "server.test_move_drop: closing the connection to '%s' "
			 "after END", to);
		arf_net_close(o.conn);
		o.conn = NULL;
	}
	int v6 = strchr(srv.address, ':') != NULL;
	snprintf(v->moved_to, sizeof(v->moved_to), "volume '%s' is on server '%s': arf://%s%s%s:%u/",
		 name, to, v6 ? "[" : "", srv.address, v6 ? "]" : "", srv.port);
	__atomic_store_n(&v->moved, 1, __ATOMIC_RELEASE);
	int dropped = arf_net_server_drop_view(d->net, v->view);
	struct timespec shm_ts = { 0, 10 * 1000 * 1000 }; /* shm readers look every 5 ms */
	nanosleep(&shm_ts, NULL);
	int64_t version = 0;
	int swap_sent = 0;
	rc = arf_cell_member_move(d->cell, name, to, &version, &swap_sent, o.err, sizeof(o.err));
	if (rc && swap_sent && rc != -ESTALE && rc != -ENOENT) {
		/* no answer: did the swap happen?  etcd's record says (not the
		 * watched copy, which may lag) */
		struct arf_cell_volume now;
		char why[512];
		int known = 0;
		for (int i = 0; i < 10 && !known; i++) {
			struct timespec ts = { 0, 300 * 1000 * 1000 };
			if (i)
				nanosleep(&ts, NULL);
			if (!arf_cell_member_read(d->cell, name, &now, why, sizeof(why))) {
				known = 1;
				if (!strcmp(now.server, to)) {
					rc = 0;
					version = now.version;
				}
			}
		}
		if (!known) {
			/* neither way is safe to take: the volume stays moved (its
			 * clients are sent to SERVER, which serves it once etcd says
			 * it is there), both copies kept, and no ABORT */
			stuck = 1;
			arfd_fs_unlock(v);
			arfd_log(ARFD_LOG_ERROR, "vol move %s: etcd did not say whether the record "
				 "names '%s' now (%s): both copies are kept; the cell's record decides "
				 "which serves it (restart this arfd if it names this server)", name, to,
				 o.err);
			r = fail("vol move %s to '%s': the flip's outcome is unknown (%s): the volume "
				 "is sent to '%s' until this arfd restarts; its record in etcd decides",
				 name, to, o.err, to);
			goto out;
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
	/* the receiver holds the volume durably since END, and lets it go
	 * only on ABORT (move_in.c): after the flip, it is the volume's */
	if (o.conn)
		start_step(&w, ARFD_MOVE_DONE);
	if (!o.conn || (rc = call(&o, &w, ARFD_MOVE_DONE, NULL)))
		arfd_log(ARFD_LOG_WARN, "vol move %s: %s (the cell records it on '%s': it is "
			 "served there once that server's copy of the cell says so)", name,
			 o.conn ? o.err : "no connection for DONE", to);
	arf_net_close(o.conn);
	o.conn = NULL;
	pthread_mutex_lock(&d->vol_lock);
	arfd_volume_let_go(d, v, "vol move");
	pthread_mutex_unlock(&d->vol_lock);
	v = NULL; /* gone: still moving, for whoever looks */
	drop_snap(prev);
	drop_snap(cur);
	clock_gettime(CLOCK_MONOTONIC, &t3);
	r = json_object_new_object();
	if (r) {
		json_object_object_add(r, "volume", json_object_new_string(name));
		json_object_object_add(r, "server", json_object_new_string(to));
		json_object_object_add(r, "version", json_object_new_int64(version));
		json_object_object_add(r, "pause_seconds", json_object_new_double(secs(&t1, &t2)));
		/* the pause's parts: the second snapshot, sending what changed,
		 * the receiver's opening of the volume, closing and flipping */
		json_object_object_add(r, "freeze_snapshot_seconds",
				       json_object_new_double(secs(&t1, &f1)));
		json_object_object_add(r, "freeze_send_seconds", json_object_new_double(secs(&f1, &f2)));
		json_object_object_add(r, "freeze_open_seconds", json_object_new_double(secs(&f2, &f3)));
		json_object_object_add(r, "freeze_flip_seconds", json_object_new_double(secs(&f3, &t2)));
		json_object_object_add(r, "seconds", json_object_new_double(secs(&t0, &t3)));
		json_object_object_add(r, "bytes_sent", json_object_new_int64((int64_t)o.bytes));
		json_object_object_add(r, "bytes_in_freeze",
				       json_object_new_int64((int64_t)(o.bytes - bytes1)));
		json_object_object_add(r, "files_sent", json_object_new_int64((int64_t)o.files));
		json_object_object_add(r, "rounds", json_object_new_int(round));
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
out:
	if (o.conn)
		arf_net_close(o.conn);
	drop_snap(prev);
	drop_snap(cur);
	if (v && !stuck) {
		pthread_mutex_lock(&d->vol_lock);
		v->moving = 0;
		pthread_mutex_unlock(&d->vol_lock);
	}
	pthread_mutex_unlock(&d->out_lock);
	return r;
}

/*
 * "volume-release NAME SERVER" (`arfctl vol release NAME SERVER`, AFS's
 * vos release to a site on another file server): NAME's read-only replica
 * NAME.readonly made from one snapshot of it on SERVER of the cell, sent
 * as vol move sends a volume (the same receiver, BEGIN flagged replica:
 * served read-only at END, replacing one vol release made there, its
 * clients dialling again).  NAME serves on here, waiting only for the
 * snapshot.  The cell's record of NAME.readonly is then made to name
 * SERVER (created, or moved from this server in one compare-and-swap),
 * and a replica this server held is let go (its clients are sent on).
 * Refused when the cell records NAME.readonly on a third server (release
 * it there, or vol rm it there, first).  One replica site per name: the
 * cell's record names one server.
 */
json_object *arfd_volume_release_to(struct arfd *d, const char *name, const char *to)
{
	char settings[512], err[700], parent[PATH_MAX], roname[ARFD_VOLUME_NAME_MAX + 16];
	struct out o = { .root = d };
	struct snap snap = { .f = NULL };
	struct arf_cell_volume rec;
	struct arf_cell_server srv;
	struct timespec t0, t1, t2;
	json_object *r = NULL;
	int rc;

	struct arf_cell_view *cv = __atomic_load_n(&d->cellview, __ATOMIC_ACQUIRE);
	if (!d->cell || !cv)
		return fail("vol release %.63s %.63s: this server is in no cell", name, to);
	if (!d->has_move_key)
		return fail("vol release %.63s %.63s: no [cell] move_secret_file: this server sends "
			    "no replicas", name, to);
	if (!arf_cell_name_ok(to) || !strcmp(to, d->cell_id))
		return fail("vol release %.63s: '%.63s' is not another server of the cell", name,
			    to);
	if (arfd_volume_is_replica(name))
		return fail("%.80s is a replica: release the volume it was made from", name);
	pthread_mutex_lock(&d->out_lock);
	pthread_mutex_lock(&d->vol_lock);
	struct arfd *v = arfd_volume_find(d, name);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!v || v->moving) {
		pthread_mutex_unlock(&d->vol_lock);
		r = !v ? fail("no volume '%.63s' on this server", name)
		       : fail("volume %.63s is being moved (vol move)", name);
		v = NULL;
		goto out;
	}
	v->moving = 1; /* no vol rm, move or release of it meanwhile */
	pthread_mutex_unlock(&d->vol_lock);
	const char *base = v != d ? v->volume
		       : d->cfg.cell_root_volume[0] ? d->cfg.cell_root_volume : "root";
	if ((size_t)snprintf(roname, sizeof(roname), "%s.readonly", base) >= ARFD_VOLUME_NAME_MAX ||
	    !arfd_volume_name_ok(roname)) {
		r = fail("%.63s.readonly: too long for a volume's name (63 bytes)", base);
		goto out;
	}
	if (arf_cell_view_server(cv, to, &srv)) {
		r = fail("vol release %s: server '%.63s' is not live in the cell", name, to);
		goto out;
	}
	rc = arf_cell_member_read(d->cell, roname, &rec, err, sizeof(err));
	if (rc && rc != -ENOENT) {
		r = fail("vol release %s %s: etcd cannot be asked (%s): a release elsewhere waits "
			 "until it can", name, to, err);
		goto out;
	}
	if (!rc && strcmp(rec.server, to) && strcmp(rec.server, d->cell_id)) {
		r = fail("vol release %s %s: the cell records %s on server '%.63s': release it there, "
			 "or remove it there first", name, to, roname, rec.server);
		goto out;
	}
	snprintf(settings, sizeof(settings), "inodes=%lld\ndir_buckets=%lld\ndir_entries=%lld\n"
		 "pages=%lld\ndata_blocks=%lld\n", (long long)v->cfg.inodes,
		 (long long)v->cfg.dir_buckets, (long long)v->cfg.dir_entries,
		 (long long)v->cfg.pages, (long long)v->cfg.data_blocks);
	snprintf(parent, sizeof(parent), "%s/volumes", d->cfg.data_dir);
	if (strlen(parent) + strlen(roname) + 16 >= sizeof(snap.dir)) {
		r = fail("vol release %s: its data directory's path is too long", name);
		goto out;
	}
	snprintf(snap.dir, sizeof(snap.dir), "%.3900s/+%s.out", parent, roname);
	if (arfd_volume_remove_dir(snap.dir)) {
		r = fail("vol release %s: a snapshot of an earlier release is in the way (see the "
			 "log)", name);
		goto out;
	}
	struct arf_proto_wr w;
	if ((rc = open_session(&o, &srv, roname, settings, ARFD_MOVE_F_REPLICA)))
		goto failed;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	arfd_lock_for_control(v);
	rc = snapshot(v, &snap, 0, o.err, sizeof(o.err));
	arfd_fs_unlock(v);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	if (rc || (rc = send_round(&o, &snap, NULL)))
		goto failed;
	start_step(&w, ARFD_MOVE_END);
	if ((rc = call(&o, &w, ARFD_MOVE_END, NULL)))
		goto failed;
	int64_t version = 0;
	int sent = 0;
	rc = arf_cell_member_place(d->cell, roname, to, &version, &sent, o.err, sizeof(o.err));
	if (rc && !sent) {
		char why[sizeof(o.err)];
		snprintf(why, sizeof(why), "%s", o.err);
		snprintf(o.err, sizeof(o.err), "recording %s in the cell: %.600s", roname, why);
		goto failed;
	}
	if (rc) /* sent without an answer: the replica stays there; its record decides */
		arfd_log(ARFD_LOG_WARN, "vol release %s %s: recording %s in the cell: %s (the "
			 "replica is served there once the cell records it there)", name, to, roname,
			 o.err);
	if (!rc) {
		start_step(&w, ARFD_MOVE_DONE);
		if (call(&o, &w, ARFD_MOVE_DONE, NULL))
			arfd_log(ARFD_LOG_WARN, "vol release %s %s: %s", name, to, o.err);
	}
	arf_net_close(o.conn);
	o.conn = NULL;
	/* a replica of it here goes: the cell sends its clients there now */
	pthread_mutex_lock(&d->vol_lock);
	struct arfd *old = rc ? NULL : arfd_volume_find(d, roname);
	if (old && old != d)
		arfd_volume_let_go(d, old, "vol release (now on another server)");
	pthread_mutex_unlock(&d->vol_lock);
	drop_snap(&snap);
	struct timespec t3;
	clock_gettime(CLOCK_MONOTONIC, &t3);
	arfd_log(ARFD_LOG_INFO, "vol release %s: %s served by server '%s' (%llu bytes sent; the "
		 "volume waited %.3f s)", name, roname, to, (unsigned long long)o.bytes,
		 secs(&t1, &t2));
	r = json_object_new_object();
	if (r) {
		json_object *list = json_object_new_array(), *one = json_object_new_object();
		json_object_object_add(one, "volume", json_object_new_string(roname));
		json_object_object_add(one, "server", json_object_new_string(to));
		json_object_object_add(one, "data_dir", json_object_new_string("(on that server)"));
		json_object_array_add(list, one);
		json_object_object_add(r, "volumes", list);
		json_object_object_add(r, "released_from", json_object_new_string(base));
		json_object_object_add(r, "server", json_object_new_string(to));
		json_object_object_add(r, "pause_seconds", json_object_new_double(secs(&t1, &t2)));
		json_object_object_add(r, "seconds", json_object_new_double(secs(&t0, &t3)));
		json_object_object_add(r, "bytes_sent", json_object_new_int64((int64_t)o.bytes));
		if (rc)
			json_object_object_add(r, "warning", json_object_new_string(o.err));
	}
	goto out;
failed:
	if (o.conn) {
		char keep[700];
		snprintf(keep, sizeof(keep), "%s", o.err);
		start_step(&w, ARFD_MOVE_ABORT);
		call(&o, &w, ARFD_MOVE_ABORT, NULL);
		snprintf(o.err, sizeof(o.err), "%s", keep);
	}
	arfd_log(ARFD_LOG_WARN, "vol release %s to '%s' failed: %s", name, to, o.err);
	r = fail("vol release %s to '%s': %s", name, to, o.err);
out:
	if (o.conn)
		arf_net_close(o.conn);
	drop_snap(&snap);
	if (v) {
		pthread_mutex_lock(&d->vol_lock);
		v->moving = 0;
		pthread_mutex_unlock(&d->vol_lock);
	}
	pthread_mutex_unlock(&d->out_lock);
	return r;
}

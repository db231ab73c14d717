/* SPDX-License-Identifier: MIT */
/*
 * arfd/move_in — a volume sent here by the server moving it (`arfctl vol
 * move`, issue 18 point 4; the sender is move_out.c, the steps and the MAC
 * are move.h's).
 *
 * A session is a connection's (to the root volume): CHALLENGE gives it a
 * nonce; one volume at a time is taken (from BEGIN on; another sender is
 * told EBUSY).  Every later step proves the
 * cell's move secret ([cell] move_secret_file): a request whose MAC is
 * wrong ends the session (its staged files deleted) and is answered
 * EACCES.  BEGIN checks that the volume could be made here as vol create
 * would (arfd_volume_admit: a free name, the memory, a place) and makes the
 * staging directory DATA_DIR/volumes/+NAME.in (a tombstone's name: a crash
 * leaves nothing the next start would serve, and the start deletes it);
 * FILE and DATA write its files; KEEP names the whole volume (the sender
 * sends in rounds, and a file it no longer has goes); END makes every file
 * durable and serves the volume (arfd_volume_install) while the cell still
 * records it on the sender, so hellos are sent there; after the sender's
 * flip of the record, DONE waits until this server's copy of the cell says
 * the volume is here.  ABORT, or the connection's end before END, deletes
 * what was staged; an ABORT after END takes the volume away again, and
 * nothing else does (the sender may flip the record after the connection
 * failed: this copy may be the only one).
 *
 * The procedure runs without the filesystem lock (ARFD_PROC_UNLOCKED): it
 * touches no filesystem state, and END takes the locks that serving a
 * volume takes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arf_meta.h"
#include "arf_net.h"
#include "arf_proto.h"
#include "arfd.h"
#include "cell.h"
#include "config.h"
#include "datalog.h"
#include "identity.h"
#include "log.h"
#include "move.h"

struct arfd_move_in {
	struct arfd_conn *ac;       /* the connection it belongs to (its ->move); NULL once
				     * that closed (atomic) */
	struct arfd *root;
	uint8_t nonce[ARFD_MOVE_NONCE];
	uint64_t counter;           /* the next request's */
	int begun, ended;
	char name[ARFD_VOLUME_NAME_MAX];
	char from[ARF_CELL_NAME_MAX];
	char dir[PATH_MAX];         /* the staging directory */
	int fd;                     /* the file FILE made, -1 */
	struct arfd_volume_cfg v;
	struct arfd_config *vc;
	struct arfd *vol;           /* served (END) */
	uint64_t bytes;             /* received */
	struct arfd_prefill *pf;    /* the data region filled after the first KEEP */
	int keeps;
	int replica, replace;       /* a replica (vol release NAME SERVER); one is replaced */
};

static void prefill_free(struct arfd_prefill *pf)
{
	if (!pf)
		return;
	if (pf->data)
		munmap(pf->data, pf->size);
	if (pf->fd >= 0)
		close(pf->fd);
	free(pf->inc);
	free(pf->seq);
	free(pf);
}

/* After the first round (the sender's files of a snapshot, while the
 * volume serves on there): the data region filled from them now, so that
 * opening the volume in the freeze reads only the blocks written since
 * (arfd_datalog_prefill) rather than every block (a 256 MiB volume's
 * opening took 1.6 s of the pause, most of it faulting in and filling
 * the region).  On failure the opening reads everything, as a restart. */
static void prefill(struct arfd_move_in *s)
{
	char logdir[PATH_MAX + 16], err[700];
	struct arf_meta_super sb;
	struct arfd_prefill *pf;
	struct stat st;

	snprintf(logdir, sizeof(logdir), "%s/datalog", s->dir);
	if (stat(logdir, &st) || !S_ISDIR(st.st_mode) || !(pf = calloc(1, sizeof(*pf))))
		return;
	arf_meta_super_layout(&sb, (uint32_t)s->vc->inodes, (uint32_t)s->vc->dir_buckets,
			      (uint32_t)s->vc->dir_entries, (uint32_t)s->vc->pages,
			      (uint32_t)s->vc->data_blocks, (uint32_t)s->vc->dir_hash_mask);
	pf->fd = -1;
	snprintf(pf->name, sizeof(pf->name), "%s", s->name);
	pf->size = sb.data_size;
	pf->nblocks = sb.n_blocks;
	pf->inc = calloc(pf->nblocks ? pf->nblocks : 1, sizeof(*pf->inc));
	pf->seq = calloc(pf->nblocks ? pf->nblocks : 1, sizeof(*pf->seq));
	int rc = !pf->inc || !pf->seq ? -ENOMEM : 0;
	if (rc)
		snprintf(err, sizeof(err), "out of memory");
	if (!rc)
		rc = arfd_map_region("arf-data", pf->size, &pf->fd, &pf->data, err, sizeof(err));
	if (!rc)
		rc = arfd_datalog_fill(logdir, pf->nblocks, pf->data, pf->size, pf->inc, pf->seq, err,
				       sizeof(err));
	if (rc) {
		arfd_log(ARFD_LOG_WARN, "vol move: volume %s: filling its data region ahead: %s (it "
			 "is filled when it opens)", s->name, err);
		prefill_free(pf);
		return;
	}
	s->pf = pf;
}

/* The session ended (under move_lock, by whoever took it off its
 * connection: finish(), or on_close's thread): what was staged deleted; a volume
 * served by END taken away again on ABORT, kept after DONE, and otherwise
 * as keep_received says. */
static void end_session(struct arfd *root, struct arfd_move_in *s, int abort, const char *why)
{
	if (root->move_in == s) { /* the volume being taken: the cell decides now */
		__atomic_store_n(&root->arriving_set, 0, __ATOMIC_RELEASE);
		root->move_in = NULL;
	}
	if (s->fd >= 0)
		close(s->fd);
	prefill_free(s->pf);
	int done = !strcmp(why, "done");
	if (!s->ended && s->begun) {
		arfd_volume_remove_dir(s->dir);
		arfd_log(ARFD_LOG_WARN, "vol move: volume %s from server '%s' not taken: %s",
			 s->name, s->from, why);
	} else if (s->ended && s->vol && abort) {
		arfd_log(ARFD_LOG_WARN, "vol move: volume %s from server '%s' let go: %s", s->name,
			 s->from, why);
		pthread_mutex_lock(&root->vol_lock);
		arfd_volume_let_go(root, s->vol, "vol move (not taken)");
		pthread_mutex_unlock(&root->vol_lock);
	} else if (s->ended && s->vol) {
		/* received, and no ABORT: kept, whatever happened after END --
		 * the sender may flip the record yet (a copy let go now could be
		 * the only one), and the record says who serves it */
		arf_cell_member_recheck(root->cell, s->name); /* ours, or once it is */
		if (!done)
			arfd_log(ARFD_LOG_WARN, "vol move: volume %s from server '%s': %s after it "
				 "was received: kept (served here once the cell records it here; if "
				 "the cell records it on '%s', vol rm it here)", s->name, s->from, why,
				 s->from);
	}
	free(s->vc);
	sodium_memzero(s, sizeof(*s));
	free(s);
}

/* A step ends its connection's session s: if on_close has not taken it
 * meanwhile (its thread then ends it, once this step lets go of the lock). */
static void finish(struct arfd *root, struct arfd_conn *ac, struct arfd_move_in *s, int abort,
		   const char *why)
{
	struct arfd_move_in *mine = s;
	if (__atomic_compare_exchange_n(&ac->move, &mine, NULL, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		end_session(root, s, abort, why);
}

static void *closed_main(void *arg)
{
	struct arfd_move_in *s = arg;
	struct arfd *root = s->root;

	pthread_mutex_lock(&root->move_lock);
	end_session(root, s, 0, "the sender's connection ended");
	pthread_mutex_unlock(&root->move_lock);
	__atomic_sub_fetch(&root->move_threads, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* From on_close, on the soft-NIC thread, which must not wait: the session
 * taken from the connection (ac goes with it) and ended on a thread of its
 * own (it may wait for a step in progress, and for etcd). */
void arfd_move_in_closed(struct arfd *root, struct arfd_conn *ac)
{
	struct arfd_move_in *s = __atomic_exchange_n(&ac->move, NULL, __ATOMIC_ACQ_REL);
	pthread_t t;
	pthread_attr_t a;

	if (!s)
		return;
	__atomic_store_n(&s->ac, NULL, __ATOMIC_RELEASE);
	s->root = root;
	/* counted before arfd_stop's flag is looked at, which it sets before
	 * it waits for the count: a thread is either waited for, or not made
	 * (the stop's own on_close calls end sessions here) */
	__atomic_add_fetch(&root->move_threads, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&root->move_stopping, __ATOMIC_SEQ_CST)) {
		closed_main(s);
		return;
	}
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, closed_main, s))
		closed_main(s); /* no thread to be had: here, then */
	pthread_attr_destroy(&a);
}

void arfd_move_in_stop(struct arfd *root)
{
	__atomic_store_n(&root->move_stopping, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&root->move_threads, __ATOMIC_SEQ_CST)) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* A name of at most max - 1 bytes into buf: 0, or -1 (malformed). */
static int get_str(struct arf_proto_rd *r, char *buf, size_t max)
{
	uint32_t n = 0;
	const char *p = arf_proto_get_name(r, &n);
	if (!p || n >= max)
		return -1;
	memcpy(buf, p, n);
	buf[n] = 0;
	return strlen(buf) == n ? 0 : -1;
}

static int step_begin(struct arfd *root, struct arfd_move_in *s, struct arf_proto_rd *r)
{
	char err[700], settings[4096], parent[PATH_MAX];
	uint32_t n = 0;

	if (s->begun || get_str(r, s->name, sizeof(s->name)) || get_str(r, s->from, sizeof(s->from)))
		return ARF_EPROTO;
	const uint8_t *p = arf_proto_get_bytes(r, sizeof(settings) - 1, &n);
	uint32_t flags = arf_proto_get_u32(r);
	if (!p || !arf_proto_rd_done(r) || (flags & ~ARFD_MOVE_F_REPLICA))
		return ARF_EPROTO;
	memcpy(settings, p, n);
	settings[n] = 0;
	if (!s->vc && !(s->vc = malloc(sizeof(*s->vc))))
		return -ENOMEM;
	s->replica = (flags & ARFD_MOVE_F_REPLICA) != 0;
	pthread_mutex_lock(&root->vol_lock); /* no vol create of the name meanwhile */
	int rc = s->replica ? arfd_volume_admit_replica(root, s->name, settings, &s->v, s->vc,
							&s->replace, err, sizeof(err))
			    : arfd_volume_admit(root, s->name, settings, &s->v, s->vc, err,
						sizeof(err));
	pthread_mutex_unlock(&root->vol_lock);
	if (rc) {
		arfd_log(ARFD_LOG_WARN, "vol move: volume %s from server '%s' refused: %s", s->name,
			 s->from, err);
		return rc;
	}
	snprintf(parent, sizeof(parent), "%s/volumes", root->cfg.data_dir);
	if ((size_t)snprintf(s->dir, sizeof(s->dir), "%s/+%s.in", parent, s->name) >=
	    sizeof(s->dir))
		return -ENAMETOOLONG;
	if ((mkdir(parent, 0700) && errno != EEXIST) || arfd_volume_remove_dir(s->dir) ||
	    mkdir(s->dir, 0700))
		return errno ? -errno : -EIO;
	char logdir[PATH_MAX + 16];
	snprintf(logdir, sizeof(logdir), "%s/datalog", s->dir);
	if (mkdir(logdir, 0700))
		return -errno;
	s->begun = 1;
	arfd_log(ARFD_LOG_INFO, "vol move: taking volume %s from server '%s' into %s", s->name,
		 s->from, s->dir);
	return 0;
}

static int path_of(const struct arfd_move_in *s, const char *rel, char *out, size_t len)
{
	return (size_t)snprintf(out, len, "%s/%s", s->dir, rel) >= len ? -ENAMETOOLONG : 0;
}

/* The file being written made durable and closed. */
static int close_file(struct arfd_move_in *s)
{
	int rc = 0;
	if (s->fd >= 0 && fsync(s->fd))
		rc = -errno;
	if (s->fd >= 0 && close(s->fd) && !rc)
		rc = -errno;
	s->fd = -1;
	return rc;
}

static int step_file(struct arfd_move_in *s, struct arf_proto_rd *r)
{
	char rel[ARFD_MOVE_PATH], path[PATH_MAX];

	if (get_str(r, rel, sizeof(rel)))
		return ARF_EPROTO;
	uint64_t size = arf_proto_get_u64(r);
	uint64_t keep = arf_proto_get_u64(r);
	if (!arf_proto_rd_done(r))
		return ARF_EPROTO;
	if (!arfd_move_path_ok(rel) || !strcmp(rel, "volume.conf") || keep > size ||
	    size > (1ull << 40))
		return -EINVAL;
	int rc = close_file(s);
	if (rc || (rc = path_of(s, rel, path, sizeof(path))))
		return rc;
	if (keep) {
		/* the file of the round before grew (the data log's head): its
		 * first keep bytes stay, the rest follows */
		struct stat st;
		s->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (s->fd < 0)
			return -errno;
		if (fstat(s->fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < keep)
			return -EINVAL;
	} else {
		unlink(path); /* a name of the round before, perhaps a link: a new file */
		s->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (s->fd < 0)
			return -errno;
	}
	if (ftruncate(s->fd, (off_t)size))
		return -errno;
	return 0;
}

static int step_data(struct arfd_move_in *s, struct arf_proto_rd *r)
{
	uint64_t off = arf_proto_get_u64(r);
	uint32_t n = 0;
	const uint8_t *p = arf_proto_get_bytes(r, ARFD_MOVE_CHUNK, &n);

	if (!p || !arf_proto_rd_done(r) || off > (1ull << 40))
		return ARF_EPROTO;
	if (s->fd < 0)
		return -EBADF;
	for (uint32_t done = 0; done < n;) {
		ssize_t w = pwrite(s->fd, p + done, n - done, (off_t)(off + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		done += (uint32_t)w;
	}
	s->bytes += n;
	return 0;
}

/* The staged files not in the list deleted; every listed one there, of
 * its size. */
static int step_keep(struct arfd_move_in *s, struct arf_proto_rd *r)
{
	uint32_t n = arf_proto_get_u32(r);
	char (*names)[ARFD_MOVE_PATH] = NULL;
	char path[PATH_MAX];
	int rc = 0;

	if (r->err || n > 1u << 16)
		return ARF_EPROTO;
	if (n && !(names = calloc(n, sizeof(*names))))
		return -ENOMEM;
	for (uint32_t i = 0; !rc && i < n; i++) {
		uint64_t size;
		struct stat st;
		if (get_str(r, names[i], sizeof(names[i])))
			rc = ARF_EPROTO;
		size = arf_proto_get_u64(r);
		if (rc || r->err)
			rc = ARF_EPROTO;
		else if (!arfd_move_path_ok(names[i]) || path_of(s, names[i], path, sizeof(path)))
			rc = -EINVAL;
		else if (lstat(path, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size)
			rc = -EIO;
	}
	if (!rc && !arf_proto_rd_done(r))
		rc = ARF_EPROTO;
	if (!rc && !(rc = close_file(s))) {
		/* what the sender no longer has: gone */
		for (int sub = 0; !rc && sub < 2; sub++) {
			char dir[PATH_MAX + 16];
			snprintf(dir, sizeof(dir), "%s%s", s->dir, sub ? "/datalog" : "");
			DIR *dh = opendir(dir);
			struct dirent *e;
			while (dh && (e = readdir(dh))) {
				char rel[ARFD_MOVE_PATH + 16];
				if (strlen(e->d_name) >= ARFD_MOVE_PATH)
					continue; /* no FILE makes one that long */
				int found = 0;
				if (e->d_name[0] == '.' || (!sub && !strcmp(e->d_name, "datalog")))
					continue;
				snprintf(rel, sizeof(rel), "%s%.*s", sub ? "datalog/" : "",
					 ARFD_MOVE_PATH - 1, e->d_name);
				for (uint32_t i = 0; i < n && !found; i++)
					found = !strcmp(names[i], rel);
				if (!found && unlinkat(dirfd(dh), e->d_name, 0))
					rc = -errno;
			}
			if (dh)
				closedir(dh);
		}
	}
	free(names);
	return rc;
}

static int step_end(struct arfd *root, struct arfd_move_in *s, struct arf_proto_rd *r)
{
	char err[700], how[160];

	if (!arf_proto_rd_done(r))
		return ARF_EPROTO;
	int rc = close_file(s);
	if (rc)
		return rc;
	for (int sub = 0; sub < 2; sub++) { /* the names, as the bytes, durable */
		char dir[PATH_MAX + 16];
		snprintf(dir, sizeof(dir), "%s%s", s->dir, sub ? "/datalog" : "");
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fsync(fd))
			rc = -errno;
		if (fd >= 0)
			close(fd);
		if (rc)
			return rc;
	}
	if (s->replica)
		/* a replica: served at once (its clients come by its record, or
		 * are sent there); the one it replaces goes first */
		snprintf(how, sizeof(how), ARFD_REPLICA_MARK "%.*s released from server %.63s",
			 (int)(strlen(s->name) - strlen(".readonly")), s->name, s->from);
	else
		snprintf(how, sizeof(how), "moved here by arfctl vol move from server %.63s",
			 s->from);
	/* hellos wait (EAGAIN) while it is installed -- a replica replacing
	 * another: until it serves; a moved volume: until the record says it
	 * is here (DONE), rather than being sent back to the sender */
	snprintf(root->arriving, sizeof(root->arriving), "%s", s->name);
	__atomic_store_n(&root->arriving_set, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&root->vol_lock);
	rc = s->replace ? arfd_volume_replace_out(root, s->name, err, sizeof(err)) : 0;
	root->prefill = s->pf; /* server.c's open_fs takes its memory over */
	if (!rc)
		rc = arfd_volume_install(root, s->dir, &s->v, s->vc, how, err, sizeof(err));
	root->prefill = NULL;
	struct arfd *v = rc ? NULL : arfd_volume_find(root, s->name);
	pthread_mutex_unlock(&root->vol_lock);
	prefill_free(s->pf);
	s->pf = NULL;
	if (rc) {
		__atomic_store_n(&root->arriving_set, 0, __ATOMIC_RELEASE);
		arfd_log(ARFD_LOG_ERROR, "vol move: volume %s from server '%s': %s", s->name, s->from,
			 err);
		return rc;
	}
	if (s->replica)
		__atomic_store_n(&root->arriving_set, 0, __ATOMIC_RELEASE);
	s->ended = 1;
	s->vol = v;
	arfd_log(ARFD_LOG_INFO, "vol move: volume %s from server '%s' received (%llu bytes): "
		 "served once the cell records it here", s->name, s->from,
		 (unsigned long long)s->bytes);
	return 0;
}

/* Until this server's copy of the cell records the volume here (3 s). */
static int step_done(struct arfd *root, struct arfd_move_in *s, struct arf_proto_rd *r)
{
	if (!arf_proto_rd_done(r))
		return ARF_EPROTO;
	if (!s->ended)
		return -EINVAL;
	struct arf_cell_view *cv = __atomic_load_n(&root->cellview, __ATOMIC_ACQUIRE);
	for (int ms = 0; cv && ms < 3000; ms += 2) {
		struct arf_cell_volume rec;
		struct arf_cell_server srv;
		if (!arf_cell_view_locate(cv, s->name, &rec, &srv) &&
		    !strcmp(rec.server, root->cell_id)) {
			arfd_log(ARFD_LOG_INFO, "vol move: volume %s from server '%s' served here",
				 s->name, s->from);
			arf_cell_member_recheck(root->cell, s->name); /* ours now: offline at a stop */
			return 0;
		}
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

int arfd_proc_volume_in(struct arfd_req *q)
{
	struct arfd *root = q->d;
	struct arf_proto_rd *r = q->r;
	int rc;

	if (root->host || !q->ac)
		return -EINVAL; /* a connection to the root volume only */
	if (!root->has_move_key || !root->cellview) {
		arfd_log_limited(ARFD_LOG_WARN, "vol move from %s refused: this server takes no "
				 "volumes (no [cell] move_secret_file, or no cell)",
				 arf_net_sconn_peer(q->c)->addr);
		return -EACCES;
	}
	size_t start = r->pos;
	uint32_t step = arf_proto_get_u32(r);
	if (r->err)
		return ARF_EPROTO;
	pthread_mutex_lock(&root->move_lock);
	/* a session is the connection's (a nonce costs nothing to ask for,
	 * and holds nothing up); the volume being taken is one at a time */
	struct arfd_move_in *s = __atomic_load_n(&q->ac->move, __ATOMIC_ACQUIRE);
	if (step == ARFD_MOVE_CHALLENGE) {
		if (s)
			finish(root, q->ac, s, 1, "a new session began on its connection");
		if (!arf_proto_rd_done(r)) {
			rc = ARF_EPROTO;
			goto out;
		}
		if (!(s = calloc(1, sizeof(*s)))) {
			rc = -ENOMEM;
			goto out;
		}
		s->ac = q->ac;
		s->root = root;
		s->fd = -1;
		s->counter = 1;
		randombytes_buf(s->nonce, sizeof(s->nonce));
		__atomic_store_n(&q->ac->move, s, __ATOMIC_RELEASE);
		/* a connection closed meanwhile: on_close took the session (its
		 * thread ends it) or came first (then it is ended here) */
		if (arf_net_sconn_closed(q->c)) {
			finish(root, q->ac, s, 1, "its connection closed");
			rc = -ECONNRESET;
			goto out;
		}
		arf_proto_put(q->w, s->nonce, sizeof(s->nonce));
		rc = 0;
		goto out;
	}
	if (!s) {
		rc = -EINVAL; /* no session on this connection */
		goto out;
	}
	/* the MAC: over the body from the step on, keyed, with the session's
	 * nonce and counter; a wrong one ends the session */
	uint8_t mac[ARFD_MOVE_MAC];
	if (r->len < start + 4 + ARFD_MOVE_MAC) {
		rc = ARF_EPROTO;
		goto out;
	}
	size_t blen = r->len - ARFD_MOVE_MAC - start;
	arfd_move_mac(mac, root->move_key, s->nonce, s->counter, r->p + start, blen);
	if (sodium_memcmp(mac, r->p + start + blen, ARFD_MOVE_MAC)) {
		arfd_log_limited(ARFD_LOG_WARN, "vol move from %s refused: a request without the "
				 "cell's move secret (its MAC is wrong)",
				 arf_net_sconn_peer(q->c)->addr);
		finish(root, q->ac, s, 1, "a request's MAC was wrong");
		rc = -EACCES;
		goto out;
	}
	s->counter++;
	r->len -= ARFD_MOVE_MAC;
	if (step != ARFD_MOVE_BEGIN && step != ARFD_MOVE_ABORT && !s->begun) {
		rc = -EINVAL;
		goto out;
	}
	switch (step) {
	case ARFD_MOVE_BEGIN:
		if (root->move_in && root->move_in != s) {
			rc = -EBUSY; /* another server's volume is being taken */
			break;
		}
		rc = step_begin(root, s, r);
		if (!rc)
			root->move_in = s;
		break;
	case ARFD_MOVE_FILE:
		rc = s->ended ? -EINVAL : step_file(s, r);
		break;
	case ARFD_MOVE_DATA:
		rc = s->ended ? -EINVAL : step_data(s, r);
		break;
	case ARFD_MOVE_KEEP:
		rc = s->ended ? -EINVAL : step_keep(s, r);
		if (!rc && !s->keeps++)
			prefill(s);
		break;
	case ARFD_MOVE_END:
		rc = s->ended ? -EINVAL : step_end(root, s, r);
		break;
	case ARFD_MOVE_DONE:
		rc = step_done(root, s, r);
		if (!rc)
			finish(root, q->ac, s, 0, "done");
		break;
	case ARFD_MOVE_ABORT:
		rc = arf_proto_rd_done(r) ? 0 : ARF_EPROTO;
		finish(root, q->ac, s, 1, "the sender gave up");
		break;
	default:
		rc = ARF_EPROTO;
	}
out:
	pthread_mutex_unlock(&root->move_lock);
	return rc;
}

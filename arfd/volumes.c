/* SPDX-License-Identifier: MIT */
/*
 * arfd/volumes — volumes made while arfd serves (`arfctl vol create`,
 * issue 18), as AFS's `vos create` makes one on a running file server.
 *
 * The control command "volume-create NAME [KEY=VALUE ...]" (KEY a
 * [regions] key: the volume's geometry, as in a [volume NAME] section of
 * arfd.conf) makes DATA_DIR/volumes/NAME, which must not exist yet, writes
 * its settings there as volume.conf (one KEY=VALUE a line), and serves the
 * volume at once: its own regions in a new view of the running transport,
 * its store, workers and committer (server.c's arfd_volume_add), and its
 * record in the cell when arfd is in one.  Clients reach it as any volume
 * (`?volume=NAME`, `-o volume=NAME`).
 *
 * At every start, after arfd.conf's [volume NAME] sections, each
 * DATA_DIR/volumes/NAME holding a volume.conf is served the same way
 * (arfd_volumes_made_start): the data directory is where a made volume is
 * kept.  A name arfd.conf has is arfd.conf's: its section wins, and the
 * file is not read.
 *
 * "volume-remove NAME [force]" (`arfctl vol rm`, AFS's `vos remove`)
 * removes a volume vol create made: refused while a client is connected
 * to it (unmount first: the kernel's EBUSY) and, without force, while it
 * holds a file; otherwise it is marked removed (no hello finds it again:
 * on_hello counts itself in before it looks at the mark, so one of the two
 * sees the other), closed (workers drained, store synced and closed,
 * regions unmapped, the view retired in net), its directory deleted, and
 * its record withdrawn from the cell.  Its view number is not used again
 * until arfd restarts.  A volume of an arfd.conf section is the file's:
 * remove the section, restart, and remove the directory.
 *
 * "volume-release NAME" (`arfctl vol release`, AFS's `vos release`) serves
 * a snapshot of NAME as NAME.readonly, read-only (see arfd_volume_release
 * below).
 *
 * Who may make and remove volumes is who may use the control socket: root,
 * and the members of [server] control_group.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "arf_meta.h"
#include "arf_net.h"
#include "arf_ops.h"
#include "arfd.h"
#include "arfd_cell.h"
#include "cell.h"
#include "log.h"

#define VOLUME_CONF "volume.conf"
#define SETTING_MAX 200 /* bytes of one KEY=VALUE: a line of volume.conf */
#define fail arfd_volume_error

static void sync_dir(const char *path);
static int remove_tree(const char *tomb);
/* What went wrong removing a volume's files (the start's, then the control
 * thread's), "" when nothing. */
static char tomb_err[PATH_MAX + 128];

/* DATA_DIR/volumes/NAME[/volume.conf] into buf: 0, or -ENAMETOOLONG. */
static int vol_path(const struct arfd *d, const char *name, int conf, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/volumes/%s%s", d->cfg.data_dir, name,
			 conf ? "/" VOLUME_CONF : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* One "KEY=VALUE" setting checked as a [regions] key and appended to
 * v->set: 0, or -1 with err. */
static int add_setting(struct arfd_volume_cfg *v, const char *kv, char *err, size_t errlen)
{
	char key[64];
	const char *eq = strchr(kv, '=');

	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key) || strchr(kv, '\n')) {
		snprintf(err, errlen, "'%.80s': expected KEY=VALUE, KEY a [regions] key", kv);
		return -1;
	}
	if (strlen(kv) > SETTING_MAX) {
		snprintf(err, errlen, "'%.80s...': a setting is at most %d bytes", kv, SETTING_MAX);
		return -1;
	}
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = 0;
	struct arfd_config *scratch = malloc(sizeof(*scratch));
	if (!scratch) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	arfd_config_defaults(scratch);
	int bad = arfd_config_set(scratch, "regions", key, eq + 1, err, errlen);
	free(scratch);
	if (bad)
		return -1;
	size_t used = strlen(v->set);
	if ((size_t)snprintf(v->set + used, sizeof(v->set) - used, "%s=%s\n", key, eq + 1) >=
	    sizeof(v->set) - used) {
		v->set[used] = 0;
		snprintf(err, errlen, "too many settings");
		return -1;
	}
	return 0;
}

/* A made volume's settings from its volume.conf: 0, or -1 with err. */
static int read_conf(const char *path, struct arfd_volume_cfg *v, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *line = NULL, why[256];
	size_t cap = 0;
	int n = 0, rc = 0;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (!rc && getline(&line, &cap, f) >= 0) {
		n++;
		line[strcspn(line, "\r\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		if (add_setting(v, line, why, sizeof(why))) {
			snprintf(err, errlen, "%s:%d: %s", path, n, why);
			rc = -1;
		}
	}
	free(line);
	fclose(f);
	return rc;
}

static int in_config(const struct arfd *d, const char *name)
{
	for (int i = 0; i < d->cfg.nvolumes; i++)
		if (!strcmp(d->cfg.volumes[i].name, name))
			return 1;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int arfd_volumes_made_start(struct arfd *d, char *err, size_t errlen)
{
	char dir[sizeof(d->cfg.data_dir) + 16];
	char *names[256];
	size_t n = 0;
	int rc = 0;

	snprintf(dir, sizeof(dir), "%s/volumes", d->cfg.data_dir);
	DIR *dh = opendir(dir);
	if (!dh)
		return 0; /* none made */
	struct dirent *e;
	while ((e = readdir(dh)) && n < sizeof(names) / sizeof(names[0])) {
		char path[sizeof(dir) + 2 * ARFD_VOLUME_NAME_MAX];
		if (e->d_name[0] == '+' && e->d_name[1]) {
			/* a vol rm (+NAME) or vol release (+NAME.new) that a crash
			 * cut short: finished now (no volume's name starts with +) */
			char tomb[PATH_MAX];
			if ((size_t)snprintf(tomb, sizeof(tomb), "%s/%.200s", dir, e->d_name) >=
			    sizeof(tomb))
				continue;
			if (remove_tree(tomb))
				arfd_log(ARFD_LOG_WARN, "removing %s, left by vol rm or vol release: %s",
					 tomb, tomb_err);
			else
				arfd_log(ARFD_LOG_INFO, "removed %s, left by vol rm or vol release", tomb);
			continue;
		}
		if (!arfd_volume_name_ok(e->d_name) || in_config(d, e->d_name) ||
		    vol_path(d, e->d_name, 1, path, sizeof(path)) || access(path, F_OK))
			continue;
		if (!(names[n] = strdup(e->d_name))) {
			rc = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(dh);
	qsort(names, n, sizeof(names[0]), by_name); /* the same views at every start */
	for (size_t i = 0; i < n; i++) {
		struct arfd_volume_cfg v;
		struct arfd_config vc;
		char path[sizeof(dir) + 2 * ARFD_VOLUME_NAME_MAX];

		if (rc)
			break;
		memset(&v, 0, sizeof(v));
		snprintf(v.name, sizeof(v.name), "%s", names[i]);
		vol_path(d, names[i], 1, path, sizeof(path));
		if (read_conf(path, &v, err, errlen) ||
		    arfd_config_volume_of(&d->cfg, &v, &vc, err, errlen)) {
			/* that volume is not served, with the reason; the rest are */
			arfd_log(ARFD_LOG_ERROR, "volume %s not served: %s", names[i], err);
			continue;
		}
		if ((rc = arfd_volume_add(d, v.name, &vc, err, errlen)) && rc != -ENOSPC) {
			/* as a spoilt volume.conf: that one out, with the reason */
			arfd_log(ARFD_LOG_ERROR, "volume %s not served: %s", names[i], err);
			rc = 0;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}

/* {"error": the message}, printf's way. */
json_object *arfd_volume_error(const char *fmt, ...)
{
	char msg[1024];
	json_object *r = json_object_new_object();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r)
		json_object_object_add(r, "error", json_object_new_string(msg));
	return r;
}

/* MemAvailable of /proc/meminfo in bytes, 0 when unknown. */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[128];
	unsigned long long kib = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kib << 10;
}

/* A directory's entries made durable (best effort: a failure is logged). */
static void sync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd))
		arfd_log(ARFD_LOG_WARN, "vol create: syncing %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* Write the settings of v to path (through a temporary file, synced),
 * saying who made it (how): 0 or -errno. */
static int write_conf(const char *path, const struct arfd_volume_cfg *v, const char *how)
{
	char tmp[PATH_MAX];
	time_t now = time(NULL);
	struct tm tm;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	gmtime_r(&now, &tm);
	fprintf(f, "# volume %s, %s at %04d-%02d-%02d %02d:%02d UTC.\n"
		   "# Its [regions] settings, KEY=VALUE a line, read at each start of arfd\n"
		   "# (docs/volumes.md); a [volume %s] section of arfd.conf overrides them.\n%s",
		v->name, how, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		v->name, v->set);
	int rc = fflush(f) || fsync(fileno(f)) ? -errno : 0;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

json_object *arfd_volume_create(struct arfd *d, const char *args)
{
	struct arfd_volume_cfg v;
	struct arfd_config vc;
	char buf[1024], err[700], path[PATH_MAX], conf[PATH_MAX];
	char *save = NULL;

	if (strlen(args) >= sizeof(buf))
		return fail("too many settings");
	snprintf(buf, sizeof(buf), "%s", args);
	const char *name = strtok_r(buf, " ", &save);
	if (!name)
		return fail("usage: volume-create NAME [KEY=VALUE ...]");
	if (!arfd_volume_name_ok(name))
		return fail("'%.80s': a volume's name is 1-63 letters, digits, '.', '_' or '-', and "
			    "not root, . or ..", name);
	if (arfd_volume_is_replica(name))
		return fail("'%.80s': a name ending in .readonly is a replica's, which vol release "
			    "makes", name);
	memset(&v, 0, sizeof(v));
	snprintf(v.name, sizeof(v.name), "%s", name);
	for (const char *kv; (kv = strtok_r(NULL, " ", &save));)
		if (add_setting(&v, kv, err, sizeof(err)))
			return fail("%s", err);
	if (vol_path(d, name, 0, path, sizeof(path)) || vol_path(d, name, 1, conf, sizeof(conf)))
		return fail("volume %s: its data directory's path is too long", name);

	pthread_mutex_lock(&d->vol_lock); /* a reload waits (main.c), and another create */
	json_object *r = NULL;
	arfd_lock_for_control(d); /* the server's settings, as a reload leaves them */
	int bad = arfd_config_volume_of(&d->cfg, &v, &vc, err, sizeof(err));
	arfd_fs_unlock(d);
	if (bad) {
		r = fail("%s", err);
		goto out;
	}
	if (arfd_volume_find(d, name)) {
		r = fail("volume %s exists on this server", name);
		goto out;
	}
	/* its regions live in this process's memory, in use at once: a size
	 * that cannot fit would take every volume down with it */
	struct arf_meta_super sb;
	arf_meta_super_layout(&sb, (uint32_t)vc.inodes, (uint32_t)vc.dir_buckets,
			      (uint32_t)vc.dir_entries, (uint32_t)vc.pages, (uint32_t)vc.data_blocks,
			      (uint32_t)vc.dir_hash_mask);
	uint64_t avail = mem_available();
	if (avail && sb.meta_size + sb.data_size > avail) {
		snprintf(err, sizeof(err), "volume %s: its regions would take %llu MiB, more than "
			 "the %llu MiB of memory available", name,
			 (unsigned long long)((sb.meta_size + sb.data_size) >> 20),
			 (unsigned long long)(avail >> 20));
		r = fail("%s", err);
		goto out;
	}
	if (!strcmp(name, d->cfg.cell_root_volume)) {
		r = fail("volume %s: the name of this server's root volume in the cell "
			 "([cell] root_volume)", name);
		goto out;
	}
	struct arf_cell_view *cv = __atomic_load_n(&d->cellview, __ATOMIC_ACQUIRE);
	struct arf_cell_volume rec;
	struct arf_cell_server srv;
	if (cv && !arf_cell_view_locate(cv, name, &rec, &srv) && strcmp(rec.server, d->cell_id)) {
		r = fail("volume %s: the cell records it on server '%.63s': a name in the cell is "
			 "one volume's", name, rec.server);
		goto out;
	}
	if (!access(path, F_OK)) {
		r = fail("%.300s exists already: a volume's data there is served by a [volume %s] "
			 "section (or remove it)", path, name);
		goto out;
	}
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s/volumes", d->cfg.data_dir);
	if ((mkdir(parent, 0700) && errno != EEXIST) || mkdir(path, 0700)) {
		snprintf(err, sizeof(err), "%.300s: %s", path, strerror(errno));
		r = fail("%s", err);
		goto out;
	}
	sync_dir(parent);
	int rc = write_conf(conf, &v, "made by arfctl vol create");
	if (!rc)
		sync_dir(path); /* volume.conf's name, as its bytes, before the reply */
	if (rc) {
		snprintf(err, sizeof(err), "%.300s: %s", conf, strerror(-rc));
		rmdir(path);
		r = fail("%s", err);
		goto out;
	}
	if (arfd_volume_add(d, name, &vc, err, sizeof(err))) {
		/* nothing served; its settings go, its directory stays for a
		 * look (remove it to try the name again) */
		unlink(conf);
		arfd_log(ARFD_LOG_ERROR, "vol create %s: %s (its directory %s is left for a look)",
			 name, err, path);
		size_t el = strlen(err);
		snprintf(err + el, sizeof(err) - el, " (%.300s is left: remove it to try again)",
			 path);
		r = fail("%s", err);
		goto out;
	}
	if ((rc = arfd_cell_publish(d, d->cell)))
		arfd_log(ARFD_LOG_WARN, "vol create %s: recording it in the cell: %s", name,
			 strerror(-rc));
	arfd_log(ARFD_LOG_INFO, "vol create %s: made in %s", name, path);
	r = arfd_volumes_object(d, name);
out:
	pthread_mutex_unlock(&d->vol_lock);
	return r;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) ? -errno : 0;
}

/* A removed volume's directory renamed DATA_DIR/volumes/+NAME (no volume's
 * name starts with '+'), the rename synced: 0, or -errno with tomb_err. */
static int tombstone(const struct arfd *d, const char *name, char *tomb, size_t len)
{
	char dir[PATH_MAX - 80], from[PATH_MAX];

	tomb_err[0] = 0;
	snprintf(dir, sizeof(dir), "%s/volumes", d->cfg.data_dir);
	vol_path(d, name, 0, from, sizeof(from));
	snprintf(tomb, len, "%s/+%.64s", dir, name);
	if (rename(from, tomb)) {
		int rc = -errno;
		snprintf(tomb_err, sizeof(tomb_err), "renaming %.400s: %s", from, strerror(-rc));
		return rc;
	}
	sync_dir(dir);
	return 0;
}

/* Delete a tombstone: 0, or -errno with tomb_err. */
static int remove_tree(const char *tomb)
{
	if (!nftw(tomb, remove_one, 16, FTW_DEPTH | FTW_PHYS))
		return 0;
	int rc = errno ? -errno : -EIO;
	snprintf(tomb_err, sizeof(tomb_err), "deleting %.400s: %s (arfd tries again at its next "
		 "start)", tomb, strerror(-rc));
	return rc;
}

/* Volume v (marked removed, with no client) closed, its directory deleted
 * and its record withdrawn from the cell; tomb_err says what of its files
 * could not be deleted.  what: the command, for the log. */
static void discard(struct arfd *d, struct arfd *v, const char *name, const char *what)
{
	char tomb[PATH_MAX];
	int rc;

	arfd_volume_retire(v);
	/* out of the volumes first, under a name no volume can have, synced:
	 * a crash from here on leaves a tombstone the next start removes,
	 * never a volume half deleted that it would serve again */
	rc = tombstone(d, name, tomb, sizeof(tomb));
	if (!rc)
		remove_tree(tomb);
	if ((rc = arfd_cell_publish(d, d->cell)))
		arfd_log(ARFD_LOG_WARN, "%s %s: the cell's list of volumes: %s", what, name,
			 strerror(-rc));
	if ((rc = arfd_cell_withdraw(d->cell, name)))
		arfd_log(ARFD_LOG_WARN, "%s %s: withdrawing it from the cell: %s", what, name,
			 strerror(-rc));
}

json_object *arfd_volume_remove(struct arfd *d, const char *args)
{
	char buf[256], path[PATH_MAX], why[300];
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", args);
	const char *name = strtok_r(buf, " ", &save);
	const char *opt = name ? strtok_r(NULL, " ", &save) : NULL;
	int force = opt && !strcmp(opt, "force");
	if (!name || (opt && !force) || strtok_r(NULL, " ", &save))
		return fail("usage: volume-remove NAME [force]");
	if (!strcmp(name, "root") || !name[0])
		return fail("the root volume is the server's own: it is not removed");

	pthread_mutex_lock(&d->vol_lock);
	json_object *r = NULL;
	struct arfd *v = arfd_volume_find(d, name);
	if (!v) {
		r = fail("no volume '%.63s' on this server", name);
		goto out;
	}
	if (v == d) { /* by its name in the cell ([cell] root_volume) */
		r = fail("the root volume is the server's own: it is not removed");
		goto out;
	}
	if (in_config(d, name)) {
		r = fail("volume %s is arfd.conf's [volume %s] section: remove the section, restart "
			 "arfd, then remove its directory", name, name);
		goto out;
	}
	if (v->moving) {
		r = fail("volume %s is being moved (vol move): remove it where it goes", name);
		goto out;
	}
	/* marked before the clients are counted (on_hello counts itself
	 * before it looks at the mark), and only then looked at: a client
	 * that came and went before the mark left its files to be seen.  A
	 * hello meanwhile is told there is no such volume, even when this
	 * rm is refused below */
	__atomic_store_n(&v->removed, 1, __ATOMIC_SEQ_CST);
	uint64_t clients = __atomic_load_n(&v->clients, __ATOMIC_SEQ_CST);
	if (clients) {
		__atomic_store_n(&v->removed, 0, __ATOMIC_SEQ_CST);
		snprintf(why, sizeof(why), "volume %s has %llu client%s connected: unmount %s first",
			 name, (unsigned long long)clients, clients == 1 ? "" : "s",
			 clients == 1 ? "it" : "them");
		r = fail("%s", why);
		goto out;
	}
	if (!force) {
		struct arf_ops_statfs sf;
		arfd_lock_for_control(v);
		arf_ops_statfs(&v->fs, &sf);
		arfd_fs_unlock(v);
		if (sf.files - sf.ffree > 1) {
			__atomic_store_n(&v->removed, 0, __ATOMIC_SEQ_CST);
			snprintf(why, sizeof(why), "volume %s is not empty (%llu files and directories "
				 "besides its root): remove them, or vol rm --force", name,
				 (unsigned long long)(sf.files - sf.ffree - 1));
			r = fail("%s", why);
			goto out;
		}
	}
	snprintf(path, sizeof(path), "%s", v->cfg.data_dir);
	discard(d, v, name, "vol rm");
	r = json_object_new_object();
	if (r) {
		json_object_object_add(r, "removed", json_object_new_string(name));
		json_object_object_add(r, "data_dir", json_object_new_string(path));
		if (tomb_err[0]) /* served no more; its files not all gone: say where */
			json_object_object_add(r, "warning", json_object_new_string(tomb_err));
	}
	arfd_log(tomb_err[0] ? ARFD_LOG_WARN : ARFD_LOG_INFO, "vol rm %s: removed (%s)%s%s", name,
		 path, tomb_err[0] ? ": " : "", tomb_err);
out:
	pthread_mutex_unlock(&d->vol_lock);
	return r;
}

/* ---- vol release ----------------------------------------------------------- */


#define SWAP_WAIT_MS 10000 /* for a replaced replica's clients to be gone */
#define REPLICA_MARK ARFD_REPLICA_MARK

/* Whether DATA_DIR/volumes/NAME's volume.conf says vol release made it. */
static int made_by_release(const struct arfd *d, const char *name)
{
	char path[PATH_MAX], line[256] = "";
	FILE *f;

	if (vol_path(d, name, 1, path, sizeof(path)) || !(f = fopen(path, "re")))
		return 0;
	int ok = fgets(line, sizeof(line), f) && strstr(line, REPLICA_MARK);
	fclose(f);
	return ok;
}

/* The replica old, which the new one is to replace, made unreachable: no
 * hello finds it (marked removed, as vol rm marks; on_hello counts itself
 * among its clients before it looks), its connections are shut down, and
 * their closing waited for.  Their clients dial again, and find the new
 * replica once it is served: its files keep their handles (a snapshot
 * keeps inode numbers and generations), so open files go on, and a file
 * the volume no longer has is stale.  0, or -ETIMEDOUT with err (old is
 * served again). */
static int swap_out(struct arfd *d, struct arfd *old, const char *roname, char *err,
		    size_t errlen)
{
	__atomic_store_n(&old->removed, 1, __ATOMIC_SEQ_CST);
	int n = arf_net_server_drop_view(d->net, old->view);
	for (int ms = 0; __atomic_load_n(&old->clients, __ATOMIC_SEQ_CST); ms++) {
		if (ms == SWAP_WAIT_MS) {
			__atomic_store_n(&old->removed, 0, __ATOMIC_SEQ_CST);
			snprintf(err, errlen, "the %llu clients of %s did not let go within %d s",
				 (unsigned long long)__atomic_load_n(&old->clients, __ATOMIC_SEQ_CST),
				 roname, SWAP_WAIT_MS / 1000);
			return -ETIMEDOUT;
		}
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (n)
		arfd_log(ARFD_LOG_INFO, "vol release: %d connection%s to the replica %s closed: "
			 "they dial again", n, n == 1 ? "" : "s", roname);
	return 0;
}

/*
 * "volume-release NAME" (`arfctl vol release`, AFS's `vos release`): a
 * read-only snapshot of volume NAME, served as NAME.readonly by this
 * server, which clients reach only by that name (`?volume=NAME.readonly`,
 * a mount point "#NAME.readonly."), never in NAME's place.  The snapshot:
 * NAME's requests wait while everything applied is made durable and its
 * store copied (arfd_store_clone: a RocksDB checkpoint, its files linked,
 * and the data log copied), so it is one state of NAME and the pause is
 * the copy's.  It is made in DATA_DIR/volumes/+NAME.readonly.new (a
 * tombstone's name: a crash leaves nothing the next start would serve),
 * then the replica before it, if any, is replaced: its clients are
 * disconnected (swap_out) and dial again, finding the new one, which is
 * renamed into place and served, its volume.conf saying what it is.  A replica is served read-only at every
 * start (its name says so: arfd_volume_add).  Replicas on other servers
 * need the snapshot sent there: not built (docs/volumes.md).
 */
json_object *arfd_volume_release(struct arfd *d, const char *args)
{
	char buf[128], roname[ARFD_VOLUME_NAME_MAX + 16], err[700], tmp[PATH_MAX];
	char path[PATH_MAX], conf[PATH_MAX + 16], parent[PATH_MAX];
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", args);
	const char *name = strtok_r(buf, " ", &save);
	const char *to = name ? strtok_r(NULL, " ", &save) : NULL;
	if (!name || (to && strtok_r(NULL, " ", &save)))
		return fail("usage: volume-release NAME [SERVER]");
	if (to && strcmp(to, d->cell_id))
		return arfd_volume_release_to(d, name, to); /* move_out.c */
	if (arfd_volume_is_replica(name))
		return fail("%.80s is a replica: release the volume it was made from", name);

	pthread_mutex_lock(&d->vol_lock);
	json_object *r = NULL;
	struct arfd *src = arfd_volume_find(d, name), *old;
	if (!src) {
		r = fail("no volume '%.63s' on this server", name);
		goto out;
	}
	if (src->moving) {
		r = fail("volume %s is being moved (vol move): release it where it goes", name);
		goto out;
	}
	const char *base = src != d ? src->volume
			   : d->cfg.cell_root_volume[0] ? d->cfg.cell_root_volume : "root";
	if ((size_t)snprintf(roname, sizeof(roname), "%s.readonly", base) >= ARFD_VOLUME_NAME_MAX ||
	    !arfd_volume_name_ok(roname)) {
		r = fail("%.63s.readonly: too long for a volume's name (63 bytes)", base);
		goto out;
	}
	if (in_config(d, roname)) {
		r = fail("arfd.conf has a [volume %s] section: that name is the file's", roname);
		goto out;
	}
	struct arf_cell_view *cv = __atomic_load_n(&d->cellview, __ATOMIC_ACQUIRE);
	struct arf_cell_volume rec;
	struct arf_cell_server srv;
	if (cv && !arf_cell_view_locate(cv, roname, &rec, &srv) && strcmp(rec.server, d->cell_id)) {
		r = fail("volume %s: the cell records it on server '%.63s'", roname, rec.server);
		goto out;
	}
	old = arfd_volume_find(d, roname);
	if (old && (old == d || !made_by_release(d, roname))) {
		r = fail("volume %s is no replica vol release made: it is not replaced", roname);
		goto out;
	}
	/* room for the new one, before the old one goes: each volume served in
	 * this run keeps its place until a restart (server.c) */
	if (arfd_volume_room(d) < 1) {
		r = fail("vol release %s: no volume place left in this run of arfd (15, removed "
			 "and replaced ones included): restart it", name);
		goto out;
	}
	snprintf(parent, sizeof(parent), "%s/volumes", d->cfg.data_dir);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/+%s.new", parent, roname) >= sizeof(tmp) ||
	    vol_path(d, roname, 0, path, sizeof(path))) {
		r = fail("volume %s: its data directory's path is too long", roname);
		goto out;
	}
	if (mkdir(parent, 0700) && errno != EEXIST) {
		r = fail("%.300s: %s", parent, strerror(errno));
		goto out;
	}
	if (!access(tmp, F_OK) && remove_tree(tmp)) { /* a release that failed before */
		r = fail("%s", tomb_err);
		goto out;
	}
	char tomb[PATH_MAX + 80];
	snprintf(tomb, sizeof(tomb), "%s/+%.64s", parent, roname); /* where discard() puts it */
	if (old && !access(tomb, F_OK) && remove_tree(tomb)) { /* a delete that failed before */
		r = fail("%s", tomb_err);
		goto out;
	}

	/* the snapshot: NAME's requests wait meanwhile */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	arfd_lock_for_control(src);
	arfd_quiesce(src);
	int rc = arfd_failed(src) ? -EIO : 0;
	if (rc)
		snprintf(err, sizeof(err), "volume %s has failed: %s", name, src->failure);
	if (!rc)
		rc = arfd_store_flush(src->store, &src->fs, err, sizeof(err));
	if (!rc)
		rc = arfd_store_sync(src->store, err, sizeof(err));
	if (!rc)
		rc = arfd_store_clone(src->store, tmp, err, sizeof(err));
	arfd_fs_unlock(src);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	struct arfd_volume_cfg v;
	memset(&v, 0, sizeof(v));
	memcpy(v.name, roname, strlen(roname) + 1); /* < ARFD_VOLUME_NAME_MAX: checked */
	char how[160];
	snprintf(how, sizeof(how), REPLICA_MARK "%.63s made by arfctl vol release", base);
	if (!rc && (size_t)snprintf(conf, sizeof(conf), "%s/" VOLUME_CONF, tmp) < sizeof(conf) &&
	    (rc = write_conf(conf, &v, how)))
		snprintf(err, sizeof(err), "%.300s: %s", conf, strerror(-rc));
	if (rc) {
		remove_tree(tmp);
		r = fail("vol release %s: %s", name, err);
		goto out;
	}
	sync_dir(tmp);
	if (old && (rc = swap_out(d, old, roname, err, sizeof(err)))) {
		remove_tree(tmp);
		r = fail("vol release %s: %s", name, err);
		goto out;
	}
	if (old) {
		discard(d, old, roname, "vol release");
		if (tomb_err[0] && !access(path, F_OK)) { /* still in the way */
			r = fail("vol release %s: the old replica's files: %s (the new one is left in "
				 "%.300s)", name, tomb_err, tmp);
			goto out;
		}
	}
	if (rename(tmp, path)) {
		snprintf(err, sizeof(err), "renaming %.300s: %s", tmp, strerror(errno));
		remove_tree(tmp);
		r = fail("vol release %s: %s", name, err);
		goto out;
	}
	sync_dir(parent);
	struct arfd_config vc;
	arfd_lock_for_control(d); /* the server's settings, as a reload leaves them */
	int bad = arfd_config_volume_of(&d->cfg, &v, &vc, err, sizeof(err));
	arfd_fs_unlock(d);
	if (bad || arfd_volume_add(d, roname, &vc, err, sizeof(err))) {
		arfd_log(ARFD_LOG_ERROR, "vol release %s: %s (its directory %s is kept)", name, err,
			 path);
		r = fail("vol release %s: serving %s: %s", name, roname, err);
		goto out;
	}
	if ((rc = arfd_cell_publish(d, d->cell)))
		arfd_log(ARFD_LOG_WARN, "vol release %s: recording %s in the cell: %s", name, roname,
			 strerror(-rc));
	double pause = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	arfd_log(ARFD_LOG_INFO, "vol release %s: %s served from %s (the volume waited %.3f s)",
		 name, roname, path, pause);
	r = arfd_volumes_object(d, roname);
	if (r) {
		json_object_object_add(r, "released_from", json_object_new_string(base));
		json_object_object_add(r, "pause_seconds", json_object_new_double(pause));
	}
	goto out;
out:
	pthread_mutex_unlock(&d->vol_lock);
	return r;
}

/* ---- vol move's ends (move_out.c, move_in.c) -------------------------------- */

static int arfd_volume_admit_as(struct arfd *d, const char *name, const char *settings,
				struct arfd_volume_cfg *v, struct arfd_config *vc, int mode,
				char *err, size_t errlen);

int arfd_volume_movable(struct arfd *d, struct arfd *v, const char *name, char *err,
			size_t errlen)
{
	char conf[PATH_MAX];

	if (v == d) {
		snprintf(err, errlen, "%s is this server's root volume: it stays with its server",
			 name);
		return -EINVAL;
	}
	if (arfd_volume_is_replica(name) || made_by_release(d, name)) {
		snprintf(err, errlen, "%s is a replica: release the volume it was made from where "
			 "that volume lives", name);
		return -EINVAL;
	}
	if (in_config(d, name) || vol_path(d, name, 1, conf, sizeof(conf)) ||
	    access(conf, F_OK)) {
		snprintf(err, errlen, "volume %s is arfd.conf's ([volume %s]), not one vol create "
			 "made: only those move", name, name);
		return -EINVAL;
	}
	return 0;
}

int arfd_volume_admit(struct arfd *d, const char *name, const char *settings,
		      struct arfd_volume_cfg *v, struct arfd_config *vc, char *err, size_t errlen)
{
	return arfd_volume_admit_as(d, name, settings, v, vc, 0, err, errlen);
}

/* mode 0: a volume moved here; 1: a new replica (its name ends in
 * .readonly); 2: a replica that replaces the one here (which exists). */
static int arfd_volume_admit_as(struct arfd *d, const char *name, const char *settings,
				struct arfd_volume_cfg *v, struct arfd_config *vc, int mode,
				char *err, size_t errlen)
{
	char path[PATH_MAX], line[SETTING_MAX + 2];

	if (!arfd_volume_name_ok(name) || arfd_volume_is_replica(name) != (mode != 0)) {
		snprintf(err, errlen, "'%.80s': not the name of a volume vol move takes", name);
		return -EINVAL;
	}
	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", name);
	for (const char *p = settings; *p;) { /* KEY=VALUE lines, as volume.conf's */
		size_t n = strcspn(p, "\n");
		if (n >= sizeof(line)) {
			snprintf(err, errlen, "a setting of volume %s is too long", name);
			return -EINVAL;
		}
		memcpy(line, p, n);
		line[n] = 0;
		p += n + (p[n] == '\n');
		if (line[0] && line[0] != '#' && add_setting(v, line, err, errlen))
			return -EINVAL;
	}
	arfd_lock_for_control(d); /* the server's settings, as a reload leaves them */
	int bad = arfd_config_volume_of(&d->cfg, v, vc, err, errlen);
	arfd_fs_unlock(d);
	if (bad)
		return -EINVAL;
	if ((mode != 2 && arfd_volume_find(d, name)) || in_config(d, name) ||
	    !strcmp(name, d->cfg.cell_root_volume)) {
		snprintf(err, errlen, "volume %s exists on this server", name);
		return -EEXIST;
	}
	if (vol_path(d, name, 0, path, sizeof(path)) || (mode != 2 && !access(path, F_OK))) {
		snprintf(err, errlen, "%.300s is in the way of volume %s", path, name);
		return -EEXIST;
	}
	struct arf_meta_super sb;
	arf_meta_super_layout(&sb, (uint32_t)vc->inodes, (uint32_t)vc->dir_buckets,
			      (uint32_t)vc->dir_entries, (uint32_t)vc->pages,
			      (uint32_t)vc->data_blocks, (uint32_t)vc->dir_hash_mask);
	uint64_t avail = mem_available();
	if (avail && sb.meta_size + sb.data_size > avail) {
		snprintf(err, errlen, "volume %s: its regions would take %llu MiB, more than the "
			 "%llu MiB of memory available", name,
			 (unsigned long long)((sb.meta_size + sb.data_size) >> 20),
			 (unsigned long long)(avail >> 20));
		return -ENOMEM;
	}
	if (arfd_volume_room(d) < 1) {
		snprintf(err, errlen, "no volume place left in this run of arfd (15, removed ones "
			 "included): restart it");
		return -ENOSPC;
	}
	return 0;
}

int arfd_volume_install(struct arfd *d, const char *dir, const struct arfd_volume_cfg *v,
			const struct arfd_config *vc, const char *how, char *err, size_t errlen)
{
	char path[PATH_MAX], conf[PATH_MAX + 16], parent[PATH_MAX];
	int rc;

	snprintf(parent, sizeof(parent), "%s/volumes", d->cfg.data_dir);
	if ((size_t)snprintf(conf, sizeof(conf), "%s/" VOLUME_CONF, dir) >= sizeof(conf) ||
	    vol_path(d, v->name, 0, path, sizeof(path))) {
		snprintf(err, errlen, "volume %s: its data directory's path is too long", v->name);
		return -ENAMETOOLONG;
	}
	if ((rc = write_conf(conf, v, how))) {
		snprintf(err, errlen, "%.300s: %s", conf, strerror(-rc));
		return rc;
	}
	sync_dir(dir);
	if (rename(dir, path)) {
		rc = -errno;
		snprintf(err, errlen, "renaming %.300s: %s", dir, strerror(-rc));
		return rc;
	}
	sync_dir(parent);
	if ((rc = arfd_volume_add(d, v->name, vc, err, errlen))) {
		arfd_log(ARFD_LOG_ERROR, "volume %s: %s (its directory %s is kept)", v->name, err,
			 path);
		return rc;
	}
	if ((rc = arfd_cell_publish(d, d->cell)))
		arfd_log(ARFD_LOG_WARN, "volume %s: recording it in the cell: %s", v->name,
			 strerror(-rc));
	return 0;
}

void arfd_volume_let_go(struct arfd *d, struct arfd *v, const char *what)
{
	char name[ARFD_VOLUME_NAME_MAX];

	snprintf(name, sizeof(name), "%s", v->volume);
	__atomic_store_n(&v->removed, 1, __ATOMIC_SEQ_CST);
	arf_net_server_drop_view(d->net, v->view);
	for (int ms = 0; __atomic_load_n(&v->clients, __ATOMIC_SEQ_CST) && ms < SWAP_WAIT_MS; ms++) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (__atomic_load_n(&v->clients, __ATOMIC_SEQ_CST)) {
		/* found by no hello, served to nobody new: left open, its files
		 * kept (the next start serves them, and sends clients on) */
		arfd_log(ARFD_LOG_WARN, "%s %s: %llu clients still connected after %d s: its copy "
			 "here is kept (remove it once arfd restarts)", what, name,
			 (unsigned long long)__atomic_load_n(&v->clients, __ATOMIC_SEQ_CST),
			 SWAP_WAIT_MS / 1000);
		return;
	}
	discard(d, v, name, what);
	if (tomb_err[0])
		arfd_log(ARFD_LOG_WARN, "%s %s: %s", what, name, tomb_err);
}

int arfd_volume_remove_dir(const char *dir)
{
	if (access(dir, F_OK))
		return 0;
	int rc = remove_tree(dir);
	if (rc)
		arfd_log(ARFD_LOG_WARN, "%s", tomb_err);
	return rc;
}

int arfd_volume_admit_replica(struct arfd *d, const char *name, const char *settings,
			      struct arfd_volume_cfg *v, struct arfd_config *vc, int *replace,
			      char *err, size_t errlen)
{
	struct arfd *old = arfd_volume_find(d, name);

	*replace = 0;
	if (!arfd_volume_is_replica(name) || in_config(d, name)) {
		snprintf(err, errlen, "'%.80s': not the name of a replica vol release may make here",
			 name);
		return -EINVAL;
	}
	if (old && (old == d || !made_by_release(d, name))) {
		snprintf(err, errlen, "volume %s is no replica vol release made: it is not replaced",
			 name);
		return -EEXIST;
	}
	if (!old) /* a new one: as any volume taken */
		return arfd_volume_admit_as(d, name, settings, v, vc, 1, err, errlen);
	*replace = 1;
	return arfd_volume_admit_as(d, name, settings, v, vc, 2, err, errlen);
}

int arfd_volume_replace_out(struct arfd *d, const char *name, char *err, size_t errlen)
{
	struct arfd *old = arfd_volume_find(d, name);
	char path[PATH_MAX];
	int rc;

	if (!old)
		return 0;
	if ((rc = swap_out(d, old, name, err, errlen)))
		return rc;
	discard(d, old, name, "vol release");
	if (tomb_err[0] && !vol_path(d, name, 0, path, sizeof(path)) && !access(path, F_OK)) {
		snprintf(err, errlen, "the old replica's files: %s", tomb_err);
		return -EEXIST;
	}
	return 0;
}

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
 * Who may make volumes is who may use the control socket: root, and the
 * members of [server] control_group.  Volumes are not removed here: stop arfd and
 * remove the directory (with its [volume] section, if it has one).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "arfd.h"
#include "arfd_cell.h"
#include "log.h"

#define VOLUME_CONF "volume.conf"

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
	char line[256], why[256];
	int n = 0;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		n++;
		line[strcspn(line, "\r\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		if (add_setting(v, line, why, sizeof(why))) {
			snprintf(err, errlen, "%s:%d: %s", path, n, why);
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return 0;
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
			rc = -EINVAL;
			break;
		}
		rc = arfd_volume_add(d, v.name, &vc, err, errlen);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}

static json_object *fail(const char *fmt, const char *a, const char *b)
{
	char msg[1024];
	json_object *r = json_object_new_object();

	snprintf(msg, sizeof(msg), fmt, a, b);
	if (r)
		json_object_object_add(r, "error", json_object_new_string(msg));
	return r;
}

/* Write the settings of v to path (through a temporary file, synced):
 * 0 or -errno. */
static int write_conf(const char *path, const struct arfd_volume_cfg *v)
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
	fprintf(f, "# volume %s, made by arfctl vol create at %04d-%02d-%02d %02d:%02d UTC.\n"
		   "# Its [regions] settings, KEY=VALUE a line, read at each start of arfd\n"
		   "# (docs/volumes.md); a [volume %s] section of arfd.conf overrides them.\n%s",
		v->name, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, v->name,
		v->set);
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
		return fail("%s%s", "too many settings", "");
	snprintf(buf, sizeof(buf), "%s", args);
	const char *name = strtok_r(buf, " ", &save);
	if (!name)
		return fail("%s%s", "usage: volume-create NAME [KEY=VALUE ...]", "");
	if (!arfd_volume_name_ok(name))
		return fail("'%.80s': a volume's name is 1-63 letters, digits, '.', '_' or '-', and "
			    "not root, . or ..%s", name, "");
	memset(&v, 0, sizeof(v));
	snprintf(v.name, sizeof(v.name), "%s", name);
	for (const char *kv; (kv = strtok_r(NULL, " ", &save));)
		if (add_setting(&v, kv, err, sizeof(err)))
			return fail("%s%s", err, "");
	if (vol_path(d, name, 0, path, sizeof(path)) || vol_path(d, name, 1, conf, sizeof(conf)))
		return fail("volume %s: its data directory's path is too long%s", name, "");
	if (arfd_config_volume_of(&d->cfg, &v, &vc, err, sizeof(err)))
		return fail("%s%s", err, "");

	pthread_mutex_lock(&d->vol_lock);
	json_object *r = NULL;
	if (arfd_volume_find(d, name)) {
		r = fail("volume %s exists on this server%s", name, "");
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
		r = fail("%s%s", err, "");
		goto out;
	}
	int rc = write_conf(conf, &v);
	if (rc) {
		snprintf(err, sizeof(err), "%.300s: %s", conf, strerror(-rc));
		rmdir(path);
		r = fail("%s%s", err, "");
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
		r = fail("%s%s", err, "");
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

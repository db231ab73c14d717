/* SPDX-License-Identifier: MIT */
/*
 * A server's copy of the cell (see cell.h): every volume record and every
 * live server, read from etcd and kept current by a watch on the cell's
 * prefix, so that LOCATE is answered from memory and never waits for
 * etcd.  The thread watches first and lists after, so no change falls
 * between the two; any event (or a broken stream) marks the copy stale
 * and the thread lists again.  While etcd cannot be reached the last copy
 * stays, and the thread tries again every second.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cell.h"

struct arf_cell_view {
	struct arf_etcd *e;
	char cell[ARF_CELL_NAME_MAX];
	arf_cell_log_fn log;
	void *log_arg;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* stop, stale */
	int stop, stale;         /* under lock */
	/* the copy (under lock) */
	int known;               /* listed at least once */
	struct arf_cell_volume *vols;
	size_t nvols;
	struct arf_cell_server *srvs;
	size_t nsrvs;
};

static void say(struct arf_cell_view *v, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(struct arf_cell_view *v, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!v->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	v->log(v->log_arg, level, msg);
}

static void on_event(void *arg, const struct arf_etcd_event *ev)
{
	struct arf_cell_view *v = arg;
	(void)ev; /* a put, a delete, a broken stream: list again */
	pthread_mutex_lock(&v->lock);
	v->stale = 1;
	pthread_cond_broadcast(&v->cond);
	pthread_mutex_unlock(&v->lock);
}

/* list both kinds; the copy replaced when both worked */
static int refresh(struct arf_cell_view *v, char *err, size_t errlen)
{
	struct arf_cell_volume *vols = NULL;
	struct arf_cell_server *srvs = NULL;
	size_t nv = 0, ns = 0;
	int rc = arf_cell_volumes_list(v->e, v->cell, &vols, &nv, err, errlen);

	if (!rc)
		rc = arf_cell_servers_list(v->e, v->cell, &srvs, &ns, err, errlen);
	if (rc) {
		free(vols);
		return rc;
	}
	pthread_mutex_lock(&v->lock);
	free(v->vols);
	free(v->srvs);
	v->vols = vols;
	v->nvols = nv;
	v->srvs = srvs;
	v->nsrvs = ns;
	v->known = 1;
	pthread_mutex_unlock(&v->lock);
	return 0;
}

static void *view_main(void *arg)
{
	struct arf_cell_view *v = arg;
	struct arf_etcd_watch *w = NULL;
	char key[ARF_CELL_KEY_MAX], err[1024], last[1024] = "";

	snprintf(key, sizeof(key), ARF_CELL_PREFIX "%s/", v->cell);
	for (;;) {
		int rc = 0;
		if (!w)
			rc = arf_etcd_watch_start(v->e, key, 1, 0, on_event, v, &w, err, sizeof(err));
		pthread_mutex_lock(&v->lock);
		v->stale = 0; /* what changes from here on is seen (the watch is on) */
		pthread_mutex_unlock(&v->lock);
		if (!rc)
			rc = refresh(v, err, sizeof(err));
		if (rc && strcmp(err, last)) { /* each new reason once */
			say(v, 1, "cell '%s': cannot read the cell's records: %s; answering from "
			    "the last copy, trying again every second", v->cell, err);
			snprintf(last, sizeof(last), "%s", err);
		} else if (!rc && last[0]) {
			say(v, 2, "cell '%s': the cell's records read again", v->cell);
			last[0] = 0;
		}
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += 1;
		pthread_mutex_lock(&v->lock);
		if (rc) /* a failed watch or list: again in a second */
			while (!v->stop &&
			       pthread_cond_timedwait(&v->cond, &v->lock, &until) != ETIMEDOUT)
				;
		else /* current until something changes */
			while (!v->stop && !v->stale)
				pthread_cond_wait(&v->cond, &v->lock);
		int stop = v->stop;
		pthread_mutex_unlock(&v->lock);
		if (stop)
			break;
	}
	arf_etcd_watch_stop(w);
	return NULL;
}

int arf_cell_view_start(const char *endpoints, const struct arf_etcd_security *sec,
			const char *cell, arf_cell_log_fn log, void *log_arg,
			struct arf_cell_view **out, char *err, size_t errlen)
{
	struct arf_cell_view *v;
	int rc;

	if (!arf_cell_name_ok(cell)) {
		snprintf(err, errlen, "cell '%s': names are 1 to 63 of A-Z a-z 0-9 . _ -", cell);
		return -EINVAL;
	}
	if (!(v = calloc(1, sizeof(*v))))
		return -ENOMEM;
	if ((rc = arf_etcd_open(&v->e, endpoints, 2000, sec, err, errlen))) {
		free(v);
		return rc;
	}
	snprintf(v->cell, sizeof(v->cell), "%s", cell);
	v->log = log;
	v->log_arg = log_arg;
	pthread_mutex_init(&v->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&v->cond, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = pthread_create(&v->thread, NULL, view_main, v))) {
		snprintf(err, errlen, "cell view thread: %s", strerror(rc));
		pthread_cond_destroy(&v->cond);
		pthread_mutex_destroy(&v->lock);
		arf_etcd_close(v->e);
		free(v);
		return -rc;
	}
	*out = v;
	return 0;
}

int arf_cell_view_locate(struct arf_cell_view *v, const char *name, struct arf_cell_volume *vol,
			 struct arf_cell_server *srv)
{
	int rc = -ENOENT;

	memset(srv, 0, sizeof(*srv));
	pthread_mutex_lock(&v->lock);
	if (!v->known)
		rc = -EAGAIN;
	for (size_t i = 0; v->known && i < v->nvols; i++) {
		if (strcmp(v->vols[i].name, name))
			continue;
		*vol = v->vols[i];
		for (size_t j = 0; j < v->nsrvs; j++)
			if (!strcmp(v->srvs[j].id, vol->server))
				*srv = v->srvs[j];
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&v->lock);
	return rc;
}

int arf_cell_view_server(struct arf_cell_view *v, const char *id, struct arf_cell_server *srv)
{
	int rc = -ENOENT;

	memset(srv, 0, sizeof(*srv));
	pthread_mutex_lock(&v->lock);
	if (!v->known)
		rc = -EAGAIN;
	for (size_t j = 0; v->known && j < v->nsrvs; j++)
		if (!strcmp(v->srvs[j].id, id)) {
			*srv = v->srvs[j];
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&v->lock);
	return rc;
}

void arf_cell_view_stop(struct arf_cell_view *v)
{
	if (!v)
		return;
	pthread_mutex_lock(&v->lock);
	v->stop = 1;
	pthread_cond_broadcast(&v->cond);
	pthread_mutex_unlock(&v->lock);
	pthread_join(v->thread, NULL);
	pthread_cond_destroy(&v->cond);
	pthread_mutex_destroy(&v->lock);
	arf_etcd_close(v->e);
	free(v->vols);
	free(v->srvs);
	free(v);
}

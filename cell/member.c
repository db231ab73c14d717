/* SPDX-License-Identifier: MIT */
/*
 * Cell membership (see cell.h): a thread that holds a server's record in
 * etcd under a lease.  The states, changed in one place (member_main):
 *
 *   no lease ---grant + register---> registered ---keepalive fails--> unsure
 *      ^  (fails: retry every second)    ^                              |
 *      |                                 +------- keepalive works ------+
 *      +---- keepalive says the lease is gone (expired, etcd lost it) --+
 *
 * While unsure the same lease is renewed again and again rather than a new
 * one granted: a restarted etcd keeps its leases (and extends them), and
 * a second lease would find the record held by the first.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cell.h"
#include "etcd_int.h"

struct arf_cell_member {
	struct arf_etcd *e;
	char cell[ARF_CELL_NAME_MAX];
	struct arf_cell_server self;
	int ttl_s;
	arf_cell_log_fn log;
	void *log_arg;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* stop */
	int stop;                /* under lock */
	int registered;          /* under lock: the lease was renewed within its TTL */
	/* the volumes it serves (arf_cell_member_publish; under lock), each
	 * with where its record stands: */
	char (*vols)[ARF_CELL_NAME_MAX];
	int *vol_state;          /* VOL_* */
	size_t nvols;
	/* volumes removed, whose records go (arf_cell_member_withdraw; under lock) */
	char (*gone)[ARF_CELL_NAME_MAX];
	size_t ngone;
};

enum { VOL_TODO, VOL_OURS, VOL_OTHERS };

static void say(struct arf_cell_member *m, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(struct arf_cell_member *m, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!m->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	m->log(m->log_arg, level, msg);
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* wait ms unless stopped; returns the stop flag */
static int pause_ms(struct arf_cell_member *m, int64_t ms)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&m->lock);
	while (!m->stop && pthread_cond_timedwait(&m->cond, &m->lock, &until) != ETIMEDOUT)
		;
	int stop = m->stop;
	pthread_mutex_unlock(&m->lock);
	return stop;
}

static void set_registered(struct arf_cell_member *m, int r)
{
	pthread_mutex_lock(&m->lock);
	m->registered = r;
	pthread_mutex_unlock(&m->lock);
}

/* a lease and the record under it; 0, or -errno with err (no lease left) */
static int join(struct arf_cell_member *m, int64_t *lease, char *err, size_t errlen)
{
	int64_t id = 0;
	char why[256];
	int rc = arf_etcd_lease_grant(m->e, m->ttl_s, &id, NULL, err, errlen);

	if (rc)
		return rc;
	if ((rc = arf_cell_server_register(m->e, m->cell, &m->self, id, err, errlen))) {
		arf_etcd_lease_revoke(m->e, id, why, sizeof(why)); /* or it expires */
		return rc;
	}
	*lease = id;
	return 0;
}

/*
 * The records of the volumes it serves: created online and naming this
 * server if absent; set online again if they name it (a restart); left
 * alone, with a warning, if they name another server (whoever moved or
 * created the volume there decides, not this one).  Each volume once per
 * registration that works, retried while etcd fails.
 */
static void publish(struct arf_cell_member *m)
{
	char err[1024];

	for (size_t i = 0;; i++) {
		struct arf_cell_volume v;
		pthread_mutex_lock(&m->lock);
		int done = i >= m->nvols;
		int todo = !done && m->vol_state[i] == VOL_TODO;
		if (todo) {
			memset(&v, 0, sizeof(v));
			snprintf(v.name, sizeof(v.name), "%s", m->vols[i]);
		}
		pthread_mutex_unlock(&m->lock);
		if (done)
			return;
		if (!todo)
			continue;
		int rc = arf_cell_volume_read(m->e, m->cell, v.name, &v, err, sizeof(err));
		int state = VOL_TODO;
		if (rc == -ENOENT) {
			snprintf(v.server, sizeof(v.server), "%s", m->self.id);
			snprintf(v.state, sizeof(v.state), "%s", ARF_CELL_VOL_ONLINE);
			rc = arf_cell_volume_create(m->e, m->cell, &v, err, sizeof(err));
			if (!rc) {
				state = VOL_OURS;
				say(m, 2, "cell '%s': volume '%s' recorded on '%s'", m->cell, v.name,
				    m->self.id);
			}
		} else if (!rc && !strcmp(v.server, m->self.id)) {
			if (strcmp(v.state, ARF_CELL_VOL_ONLINE)) {
				snprintf(v.state, sizeof(v.state), "%s", ARF_CELL_VOL_ONLINE);
				rc = arf_cell_volume_update(m->e, m->cell, &v, err, sizeof(err));
			}
			if (!rc)
				state = VOL_OURS;
		} else if (!rc) {
			state = VOL_OTHERS;
			say(m, 1, "cell '%s': volume '%s' is recorded on server '%s' (%s), not on '%s': "
			    "its record is left alone", m->cell, v.name, v.server, v.state, m->self.id);
		}
		if (rc && rc != -ENOENT && rc != -ESTALE && rc != -EEXIST)
			say(m, 1, "cell '%s': volume '%s' not recorded yet: %s", m->cell, v.name, err);
		pthread_mutex_lock(&m->lock);
		/* TODO again after a race (EEXIST, ESTALE): the next round; the list
		 * may have been replaced meanwhile */
		if (i < m->nvols && !strcmp(m->vols[i], v.name))
			m->vol_state[i] = state;
		pthread_mutex_unlock(&m->lock);
	}
}

/* The records of removed volumes: deleted where they name this server. */
static void withdraw(struct arf_cell_member *m)
{
	char err[1024];

	for (;;) {
		struct arf_cell_volume v;
		pthread_mutex_lock(&m->lock);
		int any = m->ngone > 0;
		if (any) {
			memset(&v, 0, sizeof(v));
			snprintf(v.name, sizeof(v.name), "%s", m->gone[m->ngone - 1]);
		}
		int served = 0;
		for (size_t i = 0; any && i < m->nvols; i++)
			served |= !strcmp(m->vols[i], v.name);
		pthread_mutex_unlock(&m->lock);
		if (!any)
			return;
		int rc = served ? -ENOENT /* made again: its record stays */
				: arf_cell_volume_read(m->e, m->cell, v.name, &v, err, sizeof(err));
		if (!rc && !strcmp(v.server, m->self.id)) {
			rc = arf_cell_volume_delete(m->e, m->cell, &v, err, sizeof(err));
			if (!rc)
				say(m, 2, "cell '%s': volume '%s' removed from the cell", m->cell, v.name);
		} else if (!rc) {
			say(m, 1, "cell '%s': removed volume '%s' is recorded on server '%s': its "
			    "record is left alone", m->cell, v.name, v.server);
		}
		if (rc && rc != -ENOENT) {
			if (rc != -ESTALE)
				say(m, 1, "cell '%s': record of removed volume '%s' not deleted yet: %s",
				    m->cell, v.name, err);
			return; /* the next round tries again */
		}
		pthread_mutex_lock(&m->lock);
		if (m->ngone && !strcmp(m->gone[m->ngone - 1], v.name))
			m->ngone--;
		pthread_mutex_unlock(&m->lock);
	}
}

int arf_cell_member_withdraw(struct arf_cell_member *m, const char *name)
{
	if (!arf_cell_name_ok(name))
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	void *g = realloc(m->gone, (m->ngone + 1) * sizeof(*m->gone));
	if (!g) {
		pthread_mutex_unlock(&m->lock);
		return -ENOMEM;
	}
	m->gone = g;
	snprintf(m->gone[m->ngone++], sizeof(m->gone[0]), "%s", name); /* at the next renewal */
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/* At a clean stop: the records that name this server say offline. */
static void unpublish(struct arf_cell_member *m)
{
	char err[1024];

	for (size_t i = 0; i < m->nvols; i++) {
		struct arf_cell_volume v;
		if (m->vol_state[i] != VOL_OURS)
			continue;
		if (arf_cell_volume_read(m->e, m->cell, m->vols[i], &v, err, sizeof(err)) ||
		    strcmp(v.server, m->self.id))
			continue;
		snprintf(v.state, sizeof(v.state), "%s", ARF_CELL_VOL_OFFLINE);
		if (arf_cell_volume_update(m->e, m->cell, &v, err, sizeof(err)))
			say(m, 1, "cell '%s': volume '%s' left online in etcd: %s", m->cell, v.name,
			    err);
	}
}

static void *member_main(void *arg)
{
	struct arf_cell_member *m = arg;
	char err[1024], last[1024] = "";
	int64_t lease = 0, renewed = 0, period = m->ttl_s * 1000 / 3;

	period = period < 100 ? 100 : period > 5000 ? 5000 : period;
	for (;;) {
		int rc;
		if (!lease) {
			if (!(rc = join(m, &lease, err, sizeof(err)))) {
				renewed = now_ms();
				set_registered(m, 1);
				say(m, 2, "cell '%s': registered as '%s' (%s port %u) under lease %llx, "
				    "TTL %d s, at %s", m->cell, m->self.id, m->self.address, m->self.port,
				    (unsigned long long)lease, m->ttl_s, arf_etcd_endpoint(m->e));
				last[0] = 0;
				withdraw(m); /* first: a name made again is published after */
				publish(m);
			} else if (strcmp(err, last)) { /* each new reason once, not every second */
				/* another holder of the id, a refused user: errors until fixed */
				int fatal = rc == -EEXIST || rc == -EACCES || rc == -EPERM;
				say(m, fatal ? 0 : 1, "cell '%s': cannot register '%s': %s; "
				    "retrying every second (serving continues)", m->cell, m->self.id, err);
				snprintf(last, sizeof(last), "%s", err);
			}
			if (pause_ms(m, lease ? period : 1000))
				break;
			continue;
		}
		rc = arf_etcd_lease_keepalive(m->e, lease, NULL, err, sizeof(err));
		if (!rc) {
			if (last[0])
				say(m, 2, "cell '%s': etcd answers again; '%s' is still registered",
				    m->cell, m->self.id);
			last[0] = 0;
			renewed = now_ms();
			set_registered(m, 1);
			withdraw(m);
			publish(m); /* what is left to do: nothing, mostly */
		} else if (rc == -ENOENT) {
			say(m, 1, "cell '%s': the lease of '%s' is gone (%s); registering again",
			    m->cell, m->self.id, err);
			set_registered(m, 0);
			lease = 0;
			last[0] = 0;
			continue;
		} else {
			if (strcmp(err, last))
				say(m, 1, "cell '%s': cannot renew the lease of '%s': %s; retrying "
				    "(serving continues)", m->cell, m->self.id, err);
			snprintf(last, sizeof(last), "%s", err);
			if (now_ms() - renewed > m->ttl_s * 1000LL)
				set_registered(m, 0);
		}
		if (pause_ms(m, rc ? (period < 1000 ? period : 1000) : period))
			break;
	}
	if (lease)
		withdraw(m); /* a volume removed just before the stop */
	unpublish(m);
	if (lease && arf_etcd_lease_revoke(m->e, lease, err, sizeof(err)))
		say(m, 1, "cell '%s': could not revoke the lease of '%s' (its record goes when the "
		    "lease expires): %s", m->cell, m->self.id, err);
	else if (lease)
		say(m, 2, "cell '%s': '%s' left the cell (lease revoked)", m->cell, m->self.id);
	set_registered(m, 0);
	return NULL;
}

int arf_cell_member_start(const char *endpoints, const struct arf_etcd_security *sec,
			  const char *cell, const struct arf_cell_server *s,
			  int ttl_s, arf_cell_log_fn log, void *log_arg,
			  struct arf_cell_member **out, char *err, size_t errlen)
{
	struct arf_cell_member *m;
	int rc;

	if (!arf_cell_name_ok(cell) || !arf_cell_name_ok(s->id)) {
		snprintf(err, errlen, "cell '%s', server id '%s': names are 1 to 63 of A-Z a-z 0-9 . _ -",
			 cell, s->id);
		return -EINVAL;
	}
	if (ttl_s < 1) {
		snprintf(err, errlen, "cell lease TTL %d: must be at least 1 second", ttl_s);
		return -EINVAL;
	}
	if (!(m = calloc(1, sizeof(*m))))
		return -ENOMEM;
	unsigned timeout = (unsigned)ttl_s * 500;
	if ((rc = arf_etcd_open(&m->e, endpoints, timeout < 1000 ? 1000 : timeout > 5000 ? 5000 : timeout,
				sec, err, errlen))) {
		free(m);
		return rc;
	}
	snprintf(m->cell, sizeof(m->cell), "%s", cell);
	m->self = *s;
	m->ttl_s = ttl_s;
	m->log = log;
	m->log_arg = log_arg;
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cond, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = pthread_create(&m->thread, NULL, member_main, m))) {
		snprintf(err, errlen, "cell membership thread: %s", strerror(rc));
		pthread_cond_destroy(&m->cond);
		pthread_mutex_destroy(&m->lock);
		arf_etcd_close(m->e);
		free(m);
		return -rc;
	}
	*out = m;
	return 0;
}

int arf_cell_member_registered(struct arf_cell_member *m)
{
	pthread_mutex_lock(&m->lock);
	int r = m->registered;
	pthread_mutex_unlock(&m->lock);
	return r;
}

void arf_cell_member_stop(struct arf_cell_member *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = 1;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	arf_etcd_close(m->e);
	free(m->vols);
	free(m->vol_state);
	free(m->gone);
	free(m);
}

int arf_cell_member_publish(struct arf_cell_member *m, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!arf_cell_name_ok(names[i]))
			return -EINVAL;
	char (*vols)[ARF_CELL_NAME_MAX] = calloc(n ? n : 1, sizeof(*vols));
	int *state = calloc(n ? n : 1, sizeof(*state));
	if (!vols || !state) {
		free(vols);
		free(state);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		snprintf(vols[i], sizeof(vols[i]), "%s", names[i]);
	pthread_mutex_lock(&m->lock);
	/* a name published before keeps where its record stands (a volume
	 * made or removed republishes the list: the others' records need no
	 * new round, and a stop meanwhile still sets them offline) */
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < m->nvols; j++)
			if (!strcmp(vols[i], m->vols[j]))
				state[i] = m->vol_state[j];
		/* removed and made again before its record went: it stays */
		for (size_t j = 0; j < m->ngone;)
			if (!strcmp(vols[i], m->gone[j]))
				memmove(m->gone[j], m->gone[j + 1], (--m->ngone - j) * sizeof(*m->gone));
			else
				j++;
	}
	free(m->vols);
	free(m->vol_state);
	m->vols = vols;
	m->vol_state = state;
	m->nvols = n; /* published at the thread's next round */
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static int names_ok(const char *name, const char *to, char *err, size_t errlen)
{
	if (arf_cell_name_ok(name) && arf_cell_name_ok(to))
		return 0;
	snprintf(err, errlen, "bad volume or server name");
	return -EINVAL;
}

int arf_cell_member_move(struct arf_cell_member *m, const char *name, const char *to,
			 int64_t *version, int *sent, char *err, size_t errlen)
{
	struct arf_cell_volume v;
	int rc;

	*sent = 0;
	if ((rc = names_ok(name, to, err, errlen)) ||
	    (rc = arf_cell_volume_read(m->e, m->cell, name, &v, err, errlen)))
		return rc;
	if (strcmp(v.server, m->self.id)) {
		snprintf(err, errlen, "volume '%s' is recorded on server '%s', not on '%s'", name,
			 v.server, m->self.id);
		return -EREMOTE;
	}
	snprintf(v.server, sizeof(v.server), "%s", to);
	snprintf(v.state, sizeof(v.state), "%s", ARF_CELL_VOL_ONLINE);
	*sent = 1; /* from here on, a failure may hide a swap that happened */
	if ((rc = arf_cell_volume_update(m->e, m->cell, &v, err, errlen)))
		return rc;
	if (version)
		*version = v.version;
	say(m, 2, "cell '%s': volume '%s' moved to server '%s' (version %lld)", m->cell, name, to,
	    (long long)v.version);
	return 0;
}

void arf_cell_member_recheck(struct arf_cell_member *m, const char *name)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	for (size_t j = 0; j < m->nvols; j++)
		if (!strcmp(m->vols[j], name))
			m->vol_state[j] = VOL_TODO; /* read again at the next round */
	pthread_mutex_unlock(&m->lock);
}

int arf_cell_member_read(struct arf_cell_member *m, const char *name, struct arf_cell_volume *v,
			 char *err, size_t errlen)
{
	if (!m) {
		snprintf(err, errlen, "not in a cell");
		return -ENOENT;
	}
	return arf_cell_volume_read(m->e, m->cell, name, v, err, errlen);
}

const char *arf_cell_member_id(const struct arf_cell_member *m)
{
	return m ? m->self.id : "";
}

int arf_cell_member_place(struct arf_cell_member *m, const char *name, const char *to,
			  int64_t *version, int *sent, char *err, size_t errlen)
{
	struct arf_cell_volume v;
	int rc;

	*sent = 0;
	if ((rc = names_ok(name, to, err, errlen)))
		return rc;
	rc = arf_cell_volume_read(m->e, m->cell, name, &v, err, errlen);
	if (rc == -ENOENT) {
		memset(&v, 0, sizeof(v));
		snprintf(v.name, sizeof(v.name), "%s", name);
		snprintf(v.server, sizeof(v.server), "%s", to);
		snprintf(v.state, sizeof(v.state), "%s", ARF_CELL_VOL_ONLINE);
		*sent = 1;
		if ((rc = arf_cell_volume_create(m->e, m->cell, &v, err, errlen)))
			return rc;
		if (version)
			*version = v.version;
		say(m, 2, "cell '%s': volume '%s' recorded on server '%s'", m->cell, name, to);
		return 0;
	}
	if (rc)
		return rc;
	if (!strcmp(v.server, to)) {
		if (version)
			*version = v.version;
		return 0; /* there already */
	}
	return arf_cell_member_move(m, name, to, version, sent, err, errlen);
}

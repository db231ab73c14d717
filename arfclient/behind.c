/* SPDX-License-Identifier: MIT */
/*
 * libarf's COMMITs sent behind the writes, as the Linux NFS client commits
 * its unstable pages in the background while the writer goes on.
 *
 * Why.  The bytes of unstable writes kept for re-sending are bounded
 * (opts.unstable_max_mib, wlog.c): the write that reaches the bound sends
 * a COMMIT and waits for it, and a COMMIT waits for arfd's sync of
 * everything written before it.  On a disk that is 20-35 ms for every
 * 64 MiB: a 1 MiB sequential write through the mount, with arfd's data
 * directory on a disk, stalled about ten times a second, a third of the
 * run.  So when half the bound is kept a thread of the client's own sends
 * a COMMIT while the writes go on, and its answer drops what it covers; a
 * write waits only if it reaches the bound before that answer.
 *
 * What it leaves to the writer's own commits (fsync, close, the bound):
 * every report.  A re-send's failure waits for its file's next commit
 * (arf_wlog_error); a COMMIT here that fails leaves the writes kept, for
 * the next one to say, and this waits a second before it may be asked
 * again, so that a failing server is not sent a COMMIT per write (as
 * after one that drops nothing: writes kept under an earlier incarnation,
 * which the writer's next commit reports, requests.c commit).
 *
 * Its waits end when the client closes: the thread's cancel hook
 * (arf_set_thread_cancel) answers the stop, so that arf_close does not
 * wait for ever on a hard mount whose server is gone (the COMMIT cut
 * short leaves its writes kept, for the close's own commit); and it takes
 * no signals, which would cut its calls short otherwise.
 *
 * Layering: above requests.c (arf_v_commit_behind) only; the write paths
 * above it (volumes.c arf_write, async.c) call arf_behind_check after a
 * write was kept, and client.c stops the thread before its last commit.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "client_int.h"

#define BEHIND_FAIL_WAIT_MS 1000

struct arf_behind {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_t thread;
	int started, stop, kicked;
};

static int behind_stopped(void *arg)
{
	struct arf_behind *b = arg;
	return __atomic_load_n(&b->stop, __ATOMIC_ACQUIRE);
}

static void *behind_main(void *arg)
{
	arf_client *c = arg;
	struct arf_behind *b = c->behind;

	arf_set_thread_cancel(behind_stopped, b);
	pthread_mutex_lock(&b->mu);
	for (;;) {
		while (!b->kicked && !b->stop)
			pthread_cond_wait(&b->cond, &b->mu);
		if (b->stop)
			break;
		b->kicked = 0;
		pthread_mutex_unlock(&b->mu);
		/* failed, or dropped nothing (writes kept under an earlier
		 * incarnation, say): not again at once */
		int wait = arf_v_commit_behind(c) <= 0;
		pthread_mutex_lock(&b->mu);
		if (wait && !b->stop) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += BEHIND_FAIL_WAIT_MS / 1000;
			while (!b->stop && pthread_cond_timedwait(&b->cond, &b->mu, &ts) != ETIMEDOUT)
				;
		}
		arf_wlog_behind_done(c); /* the next crossing of half the bound asks again */
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

void arf_behind_check(arf_client *c)
{
	struct arf_behind *b = c->behind;

	if (!b || !c->wlog || !arf_wlog_behind_due(c))
		return;
	pthread_mutex_lock(&b->mu);
	if (!b->started && !b->stop) {
		pthread_attr_t at;
		sigset_t all, old;
		sigfillset(&all);
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, 256u << 10);
		pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread's, from birth */
		b->started = !pthread_create(&b->thread, &at, behind_main, c);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&at);
	}
	if (b->started) {
		b->kicked = 1;
		pthread_cond_signal(&b->cond);
	}
	pthread_mutex_unlock(&b->mu);
	if (!b->started)
		arf_wlog_behind_done(c); /* no thread: the bound's commit alone, as before */
}

int arf_behind_init(arf_client *c)
{
	struct arf_behind *b = calloc(1, sizeof(*b));
	pthread_condattr_t ca;

	if (!b)
		return -ENOMEM;
	pthread_mutex_init(&b->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cond, &ca);
	pthread_condattr_destroy(&ca);
	c->behind = b;
	return 0;
}

void arf_behind_free(arf_client *c)
{
	struct arf_behind *b = c->behind;

	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	__atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE); /* read by the cancel hook too */
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->mu);
	if (b->started)
		pthread_join(b->thread, NULL);
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cond);
	free(b);
	c->behind = NULL;
}

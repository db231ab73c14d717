/* SPDX-License-Identifier: MIT */
/*
 * Hard and soft mounts, as NFS has them.
 *
 * A hard mount (the default) waits for the server for ever: libarf
 * reconnects and sends the call again (with the same request id, which
 * arfd's reply cache recognises), so a cp or an rm -rf carries on across
 * an arfd restart.  As on NFS since Linux 2.6.25, only a fatal signal ends
 * such a wait: a handled SIGCHLD must not turn a read into EINTR.  A soft
 * mount gives up with EIO once the server has not answered for
 * timeo x (retrans + 1).
 *
 * How a fatal signal ends a wait.  The kernel waits for our reply to a
 * request it has handed us uninterruptibly once the first signal has come
 * (it sends FUSE_INTERRUPT for any signal, a handled one too, and then
 * waits on), so the process stays unkillable until we answer.  Each
 * worker thread notes the request it serves (cred.c); while libarf waits
 * on the server it asks should_cancel every 100 ms, which looks at the
 * caller in /proc: SIGKILL pending (a fatal signal becomes one for every
 * thread) or the process gone means the wait ends and the request is
 * answered EINTR.  A thread checks for itself, so this needs no free
 * thread to read FUSE_INTERRUPT, and works with every worker thread
 * waiting (requests the kernel has not handed out yet it cancels
 * itself); an interrupt that was read (fuse_req_interrupt_func) only
 * makes the thread look at once instead of every third time.  When the session
 * ends (unmount, SIGTERM) every wait ends too.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "arf_fuse.h"

/* The request this worker thread serves. */
struct current {
	struct arf_fuse *fs;
	int in_request;          /* 0: outside a request (only the session counts) */
	pid_t pid;               /* the caller's thread id; 0: the kernel's own request */
	unsigned ticks;
	int interrupted;         /* FUSE_INTERRUPT came for it (atomic: set by another thread) */
	int (*also)(void *);     /* arf_fuse_wait_also: another reason to end a wait */
	void *also_arg;
};
static __thread struct current cur;

int arf_fuse_caller_killed(pid_t pid)
{
	char path[64], line[256];
	int killed = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT || errno == ESRCH;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long mask;
		if (!strncmp(line, "State:", 6) && (strchr(line, 'Z') || strchr(line, 'X')))
			killed = 1;
		if ((!strncmp(line, "SigPnd:", 7) || !strncmp(line, "ShdPnd:", 7)) &&
		    sscanf(line + 7, "%llx", &mask) == 1 && (mask & (1ull << (SIGKILL - 1))))
			killed = 1;
	}
	fclose(f);
	return killed;
}

static int should_cancel(void *arg)
{
	(void)arg;
	if (cur.fs && (__atomic_load_n(&cur.fs->se_over, __ATOMIC_ACQUIRE) ||
		       (cur.fs->se && fuse_session_exited(cur.fs->se))))
		return 1;
	if (cur.also && cur.also(cur.also_arg))
		return 1;
	if (!cur.in_request || cur.pid <= 0)
		return 0;
	if (!__atomic_load_n(&cur.interrupted, __ATOMIC_RELAXED) && ++cur.ticks % 3)
		return 0;
	return arf_fuse_caller_killed(cur.pid);
}

/* libfuse read a FUSE_INTERRUPT for the request (any signal): look now. */
static void on_interrupt(fuse_req_t req, void *data)
{
	(void)req;
	__atomic_store_n(&((struct current *)data)->interrupted, 1, __ATOMIC_RELAXED);
}

void arf_fuse_wait_for(fuse_req_t req)
{
	cur.fs = arf_fuse_of(req);
	cur.in_request = 1;
	cur.pid = fuse_req_ctx(req)->pid;
	cur.ticks = 0;
	cur.also = NULL;
	__atomic_store_n(&cur.interrupted, 0, __ATOMIC_RELAXED);
	fuse_req_interrupt_func(req, on_interrupt, &cur);
	arf_set_thread_cancel(should_cancel, NULL);
}

void arf_fuse_wait_also(int (*also)(void *), void *arg)
{
	cur.also = also;
	cur.also_arg = arg;
}

void arf_fuse_wait_session(struct arf_fuse *fs)
{
	cur.fs = fs;
	cur.in_request = 0;
	cur.pid = 0;
	cur.also = NULL;
	arf_set_thread_cancel(should_cancel, NULL);
}

void arf_fuse_wait_opts(const struct arf_fuse_opts *o, struct arf_client_opts *co)
{
	uint32_t timeo_ms = o->timeo * 100u;

	co->timeout_ms = timeo_ms;
	if (!o->soft) {
		co->reconnect_ms = ARF_WAIT_FOREVER;
		return;
	}
	/* the first try waits timeo; each of retrans more (on a new
	 * connection) timeo again; at least one reconnection is tried */
	uint64_t ms = (uint64_t)timeo_ms * o->retrans;
	co->reconnect_ms = ms == 0 ? 1 : ms >= ARF_WAIT_FOREVER ? ARF_WAIT_FOREVER - 1 : (uint32_t)ms;
}

/* SPDX-License-Identifier: MIT */
/*
 * libarf-fio.so — a fio external ioengine that drives libarf directly (no
 * FUSE, no kernel): reads and writes go through arf_read / arf_write on one
 * arf_client per fio job.
 *
 *   fio --ioengine=external:/path/libarf-fio.so --arf_url=arf://127.0.0.1:PORT/
 *       --filename=dir/file --size=256m --rw=randread --bs=4k --iodepth=16 ...
 *
 * The file name is a path inside the export; the file is created when
 * missing.  Reads and writes go through libarf's asynchronous API on one
 * queue of iodepth: queue takes I/Os, commit or the next getevents submits
 * them together (their one-sided reads go in one round), getevents reaps
 * completions on fio's own thread, which reads the connection while it
 * waits -- no thread per I/O in flight.  fsync runs on fio's thread once
 * nothing is in flight.
 *
 * Options: arf_url (required), arf_spin_us (client polling, default
 * libarf's), arf_requests_only (1 = no one-sided reads), arf_stats_file
 * (append the client's counters as one JSON line at the end of the job).
 *
 * Built against the headers of the fio source tree the benchmark uses (the
 * same version as Debian's fio); see bench/run.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fio.h"
#include "optgroup.h"

#include <arf.h>

struct arf_fio_opts {
	void *pad; /* fio: ->off1 must not be 0 */
	char *url;
	unsigned int spin_us;
	unsigned int requests_only;
	char *stats_file;
};

static struct fio_option options[] = {
	{
		.name = "arf_url",
		.lname = "ARF URL",
		.type = FIO_OPT_STR_STORE,
		.off1 = offsetof(struct arf_fio_opts, url),
		.help = "arf://HOST:PORT/ or arf+shm:///?socket=SOCK",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "arf_spin_us",
		.lname = "ARF client spin",
		.type = FIO_OPT_INT,
		.off1 = offsetof(struct arf_fio_opts, spin_us),
		.def = "50",
		.help = "microseconds to poll for a reply before sleeping",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "arf_requests_only",
		.lname = "ARF requests only",
		.type = FIO_OPT_BOOL,
		.off1 = offsetof(struct arf_fio_opts, requests_only),
		.def = "0",
		.help = "no one-sided reads: every read is a request",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = "arf_stats_file",
		.lname = "ARF stats file",
		.type = FIO_OPT_STR_STORE,
		.off1 = offsetof(struct arf_fio_opts, stats_file),
		.help = "append the client's counters as JSON here at the end",
		.category = FIO_OPT_C_ENGINE,
		.group = FIO_OPT_G_INVALID,
	},
	{
		.name = NULL,
	},
};

struct arf_fh {
	uint64_t ino;
	uint32_t gen;
};

struct arf_fio {
	arf_client *c;
	arf_queue *q;             /* iodepth operations in flight */
	struct arf_aio *aios;     /* one per io_u, by io_u->index */
	struct arf_aio **queued;  /* taken by queue, not yet submitted (commit does) */
	struct io_u **queued_io;
	unsigned nqueued;
	unsigned inflight;        /* submitted, not reaped */
	unsigned depth;
	struct arf_aio **events;  /* handed to fio by getevents */
};

/* fsync, and anything not a read or a write, runs on fio's thread. */
static void do_sync(struct arf_fio *a, struct io_u *io_u)
{
	struct arf_fh *fh = io_u->file->engine_data;
	int rc = -EINVAL;

	if (io_u->ddir == DDIR_SYNC || io_u->ddir == DDIR_DATASYNC)
		rc = arf_fsync(a->c, fh->ino, fh->gen);
	io_u->error = rc < 0 ? (rc >= -4095 ? -rc : EIO) : 0;
}

static enum fio_q_status arf_fio_queue(struct thread_data *td, struct io_u *io_u)
{
	struct arf_fio *a = td->io_ops_data;
	struct arf_fh *fh = io_u->file->engine_data;

	fio_ro_check(td, io_u);
	if (io_u->ddir != DDIR_READ && io_u->ddir != DDIR_WRITE) {
		/* ordered after what is in flight, as libaio's engine does */
		if (a->nqueued || a->inflight)
			return FIO_Q_BUSY;
		do_sync(a, io_u);
		return FIO_Q_COMPLETED;
	}
	if (a->nqueued + a->inflight >= a->depth)
		return FIO_Q_BUSY;
	struct arf_aio *io = &a->aios[io_u->index];
	*io = (struct arf_aio){ .op = io_u->ddir == DDIR_READ ? ARF_AIO_READ : ARF_AIO_WRITE,
				.ino = fh->ino, .gen = fh->gen, .off = io_u->offset,
				.buf = io_u->xfer_buf, .len = io_u->xfer_buflen, .user = io_u };
	a->queued[a->nqueued] = io;
	a->queued_io[a->nqueued++] = io_u;
	return FIO_Q_QUEUED;
}

/* Submit what queue took, all at once: libarf gathers their one-sided
 * reads into one round. */
static int submit_queued(struct thread_data *td, struct arf_fio *a)
{
	if (!a->nqueued)
		return 0;
	int n = arf_submit(a->q, a->queued, a->nqueued);
	if (n < 0)
		return n == -EAGAIN ? 0 : n;
	if (fio_fill_issue_time(td)) {
		struct timespec now;
		fio_gettime(&now, NULL);
		for (int i = 0; i < n; i++) {
			memcpy(&a->queued_io[i]->issue_time, &now, sizeof(now));
			io_u_queued(td, a->queued_io[i]);
		}
	}
	io_u_mark_submit(td, (unsigned)n);
	a->inflight += (unsigned)n;
	a->nqueued -= (unsigned)n;
	memmove(a->queued, a->queued + n, a->nqueued * sizeof(*a->queued));
	memmove(a->queued_io, a->queued_io + n, a->nqueued * sizeof(*a->queued_io));
	return 0;
}

/* fio commits after every I/O it queues (iodepth_batch 1) and reaps one
 * at a time (iodepth_batch_complete_max 1).  With nothing in flight the
 * I/O goes at once; else it waits until fio's getevents finds nothing
 * finished, so that the I/Os queued meanwhile go together: one round for
 * all their one-sided reads rather than one each. */
static int arf_fio_commit(struct thread_data *td)
{
	struct arf_fio *a = td->io_ops_data;

	if (a->inflight)
		return 0;
	return submit_queued(td, a);
}

static int arf_fio_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			     const struct timespec *t)
{
	struct arf_fio *a = td->io_ops_data;
	int timeout = -1;

	if (t)
		timeout = (int)(t->tv_sec * 1000 + t->tv_nsec / 1000000);
	if (max > a->depth)
		max = a->depth;
	/* what has finished already (fio often asks for one at a time)... */
	int n = arf_reap(a->q, a->events, 0, max, 0);
	if (n < 0)
		return n;
	if ((unsigned)n < min) {
		/* ...and only when that is not enough, what fio queued since the
		 * last wait goes, together, and we wait */
		int rc = submit_queued(td, a);
		if (rc)
			return rc;
		int m = arf_reap(a->q, a->events + n, min - (unsigned)n, max - (unsigned)n, timeout);
		if (m < 0)
			return m;
		n += m;
	}
	for (int i = 0; i < n; i++) {
		struct arf_aio *io = a->events[i];
		struct io_u *io_u = io->user;
		if (io->res < 0) {
			io_u->error = io->res >= -4095 ? (int)-io->res : EIO;
			io_u->resid = io_u->xfer_buflen;
		} else {
			io_u->error = 0;
			io_u->resid = io_u->xfer_buflen - (unsigned long long)io->res;
		}
	}
	a->inflight -= (unsigned)n;
	return n;
}

static struct io_u *arf_fio_event(struct thread_data *td, int event)
{
	struct arf_fio *a = td->io_ops_data;
	return a->events[event]->user;
}

static int arf_fio_init(struct thread_data *td)
{
	struct arf_fio_opts *o = td->eo;
	struct arf_client_opts co;
	char err[256] = "";
	struct arf_fio *a;

	if (!o->url) {
		log_err("arf: arf_url is required\n");
		return 1;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return 1;
	td->io_ops_data = a;
	arf_client_opts_init(&co);
	co.spin_us = o->spin_us;
	co.one_sided = o->requests_only ? 0 : 1;
	int rc = arf_connect(o->url, &co, &a->c, err, sizeof(err));
	if (rc) {
		log_err("arf: connect %s: %s\n", o->url, err[0] ? err : arf_strerror(rc));
		return 1;
	}
	a->depth = td->o.iodepth ? td->o.iodepth : 1;
	if ((rc = arf_queue_create(a->c, a->depth, &a->q))) {
		log_err("arf: queue of %u: %s\n", a->depth, arf_strerror(rc));
		return 1;
	}
	/* io_u->index runs below the number of io_us fio makes: at most
	 * iodepth plus a few; room for twice that */
	unsigned nio = 2 * a->depth + 16;
	a->aios = calloc(nio, sizeof(*a->aios));
	a->queued = calloc(a->depth, sizeof(*a->queued));
	a->queued_io = calloc(a->depth, sizeof(*a->queued_io));
	a->events = calloc(a->depth, sizeof(*a->events));
	if (!a->aios || !a->queued || !a->queued_io || !a->events)
		return 1;
	return 0;
}

static void write_stats(struct arf_fio *a, const char *path)
{
	/* room for a library whose struct grew since this file was compiled */
	static union {
		struct arf_client_stats s;
		char pad[sizeof(struct arf_client_stats) + 4096];
	} u;
	FILE *f = fopen(path, "a");
	if (!f)
		return;
	arf_stats(a->c, &u.s);
	fprintf(f,
		"{\"transport\":\"%s\",\"one_sided_reads\":%" PRIu64 ",\"one_sided_bytes\":%" PRIu64
		",\"rounds\":%" PRIu64 ",\"requests\":%" PRIu64 ",\"execs\":%" PRIu64
		",\"fallbacks\":%" PRIu64 ",\"retries\":%" PRIu64 "}\n",
		arf_transport(a->c), u.s.one_sided_reads, u.s.one_sided_bytes, u.s.rounds,
		u.s.requests, u.s.execs, u.s.fallbacks, u.s.retries);
	fclose(f);
}

static void arf_fio_cleanup(struct thread_data *td)
{
	struct arf_fio *a = td->io_ops_data;
	struct arf_fio_opts *o = td->eo;

	if (!a)
		return;
	arf_queue_destroy(a->q); /* waits for what is still in flight */
	if (o->stats_file && a->c)
		write_stats(a, o->stats_file);
	arf_close(a->c);
	free(a->aios);
	free(a->queued);
	free(a->queued_io);
	free(a->events);
	free(a);
	td->io_ops_data = NULL;
}

/* resolve dir/.../name, creating the file (not its directories) if missing */
static int arf_fio_open(struct thread_data *td, struct fio_file *f)
{
	struct arf_fio *a = td->io_ops_data;
	struct arf_stat st;
	char path[4096];
	struct arf_fh *fh;

	snprintf(path, sizeof(path), "%s%s", f->file_name[0] == '/' ? "" : "/", f->file_name);
	int rc = arf_resolve(a->c, path, &st);
	if (rc == -ENOENT) {
		char *slash = strrchr(path, '/');
		struct arf_stat dir;
		*slash = 0;
		rc = arf_resolve(a->c, path[0] ? path : "/", &dir);
		if (!rc)
			rc = arf_create(a->c, dir.ino, dir.gen, slash + 1, 0644, 0, &st);
		*slash = '/';
	}
	if (rc) {
		log_err("arf: open %s: %s\n", path, arf_strerror(rc));
		td_verror(td, rc < 0 && rc >= -4095 ? -rc : EIO, "arf_open");
		return 1;
	}
	fh = malloc(sizeof(*fh));
	if (!fh)
		return 1;
	fh->ino = st.ino;
	fh->gen = st.gen;
	f->engine_data = fh;
	return 0;
}

static int arf_fio_close(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	free(f->engine_data);
	f->engine_data = NULL;
	return 0;
}

struct ioengine_ops ioengine = {
	.name = "arf",
	.version = FIO_IOOPS_VERSION,
	.init = arf_fio_init,
	.queue = arf_fio_queue,
	.commit = arf_fio_commit,
	.getevents = arf_fio_getevents,
	.event = arf_fio_event,
	.cleanup = arf_fio_cleanup,
	.open_file = arf_fio_open,
	.close_file = arf_fio_close,
	.flags = FIO_DISKLESSIO | FIO_NOEXTEND | FIO_NODISKUTIL,
	.options = options,
	.option_struct_size = sizeof(struct arf_fio_opts),
};

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
 * missing.  At iodepth 1 each I/O runs on fio's thread; at a larger depth a
 * pool of iodepth worker threads shares the client (libarf is thread-safe
 * and pipelines requests), so iodepth I/Os are in flight at once.
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
#include <pthread.h>
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
	/* worker pool (iodepth > 1) */
	pthread_t *threads;
	unsigned nthreads;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	struct io_u **queue; /* submitted, not yet taken */
	unsigned qhead, qtail, qlen, qcap;
	struct io_u **completed; /* finished, not yet reaped */
	unsigned ncompleted;
	struct io_u **events; /* handed to fio by getevents */
	int stop;
};

static void do_io(struct arf_fio *a, struct io_u *io_u)
{
	struct arf_fh *fh = io_u->file->engine_data;
	ssize_t n;

	if (io_u->ddir == DDIR_READ)
		n = arf_read(a->c, fh->ino, fh->gen, io_u->offset, io_u->xfer_buf, io_u->xfer_buflen);
	else if (io_u->ddir == DDIR_WRITE)
		n = arf_write(a->c, fh->ino, fh->gen, io_u->offset, io_u->xfer_buf, io_u->xfer_buflen);
	else if (io_u->ddir == DDIR_SYNC || io_u->ddir == DDIR_DATASYNC)
		n = arf_fsync(a->c, fh->ino, fh->gen);
	else
		n = -EINVAL;
	if (n < 0) {
		io_u->error = n >= -4095 ? (int)-n : EIO;
		io_u->resid = io_u->xfer_buflen;
	} else {
		io_u->error = 0;
		if (io_u->ddir == DDIR_READ || io_u->ddir == DDIR_WRITE)
			io_u->resid = io_u->xfer_buflen - (unsigned long long)n;
	}
}

static void *worker(void *arg)
{
	struct arf_fio *a = arg;
	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (!a->qlen && !a->stop)
			pthread_cond_wait(&a->work, &a->lock);
		if (a->stop)
			break;
		struct io_u *io_u = a->queue[a->qhead];
		a->qhead = (a->qhead + 1) % a->qcap;
		a->qlen--;
		pthread_mutex_unlock(&a->lock);
		do_io(a, io_u);
		pthread_mutex_lock(&a->lock);
		a->completed[a->ncompleted++] = io_u;
		pthread_cond_signal(&a->done);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

static enum fio_q_status arf_fio_queue(struct thread_data *td, struct io_u *io_u)
{
	struct arf_fio *a = td->io_ops_data;

	fio_ro_check(td, io_u);
	if (!a->nthreads) {
		do_io(a, io_u);
		return FIO_Q_COMPLETED;
	}
	pthread_mutex_lock(&a->lock);
	if (a->qlen == a->qcap) {
		pthread_mutex_unlock(&a->lock);
		return FIO_Q_BUSY;
	}
	a->queue[a->qtail] = io_u;
	a->qtail = (a->qtail + 1) % a->qcap;
	a->qlen++;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->lock);
	return FIO_Q_QUEUED;
}

static int arf_fio_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			     const struct timespec *t)
{
	struct arf_fio *a = td->io_ops_data;
	unsigned n;

	(void)t;
	pthread_mutex_lock(&a->lock);
	while (a->ncompleted < min)
		pthread_cond_wait(&a->done, &a->lock);
	n = a->ncompleted < max ? a->ncompleted : max;
	memcpy(a->events, a->completed, n * sizeof(*a->events));
	memmove(a->completed, a->completed + n, (a->ncompleted - n) * sizeof(*a->completed));
	a->ncompleted -= n;
	pthread_mutex_unlock(&a->lock);
	return (int)n;
}

static struct io_u *arf_fio_event(struct thread_data *td, int event)
{
	struct arf_fio *a = td->io_ops_data;
	return a->events[event];
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
	arf_client_opts_init(&co);
	co.spin_us = o->spin_us;
	co.one_sided = o->requests_only ? 0 : 1;
	int rc = arf_connect(o->url, &co, &a->c, err, sizeof(err));
	if (rc) {
		log_err("arf: connect %s: %s\n", o->url, err[0] ? err : arf_strerror(rc));
		free(a);
		return 1;
	}
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_cond_init(&a->done, NULL);
	unsigned depth = td->o.iodepth ? td->o.iodepth : 1;
	a->qcap = depth;
	a->queue = calloc(depth, sizeof(*a->queue));
	a->completed = calloc(depth, sizeof(*a->completed));
	a->events = calloc(depth, sizeof(*a->events));
	if (!a->queue || !a->completed || !a->events)
		return 1;
	td->io_ops_data = a;
	if (depth > 1) {
		a->threads = calloc(depth, sizeof(*a->threads));
		if (!a->threads)
			return 1;
		for (unsigned i = 0; i < depth; i++) {
			if (pthread_create(&a->threads[i], NULL, worker, a))
				return 1;
			a->nthreads++;
		}
	}
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
	if (a->nthreads) {
		pthread_mutex_lock(&a->lock);
		a->stop = 1;
		pthread_cond_broadcast(&a->work);
		pthread_mutex_unlock(&a->lock);
		for (unsigned i = 0; i < a->nthreads; i++)
			pthread_join(a->threads[i], NULL);
	}
	if (o->stats_file)
		write_stats(a, o->stats_file);
	arf_close(a->c);
	free(a->threads);
	free(a->queue);
	free(a->completed);
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
	.getevents = arf_fio_getevents,
	.event = arf_fio_event,
	.cleanup = arf_fio_cleanup,
	.open_file = arf_fio_open,
	.close_file = arf_fio_close,
	.flags = FIO_DISKLESSIO | FIO_NOEXTEND | FIO_NODISKUTIL,
	.options = options,
	.option_struct_size = sizeof(struct arf_fio_opts),
};

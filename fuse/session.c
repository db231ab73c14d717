/* SPDX-License-Identifier: MIT */
/*
 * One mount from start to end: connect to arfd (a main client whose libarf
 * caches follow the ac* options, and an uncached one for close-to-open
 * revalidation), resolve the export path to the root directory, create the
 * libfuse low-level session with the operations table, mount (always
 * noatime and default_permissions: the kernel checks permissions, the
 * server checks again with the caller's credentials), negotiate 1 MiB
 * reads and writes, report to the waiting parent, and serve with
 * fuse_session_loop_mt until unmounted or signalled.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arf_fuse.h"

/* Workers kept idle, and the most at once.  A request waiting on a dead
 * server (a hard mount, or a volume behind a mount point whose server
 * died) holds its worker until the server is back or the caller is
 * killed, so the most is far above what the live part of the tree needs:
 * 64 processes waiting on a dead volume once took all of 32, and `ls`
 * anywhere else waited with them (tests/cell
 * test_dead_volume_blocks_only_itself).  Such a worker costs a thread's
 * stack and the first page of libfuse's buffer. */
#define IDLE_THREADS 32
#define MAX_THREADS 1024

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct arf_fuse *fs = userdata;

	conn->max_write = fs->opts.wsize & ~4095u;
	conn->max_read = fs->opts.rsize & ~4095u;
	conn->max_readahead = ARF_FUSE_MAX_IO;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->time_gran = 1;
	unsigned want = FUSE_CAP_ASYNC_READ | FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_AUTO_INVAL_DATA |
			FUSE_CAP_READDIRPLUS | FUSE_CAP_PARALLEL_DIROPS |
			FUSE_CAP_ASYNC_DIO | FUSE_CAP_HANDLE_KILLPRIV;
	/* readdirplus is the kernel's choice (READDIRPLUS_AUTO, which libfuse
	 * 3.14 asks for by default, so this only says it): the first request
	 * of a pass, and any after lookups of the directory's names, are
	 * readdirplus; the rest plain readdir.  The kernel asks with a 1 MiB
	 * buffer, so the first request of a pass carries ~6,500 names with
	 * their attributes (bench/README, "Listings through the mount") */
	want |= FUSE_CAP_READDIRPLUS_AUTO;
	/* HANDLE_KILLPRIV: the server clears set-id bits on write, truncate and
	 * chown (ops/), as local filesystems do.  libfuse 3.14 cannot say
	 * HANDLE_KILLPRIV_V2, which also spares every write the kernel's
	 * GETXATTR of security.capability: kernelio.c adds it to the INIT
	 * reply.  A kernel without it sends its own "remove privileges" as a
	 * chmod from the writer, which ops/setattr.c accepts from anyone who
	 * may write the file (NFS clients drop that chmod instead) */
	if (fs->opts.writeback)
		want |= FUSE_CAP_WRITEBACK_CACHE;
	conn->want |= want & conn->capable;
	arf_fuse_locks_want(fs, conn); /* locks at arfd, across mounts (locks.c) */
	arf_fuse_xattr_want(fs, conn); /* ACLs enforced by the kernel (xattr.c) */
	if (fs->opts.writeback && !(conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		arf_fuse_log(FUSE_LOG_WARNING, "arf-fuse: the kernel has no writeback cache");
}

static void op_destroy(void *userdata)
{
	arf_fuse_wait_session(userdata); /* a hard wait ends with the session */
	arf_fuse_locks_fini(userdata);
	arf_fuse_hidden_cleanup(userdata);
}

static void arf_log_sink(void *ctx, int level, const char *msg)
{
	struct arf_fuse *fs = ctx;
	if (level <= FUSE_LOG_WARNING || fs->opts.debug)
		arf_fuse_log(level, "libarf: %s", msg);
}

/* fsname for -o: commas and backslashes escaped for libfuse's parser. */
static int escape_opt(const char *in, char *out, size_t cap)
{
	size_t j = 0;
	for (size_t i = 0; in[i]; i++) {
		if (j + 3 > cap)
			return -ENAMETOOLONG;
		if (in[i] == ',' || in[i] == '\\')
			out[j++] = '\\';
		out[j++] = in[i];
	}
	out[j] = 0;
	return 0;
}

/* Readahead as large as a read request: the bdi default is 128 KiB.  Best
 * effort, found through mountinfo (stat() on the mount would wait for the
 * session loop that has not started). */
static void set_readahead(const char *mountpoint)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[8192], dev[32] = "";

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned id, parent;
		char mdev[32], root[4096], mp[4096];
		if (sscanf(line, "%u %u %31s %4095s %4095s", &id, &parent, mdev, root, mp) == 5 &&
		    !strcmp(mp, mountpoint))
			snprintf(dev, sizeof(dev), "%s", mdev); /* the last one wins: ours */
	}
	fclose(f);
	if (!dev[0])
		return;
	char path[128];
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%u\n", ARF_FUSE_MAX_IO / 1024);
		fclose(f);
	}
}

static int connect_clients(struct arf_fuse *fs, char *err, size_t errlen)
{
	struct arf_client_opts co, cfo;
	int rc;

	arf_client_opts_init(&co);
	arf_fuse_wait_opts(&fs->opts, &co); /* hard or soft, timeo, retrans */
	if (fs->opts.secret[0])
		co.secret_file = fs->opts.secret;
	if (fs->opts.spin_set)
		co.spin_us = fs->opts.spin_us;
	if (!fs->opts.ac) {
		co.attr_timeout_ms = 0;
		co.entry_timeout_ms = 0;
	}
	fs->cache_ms = co.attr_timeout_ms > co.entry_timeout_ms ? co.attr_timeout_ms
								 : co.entry_timeout_ms;
	rc = arf_connect(fs->opts.url, &co, &fs->c, err, errlen);
	if (rc)
		return rc;
	if (!fs->cache_ms) {
		fs->cf = fs->c;
		return 0;
	}
	cfo = co;
	cfo.attr_timeout_ms = 0;
	cfo.entry_timeout_ms = 0;
	return arf_connect(fs->opts.url, &cfo, &fs->cf, err, errlen);
}

static int find_root(struct arf_fuse *fs, struct arf_stat *root, char *err, size_t errlen)
{
	struct arf_url *u = calloc(1, sizeof(*u));
	int rc = -ENOMEM;

	if (!u)
		goto out;
	rc = arf_url_parse(fs->opts.url, u, err, errlen);
	if (rc)
		goto out;
	rc = arf_resolve(fs->c, u->path, root);
	if (rc) {
		snprintf(err, errlen, "%.300s on the server: %.100s", u->path, arf_strerror(rc));
		goto out;
	}
	if (!S_ISDIR(root->mode)) {
		snprintf(err, errlen, "%.400s on the server: not a directory", u->path);
		rc = -ENOTDIR;
	}
out:
	free(u);
	return rc;
}

static struct fuse_session *new_session(struct arf_fuse *fs, char *err, size_t errlen)
{
	static struct fuse_lowlevel_ops ops;
	char fsname[2 * sizeof(fs->opts.fsname)], opts[sizeof(fsname) + 512];
	struct fuse_session *se;

	memset(&ops, 0, sizeof(ops));
	ops.init = op_init;
	ops.destroy = op_destroy;
	arf_fuse_ops_node(&ops);
	arf_fuse_ops_ns(&ops);
	arf_fuse_ops_file(&ops);
	arf_fuse_ops_dir(&ops);
	arf_fuse_ops_xattr(&ops);
	arf_fuse_ops_ioctl(&ops);
	arf_fuse_ops_locks(&ops);
	arf_fuse_ops_copy(&ops);
	arf_fuse_ops_space(&ops);

	if (escape_opt(fs->opts.fsname[0] ? fs->opts.fsname : fs->opts.url, fsname,
		       sizeof(fsname))) {
		snprintf(err, errlen, "fsname too long");
		return NULL;
	}
	snprintf(opts, sizeof(opts),
		 "subtype=arf,fsname=%s,default_permissions,noatime,max_read=%u%s%s%s",
		 fsname, fs->opts.rsize & ~4095u, fs->opts.allow_other > 0 ? ",allow_other" : "",
		 fs->opts.kernel[0] ? "," : "", fs->opts.kernel);
	char *argv[] = { "arf-fuse", "-o", opts, fs->opts.debug ? "-d" : NULL, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(fs->opts.debug ? 4 : 3, argv);
	se = fuse_session_new(&args, &ops, sizeof(ops), fs);
	fuse_opt_free_args(&args);
	if (!se)
		snprintf(err, errlen, "cannot create the FUSE session (options: %.400s)", opts);
	return se;
}

int arf_fuse_run(struct arf_fuse_opts *o, int ready_fd)
{
	struct arf_fuse *fs = calloc(1, sizeof(*fs));
	struct fuse_loop_config *cfg = NULL;
	struct arf_stat root;
	char err[512] = "", mnt[PATH_MAX];
	int rc = -ENOMEM, mounted = 0, sig = 0;

	if (!fs) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	fs->opts = *o;
	if (!realpath(o->mountpoint, mnt)) {
		rc = -errno;
		snprintf(err, sizeof(err), "mount point %.300s: %.100s", o->mountpoint, strerror(errno));
		goto fail;
	}
	if (fs->opts.allow_other < 0)
		fs->opts.allow_other = geteuid() == 0;
	arf_set_log_func(arf_log_sink, fs);
	rc = connect_clients(fs, err, sizeof(err));
	if (rc)
		goto fail;
	rc = find_root(fs, &root, err, sizeof(err));
	if (rc)
		goto fail;
	rc = arf_fuse_nodes_init(fs, &root);
	if (rc || (rc = arf_fuse_names_init(fs))) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	rc = -EIO;
	fs->se = new_session(fs, err, sizeof(err));
	if (!fs->se)
		goto fail;
	if (fuse_set_signal_handlers(fs->se)) {
		snprintf(err, sizeof(err), "cannot install signal handlers");
		goto fail;
	}
	sig = 1;
	if (fuse_session_mount(fs->se, mnt)) {
		snprintf(err, sizeof(err), "cannot mount on %.400s (see the message above)", mnt);
		goto fail;
	}
	mounted = 1;
	rc = arf_fuse_kernel_io(fs);
	if (rc) {
		snprintf(err, sizeof(err), "cannot take the session's I/O: %s", strerror(-rc));
		goto fail;
	}
	set_readahead(mnt);
	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	fuse_loop_cfg_set_max_threads(cfg, MAX_THREADS);
	/* idle workers are kept, up to 32: with 8, queue depth 16 made
	 * libfuse start and end ~250 threads a second (a worker that finishes
	 * above the idle count exits), and 4 KiB random reads at depth 16 ran
	 * at 28k/s against 33-35k/s with every worker kept (arf-fuse CPU 42
	 * against 32 us a read) */
	fuse_loop_cfg_set_idle_threads(cfg, IDLE_THREADS);
	fuse_loop_cfg_set_clone_fd(cfg, 0);

	arf_fuse_report(ready_fd, 0, NULL);
	ready_fd = -1;
	if (!o->foreground)
		arf_fuse_detach(o->debug);
	rc = arf_fuse_aio_start(fs);
	if (rc)
		arf_fuse_log(FUSE_LOG_WARNING, "arf-fuse: no asynchronous reads: %s", strerror(-rc));
	rc = fuse_session_loop_mt(fs->se, cfg) ? -EIO : 0;
	arf_fuse_aio_stop(fs);
	goto out;

fail:
	if (ready_fd >= 0)
		arf_fuse_report(ready_fd, 1, err);
	else
		fprintf(stderr, "arf-fuse: %s\n", err);
	if (rc >= 0)
		rc = -EIO;
out:
	if (cfg)
		fuse_loop_cfg_destroy(cfg);
	if (mounted)
		fuse_session_unmount(fs->se);
	if (sig)
		fuse_remove_signal_handlers(fs->se);
	if (fs) /* before the session goes: its hard waits end (hardmount.c) */
		__atomic_store_n(&fs->se_over, 1, __ATOMIC_RELEASE);
	if (fs && fs->se) {
		fuse_session_destroy(fs->se); /* calls destroy: hidden names go */
		fs->se = NULL; /* the last arf_close's waits asked it, freed */
	} else if (fs && fs->table) {
		arf_fuse_hidden_cleanup(fs);
	}
	if (fs) {
		arf_fuse_names_fini(fs);
		arf_fuse_files_fini(fs);
		arf_fuse_nodes_fini(fs);
		if (fs->cf != fs->c)
			arf_close(fs->cf);
		if (!fs->c_leaked) /* else reads still in its queue may write their buffers */
			arf_close(fs->c);
		else
			free(fs->aio);
		free(fs);
	}
	arf_set_log_func(NULL, NULL);
	return rc;
}

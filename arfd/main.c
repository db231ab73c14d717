/* SPDX-License-Identifier: MIT */
/*
 * arfd — the ARF server daemon: command line, configuration, daemonizing,
 * signals.  Everything else starts in arfd_start (server.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "arf_malloc.h"

#include "arfd.h"
#include "arfd_cell.h"
#include "log.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: arfd [OPTIONS]\n"
		"Serve an ARF filesystem: metadata and data blocks in exported memory regions,\n"
		"read one-sidedly by clients, made durable in RocksDB (metadata) and a data log\n"
		"(file data); writes are unstable until a COMMIT, as NFSv3's.\n"
		"\n"
		"  -c, --config FILE     read this INI file (default %s if it exists)\n"
		"      --listen ADDR:PORT  tcp address (default %s; \"\" = none; port 0 = any)\n"
		"      --socket PATH     UNIX socket for shm clients (default %s; \"\" = none)\n"
		"      --rdma-listen ADDR:PORT  also serve rdma (verbs) here (default none;\n"
		"                        \":%u\" = every RDMA-capable address)\n"
		"      --data-dir DIR    data directory: RocksDB and the data log (default %s)\n"
		"  -f, --foreground      stay in the foreground (default: detach once serving)\n"
		"      --set SECTION.KEY=VALUE  set any configuration key (repeatable)\n"
		"      --log-level LEVEL error, warn, info or debug\n"
		"      --spin-us N       microseconds to poll before sleeping (soft-NIC: 4x; 0 = never spin)\n"
		"      --dump-config     print the effective configuration and exit\n"
		"      --check-config    check the configuration and exit (0 = valid)\n"
		"  -h, --help            show this help\n"
		"  -V, --version         show the version\n"
		"\n"
		"Flags override the file.  With no file and no flags arfd serves %s on\n"
		"%s and %s, creating the data directory.\n"
		"Signals: SIGTERM/SIGINT stop cleanly (everything applied is made durable);\n"
		"SIGHUP re-reads the configuration (export settings and log level).\n",
		ARFD_DEFAULT_CONFIG, ARFD_DEFAULT_LISTEN, ARFD_DEFAULT_SOCKET,
		ARF_NET_DEFAULT_RDMA_PORT, ARFD_DEFAULT_DATA_DIR,
		ARFD_DEFAULT_DATA_DIR, ARFD_DEFAULT_LISTEN, ARFD_DEFAULT_SOCKET);
}

struct override {
	const char *section, *key;
	char *value;
};

/* SIGHUP: re-read the file and flags; apply what can change while serving
 * (export access settings, log level), and say what needs a restart. */
static void reload(struct arfd *d, const char *config, const struct override *ov, int nov)
{
	struct arfd_config nc;
	char err[512];

	sd_notify(0, "RELOADING=1");
	if (config)
		arfd_config_defaults(&nc);
	else
		arfd_config_embedded(&nc);
	if (config && arfd_config_load(&nc, config, err, sizeof(err))) {
		arfd_log(ARFD_LOG_ERROR, "reload: %s (keeping the running configuration)", err);
		goto out;
	}
	for (int i = 0; i < nov; i++)
		if (arfd_config_set(&nc, ov[i].section, ov[i].key, ov[i].value, err, sizeof(err))) {
			arfd_log(ARFD_LOG_ERROR, "reload: %s", err);
			goto out;
		}
	if (arfd_config_check(&nc, err, sizeof(err))) {
		arfd_log(ARFD_LOG_ERROR, "reload: %s (keeping the running configuration)", err);
		goto out;
	}
	pthread_mutex_lock(&d->vol_lock); /* no volume made or removed meanwhile (volumes.c) */
	for (int i = -1; i < d->nvols; i++) { /* the root volume, then the others */
		struct arfd *v = i < 0 ? d : d->vols[i];
		if (v->removed)
			continue;
		arfd_fs_lock(v);
		v->cfg.read_only = nc.read_only || arfd_volume_is_replica(v->volume);
		v->cfg.insecure = nc.insecure;
		v->cfg.root_squash = nc.root_squash;
		v->cfg.anon_uid = nc.anon_uid;
		v->cfg.anon_gid = nc.anon_gid;
		memcpy(v->cfg.clients, nc.clients, sizeof(nc.clients));
		arfd_access_parse(v->cfg.clients, &v->nets, err, sizeof(err)); /* checked at load */
		memcpy(v->cfg.one_sided, nc.one_sided, sizeof(nc.one_sided));
		v->cfg.log_level = nc.log_level;
		arfd_fs_unlock(v);
	}
	pthread_mutex_unlock(&d->vol_lock);
	arfd_log_level = nc.log_level;
	int vols_changed = nc.nvolumes != d->cfg.nvolumes;
	for (int i = 0; !vols_changed && i < nc.nvolumes; i++)
		vols_changed = strcmp(nc.volumes[i].name, d->cfg.volumes[i].name) ||
			       strcmp(nc.volumes[i].set, d->cfg.volumes[i].set);
	if (vols_changed)
		arfd_log(ARFD_LOG_WARN, "reload: [volume] sections take effect at the next start");
	if (strcmp(nc.listen, d->cfg.listen) || strcmp(nc.socket, d->cfg.socket) ||
	    strcmp(nc.rdma_listen, d->cfg.rdma_listen) ||
	    strcmp(nc.data_dir, d->cfg.data_dir) || nc.sync != d->cfg.sync ||
	    strcmp(nc.export_name, d->cfg.export_name))
		arfd_log(ARFD_LOG_WARN, "reload: listen, socket, rdma_listen, data_dir, export "
			 "name and sync take effect at the next start");
	arfd_log(ARFD_LOG_INFO, "reloaded: read_only=%d root_squash=%d log_level=%d",
		 nc.read_only, nc.root_squash, nc.log_level);
out:
	sd_notify(0, "READY=1");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, 0, 'c' },
		{ "listen", required_argument, 0, 'L' },
		{ "socket", required_argument, 0, 'S' },
		{ "rdma-listen", required_argument, 0, 'R' },
		{ "data-dir", required_argument, 0, 'D' },
		{ "foreground", no_argument, 0, 'f' },
		{ "set", required_argument, 0, 's' },
		{ "log-level", required_argument, 0, 'l' },
		{ "spin-us", required_argument, 0, 'p' },
		{ "dump-config", no_argument, 0, 'd' },
		{ "check-config", no_argument, 0, 'k' },
		{ "help", no_argument, 0, 'h' },
		{ "version", no_argument, 0, 'V' },
		{ 0, 0, 0, 0 },
	};
	struct override ov[128];
	int nov = 0, foreground = 0, dump = 0, check = 0, opt;
	const char *config = NULL;
	static struct arfd d;
	char err[512];

	arf_daemon_malloc(); /* a request's buffers from the heap, reused */
	while ((opt = getopt_long(argc, argv, "c:fhV", longopts, NULL)) != -1) {
		if (nov >= 128) {
			fprintf(stderr, "arfd: too many options\n");
			return 2;
		}
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 'L':
			ov[nov++] = (struct override){ "server", "listen", optarg };
			break;
		case 'S':
			ov[nov++] = (struct override){ "server", "socket", optarg };
			break;
		case 'R':
			ov[nov++] = (struct override){ "server", "rdma_listen", optarg };
			break;
		case 'D':
			ov[nov++] = (struct override){ "server", "data_dir", optarg };
			break;
		case 'l':
			ov[nov++] = (struct override){ "server", "log_level", optarg };
			break;
		case 'p':
			ov[nov++] = (struct override){ "server", "spin_us", optarg };
			break;
		case 's': {
			char *eq = strchr(optarg, '='), *dot = strchr(optarg, '.');
			if (!eq || !dot || dot > eq) {
				fprintf(stderr, "arfd: --set %s: expected SECTION.KEY=VALUE\n", optarg);
				return 2;
			}
			*eq = 0;
			*dot = 0;
			ov[nov++] = (struct override){ optarg, dot + 1, eq + 1 };
			break;
		}
		case 'f':
			foreground = 1;
			break;
		case 'd':
			dump = 1;
			break;
		case 'k':
			check = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("arfd %s (protocol %u, format %u)\n", ARF_VERSION, ARF_NET_PROTO_VERSION,
			       ARF_META_FORMAT_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "arfd: unexpected argument '%s' (see arfd --help)\n", argv[optind]);
		return 2;
	}

	if (!config && access(ARFD_DEFAULT_CONFIG, R_OK) == 0)
		config = ARFD_DEFAULT_CONFIG;
	if (config)
		arfd_config_defaults(&d.cfg);
	else
		arfd_config_embedded(&d.cfg);
	if (config && arfd_config_load(&d.cfg, config, err, sizeof(err))) {
		fprintf(stderr, "arfd: %s\n", err);
		return 1;
	}
	for (int i = 0; i < nov; i++)
		if (arfd_config_set(&d.cfg, ov[i].section, ov[i].key, ov[i].value, err, sizeof(err))) {
			fprintf(stderr, "arfd: command line: %s\n", err);
			return 1;
		}
	if (arfd_config_check(&d.cfg, err, sizeof(err))) {
		fprintf(stderr, "arfd: %s%s%s\n", config ? config : "", config ? ": " : "", err);
		return 1;
	}
	arfd_log_level = d.cfg.log_level;
	if (dump) {
		arfd_config_dump(&d.cfg, stdout);
		return 0;
	}
	if (check) {
		printf("%s: configuration is valid\n", config ? config : "(built-in defaults)");
		return 0;
	}

	/* Detach before starting threads; the parent waits for "ready". */
	int ready[2] = { -1, -1 };
	if (!foreground) {
		if (pipe(ready) < 0) {
			perror("arfd: pipe");
			return 1;
		}
		pid_t pid = fork();
		if (pid < 0) {
			perror("arfd: fork");
			return 1;
		}
		if (pid > 0) {
			char c = 1;
			close(ready[1]);
			if (read(ready[0], &c, 1) != 1)
				c = 1;
			return c;
		}
		close(ready[0]);
		setsid();
		int nul = open("/dev/null", 0);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			close(nul);
		}
	}

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct arf_cell_member *cell = NULL; /* [cell]: registered in etcd while serving */
	int rc = arfd_start(&d, err, sizeof(err));
	if (!rc) { /* a volume made meanwhile is recorded by one or the other */
		pthread_mutex_lock(&d.vol_lock);
		rc = arfd_cell_start(&d, &cell, err, sizeof(err));
		d.cell = cell;
		pthread_mutex_unlock(&d.vol_lock);
	}
	if (rc) {
		fprintf(stderr, "arfd: %s\n", err);
		arfd_stop(&d);
		if (ready[1] >= 0) {
			char c = 1;
			if (write(ready[1], &c, 1) < 0)
				(void)0;
		}
		return 1;
	}
	if (ready[1] >= 0) {
		char c = 0;
		if (write(ready[1], &c, 1) < 0)
			(void)0;
		close(ready[1]);
	}
	/* systemd Type=notify: ready once serving (a no-op without NOTIFY_SOCKET) */
	sd_notifyf(0, "READY=1\nSTATUS=serving export %s\nMAINPID=%ld", d.cfg.export_name,
		   (long)getpid());

	for (;;) {
		int sig = 0;
		sigwait(&set, &sig);
		if (sig == SIGHUP) {
			reload(&d, config, ov, nov);
			continue;
		}
		arfd_log(ARFD_LOG_INFO, "%s: stopping", strsignal(sig));
		sd_notify(0, "STOPPING=1");
		break;
	}
	pthread_mutex_lock(&d.out_lock); /* a vol move out ends first (move_out.c) */
	pthread_mutex_lock(&d.vol_lock);
	d.cell = NULL;
	pthread_mutex_unlock(&d.vol_lock);
	arfd_cell_stop(cell); /* leave the cell first: no client is sent to a stopping server */
	arfd_stop(&d);
	pthread_mutex_unlock(&d.out_lock);
	arfd_log(ARFD_LOG_INFO, "stopped");
	return 0;
}

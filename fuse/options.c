/* SPDX-License-Identifier: MIT */
/*
 * Mount options: one typed table (name, kind, bounds, help) that parses -o
 * strings for arf-fuse and mount.arf alike, prints --help, and says which
 * generic mount(8) options go to the kernel and which are only accepted.
 * The attribute-cache options are NFS's, with NFS's defaults
 * (acregmin=3, acregmax=60, acdirmin=30, acdirmax=60 seconds), and so are
 * hard (default), soft, timeo (600 tenths of a second) and retrans (2);
 * intr and nointr are accepted without effect, as by NFS since 2.6.25.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf_fuse.h"

enum opt_kind {
	OPT_FLAG,      /* int field = val */
	OPT_UINT,      /* uint32 field, in [min, max]; *set_off = 1 when given */
	OPT_STR,       /* char array field of size max */
	OPT_ACTIMEO,   /* all four ac* timeouts */
	OPT_KERNEL,    /* passed to the kernel mount as is */
	OPT_ACCEPT,    /* accepted for mount(8) and fstab, no effect */
	OPT_PREFIX,    /* any option starting with name: accepted, no effect */
};

struct opt_def {
	const char *name;
	enum opt_kind kind;
	size_t off;            /* field in struct arf_fuse_opts (FLAG, UINT, STR) */
	long long min, max;    /* UINT bounds; FLAG: min is the value; STR: max is the size */
	long set_off;          /* UINT: an int field set to 1 when given, or -1 */
	const char *arg;       /* the argument's name in --help, NULL for flags */
	const char *help;
};

#define F(field) offsetof(struct arf_fuse_opts, field)
#define DAY 86400

static const struct opt_def opt_table[] = {
	/* where the server is */
	{ "port", OPT_UINT, F(port), 1, 65535, -1, "N",
	  "arfd's tcp port (default: from SPEC or URL, else 20490)" },
	{ "transport", OPT_STR, F(transport), 0, sizeof(((struct arf_fuse_opts *)0)->transport), -1,
	  "tcp|shm", "tcp (default) or shm (same host, through arfd's UNIX socket)" },
	{ "socket", OPT_STR, F(socket), 0, sizeof(((struct arf_fuse_opts *)0)->socket), -1, "PATH",
	  "arfd's UNIX socket for shm (default " ARF_DEFAULT_SOCKET "); implies transport=shm" },
	{ "volume", OPT_STR, F(volume), 0, sizeof(((struct arf_fuse_opts *)0)->volume), -1, "NAME",
	  "the volume of arfd's to mount (a [volume NAME] of its arfd.conf; default: the URL's "
	  "?volume=, else the root volume)" },
	{ "secret", OPT_STR, F(secret), 0, sizeof(((struct arf_fuse_opts *)0)->secret), -1, "FILE",
	  "file holding the export's shared secret (arfd.conf secret_file): proved by "
	  "challenge-response, never sent" },
	{ "spin_us", OPT_UINT, F(spin_us), 0, 1000000, F(spin_set), "N",
	  "libarf polls up to this long for a reply before sleeping, less while polling "
	  "catches nothing (default 50)" },
	{ "rsize", OPT_UINT, F(rsize), 4096, ARF_FUSE_MAX_IO, -1, "N",
	  "bytes a READ request asks for at most (default and largest 1048576)" },
	{ "wsize", OPT_UINT, F(wsize), 4096, ARF_FUSE_MAX_IO, -1, "N",
	  "bytes a WRITE request carries at most (default " ARF_FUSE_WSIZE_STR "; the kernel "
	  "sends the pieces of a bigger direct write at once)" },
	{ "fsname", OPT_STR, F(fsname), 0, sizeof(((struct arf_fuse_opts *)0)->fsname), -1, "NAME",
	  "the source shown in /proc/mounts (default: the URL; mount.arf gives SPEC)" },
	/* caching, as NFS */
	{ "ac", OPT_FLAG, F(ac), 1, 0, -1, NULL, "cache attributes, names and listings (default)" },
	{ "noac", OPT_FLAG, F(ac), 0, 0, -1, NULL,
	  "no attribute, name or listing caching, in the kernel or libarf" },
	{ "actimeo", OPT_ACTIMEO, 0, 0, DAY, -1, "N", "set all four ac* timeouts to N seconds" },
	{ "acregmin", OPT_UINT, F(acregmin), 0, DAY, -1, "N",
	  "file attributes cached at least N seconds (default 3)" },
	{ "acregmax", OPT_UINT, F(acregmax), 0, DAY, -1, "N",
	  "file attributes cached at most N seconds (default 60)" },
	{ "acdirmin", OPT_UINT, F(acdirmin), 0, DAY, -1, "N",
	  "directory attributes and names cached at least N seconds (default 30)" },
	{ "acdirmax", OPT_UINT, F(acdirmax), 0, DAY, -1, "N",
	  "directory attributes cached at most N seconds (default 60)" },
	{ "lookupcache", OPT_STR, F(lookupcache), 0,
	  sizeof(((struct arf_fuse_opts *)0)->lookupcache), -1, "all|positive|none",
	  "names the kernel caches (default positive: failed lookups are not cached, "
	  "so files other clients create show at once)" },
	/* when the server does not answer, as NFS */
	{ "hard", OPT_FLAG, F(soft), 0, 0, -1, NULL,
	  "wait for the server for ever (default): operations carry on once arfd is back; only "
	  "a fatal signal (SIGKILL) ends a wait" },
	{ "soft", OPT_FLAG, F(soft), 1, 0, -1, NULL,
	  "give up with EIO when the server has not answered for timeo x (retrans + 1)" },
	{ "timeo", OPT_UINT, F(timeo), 1, 36000, -1, "N",
	  "tenths of a second to wait for a reply before reconnecting and sending again "
	  "(default 600)" },
	{ "retrans", OPT_UINT, F(retrans), 0, 100, -1, "N",
	  "soft: times a request is sent again before EIO (default 2); hard: 'not responding' "
	  "is logged after timeo" },
	{ "intr", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "nointr", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "writeback", OPT_FLAG, F(writeback), 1, 0, -1, NULL,
	  "kernel writeback cache: faster small writes, but other clients see them only after "
	  "close or fsync, and sizes are this mount's" },
	{ "acl", OPT_FLAG, F(acl), 1, 0, -1, NULL,
	  "POSIX ACLs stored by arfd, enforced by the kernel (default, where the kernel can)" },
	{ "noacl", OPT_FLAG, F(acl), 0, 0, -1, NULL,
	  "no POSIX ACLs: permissions from the mode bits, the umask applied by the kernel" },
	/* this daemon */
	{ "debug", OPT_FLAG, F(debug), 1, 0, -1, NULL, "log every request (libfuse) to stderr" },
	{ "allow_other", OPT_FLAG, F(allow_other), 1, 0, -1, NULL,
	  "let other users in (default when mounted by root)" },
	/* generic, to the kernel */
	{ "ro", OPT_KERNEL, 0, 0, 0, -1, NULL, "read-only mount" },
	{ "rw", OPT_KERNEL, 0, 0, 0, -1, NULL, "read-write mount (default)" },
	{ "nosuid", OPT_KERNEL, 0, 0, 0, -1, NULL, "ignore set-user-id bits" },
	{ "suid", OPT_KERNEL, 0, 0, 0, -1, NULL, "honour set-user-id bits" },
	{ "nodev", OPT_KERNEL, 0, 0, 0, -1, NULL, "no device files" },
	{ "dev", OPT_KERNEL, 0, 0, 0, -1, NULL, "allow device files" },
	{ "noexec", OPT_KERNEL, 0, 0, 0, -1, NULL, "no execution of binaries" },
	{ "exec", OPT_KERNEL, 0, 0, 0, -1, NULL, "allow execution (default)" },
	{ "sync", OPT_KERNEL, 0, 0, 0, -1, NULL, "synchronous updates" },
	{ "async", OPT_KERNEL, 0, 0, 0, -1, NULL, "asynchronous updates (default)" },
	{ "dirsync", OPT_KERNEL, 0, 0, 0, -1, NULL, "synchronous directory updates" },
	/* generic, accepted without effect: mount(8) and fstab pass them */
	{ "defaults", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "_netdev", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "nofail", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "auto", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "noauto", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "user", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "users", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "nouser", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "owner", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "group", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "noatime", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "atime", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "relatime", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "norelatime", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "strictatime", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "nostrictatime", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "diratime", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "nodiratime", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "lazytime", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "nolazytime", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "iversion", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "noiversion", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "silent", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "loud", OPT_ACCEPT, 0, 0, 0, -1, NULL, NULL },
	{ "x-", OPT_PREFIX, 0, 0, 0, -1, NULL, NULL },
	{ "comment=", OPT_PREFIX, 0, 0, 0, -1, NULL, NULL },
	{ "user=", OPT_PREFIX, 0, 0, 0, -1, NULL, NULL },
	{ "helper=", OPT_PREFIX, 0, 0, 0, -1, NULL, NULL },
};

#define NOPTS (sizeof(opt_table) / sizeof(opt_table[0]))

void arf_fuse_opts_init(struct arf_fuse_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ac = 1;
	o->acl = 1;
	o->acregmin = 3;
	o->acregmax = 60;
	o->acdirmin = 30;
	o->acdirmax = 60;
	o->timeo = 600;
	o->retrans = 2;
	o->rsize = ARF_FUSE_MAX_IO;
	o->wsize = ARF_FUSE_WSIZE;
	o->allow_other = -1; /* decided at mount time */
}

static int parse_uint(const char *s, long long min, long long max, uint32_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int kernel_opt(struct arf_fuse_opts *o, const char *name)
{
	size_t have = strlen(o->kernel), len = strlen(name);
	if (have + len + 2 > sizeof(o->kernel))
		return -EINVAL;
	if (have)
		o->kernel[have++] = ',';
	memcpy(o->kernel + have, name, len + 1);
	return 0;
}

/* One option "name" or "name=value". */
static int parse_one(struct arf_fuse_opts *o, char *opt, char *err, size_t errlen)
{
	char *val = strchr(opt, '=');
	const struct opt_def *d = NULL;

	for (size_t i = 0; i < NOPTS; i++)
		if (opt_table[i].kind == OPT_PREFIX &&
		    !strncmp(opt, opt_table[i].name, strlen(opt_table[i].name)))
			return 0;
	if (val)
		*val++ = 0;
	for (size_t i = 0; i < NOPTS && !d; i++)
		if (opt_table[i].kind != OPT_PREFIX && !strcmp(opt, opt_table[i].name))
			d = &opt_table[i];
	if (!d) {
		if (o->sloppy)
			return 0;
		snprintf(err, errlen, "unknown option '%s' (see arf-fuse --help)", opt);
		return -EINVAL;
	}
	int takes = d->kind == OPT_UINT || d->kind == OPT_STR || d->kind == OPT_ACTIMEO;
	if (takes && (!val || !*val)) {
		snprintf(err, errlen, "option '%s' needs a value (%s=%s)", opt, opt, d->arg);
		return -EINVAL;
	}
	if (!takes && val) {
		snprintf(err, errlen, "option '%s' takes no value", opt);
		return -EINVAL;
	}
	char *base = (char *)o;
	uint32_t v;
	switch (d->kind) {
	case OPT_FLAG:
		*(int *)(base + d->off) = (int)d->min;
		return 0;
	case OPT_UINT:
	case OPT_ACTIMEO:
		if (parse_uint(val, d->min, d->max, &v)) {
			snprintf(err, errlen, "option '%s': '%s' is not a number in [%lld, %lld]",
				 opt, val, d->min, d->max);
			return -EINVAL;
		}
		if (d->kind == OPT_ACTIMEO) {
			o->acregmin = o->acregmax = o->acdirmin = o->acdirmax = v;
			return 0;
		}
		*(uint32_t *)(base + d->off) = v;
		if (d->set_off >= 0)
			*(int *)(base + d->set_off) = 1;
		return 0;
	case OPT_STR:
		if (strlen(val) >= (size_t)d->max) {
			snprintf(err, errlen, "option '%s': value too long", opt);
			return -EINVAL;
		}
		if (!strcmp(d->name, "transport") && strcmp(val, "tcp") && strcmp(val, "shm")) {
			snprintf(err, errlen, "option 'transport': '%s' is not tcp or shm", val);
			return -EINVAL;
		}
		strcpy(base + d->off, val);
		return 0;
	case OPT_KERNEL:
		if (kernel_opt(o, opt)) {
			snprintf(err, errlen, "too many mount options");
			return -EINVAL;
		}
		return 0;
	case OPT_ACCEPT:
	case OPT_PREFIX:
		return 0;
	}
	return 0;
}

int arf_fuse_opts_parse(struct arf_fuse_opts *o, const char *optstr, char *err, size_t errlen)
{
	char *copy = strdup(optstr), *save = NULL;
	int rc = 0;

	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (char *opt = strtok_r(copy, ",", &save); opt && !rc; opt = strtok_r(NULL, ",", &save))
		rc = parse_one(o, opt, err, errlen);
	free(copy);
	return rc;
}

/* Put a parsed URL back together, with its volume (vol "": none). */
static int url_format(const struct arf_url *u, const char *vol, char *out, size_t cap)
{
	int n;
	/* keep arf+rdma:// as it is: never a silent fall back to tcp */
	const char *scheme = !strcmp(u->transport, "rdma") ? "arf+rdma" : "arf";
	if (!strcmp(u->transport, "shm"))
		n = snprintf(out, cap, "arf+shm://%s?socket=%s", u->path, u->socket);
	else if (strchr(u->host, ':'))
		n = snprintf(out, cap, "%s://[%s]:%u%s", scheme, u->host, u->port, u->path);
	else
		n = snprintf(out, cap, "%s://%s:%u%s", scheme, u->host, u->port, u->path);
	if (n >= 0 && (size_t)n < cap && vol[0])
		n += snprintf(out + n, cap - (size_t)n, "%svolume=%s",
			      !strcmp(u->transport, "shm") ? "&" : "?", vol);
	return n < 0 || (size_t)n >= cap ? -EINVAL : 0;
}

int arf_fuse_opts_finish(struct arf_fuse_opts *o, char *err, size_t errlen)
{
	struct arf_url *u = calloc(1, sizeof(*u));
	char why[256] = "";
	int rc = -EINVAL;

	if (!u) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	char vol[64] = "";
	if (arf_url_parse(o->url, u, why, sizeof(why)) ||
	    (!o->volume[0] && arf_url_volume(o->url, vol, sizeof(vol), why, sizeof(why)))) {
		snprintf(err, errlen, "bad server URL '%s': %s", o->url, why);
		goto out;
	}
	if (o->socket[0] && !strcmp(o->transport, "tcp")) {
		snprintf(err, errlen, "socket= is for transport=shm");
		goto out;
	}
	if (o->port && (!strcmp(o->transport, "shm") || (!o->transport[0] && o->socket[0]))) {
		snprintf(err, errlen, "port= is for transport=tcp");
		goto out;
	}
	if (o->socket[0] || !strcmp(o->transport, "shm")) {
		strcpy(u->transport, "shm");
		if (o->socket[0])
			snprintf(u->socket, sizeof(u->socket), "%s", o->socket);
		else if (!u->socket[0])
			snprintf(u->socket, sizeof(u->socket), "%s", ARF_DEFAULT_SOCKET);
	} else if (!strcmp(o->transport, "tcp") && strcmp(u->transport, "tcp")) {
		snprintf(err, errlen, "transport=tcp needs a host (HOST:/PATH or arf://HOST/)");
		goto out;
	}
	if (o->port)
		u->port = (uint16_t)o->port;
	if (o->volume[0]) { /* volume= wins over the URL's */
		char probe[128];
		snprintf(probe, sizeof(probe), "arf://h/?volume=%s", o->volume);
		if (arf_url_volume(probe, vol, sizeof(vol), why, sizeof(why))) {
			snprintf(err, errlen, "volume=%s: a volume's name is 1-63 letters, digits, "
				 "'.', '_' or '-'", o->volume);
			goto out;
		}
	}
	if (url_format(u, vol, o->url, sizeof(o->url))) {
		snprintf(err, errlen, "server URL too long");
		goto out;
	}
	if (!o->lookupcache[0] || !strcmp(o->lookupcache, "positive") ||
	    !strcmp(o->lookupcache, "pos")) {
		o->neg_cache = 0;
	} else if (!strcmp(o->lookupcache, "all")) {
		o->neg_cache = 1;
	} else if (!strcmp(o->lookupcache, "none")) {
		o->neg_cache = 0;
	} else {
		snprintf(err, errlen, "lookupcache=%s: expected all, positive or none", o->lookupcache);
		goto out;
	}
	if (!o->ac)
		o->acregmin = o->acregmax = o->acdirmin = o->acdirmax = 0;
	if (o->acregmax < o->acregmin)
		o->acregmax = o->acregmin;
	if (o->acdirmax < o->acdirmin)
		o->acdirmax = o->acdirmin;
	rc = 0;
out:
	free(u);
	return rc;
}

void arf_fuse_opts_help(FILE *f)
{
	fprintf(f, "ARF options (-o, comma-separated):\n");
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt_def *d = &opt_table[i];
		char name[64];
		if (d->kind == OPT_ACCEPT || d->kind == OPT_PREFIX)
			continue;
		if (d->arg)
			snprintf(name, sizeof(name), "%s=%s", d->name, d->arg);
		else
			snprintf(name, sizeof(name), "%s", d->name);
		fprintf(f, "    %-18s %s\n", name, d->help);
	}
	fprintf(f, "Accepted for mount(8) and fstab, without effect:\n   ");
	size_t col = 3;
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt_def *d = &opt_table[i];
		if (d->kind != OPT_ACCEPT && d->kind != OPT_PREFIX)
			continue;
		size_t len = strlen(d->name) + (d->kind == OPT_PREFIX ? 2 : 1);
		if (col + len > 78) {
			fprintf(f, "\n   ");
			col = 3;
		}
		fprintf(f, " %s%s", d->name, d->kind == OPT_PREFIX ? "*" : "");
		col += len;
	}
	fprintf(f, "\n(ARF is always mounted noatime; access-time options are accepted and "
		   "ignored.)\n");
}

/* SPDX-License-Identifier: MIT */
/*
 * The etcd client's security settings (see arf_etcd.h): the user and the
 * password read from its file, the TLS files, and the rules they must
 * keep -- a password file no one else may read (ssh's rule for keys), a
 * password sent only over https:// or to a loopback address, TLS files
 * only with https:// endpoints.  The token itself is fetched and renewed
 * by etcd.c's calls; here is what tells a stale token from a refusal.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "etcd_int.h"

/* the file's first line into a new string; 0 or -errno with err */
static int password_read(const char *path, char **out, char *err, size_t errlen)
{
	char buf[ARF_ETCD_PASSWORD_MAX + 2];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), rc;

	*out = NULL;
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "etcd password file %s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "etcd password file %s: not a regular file", path);
		rc = -EINVAL;
		goto out;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "etcd password file %s: group or others may read or write it "
			 "(mode %04o); it must be private to its owner (chmod 600 %s)", path,
			 (unsigned)(st.st_mode & 07777), path);
		rc = -EPERM;
		goto out;
	}
	if ((n = read(fd, buf, sizeof(buf) - 1)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "etcd password file %s: %s", path, strerror(errno));
		goto out;
	}
	buf[n] = 0;
	size_t len = strcspn(buf, "\r\n");
	if (!len || len > ARF_ETCD_PASSWORD_MAX) {
		if (!len)
			snprintf(err, errlen, "etcd password file %s: empty first line", path);
		else
			snprintf(err, errlen, "etcd password file %s: a first line over %d bytes", path,
				 ARF_ETCD_PASSWORD_MAX);
		rc = -EINVAL;
		goto out;
	}
	rc = (*out = strndup(buf, len)) ? 0 : -ENOMEM;
out:
	sodium_memzero(buf, sizeof(buf));
	close(fd);
	return rc;
}

/* 1 if endpoint (scheme://HOST[:PORT]) names a loopback host */
static int loopback(const char *endpoint)
{
	const char *h = strstr(endpoint, "://") + 3;
	size_t n;

	if (*h == '[') /* [v6]:port */
		return !strncmp(h, "[::1]", 5);
	n = strcspn(h, ":/");
	if (n == 9 && !strncmp(h, "localhost", 9))
		return 1;
	return n >= 4 && !strncmp(h, "127.", 4);
}

static int dup_opt(char **to, const char *from)
{
	*to = NULL;
	return from && from[0] && !(*to = strdup(from)) ? -ENOMEM : 0;
}

int arf_etcd_security_load(struct arf_etcd *e, const struct arf_etcd_security *sec,
			   int read_password, char *err, size_t errlen)
{
	int rc;

	if (!sec)
		return 0;
	if (!sec->user || !sec->user[0] ? sec->password_file && sec->password_file[0]
					: !sec->password_file || !sec->password_file[0]) {
		snprintf(err, errlen, "etcd: a user needs a password file, and a password file a user");
		return -EINVAL;
	}
	if ((rc = dup_opt(&e->user, sec->user)) || (rc = dup_opt(&e->ca_file, sec->ca_file)) ||
	    (rc = dup_opt(&e->cert_file, sec->cert_file)) ||
	    (rc = dup_opt(&e->key_file, sec->key_file)))
		return rc;
	if (e->key_file && !e->cert_file) {
		snprintf(err, errlen, "etcd: a client key file without its certificate file");
		return -EINVAL;
	}
	for (size_t i = 0; i < e->nendpoints; i++) {
		if (strncmp(e->endpoint[i], "http://", 7))
			continue;
		if (e->ca_file || e->cert_file) {
			snprintf(err, errlen, "etcd endpoint %s: a CA or certificate file needs https:// "
				 "endpoints", e->endpoint[i]);
			return -EINVAL;
		}
		if (e->user && !loopback(e->endpoint[i])) {
			snprintf(err, errlen, "etcd endpoint %s: the password of user '%s' would cross "
				 "the network in clear; use https:// (http:// only to a loopback "
				 "address)", e->endpoint[i], e->user);
			return -EINVAL;
		}
	}
	if (e->user && read_password)
		return password_read(sec->password_file, &e->password, err, errlen);
	return 0;
}

static void wipe(char **s)
{
	if (*s)
		sodium_memzero(*s, strlen(*s));
	free(*s);
	*s = NULL;
}

void arf_etcd_security_free(struct arf_etcd *e)
{
	wipe(&e->password);
	wipe(&e->token);
	free(e->user);
	free(e->ca_file);
	free(e->cert_file);
	free(e->key_file);
	e->user = e->ca_file = e->cert_file = e->key_file = NULL;
}

int arf_etcd_token_stale(struct json_object *o)
{
	struct json_object *m = NULL;
	int64_t code = 0;

	if (arf_etcd_i64(o, "code", &code))
		return 0;
	if (code == 16) /* Unauthenticated: "invalid auth token" (expired, or unknown) */
		return 1;
	if (code != 3 || (!json_object_object_get_ex(o, "message", &m) &&
			  !json_object_object_get_ex(o, "error", &m)) ||
	    !json_object_is_type(m, json_type_string))
		return 0;
	/* InvalidArgument: a token older than the auth store's last change, or
	 * none taken (etcd had authentication off when we started) */
	const char *s = json_object_get_string(m);
	return strstr(s, "revision of auth store is old") || strstr(s, "user name is empty");
}

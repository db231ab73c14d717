/* SPDX-License-Identifier: MIT */
/*
 * The etcd v3 client's calls (see arf_etcd.h): each is one POST of a JSON
 * body to /v3/... on the first endpoint that answers, and one JSON reply.
 * Everything in a reply is checked before it is used: a peer that is not
 * etcd, or a broken one, yields -EPROTO and a message.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_int.h"

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void arf_etcd_global_init(void)
{
	pthread_once(&global_once, global_init);
}

int arf_etcd_buf_add(struct arf_etcd_buf *b, const char *data, size_t len)
{
	if (len > ARF_ETCD_MAX_REPLY || b->len > ARF_ETCD_MAX_REPLY - len) {
		b->overflow = 1;
		return -1;
	}
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + len + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = 0;
	return 0;
}

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	return arf_etcd_buf_add(arg, data, size * n) ? 0 : size * n;
}

int arf_etcd_curl_setup(CURL *c, const struct arf_etcd *e, const char *url, const char *body,
			const char *token, struct curl_slist **hdr)
{
	*hdr = NULL;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	if (e->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, e->ca_file);
	if (e->cert_file)
		curl_easy_setopt(c, CURLOPT_SSLCERT, e->cert_file);
	if (e->key_file)
		curl_easy_setopt(c, CURLOPT_SSLKEY, e->key_file);
	if (!token)
		return 0;
	/* etcd's gateway hands the Authorization header to etcd as the token */
	size_t n = strlen("Authorization: ") + strlen(token) + 1;
	char *line = malloc(n);
	if (!line)
		return -ENOMEM;
	snprintf(line, n, "Authorization: %s", token);
	*hdr = curl_slist_append(NULL, line);
	sodium_memzero(line, n);
	free(line);
	if (!*hdr)
		return -ENOMEM;
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdr);
	return 0;
}

int arf_etcd_curl_error(CURLcode cc, const char *url, const char *detail, char *err,
			size_t errlen)
{
	int rc;
	switch (cc) {
	case CURLE_COULDNT_CONNECT: rc = -ECONNREFUSED; break;
	case CURLE_OPERATION_TIMEDOUT: rc = -ETIMEDOUT; break;
	case CURLE_COULDNT_RESOLVE_HOST: rc = -EHOSTUNREACH; break;
	case CURLE_OUT_OF_MEMORY: rc = -ENOMEM; break;
	case CURLE_WRITE_ERROR: rc = -EPROTO; break; /* our limit on a reply */
	case CURLE_PEER_FAILED_VERIFICATION: rc = -EACCES; break;
	default: rc = -EIO; break;
	}
	const char *hint = "";
	switch (cc) {
	case CURLE_PEER_FAILED_VERIFICATION:
		hint = " (etcd's certificate is not one the CA file vouches for, or not for "
		       "this host name: check ca_file / --cacert)";
		break;
	case CURLE_SSL_CACERT_BADFILE: hint = " (check ca_file / --cacert)"; break;
	case CURLE_SSL_CERTPROBLEM: hint = " (check cert_file / --cert)"; break;
	default: break;
	}
	if (errlen)
		snprintf(err, errlen, "etcd %s: %s%s", url,
			 detail && detail[0] ? detail : curl_easy_strerror(cc), hint);
	return rc;
}

/* printable text of a reply for a message: at most 80 bytes, no controls */
static void excerpt(const char *p, size_t len, char *out, size_t outlen)
{
	size_t n = 0;
	for (size_t i = 0; i < len && n + 5 < outlen && i < 80; i++)
		out[n++] = isprint((unsigned char)p[i]) ? p[i] : '?';
	if (len > 80 && n + 4 < outlen) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = 0;
}

int arf_etcd_parse(const char *p, size_t len, const char *url, struct json_object **out,
		   char *err, size_t errlen)
{
	struct json_tokener *tok = json_tokener_new();
	char ex[100];

	if (!tok)
		return -ENOMEM;
	struct json_object *o = json_tokener_parse_ex(tok, p ? p : "", (int)len);
	enum json_tokener_error je = json_tokener_get_error(tok);
	size_t used = (size_t)json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	/* one object and nothing but blanks after it */
	while (o && used < len && isspace((unsigned char)p[used]))
		used++;
	if (!o || je != json_tokener_success || used != len || !json_object_is_type(o, json_type_object)) {
		excerpt(p ? p : "", len, ex, sizeof(ex));
		if (errlen)
			snprintf(err, errlen, "etcd %s: the reply is not a JSON object (%s): '%s'", url,
				 !o || je != json_tokener_success ? json_tokener_error_desc(je)
				 : used != len ? "bytes after it" : "another JSON value", ex);
		json_object_put(o);
		return -EPROTO;
	}
	*out = o;
	return 0;
}

int arf_etcd_i64(struct json_object *o, const char *name, int64_t *out)
{
	struct json_object *v;

	*out = 0;
	if (!json_object_object_get_ex(o, name, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EPROTO;
	const char *s = json_object_get_string(v);
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || end == s || *end || isspace((unsigned char)s[0]))
		return -EPROTO;
	*out = x;
	return 0;
}

static int grpc_errno(int64_t code)
{
	switch (code) {
	case 3: return -EINVAL;        /* InvalidArgument */
	case 4: return -ETIMEDOUT;     /* DeadlineExceeded */
	case 5: return -ENOENT;        /* NotFound: a lease, a key */
	case 6: return -EEXIST;        /* AlreadyExists */
	case 7: return -EPERM;         /* PermissionDenied */
	case 8: return -ENOSPC;        /* ResourceExhausted (quota) */
	case 9: return -EBUSY;         /* FailedPrecondition */
	case 11: return -ERANGE;       /* OutOfRange: a compacted revision */
	case 12: return -ENOSYS;       /* Unimplemented */
	case 14: return -EAGAIN;       /* Unavailable: no leader */
	case 16: return -EACCES;       /* Unauthenticated */
	default: return -EIO;
	}
}

int arf_etcd_reply_error(struct json_object *o, long http, const char *url, char *err,
			 size_t errlen)
{
	struct json_object *m = NULL;
	int64_t code = 0;
	const char *msg = NULL;

	if ((json_object_object_get_ex(o, "message", &m) || json_object_object_get_ex(o, "error", &m)) &&
	    json_object_is_type(m, json_type_string))
		msg = json_object_get_string(m);
	if (arf_etcd_i64(o, "code", &code))
		code = -1;
	if (!msg || code <= 0) {
		if (errlen)
			snprintf(err, errlen, "etcd %s: HTTP %ld with an unexpected reply (no error "
				 "message and code)", url, http);
		return -EPROTO;
	}
	if (errlen) {
		char ex[100];
		excerpt(msg, strlen(msg), ex, sizeof(ex));
		snprintf(err, errlen, "etcd %s: HTTP %ld: %s (gRPC code %lld)", url, http, ex,
			 (long long)code);
	}
	return grpc_errno(code);
}

/* One request: POST body to url (with token, if any) on e's connection,
 * under e->lock; the reply's bytes in b, its status in *http. */
static CURLcode perform(struct arf_etcd *e, const char *url, const char *body, const char *token,
			struct arf_etcd_buf *b, long *http, char *cerr)
{
	struct curl_slist *hdr = NULL;

	b->len = 0;
	b->overflow = 0;
	cerr[0] = 0;
	*http = 0;
	curl_easy_reset(e->curl);
	if (arf_etcd_curl_setup(e->curl, e, url, body, token, &hdr))
		return CURLE_OUT_OF_MEMORY;
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(e->curl, CURLOPT_ERRORBUFFER, cerr);
	CURLcode cc = curl_easy_perform(e->curl);
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdr);
	if (cc != CURLE_OK && b->overflow)
		snprintf(cerr, CURL_ERROR_SIZE, "reply over %u bytes", ARF_ETCD_MAX_REPLY);
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, http);
	return cc;
}

/* a reply of http that is not JSON, as a message */
static void not_json(const struct arf_etcd_buf *b, long http, const char *url, char *err,
		     size_t errlen)
{
	char ex[100];

	if (http == 200 || !errlen)
		return; /* arf_etcd_parse's message stands */
	excerpt(b->p ? b->p : "", b->len, ex, sizeof(ex));
	snprintf(err, errlen, "etcd %s: HTTP %ld: '%s'%s", url, http, ex,
		 http == 404 ? " (is it etcd >= 3.4, serving its JSON gateway at /v3/?)" : "");
}

static int connect_failed(CURLcode cc)
{
	return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
	       cc == CURLE_OPERATION_TIMEDOUT;
}

/* A token for e->user from endpoint k into e->token (under e->lock).
 * 0, -errno with err; *moved when the endpoint did not answer (try the
 * next). */
static int authenticate(struct arf_etcd *e, size_t k, int *moved, char *err, size_t errlen)
{
	struct json_object *req = json_object_new_object(), *o = NULL, *t;
	struct arf_etcd_buf b = { 0 };
	char url[512], cerr[CURL_ERROR_SIZE];
	long http;
	int rc = -ENOMEM;

	*moved = 0;
	if (!req || json_object_object_add(req, "name", json_object_new_string(e->user)) ||
	    json_object_object_add(req, "password", json_object_new_string(e->password)))
		goto out;
	const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	if (!body)
		goto out;
	snprintf(url, sizeof(url), "%s/v3/auth/authenticate", e->endpoint[k]);
	CURLcode cc = perform(e, url, body, NULL, &b, &http, cerr);
	sodium_memzero((char *)body, strlen(body)); /* the password */
	if (cc != CURLE_OK) {
		rc = arf_etcd_curl_error(cc, url, cerr, err, errlen);
		*moved = connect_failed(cc);
		goto out;
	}
	if ((rc = arf_etcd_parse(b.p, b.len, url, &o, err, errlen))) {
		not_json(&b, http, url, err, errlen);
		goto out;
	}
	if (http != 200) {
		char why[512];
		arf_etcd_reply_error(o, http, url, why, sizeof(why));
		snprintf(err, errlen, "etcd user '%s' could not authenticate: %s", e->user, why);
		rc = -EACCES; /* a wrong password, no such user, or no authentication enabled */
		goto out;
	}
	if (!json_object_object_get_ex(o, "token", &t) || !json_object_is_type(t, json_type_string) ||
	    !json_object_get_string_len(t) || strpbrk(json_object_get_string(t), "\r\n")) {
		snprintf(err, errlen, "etcd %s: an authentication reply without a token", url);
		rc = -EPROTO;
		goto out;
	}
	free(e->token);
	rc = (e->token = strdup(json_object_get_string(t))) ? 0 : -ENOMEM;
out:
	if (b.p)
		sodium_memzero(b.p, b.len); /* the token */
	free(b.p);
	json_object_put(o);
	json_object_put(req);
	return rc;
}

/* One call: POST body to path on the endpoints in turn (a connection that
 * fails moves to the next), and the reply as an object, or -errno.  With a
 * user, a token first; a stale token is replaced once and the call
 * repeated. */
static int call(struct arf_etcd *e, const char *path, struct json_object *req,
		struct json_object **reply, char *err, size_t errlen)
{
	const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	struct arf_etcd_buf b = { 0 };
	char url[512], cerr[CURL_ERROR_SIZE];
	int rc = -EIO, renewed = 0, moved;

	if (!body)
		return -ENOMEM;
	pthread_mutex_lock(&e->lock);
	size_t first = e->cur;
	for (size_t i = 0; i < e->nendpoints; i++) {
		size_t k = (first + i) % e->nendpoints;
		long http;
		if (e->user && !e->token && (rc = authenticate(e, k, &moved, err, errlen))) {
			if (moved)
				continue;
			break;
		}
		snprintf(url, sizeof(url), "%s%s", e->endpoint[k], path);
		CURLcode cc = perform(e, url, body, e->token, &b, &http, cerr);
		if (cc != CURLE_OK) {
			rc = arf_etcd_curl_error(cc, url, cerr, err, errlen);
			if (connect_failed(cc))
				continue; /* the next endpoint */
			break;
		}
		e->cur = k;
		struct json_object *o = NULL;
		if ((rc = arf_etcd_parse(b.p, b.len, url, &o, err, errlen))) {
			not_json(&b, http, url, err, errlen);
			break;
		}
		if (http != 200) {
			if (e->user && !renewed && arf_etcd_token_stale(o)) {
				/* expired (or auth changed): a new token, the call again */
				json_object_put(o);
				free(e->token);
				e->token = NULL;
				renewed = 1;
				i--; /* the same endpoint again */
				continue;
			}
			rc = arf_etcd_reply_error(o, http, url, err, errlen);
			json_object_put(o);
			break;
		}
		*reply = o;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&e->lock);
	free(b.p);
	return rc;
}

int arf_etcd_token_get(struct arf_etcd *e, char **token, char *err, size_t errlen)
{
	int rc = 0, moved = 1;

	*token = NULL;
	if (!e->user)
		return 0;
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; !e->token && moved && i < e->nendpoints; i++)
		rc = authenticate(e, (e->cur + i) % e->nendpoints, &moved, err, errlen);
	if (!rc && !(*token = strdup(e->token)))
		rc = -ENOMEM;
	pthread_mutex_unlock(&e->lock);
	return rc;
}

void arf_etcd_token_drop(struct arf_etcd *e, const char *token)
{
	pthread_mutex_lock(&e->lock);
	if (e->token && token && !strcmp(e->token, token)) {
		free(e->token);
		e->token = NULL;
	}
	pthread_mutex_unlock(&e->lock);
}

static int open_client(struct arf_etcd **out, const char *endpoints, unsigned timeout_ms,
		       const struct arf_etcd_security *sec, int read_password, char *err,
		       size_t errlen)
{
	struct arf_etcd *e = calloc(1, sizeof(*e));
	int rc = -ENOMEM;

	if (!e)
		return -ENOMEM;
	pthread_mutex_init(&e->lock, NULL);
	e->timeout_ms = timeout_ms ? timeout_ms : 5000;
	const char *p = endpoints ? endpoints : "";
	while (*p) {
		size_t len = strcspn(p, ", \t");
		if (!len) {
			p++;
			continue;
		}
		if (e->nendpoints == ARF_ETCD_MAX_ENDPOINTS) {
			snprintf(err, errlen, "etcd endpoints: more than %d", ARF_ETCD_MAX_ENDPOINTS);
			rc = -EINVAL;
			goto fail;
		}
		size_t scheme = !strncmp(p, "http://", 7) ? 7 : !strncmp(p, "https://", 8) ? 8 : 0;
		if (!scheme || len == scheme || len > 256) {
			snprintf(err, errlen, "etcd endpoint '%.*s': expected http://HOST:PORT or "
				 "https://HOST:PORT", (int)(len > 256 ? 256 : len), p);
			rc = -EINVAL;
			goto fail;
		}
		while (len > scheme && p[len - 1] == '/')
			len--; /* a trailing slash: the paths bring their own */
		if (!(e->endpoint[e->nendpoints] = strndup(p, len)))
			goto fail;
		e->nendpoints++;
		p += strcspn(p, ", \t");
	}
	if (!e->nendpoints) {
		snprintf(err, errlen, "etcd endpoints: none given (expected http://HOST:PORT)");
		rc = -EINVAL;
		goto fail;
	}
	if ((rc = arf_etcd_security_load(e, sec, read_password, err, errlen)))
		goto fail;
	rc = -ENOMEM;
	arf_etcd_global_init();
	if (!(e->curl = curl_easy_init()))
		goto fail;
	*out = e;
	return 0;
fail:
	arf_etcd_close(e);
	return rc;
}

int arf_etcd_open(struct arf_etcd **out, const char *endpoints, unsigned timeout_ms,
		  const struct arf_etcd_security *sec, char *err, size_t errlen)
{
	return open_client(out, endpoints, timeout_ms, sec, 1, err, errlen);
}

int arf_etcd_check(const char *endpoints, const struct arf_etcd_security *sec, char *err,
		   size_t errlen)
{
	struct arf_etcd *e = NULL;
	int rc = open_client(&e, endpoints, 0, sec, 0, err, errlen);

	arf_etcd_close(e);
	return rc;
}

void arf_etcd_close(struct arf_etcd *e)
{
	if (!e)
		return;
	if (e->curl)
		curl_easy_cleanup(e->curl);
	for (size_t i = 0; i < e->nendpoints; i++)
		free(e->endpoint[i]);
	arf_etcd_security_free(e);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

const char *arf_etcd_endpoint(const struct arf_etcd *e)
{
	return e->endpoint[e->cur];
}

struct json_object *arf_etcd_b64(const void *p, size_t len)
{
	size_t n = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
	char *s = malloc(n);
	if (!s)
		return NULL;
	sodium_bin2base64(s, n, p, len, sodium_base64_VARIANT_ORIGINAL);
	struct json_object *o = json_object_new_string(s);
	free(s);
	return o;
}

/* base64 field name of o decoded into a new NUL-terminated buffer (an
 * absent field is empty) */
static int unb64(struct json_object *o, const char *name, char **out, size_t *outlen)
{
	struct json_object *v;
	const char *s = "";
	size_t len = 0;

	if (json_object_object_get_ex(o, name, &v)) {
		if (!json_object_is_type(v, json_type_string))
			return -EPROTO;
		s = json_object_get_string(v);
		len = (size_t)json_object_get_string_len(v);
	}
	char *buf = malloc(len / 4 * 3 + 4);
	if (!buf)
		return -ENOMEM;
	size_t n = 0;
	if (len && sodium_base642bin((unsigned char *)buf, len / 4 * 3 + 3, s, len, NULL, &n, NULL,
				     sodium_base64_VARIANT_ORIGINAL)) {
		free(buf);
		return -EPROTO;
	}
	buf[n] = 0;
	*out = buf;
	*outlen = n;
	return 0;
}

void arf_etcd_kv_free(struct arf_etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

int arf_etcd_kv_decode(struct json_object *o, struct arf_etcd_kv *kv)
{
	int rc;

	memset(kv, 0, sizeof(*kv));
	if (!json_object_is_type(o, json_type_object))
		return -EPROTO;
	if ((rc = unb64(o, "key", &kv->key, &kv->key_len)) ||
	    (rc = unb64(o, "value", &kv->value, &kv->value_len)) ||
	    (rc = arf_etcd_i64(o, "create_revision", &kv->create_revision)) ||
	    (rc = arf_etcd_i64(o, "mod_revision", &kv->mod_revision)) ||
	    (rc = arf_etcd_i64(o, "version", &kv->version)) ||
	    (rc = arf_etcd_i64(o, "lease", &kv->lease)))
		arf_etcd_kv_free(kv);
	return rc;
}

void arf_etcd_kvs_free(struct arf_etcd_kvs *kvs)
{
	if (!kvs)
		return;
	for (size_t i = 0; i < kvs->n; i++)
		arf_etcd_kv_free(&kvs->kv[i]);
	free(kvs->kv);
	memset(kvs, 0, sizeof(*kvs));
}

/* json-c's add, failing on ENOMEM (and freeing v then) */
static int add(struct json_object *o, const char *name, struct json_object *v)
{
	if (!v || json_object_object_add(o, name, v)) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static int add_i64(struct json_object *o, const char *name, int64_t v)
{
	char s[24];
	snprintf(s, sizeof(s), "%lld", (long long)v);
	return add(o, name, json_object_new_string(s));
}

int arf_etcd_key_fields(struct json_object *o, const char *key, int prefix)
{
	size_t len = strlen(key);
	int rc;

	if (!len)
		return -EINVAL;
	if ((rc = add(o, "key", arf_etcd_b64(key, len))))
		return rc;
	if (!prefix)
		return 0;
	/* the first key after every key that starts with key */
	unsigned char end[len];
	memcpy(end, key, len);
	size_t n = len;
	while (n && end[n - 1] == 0xff)
		n--;
	if (n)
		end[n - 1]++;
	else
		end[n++] = 0; /* all 0xff: to the end of the key space */
	return add(o, "range_end", arf_etcd_b64(end, n));
}

/* a reply's "kvs" into out (nothing there: none) */
static int kvs_decode(struct json_object *reply, struct arf_etcd_kvs *out)
{
	struct json_object *a, *hdr;
	int rc = 0;

	if (json_object_object_get_ex(reply, "header", &hdr) &&
	    (rc = arf_etcd_i64(hdr, "revision", &out->revision)))
		return rc;
	if (!json_object_object_get_ex(reply, "kvs", &a))
		return 0;
	if (!json_object_is_type(a, json_type_array))
		return -EPROTO;
	size_t n = json_object_array_length(a);
	if (!n)
		return 0;
	struct arf_etcd_kv *kv = realloc(out->kv, (out->n + n) * sizeof(*kv));
	if (!kv)
		return -ENOMEM;
	out->kv = kv;
	for (size_t i = 0; i < n; i++) {
		if ((rc = arf_etcd_kv_decode(json_object_array_get_idx(a, i), &kv[out->n])))
			return rc;
		out->n++;
	}
	return 0;
}

static int bad_reply(int rc, struct arf_etcd *e, const char *path, char *err, size_t errlen)
{
	if (rc == -EPROTO && errlen)
		snprintf(err, errlen, "etcd %s%s: the reply does not have the fields etcd's has",
			 arf_etcd_endpoint(e), path);
	return rc;
}

int arf_etcd_put(struct arf_etcd *e, const char *key, const void *value, size_t value_len,
		 int64_t lease, int64_t *revision, char *err, size_t errlen)
{
	struct json_object *req = json_object_new_object(), *reply = NULL, *hdr;
	int rc = -ENOMEM;

	if (!req)
		return -ENOMEM;
	if ((rc = arf_etcd_key_fields(req, key, 0)) ||
	    (rc = add(req, "value", arf_etcd_b64(value, value_len))) ||
	    (lease && (rc = add_i64(req, "lease", lease))))
		goto out;
	if ((rc = call(e, "/v3/kv/put", req, &reply, err, errlen)))
		goto out;
	int64_t rev = 0;
	if (json_object_object_get_ex(reply, "header", &hdr))
		rc = arf_etcd_i64(hdr, "revision", &rev);
	if (!rc && revision)
		*revision = rev;
	rc = bad_reply(rc, e, "/v3/kv/put", err, errlen);
out:
	json_object_put(req);
	json_object_put(reply);
	return rc;
}

int arf_etcd_get(struct arf_etcd *e, const char *key, int prefix, struct arf_etcd_kvs *out,
		 char *err, size_t errlen)
{
	struct json_object *req = json_object_new_object(), *reply = NULL;
	struct arf_etcd_kvs kvs = { 0 };
	int rc;

	if (!req)
		return -ENOMEM;
	if ((rc = arf_etcd_key_fields(req, key, prefix)))
		goto out;
	if ((rc = call(e, "/v3/kv/range", req, &reply, err, errlen)))
		goto out;
	rc = bad_reply(kvs_decode(reply, &kvs), e, "/v3/kv/range", err, errlen);
	if (!rc && !prefix && kvs.n > 1)
		rc = bad_reply(-EPROTO, e, "/v3/kv/range", err, errlen);
	if (rc)
		arf_etcd_kvs_free(&kvs);
	else
		*out = kvs;
out:
	json_object_put(req);
	json_object_put(reply);
	return rc;
}

int arf_etcd_delete(struct arf_etcd *e, const char *key, int prefix, int64_t *deleted, char *err,
		    size_t errlen)
{
	struct json_object *req = json_object_new_object(), *reply = NULL;
	int rc;

	if (!req)
		return -ENOMEM;
	if ((rc = arf_etcd_key_fields(req, key, prefix)))
		goto out;
	if ((rc = call(e, "/v3/kv/deleterange", req, &reply, err, errlen)))
		goto out;
	int64_t n = 0;
	rc = bad_reply(arf_etcd_i64(reply, "deleted", &n), e, "/v3/kv/deleterange", err, errlen);
	if (!rc && deleted)
		*deleted = n;
out:
	json_object_put(req);
	json_object_put(reply);
	return rc;
}

static struct json_object *txn_ops(const struct arf_etcd_op *ops, size_t n)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < n; i++) {
		struct json_object *op = json_object_new_object(), *r = json_object_new_object();
		const char *kind = ops[i].kind == ARF_ETCD_OP_PUT ? "request_put"
				 : ops[i].kind == ARF_ETCD_OP_DELETE ? "request_delete_range"
				 : "request_range";
		int bad = !op || !r || json_object_array_add(a, op);
		if (bad) {
			json_object_put(op);
			json_object_put(r);
			json_object_put(a);
			return NULL;
		}
		if (add(op, kind, r) || arf_etcd_key_fields(r, ops[i].key, 0) ||
		    (ops[i].kind == ARF_ETCD_OP_PUT &&
		     (add(r, "value", arf_etcd_b64(ops[i].value, ops[i].value_len)) ||
		      (ops[i].lease && add_i64(r, "lease", ops[i].lease))))) {
			json_object_put(a);
			return NULL;
		}
	}
	return a;
}

int arf_etcd_txn(struct arf_etcd *e, const struct arf_etcd_cmp *cmp, size_t ncmp,
		 const struct arf_etcd_op *success, size_t nsuccess,
		 const struct arf_etcd_op *failure, size_t nfailure, int *succeeded,
		 struct arf_etcd_kvs *got, char *err, size_t errlen)
{
	static const char *const targets[] = { "VERSION", "CREATE", "MOD", "VALUE" };
	static const char *const fields[] = { "version", "create_revision", "mod_revision", "value" };
	static const char *const results[] = { "EQUAL", "GREATER", "LESS", "NOT_EQUAL" };
	struct json_object *req = json_object_new_object(), *reply = NULL, *cmps;
	struct arf_etcd_kvs kvs = { 0 };
	int rc = -ENOMEM;

	if (!req)
		return -ENOMEM;
	if ((rc = add(req, "compare", cmps = json_object_new_array())))
		goto out;
	for (size_t i = 0; i < ncmp; i++) {
		struct json_object *c = json_object_new_object();
		unsigned t = cmp[i].target, r = cmp[i].result;
		if (t > ARF_ETCD_VALUE || r > ARF_ETCD_NOT_EQUAL) {
			json_object_put(c);
			rc = -EINVAL;
			goto out;
		}
		if (!c || json_object_array_add(cmps, c)) {
			json_object_put(c);
			rc = -ENOMEM;
			goto out;
		}
		if ((rc = arf_etcd_key_fields(c, cmp[i].key, 0)) ||
		    (rc = add(c, "target", json_object_new_string(targets[t]))) ||
		    (rc = add(c, "result", json_object_new_string(results[r]))) ||
		    (rc = t == ARF_ETCD_VALUE ? add(c, fields[t], arf_etcd_b64(cmp[i].value, cmp[i].value_len))
						: add_i64(c, fields[t], cmp[i].number)))
			goto out;
	}
	if ((rc = add(req, "success", txn_ops(success, nsuccess))) ||
	    (rc = add(req, "failure", txn_ops(failure, nfailure))))
		goto out;
	if ((rc = call(e, "/v3/kv/txn", req, &reply, err, errlen)))
		goto out;
	struct json_object *v, *resps, *hdr;
	*succeeded = json_object_object_get_ex(reply, "succeeded", &v) && json_object_get_boolean(v);
	if (json_object_object_get_ex(reply, "header", &hdr) &&
	    (rc = arf_etcd_i64(hdr, "revision", &kvs.revision)))
		goto bad;
	if (got && json_object_object_get_ex(reply, "responses", &resps)) {
		if (!json_object_is_type(resps, json_type_array)) {
			rc = -EPROTO;
			goto bad;
		}
		for (size_t i = 0; i < json_object_array_length(resps); i++) {
			struct json_object *r = json_object_array_get_idx(resps, i), *range;
			int64_t keep = kvs.revision;
			if (!json_object_object_get_ex(r, "response_range", &range))
				continue;
			rc = kvs_decode(range, &kvs);
			kvs.revision = keep;
			if (rc)
				goto bad;
		}
	}
	if (got)
		*got = kvs;
	goto out;
bad:
	rc = bad_reply(rc, e, "/v3/kv/txn", err, errlen);
	arf_etcd_kvs_free(&kvs);
out:
	json_object_put(req);
	json_object_put(reply);
	return rc;
}

int arf_etcd_lease_grant(struct arf_etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted,
			 char *err, size_t errlen)
{
	struct json_object *req = json_object_new_object(), *reply = NULL;
	int rc;

	if (!req)
		return -ENOMEM;
	if ((rc = add_i64(req, "TTL", ttl_s)) ||
	    (rc = call(e, "/v3/lease/grant", req, &reply, err, errlen)))
		goto out;
	int64_t i = 0, t = 0;
	if (!(rc = arf_etcd_i64(reply, "ID", &i)) && !(rc = arf_etcd_i64(reply, "TTL", &t)) && !i)
		rc = -EPROTO; /* no lease id */
	rc = bad_reply(rc, e, "/v3/lease/grant", err, errlen);
	if (!rc) {
		*id = i;
		if (granted)
			*granted = t;
	}
out:
	json_object_put(req);
	json_object_put(reply);
	return rc;
}

int arf_etcd_lease_keepalive(struct arf_etcd *e, int64_t id, int64_t *ttl_left, char *err,
			     size_t errlen)
{
	struct json_object *req = json_object_new_object(), *reply = NULL, *res;
	int rc;

	if (!req)
		return -ENOMEM;
	if ((rc = add_i64(req, "ID", id)) ||
	    (rc = call(e, "/v3/lease/keepalive", req, &reply, err, errlen)))
		goto out;
	/* a stream of one: {"result": {...}} or {"error": {...}} */
	if (json_object_object_get_ex(reply, "error", &res) &&
	    json_object_is_type(res, json_type_object)) {
		rc = arf_etcd_reply_error(res, 200, arf_etcd_endpoint(e), err, errlen);
		goto out;
	}
	int64_t t = 0;
	if (!json_object_object_get_ex(reply, "result", &res) ||
	    !json_object_is_type(res, json_type_object))
		rc = -EPROTO;
	else
		rc = arf_etcd_i64(res, "TTL", &t);
	if ((rc = bad_reply(rc, e, "/v3/lease/keepalive", err, errlen)))
		goto out;
	if (t <= 0) { /* what etcd answers for a lease it no longer has */
		snprintf(err, errlen, "etcd %s: lease %llx has expired or was revoked",
			 arf_etcd_endpoint(e), (unsigned long long)id);
		rc = -ENOENT;
	} else if (ttl_left) {
		*ttl_left = t;
	}
out:
	json_object_put(req);
	json_object_put(reply);
	return rc;
}

int arf_etcd_lease_revoke(struct arf_etcd *e, int64_t id, char *err, size_t errlen)
{
	struct json_object *req = json_object_new_object(), *reply = NULL;
	int rc;

	if (!req)
		return -ENOMEM;
	if (!(rc = add_i64(req, "ID", id)))
		rc = call(e, "/v3/lease/revoke", req, &reply, err, errlen);
	json_object_put(req);
	json_object_put(reply);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * etcd watches (see arf_etcd.h): one POST to /v3/watch whose reply is a
 * stream of JSON objects, one a line ({"result": {"created": true}} first,
 * then {"result": {"events": [...]}} per revision), read on a thread of the
 * watch's own.  A stream that breaks is reported as an ERROR event and
 * opened again (on the next endpoint) from the revision after the last one
 * seen, so no change is lost in between unless etcd compacted it away.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd_int.h"

struct arf_etcd_watch {
	struct arf_etcd *e;       /* its endpoints (read only here) */
	char *key;
	int prefix;
	int64_t next_rev;         /* where a new stream starts (0 = now) */
	arf_etcd_watch_fn fn;
	void *arg;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;      /* stop, and the first stream's outcome */
	int stop;                 /* under lock; read unlocked by progress (a flag) */
	int started;              /* the first stream: 0 waiting, 1 created, -errno failed */
	char first_err[1024];      /* why the first stream failed */
	struct arf_etcd_buf line; /* a line not yet complete */
	char why[1024];           /* a protocol error found while reading */
	int created;              /* this stream was confirmed */
};

/* one line of the stream; -1 (with why) stops the stream */
static int on_line(struct arf_etcd_watch *w, const char *p, size_t len, const char *url)
{
	struct json_object *o = NULL, *res, *evs, *v;
	int rc = arf_etcd_parse(p, len, url, &o, w->why, sizeof(w->why));

	if (rc)
		return -1;
	if (json_object_object_get_ex(o, "error", &res)) {
		/* in the stream ({"error": {...}}) or instead of it (an HTTP error) */
		arf_etcd_reply_error(json_object_is_type(res, json_type_object) ? res : o, 200, url,
				     w->why, sizeof(w->why));
		goto stop;
	}
	if (!json_object_object_get_ex(o, "result", &res) || !json_object_is_type(res, json_type_object))
		goto bad;
	int64_t compact = 0;
	if (arf_etcd_i64(res, "compact_revision", &compact))
		goto bad;
	if (compact > 0) {
		snprintf(w->why, sizeof(w->why), "etcd %s: revision %lld is compacted; the watch "
			 "resumes at %lld", url, (long long)w->next_rev, (long long)compact);
		w->next_rev = compact;
		goto stop;
	}
	if (json_object_object_get_ex(res, "canceled", &v) && json_object_get_boolean(v)) {
		struct json_object *r = NULL;
		json_object_object_get_ex(res, "cancel_reason", &r);
		snprintf(w->why, sizeof(w->why), "etcd %s: the watch was canceled%s%s", url,
			 r ? ": " : "", r ? json_object_get_string(r) : "");
		goto stop;
	}
	if (json_object_object_get_ex(res, "created", &v) && json_object_get_boolean(v)) {
		struct json_object *hdr;
		int64_t rev = 0;
		if (json_object_object_get_ex(res, "header", &hdr) && arf_etcd_i64(hdr, "revision", &rev))
			goto bad;
		if (!w->next_rev && rev > 0)
			w->next_rev = rev + 1; /* a new stream resumes after what this one saw */
		w->created = 1;
		pthread_mutex_lock(&w->lock);
		if (!w->started)
			w->started = 1;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	if (!json_object_object_get_ex(res, "events", &evs)) {
		json_object_put(o);
		return 0;
	}
	if (!json_object_is_type(evs, json_type_array))
		goto bad;
	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *ev = json_object_array_get_idx(evs, i), *kv, *type;
		struct arf_etcd_event e = { .kind = ARF_ETCD_EV_PUT };
		if (!json_object_is_type(ev, json_type_object) || !json_object_object_get_ex(ev, "kv", &kv))
			goto bad;
		if (json_object_object_get_ex(ev, "type", &type)) {
			const char *t = json_object_get_string(type);
			if (t && !strcmp(t, "DELETE"))
				e.kind = ARF_ETCD_EV_DELETE;
			else if (!t || strcmp(t, "PUT"))
				goto bad;
		}
		if (arf_etcd_kv_decode(kv, &e.kv))
			goto bad;
		if (e.kv.mod_revision >= w->next_rev)
			w->next_rev = e.kv.mod_revision + 1;
		w->fn(w->arg, &e);
		arf_etcd_kv_free(&e.kv);
	}
	json_object_put(o);
	return 0;
bad:
	snprintf(w->why, sizeof(w->why), "etcd %s: a watch message without the fields etcd's has",
		 url);
stop:
	json_object_put(o);
	return -1;
}

struct stream {
	struct arf_etcd_watch *w;
	const char *url;
};

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct stream *s = arg;
	struct arf_etcd_watch *w = s->w;
	size_t len = size * n;

	if (arf_etcd_buf_add(&w->line, data, len)) {
		snprintf(w->why, sizeof(w->why), "etcd %s: a watch message over %u bytes", s->url,
			 ARF_ETCD_MAX_REPLY);
		return 0;
	}
	char *nl;
	size_t done = 0;
	while ((nl = memchr(w->line.p + done, '\n', w->line.len - done))) {
		size_t l = (size_t)(nl - (w->line.p + done));
		int blank = strspn(w->line.p + done, " \r\t") >= l;
		if (!blank && on_line(w, w->line.p + done, l, s->url))
			return 0;
		done += l + 1;
	}
	memmove(w->line.p, w->line.p + done, w->line.len - done);
	w->line.len -= done;
	return len;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct arf_etcd_watch *w = arg;
	(void)a, (void)b, (void)c, (void)d;
	return __atomic_load_n(&w->stop, __ATOMIC_ACQUIRE);
}

/* one stream on endpoint k until it ends; the reason in msg; 1 when etcd
 * refused the token as stale (dropped: the next stream takes a new one) */
static int stream_once(struct arf_etcd_watch *w, CURL *c, size_t k, char *msg, size_t msglen)
{
	struct json_object *req = json_object_new_object(), *cr = json_object_new_object();
	char url[512], cerr[CURL_ERROR_SIZE] = "", *token = NULL;
	struct curl_slist *hdr = NULL;
	struct stream s = { w, url };

	snprintf(url, sizeof(url), "%s/v3/watch", w->e->endpoint[k]);
	w->why[0] = 0;
	w->line.len = 0;
	w->created = 0;
	if (!req || !cr || json_object_object_add(req, "create_request", cr) ||
	    arf_etcd_key_fields(cr, w->key, w->prefix) ||
	    (w->next_rev && json_object_object_add(cr, "start_revision",
						   json_object_new_int64(w->next_rev)))) {
		if (!json_object_object_get_ex(req, "create_request", NULL))
			json_object_put(cr);
		json_object_put(req);
		snprintf(msg, msglen, "etcd watch: out of memory");
		return 0;
	}
	int stale = 0;
	if (arf_etcd_token_get(w->e, &token, msg, msglen)) {
		json_object_put(req);
		return 0; /* the user cannot authenticate: msg says why */
	}
	curl_easy_reset(c);
	if (arf_etcd_curl_setup(c, w->e, url,
				json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN), token,
				&hdr)) {
		snprintf(msg, msglen, "etcd watch: out of memory");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, w);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	CURLcode cc = curl_easy_perform(c);
	long http = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
	if (w->why[0])
		snprintf(msg, msglen, "%s", w->why);
	else if (cc == CURLE_OK && http != 200)
		snprintf(msg, msglen, "etcd %s: HTTP %ld", url, http);
	else if (cc != CURLE_OK)
		arf_etcd_curl_error(cc, url, cerr, msg, msglen);
	else
		snprintf(msg, msglen, "etcd %s: the watch stream ended", url);
	if (token && !w->created && strstr(msg, "invalid auth token")) {
		arf_etcd_token_drop(w->e, token); /* expired since e's last call */
		stale = 1;
	}
out:
	curl_slist_free_all(hdr);
	free(token);
	json_object_put(req);
	return stale;
}

/* a stream, again at once with a new token if etcd found the one it had
 * stale (expired while only the watch used it) */
static void stream(struct arf_etcd_watch *w, CURL *c, size_t k, char *msg, size_t msglen)
{
	if (stream_once(w, c, k, msg, msglen))
		stream_once(w, c, k, msg, msglen);
}

static void *watch_main(void *arg)
{
	struct arf_etcd_watch *w = arg;
	CURL *c = curl_easy_init();
	char msg[1024];
	size_t k;

	pthread_mutex_lock(&w->e->lock);
	k = w->e->cur;
	pthread_mutex_unlock(&w->e->lock);
	for (unsigned tries = 0; c; tries++, k = (k + 1) % w->e->nendpoints) {
		stream(w, c, k, msg, sizeof(msg));
		pthread_mutex_lock(&w->lock);
		if (w->stop) {
			pthread_mutex_unlock(&w->lock);
			break;
		}
		if (!w->started && tries + 1 >= w->e->nendpoints) {
			/* the first stream failed on every endpoint: arf_etcd_watch_start says so */
			snprintf(w->first_err, sizeof(w->first_err), "%s", msg);
			w->started = -EIO;
			pthread_cond_broadcast(&w->cond);
			pthread_mutex_unlock(&w->lock);
			break;
		}
		int report = w->started > 0;
		pthread_mutex_unlock(&w->lock);
		if (report) {
			struct arf_etcd_event ev = { .kind = ARF_ETCD_EV_ERROR, .message = msg };
			w->fn(w->arg, &ev);
		}
		/* half a second before the next try, unless stopped */
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 500000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&w->lock);
		while (!w->stop && pthread_cond_timedwait(&w->cond, &w->lock, &until) != ETIMEDOUT)
			;
		int stop = w->stop;
		pthread_mutex_unlock(&w->lock);
		if (stop)
			break;
	}
	if (!c) {
		pthread_mutex_lock(&w->lock);
		snprintf(w->first_err, sizeof(w->first_err), "etcd watch: out of memory");
		w->started = -ENOMEM;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	curl_easy_cleanup(c);
	return NULL;
}

static void watch_free(struct arf_etcd_watch *w)
{
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w->line.p);
	free(w->key);
	free(w);
}

int arf_etcd_watch_start(struct arf_etcd *e, const char *key, int prefix,
			 int64_t start_revision, arf_etcd_watch_fn fn, void *arg,
			 struct arf_etcd_watch **out, char *err, size_t errlen)
{
	struct arf_etcd_watch *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	if (!key[0]) {
		free(w);
		snprintf(err, errlen, "etcd watch: an empty key");
		return -EINVAL;
	}
	w->e = e;
	w->prefix = prefix;
	w->next_rev = start_revision > 0 ? start_revision : 0;
	w->fn = fn;
	w->arg = arg;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (!(w->key = strdup(key))) {
		watch_free(w);
		return -ENOMEM;
	}
	int rc = pthread_create(&w->thread, NULL, watch_main, w);
	if (rc) {
		watch_free(w);
		snprintf(err, errlen, "etcd watch: thread: %s", strerror(rc));
		return -rc;
	}
	/* wait for etcd's "created" (or the first failure) */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += e->timeout_ms / 1000 + 1;
	pthread_mutex_lock(&w->lock);
	while (!w->started && pthread_cond_timedwait(&w->cond, &w->lock, &until) != ETIMEDOUT)
		;
	rc = w->started > 0 ? 0 : w->started ? w->started : -ETIMEDOUT;
	if (rc == -ETIMEDOUT)
		snprintf(err, errlen, "etcd %s: the watch was not confirmed in %u ms",
			 arf_etcd_endpoint(e), e->timeout_ms + 1000);
	else if (rc)
		snprintf(err, errlen, "%s", w->first_err);
	pthread_mutex_unlock(&w->lock);
	if (rc) {
		arf_etcd_watch_stop(w);
		return rc;
	}
	*out = w;
	return 0;
}

void arf_etcd_watch_stop(struct arf_etcd_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	__atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	watch_free(w);
}

/* SPDX-License-Identifier: MIT */
/*
 * What etcd.c (calls) and watch.c (streams) share: the endpoint list, the
 * curl setup, errors in etcd's JSON, and the decoding of a key-value object.
 */
#ifndef ARF_ETCD_INT_H
#define ARF_ETCD_INT_H

#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>

#include "arf_etcd.h"

struct arf_etcd {
	char *endpoint[ARF_ETCD_MAX_ENDPOINTS];
	size_t nendpoints;
	size_t cur;             /* the one that answered last (under lock) */
	unsigned timeout_ms;
	pthread_mutex_t lock;   /* serialises calls on curl */
	CURL *curl;
	char *user;             /* NULL: no authentication */
	char *password;         /* user's, from its file; wiped at close */
	char *token;            /* etcd's token for user (under lock; NULL: none yet) */
	char *ca_file, *cert_file, *key_file; /* https (NULL: none) */
};

/* A reply's bytes as they arrive (at most ARF_ETCD_MAX_REPLY). */
struct arf_etcd_buf {
	char *p;
	size_t len, cap;
	int overflow;
};
int arf_etcd_buf_add(struct arf_etcd_buf *b, const char *data, size_t len);

/* curl_global_init, once per process. */
void arf_etcd_global_init(void);
/* The options every request has: POST of body to url, timeouts, e's TLS
 * files, and with token its Authorization header, in *hdr (freed by the
 * caller with curl_slist_free_all after the transfer).  -ENOMEM. */
int arf_etcd_curl_setup(CURL *c, const struct arf_etcd *e, const char *url, const char *body,
			const char *token, struct curl_slist **hdr);

/* Security (auth.c).  Copy sec into e, check its rules and (with
 * read_password) read the password: 0, or -errno with err (see
 * arf_etcd_open). */
int arf_etcd_security_load(struct arf_etcd *e, const struct arf_etcd_security *sec,
			   int read_password, char *err, size_t errlen);
/* Free what arf_etcd_security_load set, wiping the password and token. */
void arf_etcd_security_free(struct arf_etcd *e);
/* 1 if etcd's error reply o says the token is no longer good (expired,
 * or issued before an auth change): authenticate again. */
int arf_etcd_token_stale(struct json_object *o);
/* A copy of e's token (authenticating first when there is none yet) into
 * *token (NULL without a user; freed by the caller): for a watch's stream.
 * 0 or -errno with err. */
int arf_etcd_token_get(struct arf_etcd *e, char **token, char *err, size_t errlen);
/* Forget e's token if it is still token (a stream found it stale). */
void arf_etcd_token_drop(struct arf_etcd *e, const char *token);
/* curl's failure as -errno with the message "etcd URL: reason". */
int arf_etcd_curl_error(CURLcode cc, const char *url, const char *detail, char *err,
			size_t errlen);
/* An error object of etcd's ({"error"|"message": "...", "code": N}) as
 * -errno with "etcd URL: HTTP status: message (gRPC code N)". */
int arf_etcd_reply_error(struct json_object *o, long http, const char *url, char *err,
			 size_t errlen);
/* Parse len bytes as one JSON object; -EPROTO with a message if not. */
int arf_etcd_parse(const char *p, size_t len, const char *url, struct json_object **out,
		   char *err, size_t errlen);
/* Read field name of o as an int64 (etcd writes them as decimal strings;
 * an absent field is 0, as the gateway omits zeroes).  -EPROTO otherwise. */
int arf_etcd_i64(struct json_object *o, const char *name, int64_t *out);
/* Decode a key-value object into kv (allocating key and value). */
int arf_etcd_kv_decode(struct json_object *o, struct arf_etcd_kv *kv);
void arf_etcd_kv_free(struct arf_etcd_kv *kv);
/* base64 of len bytes as a new JSON string (NULL on ENOMEM). */
struct json_object *arf_etcd_b64(const void *p, size_t len);
/* "key" (and with prefix "range_end": key + 1 at its last byte below 0xff)
 * added to o.  -ENOMEM or -EINVAL (an empty key). */
int arf_etcd_key_fields(struct json_object *o, const char *key, int prefix);

#endif

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
/* The options every request has: POST of body to url, timeouts. */
void arf_etcd_curl_setup(CURL *c, const char *url, const char *body, unsigned timeout_ms);
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

/* SPDX-License-Identifier: MIT */
/*
 * The cell's records in etcd (see cell.h): keys, the JSON of server and
 * volume records, registration under a lease, and volume records created
 * and changed by compare-and-swap transactions.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell.h"
#include "etcd_int.h"

int arf_cell_name_ok(const char *name)
{
	size_t len = strlen(name);

	if (!len || len >= ARF_CELL_NAME_MAX || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == len;
}

int arf_cell_key(char *buf, size_t len, const char *cell, const char *kind, const char *name)
{
	if (!arf_cell_name_ok(cell) || (name[0] && !arf_cell_name_ok(name)))
		return -EINVAL;
	int n = snprintf(buf, len, ARF_CELL_PREFIX "%s/%s/%s", cell, kind, name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---------------------------------------------------------------- JSON */

static int to_text(struct json_object *o, char **json)
{
	const char *s = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : NULL;
	*json = s ? strdup(s) : NULL;
	json_object_put(o);
	return *json ? 0 : -ENOMEM;
}

int arf_cell_server_encode(const struct arf_cell_server *s, char **json)
{
	struct json_object *o = json_object_new_object();
	if (o) {
		json_object_object_add(o, "id", json_object_new_string(s->id));
		json_object_object_add(o, "address", json_object_new_string(s->address));
		json_object_object_add(o, "port", json_object_new_int(s->port));
		json_object_object_add(o, "rdma_port", json_object_new_int(s->rdma_port));
		json_object_object_add(o, "incarnation", json_object_new_uint64(s->incarnation));
		json_object_object_add(o, "software", json_object_new_string(s->software));
	}
	return to_text(o, json);
}

int arf_cell_volume_encode(const struct arf_cell_volume *v, char **json)
{
	struct json_object *o = json_object_new_object();
	if (o) {
		json_object_object_add(o, "name", json_object_new_string(v->name));
		json_object_object_add(o, "server", json_object_new_string(v->server));
		json_object_object_add(o, "state", json_object_new_string(v->state));
		json_object_object_add(o, "version", json_object_new_int64(v->version));
	}
	return to_text(o, json);
}

/* field name of o: a string that fits out (with valid: a cell name) */
static int str_field(struct json_object *o, const char *name, char *out, size_t outlen, int valid)
{
	struct json_object *v;
	if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string) ||
	    (size_t)json_object_get_string_len(v) >= outlen)
		return -1;
	snprintf(out, outlen, "%s", json_object_get_string(v));
	return valid && !arf_cell_name_ok(out) ? -1 : 0;
}

/* field name of o: an integer from 0 to max */
static int int_field(struct json_object *o, const char *name, uint64_t max, uint64_t *out)
{
	struct json_object *v;
	if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	int64_t i = json_object_get_int64(v); /* INT64_MAX for all above it */
	if (i < 0)
		return -1;
	uint64_t u = i == INT64_MAX ? json_object_get_uint64(v) : (uint64_t)i;
	if (u > max)
		return -1;
	*out = u;
	return 0;
}

static int decode_object(const char *json, size_t len, struct json_object **o, const char *what,
			 char *err, size_t errlen)
{
	char why[600];
	if (arf_etcd_parse(json, len, what, o, why, sizeof(why))) {
		snprintf(err, errlen, "%s: not a JSON object", what);
		return -EPROTO;
	}
	return 0;
}

int arf_cell_server_decode(const char *json, size_t len, struct arf_cell_server *s, char *err,
			   size_t errlen)
{
	struct json_object *o;
	uint64_t port, rport, inc;
	const char *bad = NULL;

	memset(s, 0, sizeof(*s));
	if (decode_object(json, len, &o, "server record", err, errlen))
		return -EPROTO;
	if (str_field(o, "id", s->id, sizeof(s->id), 1))
		bad = "id";
	else if (str_field(o, "address", s->address, sizeof(s->address), 0) || !s->address[0])
		bad = "address";
	else if (int_field(o, "port", 65535, &port))
		bad = "port";
	else if (int_field(o, "rdma_port", 65535, &rport))
		bad = "rdma_port";
	else if (int_field(o, "incarnation", UINT64_MAX, &inc))
		bad = "incarnation";
	else if (str_field(o, "software", s->software, sizeof(s->software), 0))
		bad = "software";
	json_object_put(o);
	if (bad) {
		snprintf(err, errlen, "server record: '%s' is missing or not valid", bad);
		return -EPROTO;
	}
	s->port = (uint16_t)port;
	s->rdma_port = (uint16_t)rport;
	s->incarnation = inc;
	return 0;
}

int arf_cell_volume_decode(const char *json, size_t len, struct arf_cell_volume *v, char *err,
			   size_t errlen)
{
	struct json_object *o;
	uint64_t version;
	const char *bad = NULL;

	memset(v, 0, sizeof(*v));
	if (decode_object(json, len, &o, "volume record", err, errlen))
		return -EPROTO;
	if (str_field(o, "name", v->name, sizeof(v->name), 1))
		bad = "name";
	else if (str_field(o, "server", v->server, sizeof(v->server), 1))
		bad = "server";
	else if (str_field(o, "state", v->state, sizeof(v->state), 0) ||
		 (strcmp(v->state, ARF_CELL_VOL_ONLINE) && strcmp(v->state, ARF_CELL_VOL_OFFLINE) &&
		  strcmp(v->state, ARF_CELL_VOL_MOVING)))
		bad = "state";
	else if (int_field(o, "version", INT64_MAX, &version) || !version)
		bad = "version";
	json_object_put(o);
	if (bad) {
		snprintf(err, errlen, "volume record: '%s' is missing or not valid", bad);
		return -EPROTO;
	}
	v->version = (int64_t)version;
	return 0;
}

/* ---------------------------------------------------------------- servers */

int arf_cell_server_register(struct arf_etcd *e, const char *cell, const struct arf_cell_server *s,
			     int64_t lease, char *err, size_t errlen)
{
	char key[ARF_CELL_KEY_MAX], *json = NULL;
	struct arf_etcd_kvs got = { 0 };
	int ok = 0, rc;

	if ((rc = arf_cell_key(key, sizeof(key), cell, "servers", s->id))) {
		snprintf(err, errlen, "cell '%s', server '%s': not a valid name", cell, s->id);
		return rc;
	}
	if ((rc = arf_cell_server_encode(s, &json)))
		return rc;
	/* absent, or ours already (a renewal after a lost reply): put */
	struct arf_etcd_cmp absent = { .key = key, .target = ARF_ETCD_CREATE, .number = 0 };
	struct arf_etcd_op put = { .kind = ARF_ETCD_OP_PUT, .key = key, .value = json,
				   .value_len = strlen(json), .lease = lease };
	struct arf_etcd_op get = { .kind = ARF_ETCD_OP_GET, .key = key };
	if ((rc = arf_etcd_txn(e, &absent, 1, &put, 1, &get, 1, &ok, &got, err, errlen)))
		goto out;
	if (!ok && got.n == 1 && got.kv[0].lease == lease)
		rc = arf_etcd_put(e, key, json, strlen(json), lease, NULL, err, errlen);
	else if (!ok && got.n == 1) {
		struct arf_cell_server other;
		char why[200], holder[300];
		if (arf_cell_server_decode(got.kv[0].value, got.kv[0].value_len, &other, why,
					   sizeof(why)))
			snprintf(holder, sizeof(holder), "%s", why);
		else
			snprintf(holder, sizeof(holder), "%s port %u", other.address, other.port);
		snprintf(err, errlen, "server id '%s' is held in cell '%s' by another live server "
			 "(%s, lease %llx)", s->id, cell, holder, (unsigned long long)got.kv[0].lease);
		rc = -EEXIST;
	} else if (!ok) {
		rc = -EAGAIN; /* deleted in between: the caller tries again */
		snprintf(err, errlen, "server id '%s': the record changed while registering", s->id);
	}
out:
	arf_etcd_kvs_free(&got);
	free(json);
	return rc;
}

/* every record under /arf/<cell>/<kind>/ */
static int list(struct arf_etcd *e, const char *cell, const char *kind, struct arf_etcd_kvs *kvs,
		char *err, size_t errlen)
{
	char prefix[ARF_CELL_KEY_MAX];
	int rc = arf_cell_key(prefix, sizeof(prefix), cell, kind, "");
	if (rc) {
		snprintf(err, errlen, "cell '%s': not a valid name (1 to 63 of A-Z a-z 0-9 . _ -)",
			 cell);
		return rc;
	}
	return arf_etcd_get(e, prefix, 1, kvs, err, errlen);
}

int arf_cell_servers_list(struct arf_etcd *e, const char *cell, struct arf_cell_server **out,
			  size_t *n, char *err, size_t errlen)
{
	struct arf_etcd_kvs kvs;
	struct arf_cell_server *s = NULL;
	char why[300];
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = list(e, cell, "servers", &kvs, err, errlen)))
		return rc;
	if (kvs.n && !(s = calloc(kvs.n, sizeof(*s))))
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < kvs.n; i++) {
		if ((rc = arf_cell_server_decode(kvs.kv[i].value, kvs.kv[i].value_len, &s[i], why,
						 sizeof(why))))
			snprintf(err, errlen, "etcd %s: %s: %s", arf_etcd_endpoint(e), kvs.kv[i].key, why);
		s[i].lease = kvs.kv[i].lease;
	}
	size_t count = kvs.n;
	arf_etcd_kvs_free(&kvs);
	if (rc) {
		free(s);
		return rc;
	}
	*out = s;
	*n = count;
	return 0;
}

/* ---------------------------------------------------------------- volumes */

static int volume_key(char *key, size_t len, const char *cell, const char *name, char *err,
		      size_t errlen)
{
	int rc = arf_cell_key(key, len, cell, "volumes", name);
	if (rc)
		snprintf(err, errlen, "cell '%s', volume '%s': not a valid name (1 to 63 of A-Z a-z "
			 "0-9 . _ -)", cell, name);
	return rc;
}

/* Put v as version version if the record is still at mod_revision expect
 * (0: if there is none); *ok says whether it was, got holds the record as
 * it is when not (and the transaction's revision). */
static int volume_cas(struct arf_etcd *e, const char *cell, const struct arf_cell_volume *v,
		      int64_t version, int64_t expect, int *ok, struct arf_etcd_kvs *got, char *err,
		      size_t errlen)
{
	char key[ARF_CELL_KEY_MAX], *json = NULL;
	int rc;

	if ((rc = volume_key(key, sizeof(key), cell, v->name, err, errlen)))
		return rc;
	struct arf_cell_volume nv = *v;
	nv.version = version;
	if ((rc = arf_cell_volume_encode(&nv, &json)))
		return rc;
	struct arf_etcd_cmp same = { .key = key, .target = expect ? ARF_ETCD_MOD : ARF_ETCD_CREATE,
				     .number = expect };
	struct arf_etcd_op put = { .kind = ARF_ETCD_OP_PUT, .key = key, .value = json,
				   .value_len = strlen(json) };
	struct arf_etcd_op get = { .kind = ARF_ETCD_OP_GET, .key = key };
	rc = arf_etcd_txn(e, &same, 1, &put, 1, &get, 1, ok, got, err, errlen);
	free(json);
	return rc;
}

int arf_cell_volume_create(struct arf_etcd *e, const char *cell, struct arf_cell_volume *v,
			   char *err, size_t errlen)
{
	struct arf_etcd_kvs got = { 0 };
	int ok = 0, rc = volume_cas(e, cell, v, 1, 0, &ok, &got, err, errlen);

	if (!rc && !ok) {
		snprintf(err, errlen, "volume '%s' already exists in cell '%s'", v->name, cell);
		rc = -EEXIST;
	} else if (!rc) {
		v->version = 1;
		v->mod_revision = got.revision;
	}
	arf_etcd_kvs_free(&got);
	return rc;
}

/* kv as a volume record, its key named in an error */
static int volume_from_kv(struct arf_etcd *e, const struct arf_etcd_kv *kv,
			  struct arf_cell_volume *v, char *err, size_t errlen)
{
	char why[300];
	int rc = arf_cell_volume_decode(kv->value, kv->value_len, v, why, sizeof(why));
	if (rc)
		snprintf(err, errlen, "etcd %s: %s: %s", arf_etcd_endpoint(e), kv->key, why);
	v->mod_revision = kv->mod_revision;
	return rc;
}

int arf_cell_volume_read(struct arf_etcd *e, const char *cell, const char *name,
			 struct arf_cell_volume *v, char *err, size_t errlen)
{
	char key[ARF_CELL_KEY_MAX];
	struct arf_etcd_kvs kvs;
	int rc;

	if ((rc = volume_key(key, sizeof(key), cell, name, err, errlen)) ||
	    (rc = arf_etcd_get(e, key, 0, &kvs, err, errlen)))
		return rc;
	if (!kvs.n) {
		snprintf(err, errlen, "no volume '%s' in cell '%s'", name, cell);
		rc = -ENOENT;
	} else {
		rc = volume_from_kv(e, &kvs.kv[0], v, err, errlen);
	}
	arf_etcd_kvs_free(&kvs);
	return rc;
}

int arf_cell_volume_update(struct arf_etcd *e, const char *cell, struct arf_cell_volume *v,
			   char *err, size_t errlen)
{
	struct arf_etcd_kvs got = { 0 };
	int ok = 0, rc;

	if (v->mod_revision <= 0) {
		snprintf(err, errlen, "volume '%s': update needs the revision it was read at", v->name);
		return -EINVAL;
	}
	if ((rc = volume_cas(e, cell, v, v->version + 1, v->mod_revision, &ok, &got, err, errlen)))
		goto out;
	if (!ok) {
		rc = got.n ? -ESTALE : -ENOENT;
		if (got.n)
			snprintf(err, errlen, "volume '%s' changed since it was read (revision %lld, "
				 "now %lld): read it again", v->name, (long long)v->mod_revision,
				 (long long)got.kv[0].mod_revision);
		else
			snprintf(err, errlen, "no volume '%s' in cell '%s'", v->name, cell);
		goto out;
	}
	v->version++;
	v->mod_revision = got.revision;
out:
	arf_etcd_kvs_free(&got);
	return rc;
}

int arf_cell_volume_delete(struct arf_etcd *e, const char *cell, const struct arf_cell_volume *v,
			   char *err, size_t errlen)
{
	char key[ARF_CELL_KEY_MAX];
	struct arf_etcd_kvs got = { 0 };
	int ok = 0, rc;

	if ((rc = volume_key(key, sizeof(key), cell, v->name, err, errlen)))
		return rc;
	struct arf_etcd_cmp same = { .key = key, .target = ARF_ETCD_MOD, .number = v->mod_revision };
	struct arf_etcd_op del = { .kind = ARF_ETCD_OP_DELETE, .key = key };
	struct arf_etcd_op get = { .kind = ARF_ETCD_OP_GET, .key = key };
	if ((rc = arf_etcd_txn(e, &same, 1, &del, 1, &get, 1, &ok, &got, err, errlen)))
		return rc;
	if (!ok) {
		rc = got.n ? -ESTALE : -ENOENT;
		snprintf(err, errlen, got.n ? "volume '%s' changed since it was read: read it again"
					    : "no volume '%s' in cell '%s'", v->name, cell);
	}
	arf_etcd_kvs_free(&got);
	return rc;
}

int arf_cell_volumes_list(struct arf_etcd *e, const char *cell, struct arf_cell_volume **out,
			  size_t *n, char *err, size_t errlen)
{
	struct arf_etcd_kvs kvs;
	struct arf_cell_volume *v = NULL;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = list(e, cell, "volumes", &kvs, err, errlen)))
		return rc;
	if (kvs.n && !(v = calloc(kvs.n, sizeof(*v))))
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < kvs.n; i++)
		rc = volume_from_kv(e, &kvs.kv[i], &v[i], err, errlen);
	size_t count = kvs.n;
	arf_etcd_kvs_free(&kvs);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = count;
	return 0;
}

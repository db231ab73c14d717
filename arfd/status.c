/* SPDX-License-Identifier: MIT */
/*
 * arfd/status — the server's summary, one JSON object (json-c): what
 * STATUS answers on a data connection (arfctl status URL) and the control
 * socket's status command (arfctl status), so both say the same things in
 * the same schema.  The caller holds fs_lock.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "arf_ops.h"
#include "arfd.h"
#include "locks.h"

static void put_u64(json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

json_object *arfd_status_object(struct arfd *d)
{
	struct timespec now;
	struct arf_ops_statfs sf;
	uint64_t one_reads, one_bytes;
	json_object *o = json_object_new_object(), *x;
	uint64_t reqs = 0;

	if (!o)
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &now);
	arf_ops_statfs(&d->fs, &sf);
	arf_net_server_view_reads(d->net, d->view, &one_reads, &one_bytes); /* this volume's */
	for (int i = 0; i < ARF_PROTO_NKINDS; i++)
		reqs += d->ctr.requests[i];
	json_object_object_add(o, "version", json_object_new_string(ARF_VERSION));
	json_object_object_add(o, "volume", json_object_new_string(d->volume));
	put_u64(o, "incarnation", d->incarnation);
	json_object_object_add(o, "uptime_s",
			       json_object_new_int64((int64_t)(now.tv_sec - d->started.tv_sec)));
	json_object_object_add(o, "state", json_object_new_string(d->failed ? "failed" : "serving"));
	if (d->failed) /* commit.c: RocksDB refused a write or a sync */
		json_object_object_add(o, "failure", json_object_new_string(d->failure));
	x = json_object_new_object();
	json_object_object_add(x, "name", json_object_new_string(d->cfg.export_name));
	json_object_object_add(x, "sync", json_object_new_boolean(d->cfg.sync));
	json_object_object_add(x, "read_only", json_object_new_boolean(d->cfg.read_only));
	json_object_object_add(x, "root_squash", json_object_new_boolean(d->cfg.root_squash));
	json_object_object_add(o, "export", x);
	x = json_object_new_object();
	put_u64(x, "meta_bytes", d->meta_size);
	put_u64(x, "data_bytes", d->data_size);
	put_u64(x, "scratch_bytes", d->scratch_size);
	json_object_object_add(o, "regions", x);
	x = json_object_new_object();
	put_u64(x, "total", sf.files);
	put_u64(x, "free", sf.ffree);
	json_object_object_add(o, "inodes", x);
	x = json_object_new_object();
	put_u64(x, "size", sf.bsize);
	put_u64(x, "total", sf.blocks);
	put_u64(x, "free", sf.bfree);
	json_object_object_add(o, "blocks", x);
	put_u64(o, "clients", __atomic_load_n(&d->clients, __ATOMIC_RELAXED));
	put_u64(o, "requests", reqs);
	put_u64(o, "mutations", d->ctr.mutations);
	put_u64(o, "syncs", d->ctr.syncs);
	put_u64(o, "one_sided_reads", one_reads);
	put_u64(o, "one_sided_bytes", one_bytes);
	arfd_locks_status(d, o);
	return o;
}

json_object *arfd_volumes_object(struct arfd *root, const char *only)
{
	json_object *r = json_object_new_object(), *list = json_object_new_array();
	int found = 0;

	if (!r || !list || json_object_object_add(r, "volumes", list)) {
		json_object_put(r);
		json_object_put(list);
		return NULL;
	}
	for (int i = -1, n = __atomic_load_n(&root->nvols, __ATOMIC_ACQUIRE); i < n; i++) {
		struct arfd *v = i < 0 ? root : root->vols[i];
		if ((only && strcmp(only, v->volume)) || __atomic_load_n(&v->removed, __ATOMIC_SEQ_CST))
			continue;
		arfd_lock_for_control(v);
		json_object *o = arfd_status_object(v);
		arfd_fs_unlock(v);
		if (!o || json_object_array_add(list, o)) {
			json_object_put(o);
			json_object_put(r);
			return NULL;
		}
		json_object_object_add(o, "data_dir", json_object_new_string(v->cfg.data_dir));
		found = 1;
	}
	if (only && !found) {
		json_object_put(r);
		r = json_object_new_object();
		if (r) {
			char msg[128];
			snprintf(msg, sizeof(msg), "no volume '%.63s' on this server", only);
			json_object_object_add(r, "error", json_object_new_string(msg));
		}
	}
	return r;
}

void arfd_status_json(struct arfd *d, struct arf_proto_wr *w)
{
	json_object *o = arfd_status_object(d);
	const char *text = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : NULL;

	if (!text) {
		w->err = -ENOMEM; /* the reply says so */
	} else {
		arf_proto_put(w, text, strlen(text));
	}
	json_object_put(o);
}

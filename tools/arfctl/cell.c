/* SPDX-License-Identifier: MIT */
/*
 * arfctl cell status: a cell's live servers and its volume records, read
 * from etcd (cell/cell.h holds the schema), not from any arfd -- etcd has
 * all of the cell's state.  Where etcd is and which cell: --etcd and
 * --cell, else arfd.conf's [cell] (--config FILE, default
 * /etc/arf/arfd.conf where it is readable), else http://127.0.0.1:2379 and
 * no cell (an error that says so).  arfctl authenticates as a user of its
 * own (--user, --password-file: a role that may only read /arf/<cell>/
 * will do) and with a client certificate of its own (--cert, --key); of
 * arfd.conf it takes the CA file (ca_file) where --cacert is not given,
 * never arfd's user, password or client certificate.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "cell.h"
#include "config.h"

#define DEFAULT_ETCD "http://127.0.0.1:2379"

static int usage_error(const char *why)
{
	fprintf(stderr, "arfctl: cell: %s (usage: arfctl cell status [--etcd URL] [--cell NAME] "
		"[--config FILE] [--user NAME --password-file FILE] [--cacert FILE] [--cert FILE "
		"[--key FILE]])\n", why);
	return 2;
}

/* the record as etcd holds it, and its lease */
static struct json_object *server_json(const struct arf_cell_server *s)
{
	char *text = NULL, lease[24];
	struct json_object *o = arf_cell_server_encode(s, &text) ? NULL : json_tokener_parse(text);

	free(text);
	if (!o)
		return json_object_new_null();
	snprintf(lease, sizeof(lease), "%llx", (unsigned long long)s->lease);
	json_object_object_add(o, "lease", json_object_new_string(lease));
	return o;
}

/* the record as etcd holds it, and etcd's revision of it */
static struct json_object *volume_json(const struct arf_cell_volume *v)
{
	char *text = NULL;
	struct json_object *o = arf_cell_volume_encode(v, &text) ? NULL : json_tokener_parse(text);

	free(text);
	if (!o)
		return json_object_new_null();
	json_object_object_add(o, "mod_revision", json_object_new_int64(v->mod_revision));
	return o;
}

static void print(const char *cell, const char *etcd, const struct arf_cell_server *s,
		  size_t ns, const struct arf_cell_volume *v, size_t nv, int json)
{
	if (json) {
		struct json_object *o = json_object_new_object(), *a = json_object_new_array(),
				   *b = json_object_new_array();
		json_object_object_add(o, "cell", json_object_new_string(cell));
		json_object_object_add(o, "etcd", json_object_new_string(etcd));
		for (size_t i = 0; i < ns; i++)
			json_object_array_add(a, server_json(&s[i]));
		for (size_t i = 0; i < nv; i++)
			json_object_array_add(b, volume_json(&v[i]));
		json_object_object_add(o, "servers", a);
		json_object_object_add(o, "volumes", b);
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
		return;
	}
	printf("cell %s (etcd %s)\n", cell, etcd);
	printf("servers: %zu\n", ns);
	if (ns)
		printf("  %-20s %-24s %6s %6s %-20s %s\n", "ID", "ADDRESS", "PORT", "RDMA",
		       "INCARNATION", "SOFTWARE");
	for (size_t i = 0; i < ns; i++) {
		char rdma[8] = "-";
		if (s[i].rdma_port)
			snprintf(rdma, sizeof(rdma), "%u", s[i].rdma_port);
		printf("  %-20s %-24s %6u %6s %-20llu %s\n", s[i].id, s[i].address, s[i].port, rdma,
		       (unsigned long long)s[i].incarnation, s[i].software);
	}
	printf("volumes: %zu\n", nv);
	if (nv)
		printf("  %-20s %-20s %-8s %s\n", "NAME", "SERVER", "STATE", "VERSION");
	for (size_t i = 0; i < nv; i++)
		printf("  %-20s %-20s %-8s %lld\n", v[i].name, v[i].server, v[i].state,
		       (long long)v[i].version);
}

int arfctl_cell(int argc, char **argv, int json)
{
	const char *etcd = NULL, *cell = NULL, *config = NULL;
	struct arf_etcd_security sec = { 0 };
	struct arfd_config cfg;
	char err[1024];

	if (argc < 1 || strcmp(argv[0], "status"))
		return usage_error(argc < 1 ? "which command?" : "unknown command");
	for (int i = 1; i < argc; i++) {
		const char **slot = !strcmp(argv[i], "--etcd") ? &etcd
				  : !strcmp(argv[i], "--cell") ? &cell
				  : !strcmp(argv[i], "--config") ? &config
				  : !strcmp(argv[i], "--user") ? &sec.user
				  : !strcmp(argv[i], "--password-file") ? &sec.password_file
				  : !strcmp(argv[i], "--cacert") ? &sec.ca_file
				  : !strcmp(argv[i], "--cert") ? &sec.cert_file
				  : !strcmp(argv[i], "--key") ? &sec.key_file : NULL;
		if (!slot)
			return usage_error("unexpected argument");
		if (i + 1 >= argc)
			return usage_error("an option without its value");
		*slot = argv[++i];
	}
	/* what the flags leave open, from arfd.conf's [cell] */
	if (!config && (!etcd || !cell) && access(ARFD_DEFAULT_CONFIG, R_OK) == 0)
		config = ARFD_DEFAULT_CONFIG;
	arfd_config_defaults(&cfg);
	if (config && arfd_config_load(&cfg, config, err, sizeof(err))) {
		fprintf(stderr, "arfctl: cell status: %s\n", err);
		return 1;
	}
	if (!etcd)
		etcd = cfg.cell_etcd[0] ? cfg.cell_etcd : DEFAULT_ETCD;
	if (!cell)
		cell = cfg.cell_name;
	if (!sec.ca_file && !strncmp(etcd, "https://", 8))
		sec.ca_file = cfg.cell_ca_file; /* etcd's CA is no secret; arfd's user is */
	if (!cell[0]) {
		fprintf(stderr, "arfctl: cell status: which cell? (--cell NAME, or [cell] name in %s)\n",
			config ? config : ARFD_DEFAULT_CONFIG);
		return 2;
	}
	if (!arf_cell_name_ok(cell))
		return usage_error("a cell name is 1 to 63 of A-Z a-z 0-9 . _ -");

	struct arf_etcd *e = NULL;
	struct arf_cell_server *s = NULL;
	struct arf_cell_volume *v = NULL;
	size_t ns = 0, nv = 0;
	int rc = arf_etcd_open(&e, etcd, 0, &sec, err, sizeof(err));
	if (!rc)
		rc = arf_cell_servers_list(e, cell, &s, &ns, err, sizeof(err));
	if (!rc)
		rc = arf_cell_volumes_list(e, cell, &v, &nv, err, sizeof(err));
	if (!rc)
		print(cell, arf_etcd_endpoint(e), s, ns, v, nv, json);
	else
		fprintf(stderr, "arfctl: cell status: %s\n", err);
	free(s);
	free(v);
	arf_etcd_close(e);
	return rc == -EINVAL && !e ? 2 : rc ? 1 : 0; /* endpoints or options that do not fit */
}

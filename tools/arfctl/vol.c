/* SPDX-License-Identifier: MIT */
/*
 * arfctl vol list, vol show NAME: the volumes one arfd serves (issue 18),
 * through its control socket: the root volume, each [volume NAME] of its
 * arfd.conf and each made by vol create, with their use and counters.
 * vol create NAME [KEY=VALUE ...]: a volume made and served at once
 * (arfd/volumes.c), KEY a [regions] key.  vol rm [--force] NAME: a made
 * volume removed, with its data.  vol release NAME [SERVER]: NAME's
 * read-only replica NAME.readonly made (again) from a snapshot of it, on
 * the same server or on SERVER of the cell (AFS's vos release).  vol move NAME SERVER: NAME sent to another
 * server of the cell while in use (arfd/move_out.c, AFS's vos move).  The
 * cell's volume records (etcd)
 * are `arfctl cell status`'s.  vol locate NAME URL: where the cell says a
 * volume lives, asked of the arfd at URL (LOCATE), as a client finds it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "admin.h"
#include "arfctl_int.h"

static unsigned long long num(json_object *o, const char *a, const char *b)
{
	json_object *v;
	if (b && !json_object_object_get_ex(o, a, &o))
		return 0;
	return json_object_object_get_ex(o, b ? b : a, &v)
		       ? (unsigned long long)json_object_get_uint64(v) : 0;
}

static const char *text(json_object *o, const char *key)
{
	json_object *v;
	const char *s = json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
	return s ? s : "";
}

/* o as one line of JSON on standard output. */
static void put_json(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* "12.3M" of n bytes (powers of 1024, as df -h). */
static void human(char *buf, size_t len, unsigned long long n)
{
	static const char units[] = "BKMGTP";
	double v = (double)n;
	int u = 0;
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f%c" : "%.0f%c", v, units[u]);
}

static void print_table(json_object *list)
{
	printf("%-16s %-8s %21s %21s %7s %10s  %s\n", "NAME", "STATE", "INODES USED/TOTAL",
	       "DATA USED/TOTAL", "CLIENTS", "REQUESTS", "DATA DIR");
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *v = json_object_array_get_idx(list, i);
		unsigned long long bs = num(v, "blocks", "size");
		char used[16], total[16], inodes[48], data[48];
		human(used, sizeof(used), (num(v, "blocks", "total") - num(v, "blocks", "free")) * bs);
		human(total, sizeof(total), num(v, "blocks", "total") * bs);
		snprintf(inodes, sizeof(inodes), "%llu/%llu",
			 num(v, "inodes", "total") - num(v, "inodes", "free"), num(v, "inodes", "total"));
		snprintf(data, sizeof(data), "%s/%s", used, total);
		printf("%-16s %-8s %21s %21s %7llu %10llu  %s\n", text(v, "volume"), text(v, "state"),
		       inodes, data, num(v, "clients", NULL), num(v, "requests", NULL),
		       text(v, "data_dir"));
	}
}

static int locate(const char *name, const char *url, int json)
{
	struct arf_location l;
	struct arf_url u;
	arf_client *c = NULL;
	int rc = arfctl_open_url(url, &c, &u);

	if (rc)
		return rc;
	rc = arf_locate(c, name, &l);
	arf_close(c);
	if (rc == -ENOENT) {
		fprintf(stderr, "arfctl: vol locate %s: no such volume (asked of %s)\n", name, url);
		return 1;
	}
	if (rc)
		return arfctl_fail("vol locate", name, rc);
	if (json) {
		printf("{\"volume\":");
		arfctl_json_str(stdout, name);
		printf(",\"here\":%s,\"in_cell\":%s,\"live\":%s,\"server\":", l.here ? "true" : "false",
		       l.in_cell ? "true" : "false", l.live ? "true" : "false");
		arfctl_json_str(stdout, l.server);
		printf(",\"address\":");
		arfctl_json_str(stdout, l.address);
		printf(",\"port\":%u,\"rdma_port\":%u,\"state\":", l.port, l.rdma_port);
		arfctl_json_str(stdout, l.state);
		printf(",\"version\":%llu}\n", (unsigned long long)l.version);
		return 0;
	}
	printf("%s: %s", name, l.state);
	if (l.in_cell)
		printf(", on server '%s'%s", l.server, l.live ? "" : " (not live in the cell)");
	if (l.live)
		printf(" at %s port %u", l.address, l.port);
	if (l.here)
		printf(l.in_cell ? " (the server asked)" : ", on the server asked (no cell)");
	if (l.in_cell)
		printf(", record version %llu", (unsigned long long)l.version);
	printf("\n");
	return 0;
}

/* vol create: the control command cmd, and what the volume is now. */
static int create(const struct arfctl_admin *a, const char *name, const char *cmd)
{
	char *ans = NULL;
	json_object *list;

	if (arfctl_control_call(a->control, cmd, &ans))
		return 1;
	json_object *o = arfctl_parse_answer("vol create", ans);
	free(ans);
	if (!o)
		return 1;
	if (!json_object_object_get_ex(o, "volumes", &list) ||
	    !json_object_is_type(list, json_type_array) || !json_object_array_length(list)) {
		fprintf(stderr, "arfctl: vol create: malformed answer from arfd (no volumes)\n");
		json_object_put(o);
		return 1;
	}
	json_object *v = json_object_array_get_idx(list, 0);
	if (a->json)
		put_json(v);
	else
		printf("volume %s: made and served, %llu inodes and %llu data blocks, in %s\n", name,
		       num(v, "inodes", "total"), num(v, "blocks", "total"), text(v, "data_dir"));
	json_object_put(o);
	return 0;
}

int arfctl_vol(const struct arfctl_admin *a, int argc, char **argv)
{
	char line[128], *ans = NULL;
	const char *sub = argc ? argv[0] : "";

	if (!strcmp(sub, "locate") && argc == 3)
		return locate(argv[1], argv[2], a->json);
	int m = arfctl_mount_cmd(sub, argc, argv, a->json);
	if (m >= 0)
		return m;
	if (!strcmp(sub, "create") && argc >= 2) {
		char cmd[511]; /* what arfd reads of a control line, its newline included */
		size_t n = (size_t)snprintf(cmd, sizeof(cmd), "volume-create");
		for (int i = 1; i < argc; i++) {
			if (strpbrk(argv[i], " \t\n") || !argv[i][0] ||
			    (i > 1 && !strchr(argv[i], '='))) {
				fprintf(stderr, "arfctl: vol create: '%s': expected %s\n", argv[i],
					i == 1 ? "a volume's name" : "KEY=VALUE (a [regions] key)");
				return 2;
			}
			n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, " %s", argv[i]);
			if (n >= sizeof(cmd)) {
				fprintf(stderr, "arfctl: vol create: too many settings\n");
				return 2;
			}
		}
		return create(a, argv[1], cmd);
	}
	if (!strcmp(sub, "rm") && (argc == 2 || argc == 3)) {
		const char *name = argv[argc - 1];
		int force = argc == 3 && !strcmp(argv[1], "--force");
		if ((argc == 3 && !force) || !name[0] || strpbrk(name, " \t\n") || name[0] == '-') {
			fprintf(stderr, "arfctl: usage: vol rm [--force] NAME\n");
			return 2;
		}
		char cmd[160];
		if ((size_t)snprintf(cmd, sizeof(cmd), "volume-remove %s%s", name,
				     force ? " force" : "") >= sizeof(cmd)) {
			fprintf(stderr, "arfctl: vol rm: '%s': not a volume's name\n", name);
			return 2;
		}
		if (arfctl_control_call(a->control, cmd, &ans))
			return 1;
		json_object *o = arfctl_parse_answer("vol rm", ans);
		free(ans);
		if (!o)
			return 1;
		if (a->json)
			put_json(o);
		else
			printf("volume %s: removed, with %s\n", name, text(o, "data_dir"));
		json_object_put(o);
		return 0;
	}
	if (!strcmp(sub, "release") && (argc == 2 || argc == 3)) {
		const char *name = argv[1], *to = argc == 3 ? argv[2] : NULL;
		char cmd[200];
		const char *bad = !name[0] || strpbrk(name, " \t\n") || name[0] == '-' ? name
				  : to && (!to[0] || strpbrk(to, " \t\n") || to[0] == '-') ? to
				  : NULL;
		if (bad || (size_t)snprintf(cmd, sizeof(cmd), "volume-release %s%s%s", name,
					    to ? " " : "", to ? to : "") >= sizeof(cmd)) {
			fprintf(stderr, "arfctl: vol release: '%s': not a %s name\n", bad ? bad : name,
				bad == to ? "server's" : "volume's");
			return 2;
		}
		if (arfctl_control_call(a->control, cmd, &ans))
			return 1;
		json_object *o = arfctl_parse_answer("vol release", ans), *list;
		free(ans);
		if (!o)
			return 1;
		if (!json_object_object_get_ex(o, "volumes", &list) ||
		    !json_object_is_type(list, json_type_array) || !json_object_array_length(list)) {
			fprintf(stderr, "arfctl: vol release: malformed answer from arfd (no volumes)\n");
			json_object_put(o);
			return 1;
		}
		json_object *v = json_object_array_get_idx(list, 0), *p;
		double pause = json_object_object_get_ex(o, "pause_seconds", &p)
				       ? json_object_get_double(p) : 0;
		if (a->json)
			put_json(o);
		else
			printf("volume %s: released from %s (its requests waited %.3f s), read-only, "
			       "%s%s\n", text(v, "volume"), text(o, "released_from"), pause,
			       to ? "on server " : "in ", to ? to : text(v, "data_dir"));
		json_object_put(o);
		return 0;
	}
	if (!strcmp(sub, "move") && argc == 3) {
		const char *name = argv[1], *to = argv[2];
		char cmd[200];
		if (!name[0] || strpbrk(name, " \t\n") || name[0] == '-' || !to[0] ||
		    strpbrk(to, " \t\n") || to[0] == '-' ||
		    (size_t)snprintf(cmd, sizeof(cmd), "volume-move %s %s", name, to) >= sizeof(cmd)) {
			fprintf(stderr, "arfctl: usage: vol move NAME SERVER\n");
			return 2;
		}
		if (arfctl_control_call(a->control, cmd, &ans))
			return 1;
		json_object *o = arfctl_parse_answer("vol move", ans), *p;
		free(ans);
		if (!o)
			return 1;
		double pause = json_object_object_get_ex(o, "pause_seconds", &p)
				       ? json_object_get_double(p) : 0;
		double total = json_object_object_get_ex(o, "seconds", &p)
				       ? json_object_get_double(p) : 0;
		int64_t bytes = json_object_object_get_ex(o, "bytes_sent", &p)
					? json_object_get_int64(p) : 0;
		if (a->json)
			put_json(o);
		else
			printf("volume %s: moved to server %s in %.3f s (%lld bytes sent; its requests "
			       "waited %.3f s)\n", name, text(o, "server"), total, (long long)bytes,
			       pause);
		json_object_put(o);
		return 0;
	}
	if (!strcmp(sub, "list") && argc == 1) {
		snprintf(line, sizeof(line), "volumes");
	} else if (!strcmp(sub, "show") && argc == 2 && strlen(argv[1]) < 64 &&
		   !strpbrk(argv[1], " \n")) {
		snprintf(line, sizeof(line), "volumes %s", argv[1]);
	} else {
		fprintf(stderr, "arfctl: usage: vol list | vol show NAME | vol create NAME "
			"[KEY=VALUE ...] | vol rm [--force] NAME | vol release NAME [SERVER] | "
			"vol move NAME SERVER | "
			"vol locate NAME URL | vol mkmount URL VOLUME | vol lsmount URL | "
			"vol rmmount URL\n");
		return 2;
	}
	if (arfctl_control_call(a->control, line, &ans))
		return 1;
	json_object *o = arfctl_parse_answer("vol", ans), *list;
	free(ans);
	if (!o)
		return 1;
	if (!json_object_object_get_ex(o, "volumes", &list) ||
	    !json_object_is_type(list, json_type_array)) {
		fprintf(stderr, "arfctl: vol: malformed answer from arfd (no volumes)\n");
		json_object_put(o);
		return 1;
	}
	if (!strcmp(sub, "show"))
		put_json(json_object_array_get_idx(list, 0));
	else if (a->json)
		put_json(o);
	else
		print_table(list);
	json_object_put(o);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * arfctl's management commands (admin.c): through arfd's control socket,
 * offline on a data directory, and configuration checks; the cell's
 * state from etcd (cell.c).
 */
#ifndef ARFCTL_ADMIN_H
#define ARFCTL_ADMIN_H

struct arfctl_admin {
	const char *control;  /* control socket path (--control) */
	int json;             /* --json */
	int prometheus;       /* --prometheus (stats) */
};

/* Run cmd with its arguments if it is a management command: returns the
 * exit status (0, 1 on failure, 2 on bad usage), or -1 when cmd is not one
 * (status with a URL is a file command). */
int arfctl_admin(const struct arfctl_admin *a, const char *cmd, int argc, char **argv);
/* vol list|show NAME (vol.c): the volumes this arfd serves; the exit status. */
int arfctl_vol(const struct arfctl_admin *a, int argc, char **argv);
/* One command over the control socket: 0 with the whole answer in *out
 * (malloc'd), or 1 after a message. */
int arfctl_control_call(const char *path, const char *line, char **out);
/* The answer as a JSON object, or NULL after a message (malformed, or the
 * error arfd sent).  The caller puts it. */
struct json_object;
struct json_object *arfctl_parse_answer(const char *cmd, const char *ans);
/* cell status [--etcd URL] [--cell NAME] [--config FILE] (cell.c): from
 * etcd; the exit status. */
int arfctl_cell(int argc, char **argv, int json);

#endif

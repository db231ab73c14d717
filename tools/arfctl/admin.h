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
/* cell status [--etcd URL] [--cell NAME] [--config FILE] (cell.c): from
 * etcd; the exit status. */
int arfctl_cell(int argc, char **argv, int json);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * arfctl's private header: the options every command reads, the output
 * helpers (output.c) and the file commands (files.c, exec.c) that main.c
 * dispatches to.  Every cmd_* returns arfctl's exit status: 0, 1 on failure
 * (after one line on standard error), 2 on bad usage.
 */
#ifndef ARFCTL_INT_H
#define ARFCTL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arf.h"

/* The options that shape a command's output (set once, by main.c). */
struct arfctl_opts {
	int json;        /* --json: one JSON object on standard output */
	int stats;       /* --stats: the client's counters too */
	int raw;         /* --raw: exec's output bytes alone */
	size_t out_max;  /* --out-max: exec's output bytes to accept */
	struct arf_client_opts client; /* for arf_connect */
};
extern struct arfctl_opts arfctl_opt;

/* ---- output.c ---- */

/* s as a quoted JSON string. */
void arfctl_json_str(FILE *f, const char *s);
/* The client's counters and policy: one JSON object, or "name value" lines. */
void arfctl_stats_json(FILE *f, arf_client *c);
void arfctl_stats_text(FILE *f, arf_client *c);
/* Close the JSON object a command opened on stdout (adding "stats" under
 * --stats); the text form prints the counters after the output instead. */
void arfctl_json_end(arf_client *c);
/* After a command's text output: the counters, under --stats. */
void arfctl_text_end(arf_client *c);
/* "arfctl: CMD WHAT: reason" on stderr for err (-errno or an ARF code);
 * returns 1, the exit status. */
int arfctl_fail(const char *cmd, const char *what, int err);
/* "file", "directory", ... for a mode's type bits. */
const char *arfctl_type_name(uint32_t mode);
/* "LABEL: YYYY-MM-DD HH:MM:SS.NNNNNNNNN" (local time). */
void arfctl_print_time(const char *label, int64_t ns);

/* ---- files.c ---- */

/* Parse and connect to url (exit status 0, 1 or 2 with a message). */
int arfctl_open_url(const char *url, arf_client **c, struct arf_url *u);
/* Split "/a/b/c" into parent "/a/b" and name "c" (-EINVAL for the root). */
int arfctl_split_path(const char *path, char *parent, size_t plen, const char **name);
/* mount.c: vol mkmount URL VOLUME, vol lsmount URL, vol rmmount URL */
int arfctl_mount_cmd(const char *sub, int argc, char **argv, int json);
int arfctl_cmd_stat(arf_client *c, const struct arf_url *u);
int arfctl_cmd_ls(arf_client *c, const struct arf_url *u);
int arfctl_cmd_cat(arf_client *c, const struct arf_url *u);
int arfctl_cmd_put(arf_client *c, const char *local, const struct arf_url *u);
int arfctl_cmd_mkdir(arf_client *c, const struct arf_url *u, int parents);
int arfctl_cmd_rm(arf_client *c, const struct arf_url *u);
int arfctl_cmd_mv(arf_client *c, const struct arf_url *from, const char *to_url);
int arfctl_cmd_status(arf_client *c, const struct arf_url *u);
int arfctl_cmd_ln(arf_client *c, const struct arf_url *from, const char *link_url);
int arfctl_cmd_cp(arf_client *c, const struct arf_url *from, const char *to_url);
/* chmod's MODE (octal) or chown's UID[:GID] / :GID as a setattr; 0, or 2
 * (bad usage) with a message printed.  Checked before connecting. */
int arfctl_setattr_arg(const char *cmd, const char *arg, struct arf_setattr *sa);
int arfctl_cmd_setattr(arf_client *c, const struct arf_url *u, const char *cmd,
		       const struct arf_setattr *sa);

/* ---- exec.c ---- */

/* Load the program spec names, run it once with args as its context. */
int arfctl_cmd_exec(arf_client *c, const struct arf_url *u, const char *spec, int nargs,
		    char **args);

#endif

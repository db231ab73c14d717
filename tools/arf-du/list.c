/* SPDX-License-Identifier: MIT */
/*
 * Listings of directories on this host, for operands that are not on an
 * ARF server (or a server that cannot run the du program): every child in
 * readdir order -- the order fts, and so GNU du, visits them in -- with its
 * lstat attributes, as fts gives them to du.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "du_int.h"

void du_list_free(struct du_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].name);
	free(l->e);
	memset(l, 0, sizeof(*l));
}

int du_list_add(struct du_list *l, const struct du_ent *e)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? 2 * l->cap : 16;
		struct du_ent *ne = realloc(l->e, nc * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		l->e = ne;
		l->cap = nc;
	}
	l->e[l->n++] = *e;
	return 0;
}

int du_list_local(const char *path, struct du_list *l)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct dirent *d;
	DIR *dir;

	memset(l, 0, sizeof(*l));
	if (fd < 0) {
		l->err = -errno;
		return 0;
	}
	dir = fdopendir(fd);
	if (!dir) {
		l->err = -errno;
		close(fd);
		return 0;
	}
	for (;;) {
		struct du_ent e;
		struct stat st;

		errno = 0;
		d = readdir(dir);
		if (!d) {
			if (errno)
				l->err = -errno;
			break;
		}
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		memset(&e, 0, sizeof(e));
		e.name = strdup(d->d_name);
		if (!e.name)
			goto nomem;
		if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			e.err = -errno;
		} else {
			e.ino = st.st_ino;
			e.mode = st.st_mode;
			e.nlink = (uint32_t)st.st_nlink;
			e.blocks = (uint64_t)st.st_blocks;
			e.size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
		}
		if (du_list_add(l, &e) < 0) {
			free(e.name);
			goto nomem;
		}
	}
	closedir(dir);
	return 0;
nomem:
	closedir(dir);
	du_list_free(l);
	return -ENOMEM;
}

/* SPDX-License-Identifier: MIT */
/*
 * arfctl vol mkmount URL VOLUME, vol lsmount URL, vol rmmount URL: mount
 * points, AFS's `fs mkmount`, `fs lsmount` and `fs rmmount`.  URL's path
 * names the mount point; the directory holding it is resolved crossing any
 * mount point above it, as every libarf client does.  A mount point is a
 * symbolic link "#VOLUME." of mode 0644 that only root may make (see
 * libarf's arf_mkmount); rmmount removes the link, never the volume.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arfctl_int.h"

/* Open url and resolve the directory of its path's last name. */
static int open_parent(const char *cmd, const char *url, arf_client **c, struct arf_stat *dir,
		       const char **name)
{
	static char parent[4096];
	struct arf_url u;
	int rc = arfctl_open_url(url, c, &u);

	if (rc)
		return rc;
	if (arfctl_split_path(u.path, parent, sizeof(parent), name)) {
		fprintf(stderr, "arfctl: vol %s: %s: the root of a volume is no mount point\n", cmd,
			url);
		return 2;
	}
	if ((rc = arf_resolve(*c, parent, dir)))
		return arfctl_fail(cmd, parent, rc);
	return 0;
}

/* "'NAME' is a mount point for volume 'VOL'" ('#VOL.' with afs, as fs
 * lsmount says it), or with --json {"mount_point": URL, "volume": VOL}. */
static void put_mount(const char *url, const char *name, const char *vol, int json, int afs)
{
	if (json) {
		printf("{\"mount_point\":");
		arfctl_json_str(stdout, url);
		printf(",\"volume\":");
		arfctl_json_str(stdout, vol);
		printf("}\n");
		return;
	}
	printf(afs ? "'%s' is a mount point for volume '#%s.'\n"
		   : "'%s' is a mount point for volume '%s'\n", name, vol);
}

static int mkmount(const char *url, const char *volume, int json)
{
	arf_client *c = NULL;
	struct arf_stat dir, st;
	const char *name;
	int rc = open_parent("mkmount", url, &c, &dir, &name);

	if (!rc) {
		rc = arf_mkmount(c, dir.ino, dir.gen, name, volume, &st);
		if (rc == -EINVAL) {
			fprintf(stderr, "arfctl: vol mkmount: '%s': not a volume's name (1-63 of "
				"[A-Za-z0-9._-])\n", volume);
			rc = 2;
		} else if (rc == -EOPNOTSUPP || rc == -EPERM) {
			fprintf(stderr, "arfctl: vol mkmount %s: only root may make a mount point "
				"(%s)\n", url, arf_strerror(rc));
			rc = 1;
		} else if (rc) {
			rc = arfctl_fail("vol mkmount", name, rc);
		} else {
			put_mount(url, name, volume, json, 0);
		}
	}
	arf_close(c);
	return rc;
}

static int lsmount(const char *url, int json)
{
	arf_client *c = NULL;
	struct arf_stat dir;
	const char *name;
	char vol[64];
	int rc = open_parent("lsmount", url, &c, &dir, &name);

	if (!rc) {
		rc = arf_mount_point(c, dir.ino, dir.gen, name, vol, sizeof(vol));
		if (rc == -EINVAL) {
			/* fs lsmount's words, and its status */
			fprintf(stderr, "'%s' is not a mount point.\n", name);
			rc = 1;
		} else if (rc) {
			rc = arfctl_fail("vol lsmount", name, rc);
		} else {
			put_mount(url, name, vol, json, 1);
		}
	}
	arf_close(c);
	return rc;
}

static int rmmount(const char *url)
{
	arf_client *c = NULL;
	struct arf_stat dir;
	const char *name;
	char vol[64];
	int rc = open_parent("rmmount", url, &c, &dir, &name);

	if (!rc) {
		rc = arf_mount_point(c, dir.ino, dir.gen, name, vol, sizeof(vol));
		if (rc == -EINVAL) {
			fprintf(stderr, "arfctl: vol rmmount: '%s' is not a mount point\n", name);
			rc = 1;
		} else if (!rc && (rc = arf_unlink(c, dir.ino, dir.gen, name))) {
			rc = arfctl_fail("vol rmmount", name, rc);
		} else if (rc) {
			rc = arfctl_fail("vol rmmount", name, rc);
		}
	}
	arf_close(c);
	return rc;
}

int arfctl_mount_cmd(const char *sub, int argc, char **argv, int json)
{
	if (!strcmp(sub, "mkmount") && argc == 3)
		return mkmount(argv[1], argv[2], json);
	if (!strcmp(sub, "lsmount") && argc == 2)
		return lsmount(argv[1], json);
	if (!strcmp(sub, "rmmount") && argc == 2)
		return rmmount(argv[1]);
	return -1;
}

/* SPDX-License-Identifier: MIT */
/*
 * LOCATE (issue 18): where a volume lives.  In a cell, from the server's
 * copy of the cell's records (cell/view.c, kept current by a watch), so a
 * client learns a location from any arfd it can reach and never holds etcd
 * credentials; while etcd is away the last copy answers.  Outside a cell,
 * or before etcd has ever answered, from this server's own volumes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arf_proto.h"
#include "arfd.h"
#include "cell.h"

int arfd_proc_locate(struct arfd_req *q)
{
	struct arfd *root = q->d->host ? q->d->host : q->d;
	struct arf_proto_location loc;
	char name[ARF_CELL_NAME_MAX];
	uint32_t n = 0;
	const char *p = arf_proto_get_name(q->r, &n);

	if (!p || !arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	if (n >= sizeof(name))
		return -ENAMETOOLONG;
	memcpy(name, p, n);
	name[n] = 0;
	if (!arf_cell_name_ok(name))
		return -EINVAL;
	memset(&loc, 0, sizeof(loc));
	struct arf_cell_view *cv = __atomic_load_n(&root->cellview, __ATOMIC_ACQUIRE);
	int rc = -EAGAIN;
	if (cv) {
		struct arf_cell_volume vol;
		struct arf_cell_server srv;
		rc = arf_cell_view_locate(cv, name, &vol, &srv);
		if (!rc) {
			loc.flags = ARF_PROTO_LOC_CELL;
			snprintf(loc.server, sizeof(loc.server), "%s", vol.server);
			snprintf(loc.state, sizeof(loc.state), "%s", vol.state);
			loc.version = (uint64_t)vol.version;
			if (srv.id[0]) {
				loc.flags |= ARF_PROTO_LOC_LIVE;
				snprintf(loc.address, sizeof(loc.address), "%s", srv.address);
				loc.port = srv.port;
				loc.rdma_port = srv.rdma_port;
			}
			if (!strcmp(vol.server, root->cell_id) &&
			    arfd_volume_find(root, strcmp(name, root->cfg.cell_root_volume) ? name
											      : ""))
				loc.flags |= ARF_PROTO_LOC_HERE;
		}
	}
	if (rc == -EAGAIN) { /* no cell, or etcd never answered: this server's own */
		if (!arfd_volume_find(root, name))
			return -ENOENT;
		loc.flags = ARF_PROTO_LOC_HERE;
		snprintf(loc.server, sizeof(loc.server), "%s", root->cell_id);
		snprintf(loc.state, sizeof(loc.state), "%s", ARF_CELL_VOL_ONLINE);
	} else if (rc) {
		return rc; /* -ENOENT: the cell has no such volume */
	}
	arf_proto_put_location(q->w, &loc);
	return 0;
}

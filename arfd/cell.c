/* SPDX-License-Identifier: MIT */
/*
 * arfd's membership of a cell (see arfd_cell.h): the server record built
 * from the configuration and the bound ports, handed to cell/member.c,
 * whose thread logs through arfd's log.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "arfd.h"
#include "arfd_cell.h"
#include "cell.h"
#include "log.h"

static void cell_log(void *arg, int level, const char *msg)
{
	(void)arg;
	arfd_log(level, "%s", msg);
}

/* The address clients reach d at: [cell] address, else listen's address
 * unless it is a wildcard, else the host name. */
void arfd_cell_advertised(const struct arfd *d, char *out, size_t len)
{
	const char *listen = d->cfg.listen;
	const char *colon = strrchr(listen, ':');
	size_t n = colon ? (size_t)(colon - listen) : 0;

	if (d->cfg.cell_address[0]) {
		snprintf(out, len, "%s", d->cfg.cell_address);
		return;
	}
	if (n >= 2 && listen[0] == '[' && listen[n - 1] == ']') { /* [v6]:port */
		listen++;
		n -= 2;
	}
	if (n && n < len && strncmp(listen, "0.0.0.0", n) && strncmp(listen, "::", n)) {
		memcpy(out, listen, n);
		out[n] = 0;
		return;
	}
	if (gethostname(out, len) || !out[0])
		snprintf(out, len, "localhost");
	out[len - 1] = 0;
}

int arfd_cell_publish(struct arfd *d, struct arf_cell_member *m)
{
	/* the volumes it records: its root one under [cell] root_volume, and
	 * each other (docs/volumes.md) */
	const char *names[1 + ARFD_MAX_VOLUMES];
	size_t n = 0;

	if (!m)
		return 0;
	if (d->cfg.cell_root_volume[0])
		names[n++] = d->cfg.cell_root_volume;
	for (int i = 0, nv = __atomic_load_n(&d->nvols, __ATOMIC_ACQUIRE); i < nv; i++)
		if (!__atomic_load_n(&d->vols[i]->removed, __ATOMIC_SEQ_CST))
			names[n++] = d->vols[i]->volume;
	return arf_cell_member_publish(m, names, n);
}

int arfd_cell_withdraw(struct arf_cell_member *m, const char *name)
{
	return m ? arf_cell_member_withdraw(m, name) : 0;
}

int arfd_cell_start(struct arfd *d, struct arf_cell_member **out, char *err, size_t errlen)
{
	struct arf_cell_server s = { .incarnation = d->incarnation };

	*out = NULL;
	if (!d->cfg.cell_etcd[0])
		return 0;
	if (d->cfg.cell_server_id[0])
		snprintf(s.id, sizeof(s.id), "%s", d->cfg.cell_server_id);
	else if (gethostname(s.id, sizeof(s.id)))
		snprintf(s.id, sizeof(s.id), "localhost");
	s.id[sizeof(s.id) - 1] = 0;
	arfd_cell_advertised(d, s.address, sizeof(s.address));
	s.port = d->cfg.listen[0] ? arf_net_server_port(d->net) : 0;
	s.rdma_port = arf_net_server_rdma_port(d->net);
	snprintf(s.software, sizeof(s.software), "%s", ARF_VERSION);
	struct arf_etcd_security sec;
	arfd_config_cell_security(&d->cfg, &sec);
	int rc = arf_cell_member_start(d->cfg.cell_etcd, &sec, d->cfg.cell_name, &s,
				       d->cfg.cell_lease_ttl_s, cell_log, NULL, out, err, errlen);
	if (rc)
		return rc;
	arfd_log(ARFD_LOG_INFO, "cell '%s': joining as '%s' (%s port %u) through %s%s%s",
		 d->cfg.cell_name, s.id, s.address, s.port, d->cfg.cell_etcd,
		 sec.user[0] ? " as etcd user " : "", sec.user);
	if ((rc = arfd_cell_publish(d, *out))) {
		snprintf(err, errlen, "cell volumes: %s", strerror(-rc));
		arf_cell_member_stop(*out);
		*out = NULL;
		return rc;
	}
	/* LOCATE's copy of the cell (locate.c); stopped by arfd_stop */
	struct arf_cell_view *cv = NULL;
	snprintf(d->cell_id, sizeof(d->cell_id), "%s", s.id);
	if ((rc = arf_cell_view_start(d->cfg.cell_etcd, &sec, d->cfg.cell_name, cell_log, NULL, &cv,
				      err, errlen))) {
		arf_cell_member_stop(*out);
		*out = NULL;
		return rc;
	}
	__atomic_store_n(&d->cellview, cv, __ATOMIC_RELEASE);
	return 0;
}

void arfd_cell_stop(struct arf_cell_member *m)
{
	arf_cell_member_stop(m);
}

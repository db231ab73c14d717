/* SPDX-License-Identifier: MIT */
/*
 * The connection cache of the active tools: one connection per server,
 * kept to the end of the run, whether the tool reached the server by an
 * arf:// URL (anonymous unless the connection proves more) or through a
 * file of an ARF mount (arf-fuse's ARF_IOC_CRED: the server's URL, the
 * file's handle and a credential token for the user the kernel says runs
 * us, so that the tool has exactly that user's rights).
 *
 * Two URLs are the same server when transport, host, port and socket are
 * the same (the path does not matter).  A failed connect is remembered,
 * so that the next operand on that server does not wait for it again,
 * unless the tool asks otherwise (ARF_TOOL_CONN_RETRY).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "arf_tool.h"

int arf_tool_same_server(const char *a, const char *b)
{
	struct arf_url u, v;
	char err[256], va[64], vb[64];

	return arf_url_parse(a, &u, err, sizeof(err)) == 0 &&
	       arf_url_parse(b, &v, err, sizeof(err)) == 0 && !strcmp(u.transport, v.transport) &&
	       !strcmp(u.host, v.host) && u.port == v.port && !strcmp(u.socket, v.socket) &&
	       arf_url_volume(a, va, sizeof(va), err, sizeof(err)) == 0 &&
	       arf_url_volume(b, vb, sizeof(vb), err, sizeof(err)) == 0 && !strcmp(va, vb);
}

int arf_tool_volume_url(arf_client *c, uint64_t *ino, char *url, size_t cap)
{
	uint64_t local;
	int r;

	if (*ino <= UINT32_MAX) /* arfd's own inode numbers: c's volume */
		return 0;
	if ((r = arf_volume_url(c, *ino, url, cap, &local)) < 0)
		return r;
	*ino = local;
	return 1;
}

int arf_tool_conn_get(struct arf_tool_conns *set, const char *url, const uint8_t *token,
		      struct arf_tool_conn **out, char *err, size_t errlen)
{
	const struct arf_tool_conn_type *t = set->type;
	struct arf_client_opts o;
	struct arf_tool_conn *k;
	arf_client *c;
	int r;

	for (k = set->head; k; k = k->next)
		if (arf_tool_same_server(k->url, url)) {
			*out = k;
			return k->c ? 0 : -ENOTCONN;
		}
	arf_client_opts_init(&o);
	o.cred_token = token;
	r = arf_connect(url, &o, &c, err, errlen);
	if (r < 0 && (t->flags & ARF_TOOL_CONN_RETRY)) {
		*out = NULL;
		return r;
	}
	if (r < 0)
		c = NULL; /* remembered: the next operand on that server does not try again */
	k = calloc(1, t->size);
	if (!k || !(k->url = strdup(url))) {
		free(k);
		arf_close(c);
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	k->c = c;
	k->idx = set->n++;
	k->next = set->head;
	set->head = k;
	if (t->init)
		t->init(k);
	*out = k;
	return c ? 0 : r;
}

int arf_tool_conn_fd(struct arf_tool_conns *set, int fd, struct arf_tool_conn **out,
		     uint64_t *ino, uint32_t *gen, char *err, size_t errlen)
{
	struct arf_ioc_cred *ic = calloc(1, sizeof(*ic));
	int r;

	if (!ic) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	if (ioctl(fd, ARF_IOC_CRED, ic) < 0 || ic->version != ARF_IOC_CRED_VERSION ||
	    !memchr(ic->url, 0, sizeof(ic->url))) {
		snprintf(err, errlen, "not on an ARF mount");
		free(ic);
		return -ENOTTY;
	}
	r = arf_tool_conn_get(set, ic->url, ic->token, out, err, errlen);
	*ino = ic->ino;
	*gen = ic->gen;
	memset(ic->token, 0, sizeof(ic->token)); /* copied by arf_connect */
	free(ic);
	return r;
}

void arf_tool_conns_close(struct arf_tool_conns *set, const char *prog, int stats)
{
	while (set->head) {
		struct arf_tool_conn *k = set->head;

		if (stats && k->c)
			arf_tool_stats(stderr, prog, k->url, k->c);
		set->head = k->next;
		if (set->type->fini)
			set->type->fini(k);
		arf_close(k->c);
		free(k->url);
		free(k);
	}
	set->n = 0;
}

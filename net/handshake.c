/* SPDX-License-Identifier: MIT */
/*
 * net/handshake — HELLO: the protocol version, the shared-secret challenge
 * (the secret never travels: the client proves it with an HMAC of a nonce),
 * the embedder's on_hello, then fresh random region keys for this
 * connection and the answer: the region table and the info blob; on the
 * UNIX socket also one descriptor per region, a read-only one for regions
 * clients may not write.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "server_int.h"

/* HELLO: version, the embedder's decision, then regions + info (+ fds). */
int arf_net_srv_hello(struct arf_net_server *s, struct arf_net_sconn *c,
		      const struct arf_net_hdr *h, const uint8_t *body, size_t len)
{
	char msg[256] = "";
	int rc;

	if (c->state != SCONN_NEW) {
		SCTR(s, bad_frames, 1);
		snprintf(msg, sizeof(msg), "handshake already done");
		arf_net_srv_send(c, h->id, h->op, arf_net_status_from_err(ARF_EPROTO),
				 ARF_NET_PROTO_VERSION, 0, &(struct iovec){ msg, strlen(msg) }, 1, NULL, 0);
		return 0;
	}
	if (h->aux != ARF_NET_PROTO_VERSION) {
		snprintf(msg, sizeof(msg), "client speaks net protocol %u, arfd speaks %u", h->aux,
			 ARF_NET_PROTO_VERSION);
		rc = ARF_EVERSION;
		goto refuse;
	}
	if (s->has_auth) {
		/* challenge-response: the secret never travels */
		if (!(h->flags & ARF_NET_F_PROOF)) {
			if (c->challenged) {
				snprintf(msg, sizeof(msg), "this export needs the shared secret");
				rc = ARF_EAUTH;
				goto refuse;
			}
			randombytes_buf(c->nonce, sizeof(c->nonce));
			c->challenged = 1;
			return arf_net_srv_send(c, h->id, h->op, arf_net_status_from_err(ARF_EAUTH),
						ARF_NET_PROTO_VERSION, ARF_NET_F_CHALLENGE,
						&(struct iovec){ c->nonce, sizeof(c->nonce) }, 1, NULL, 0);
		}
		if (!c->challenged || len < crypto_auth_BYTES ||
		    arf_net_auth_verify(s->auth_key, c->nonce, body + crypto_auth_BYTES,
					len - crypto_auth_BYTES, body)) {
			snprintf(msg, sizeof(msg), "wrong shared secret");
			rc = ARF_EAUTH;
			goto refuse;
		}
		body += crypto_auth_BYTES;
		len -= crypto_auth_BYTES;
		c->peer.authenticated = 1;
	}
	rc = s->o.on_hello ? s->o.on_hello(s->o.ctx, c, &c->peer, body, len, msg, sizeof(msg)) : 0;
	if (rc)
		goto refuse;
	if (c->view && !strcmp(c->peer.transport, "rdma")) {
		/* the rdma pump grants by region id from view 0's regions alone */
		snprintf(msg, sizeof(msg), "this volume is not served over rdma: use tcp or shm");
		rc = -EOPNOTSUPP;
		goto refuse;
	}
	/* the regions of the connection's view (arf_net.h's Views) */
	size_t idx[ARF_NET_MAX_REGIONS], nreg = 0;
	if (!c->no_grant)
		for (size_t i = 0, n = __atomic_load_n(&s->nregions, __ATOMIC_ACQUIRE); i < n; i++) {
			if (s->regions[i].view != c->view)
				continue;
			do
				randombytes_buf(&c->keys[i], sizeof(c->keys[i]));
			while (!c->keys[i]);
			idx[nreg++] = i;
		}

	pthread_mutex_lock(&s->info_lock);
	size_t ilen = s->info_len[c->view];
	size_t blen = 4 + nreg * 24 + 4 + ilen;
	uint8_t *b = malloc(blen);
	if (!b) {
		pthread_mutex_unlock(&s->info_lock);
		rc = -ENOMEM;
		goto refuse;
	}
	put32(b, (uint32_t)nreg);
	size_t off = 4;
	int fds[ARF_NET_MAX_REGIONS], nfds = 0;
	for (size_t k = 0; k < nreg; k++, off += 24) {
		const struct srv_region *r = &s->regions[idx[k]];
		put32(b + off, r->id);
		put32(b + off + 4, r->flags);
		put64(b + off + 8, r->size);
		put64(b + off + 16, c->keys[idx[k]]);
		if (c->is_unix)
			fds[nfds++] = r->passfd;
	}
	put32(b + off, (uint32_t)ilen);
	if (ilen)
		memcpy(b + off + 4, s->info[c->view], ilen);
	pthread_mutex_unlock(&s->info_lock);
	if (c->is_unix) {
		for (int i = 0; i < nfds; i++) {
			if (fds[i] < 0) { /* a region without a descriptor cannot be mapped */
				free(b);
				snprintf(msg, sizeof(msg), "shm is not available: region %u has no descriptor",
					 s->regions[idx[i]].id);
				rc = -EOPNOTSUPP;
				goto refuse;
			}
		}
	}
	c->state = SCONN_READY;
	c->rb.max = 0; /* frames up to ARF_NET_MAX_FRAME from now on */
	s->nnew--;
	rc = arf_net_srv_send(c, h->id, h->op, ARF_NET_S_OK, ARF_NET_PROTO_VERSION, 0,
			      &(struct iovec){ b, blen }, 1, fds, nfds);
	free(b);
	return rc;
refuse:
	SCTR(s, conns_refused, 1);
	if (!msg[0])
		snprintf(msg, sizeof(msg), "%s", arf_err_text(rc) ? arf_err_text(rc) : strerror(-rc));
	arf_net_srv_send(c, h->id, h->op, arf_net_status_from_err(rc), ARF_NET_PROTO_VERSION, 0,
			 &(struct iovec){ msg, strlen(msg) }, 1, NULL, 0);
	return -EPERM; /* close after the refusal */
}

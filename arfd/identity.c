/* SPDX-License-Identifier: MIT */
/*
 * arfd/identity — identity is proven, never claimed (DESIGN §7).
 *
 * Every request carries AUTH_SYS-like credentials, but what they count
 * for depends on what the connection proved in its handshake:
 *
 *   root-proven   an shm peer whose SO_PEERCRED uid is 0, a tcp peer from
 *                 a reserved source port (< 1024, which only root can bind:
 *                 NFS's `secure`), or a peer that proved the export's
 *                 shared secret (readable by root only).  Root on a host
 *                 can become any user there, so its claims are believed:
 *                 this is how arf-fuse acts for each local user.
 *   pinned        an shm peer that is not root acts as what the kernel says
 *                 it is (uid, gid, SO_PEERGROUPS), whatever it claims; a tcp
 *                 peer that presents a credential token acts as the token
 *                 says.  A token is minted by arfd (CRED_MINT) for a
 *                 root-proven connection -- arf-fuse, asked through an ioctl
 *                 on an open file of the mount, for the uid, gid and groups
 *                 the kernel gives with the ioctl -- and is a MAC over those
 *                 ids, an expiry (ARFD_TOKEN_TTL_S), this incarnation and
 *                 the minting peer's address, under a key made at start.
 *                 So a tool run by a user on a mount acts as that user on
 *                 its own connection, and a token copied to another host
 *                 or kept past its ten minutes is refused.  In a cell whose
 *                 servers share [cell] move_secret_file, a token is the
 *                 cell's instead (version 2): its key is derived from that
 *                 secret and the cell's name, it names no incarnation, and
 *                 every server of the cell checks it, so that a tool keeps
 *                 its user's rights when its volume moves or its walk
 *                 crosses into another server's volume (docs/volumes.md,
 *                 "Tokens").  The servers already trust each other with
 *                 the volumes themselves; a cell's token still binds the
 *                 address the minting server saw (a loopback one only on
 *                 servers that give the cell the same address: the same
 *                 host), and its ten minutes by the minting server's clock
 *                 (refused where that is more than a minute ahead).  A
 *                 mount over shm, whose peer has no address, gets the
 *                 server's token, as before.
 *   anonymous     any other peer: every request acts as anon_uid/anon_gid
 *                 (nobody), whatever it claims.  `[export] insecure = true`
 *                 believes such peers instead, as NFS's `insecure` does.
 *
 * Then root squashing: with `[export] root_squash`, uid 0 becomes
 * anon_uid/anon_gid whichever way it was arrived at.
 *
 * Region keys (one-sided reads, which bypass file permissions) follow
 * `[export] one_sided`: `root` gives them to root-proven connections of an
 * export that does not squash root (a squashed root is exactly who must not
 * read root's files); `all` to everyone (refused beside root_squash by the
 * configuration check); `none` to nobody.  A program sees the regions only
 * when it runs for uid 0 believed from a root-proven connection holding
 * the keys: anything else works through helpers that check permissions.
 *
 * Handles (ino, gen) carry a random 32-bit generation (ops/create.c).  An
 * unproven client naming handles that do not exist is guessing them; each
 * principal (the uid the kernel or a token names; for clients that proved
 * nothing, their host: loopback as one, an IPv6 peer's /64) may see
 * STALE_BURST such answers and then STALE_RATE a second.  Past that, the
 * connections that took part (named a stale handle in the last SUSPECT_MS,
 * or connected while the allowance was spent) have their handle-bearing
 * requests refused unexamined; the principal's other connections are served
 * as ever.  At that rate one guess in 2^32 succeeds in about eight years.  (A MAC in the handle would be
 * stronger still; it needs a wider handle on the wire, which the cell's
 * (volume, ino, gen) handles will bring.)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "arfd.h"
#include "arfd_cell.h"
#include "identity.h"
#include "log.h"

#define TOKEN_VERSION 1u      /* the server's: its key, its incarnation */
#define TOKEN_VERSION_CELL 2u /* the cell's: checked by every server with its secret */
#define TOKEN_SKEW_S 60       /* a cell's token may come from a clock this far ahead */
#define STALE_SLOTS 256
#define STALE_BURST 64.0
#define STALE_RATE  16.0 /* per second */
#define SUSPECT_MS  10000 /* a connection that named a stale handle is watched this long */

/* The token on the wire (ARF_PROTO_TOKEN_SIZE bytes, little-endian). */
struct token {
	uint32_t version, uid, gid, ngroups;
	uint32_t groups[16];
	uint64_t expires;        /* CLOCK_REALTIME seconds */
	uint64_t incarnation;
	uint8_t addr[16];        /* the minting peer's address (zero: any) */
	uint8_t mac[32];
};
_Static_assert(sizeof(struct token) == ARF_PROTO_TOKEN_SIZE, "token layout");
_Static_assert(crypto_auth_BYTES == 32, "HMAC-SHA-512-256");

struct stale_slot {
	char from[48];
	double tokens;
	uint64_t at_ms;          /* last refill */
	uint64_t logged_ms;
};

struct arfd_identity {
	uint8_t key[crypto_auth_KEYBYTES];
	uint8_t cell_key[crypto_auth_KEYBYTES]; /* tokens of the cell (has_cell_key) */
	int has_cell_key;
	uint64_t host_tag;       /* a hash of the address the cell has for this server */
	pthread_mutex_t lock;    /* the stale table */
	struct stale_slot stale[STALE_SLOTS];
	unsigned next;           /* slot to reuse once full */
};

static int stale_exhausted(struct arfd_identity *id, const char *key);

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int arfd_identity_start(struct arfd *d)
{
	struct arfd_identity *id = calloc(1, sizeof(*id));

	if (!id || sodium_init() < 0) {
		free(id);
		return -EIO;
	}
	crypto_auth_keygen(id->key);
	if (d->has_move_key && d->cfg.cell_name[0]) {
		/* the cell's token key: BLAKE2b keyed with the servers' shared
		 * secret, over a label and the cell's name, so that it is
		 * neither the move stream's key nor another cell's */
		static const char label[] = "arf cell credential token v2: ";
		crypto_generichash_state h;
		crypto_generichash_init(&h, d->move_key, ARF_NET_AUTH_KEY_BYTES,
					sizeof(id->cell_key));
		crypto_generichash_update(&h, (const uint8_t *)label, sizeof(label) - 1);
		crypto_generichash_update(&h, (const uint8_t *)d->cfg.cell_name,
					  strlen(d->cfg.cell_name));
		crypto_generichash_final(&h, id->cell_key, sizeof(id->cell_key));
		id->has_cell_key = 1;
		char host[256];
		arfd_cell_advertised(d, host, sizeof(host));
		crypto_generichash((uint8_t *)&id->host_tag, sizeof(id->host_tag),
				   (const uint8_t *)host, strlen(host), NULL, 0);
	}
	pthread_mutex_init(&id->lock, NULL);
	d->identity = id;
	return 0;
}

void arfd_identity_stop(struct arfd *d)
{
	if (!d->identity)
		return;
	sodium_memzero(d->identity->key, sizeof(d->identity->key));
	sodium_memzero(d->identity->cell_key, sizeof(d->identity->cell_key));
	pthread_mutex_destroy(&d->identity->lock);
	free(d->identity);
	d->identity = NULL;
}

/* The peer's address as 16 bytes (IPv4 as ::ffff:a.b.c.d), or zeros. */
static void peer_addr16(const struct arf_net_peer *peer, uint8_t out[16])
{
	uint8_t a[16];
	int fam = arfd_access_peer_addr(peer, a);

	memset(out, 0, 16);
	if (fam == 4) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, a, 4);
	} else if (fam == 6) {
		memcpy(out, a, 16);
	}
}

/* Whether a (peer_addr16's form) is a loopback address: 127/8 or ::1. */
static int is_loopback16(const uint8_t a[16])
{
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t v6[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };

	return (!memcmp(a, v4, 12) && a[12] == 127) || !memcmp(a, v6, 16);
}

/* The principal stale handles are counted under: the uid the kernel or a
 * token names, or, for a client that proved nothing, its address -- all of
 * loopback being one host, an IPv6 peer's /64 (which one host commonly
 * holds whole) another.  Clients that proved nothing are, to arfd, the
 * anonymous user of their host: one principal. */
static void from_key(const struct arf_net_peer *peer, const struct arfd_conn *ac, char *out,
		     size_t cap)
{
	uint8_t a[16];
	int fam;

	if (ac->trust == ARFD_TRUST_PINNED) {
		snprintf(out, cap, "uid:%u", ac->id.uid);
		return;
	}
	if (!strcmp(peer->transport, "shm")) {
		snprintf(out, cap, "uid:%u", peer->has_cred ? peer->uid : 65534u);
		return;
	}
	fam = arfd_access_peer_addr(peer, a);
	if ((fam == 4 && a[0] == 127) ||
	    (fam == 6 && !memcmp(a, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16)))
		snprintf(out, cap, "addr:loopback");
	else if (fam == 4)
		snprintf(out, cap, "addr:%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
	else if (fam == 6)
		snprintf(out, cap, "addr:%02x%02x:%02x%02x:%02x%02x:%02x%02x::/64", a[0], a[1], a[2],
			 a[3], a[4], a[5], a[6], a[7]);
	else
		snprintf(out, cap, "addr:%.40s", peer->addr);
}

/* Tokens are the server's (or the cell's), not a volume's: minted and
 * checked with the root volume's keys and incarnation, so a client that
 * crosses a mount point into another volume of the same server presents
 * the token it has (docs/volumes.md). */
static const struct arfd *token_home(const struct arfd *d)
{
	return d->host ? d->host : d;
}

static int token_check(struct arfd *d, const struct arf_net_peer *peer, const uint8_t *bytes,
		       struct arf_cred *out, char *msg, size_t msglen)
{
	const struct arfd *home = token_home(d);
	struct token t;
	uint8_t a16[16], zero[16] = { 0 };
	struct timespec now;

	memcpy(&t, bytes, sizeof(t));
	/* the version picks the key; the MAC covers the version */
	int cell = t.version == TOKEN_VERSION_CELL;
	if (cell && !home->identity->has_cell_key) {
		snprintf(msg, msglen, "credential token refused: a cell's token, and this server "
			 "has no [cell] move_secret_file to check it with");
		return ARF_EAUTH;
	}
	if (crypto_auth_verify(t.mac, bytes, offsetof(struct token, mac),
			       cell ? home->identity->cell_key : home->identity->key)) {
		snprintf(msg, msglen, cell ? "credential token refused: not minted in this cell "
			 "(forged, or another [cell] move_secret_file)"
			 : "credential token refused: not minted by this server "
			 "(forged, or from before its restart: ask the mount for a new one)");
		return ARF_EAUTH;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	if (cell && t.expires > (uint64_t)now.tv_sec + ARFD_TOKEN_TTL_S + TOKEN_SKEW_S) {
		snprintf(msg, msglen, "credential token refused: it lasts longer than tokens do "
			 "(the minting server's clock is ahead of this one's)");
		return ARF_EAUTH;
	}
	if (cell && is_loopback16(t.addr) && t.incarnation != home->identity->host_tag) {
		snprintf(msg, msglen, "credential token refused: minted for a client on another "
			 "server's own host (loopback)");
		return ARF_EAUTH;
	}
	if ((t.version != TOKEN_VERSION && !cell) ||
	    (!cell && t.incarnation != home->incarnation) ||
	    t.expires < (uint64_t)now.tv_sec || t.ngroups > 16) {
		snprintf(msg, msglen, "credential token refused: expired (tokens last %d s; ask "
			 "the mount for a new one)", ARFD_TOKEN_TTL_S);
		return ARF_EAUTH;
	}
	peer_addr16(peer, a16);
	if (memcmp(t.addr, zero, 16) && memcmp(t.addr, a16, 16)) {
		snprintf(msg, msglen, "credential token refused: minted for another host");
		return ARF_EAUTH;
	}
	memset(out, 0, sizeof(*out));
	out->uid = t.uid;
	out->gid = t.gid;
	out->ngroups = t.ngroups;
	memcpy(out->groups, t.groups, sizeof(out->groups[0]) * t.ngroups);
	return 0;
}

int arfd_identity_hello(struct arfd *d, const struct arf_net_peer *peer,
			const struct arf_proto_hello *h, struct arfd_conn *ac, char *msg,
			size_t msglen)
{
	int is_shm = !strcmp(peer->transport, "shm"), rc;

	arfd_fs_lock(d); /* SIGHUP may change these */
	char policy = d->cfg.one_sided[0];
	int insecure = d->cfg.insecure, squash = d->cfg.root_squash;
	arfd_fs_unlock(d);

	ac->trust = ARFD_TRUST_ANON;
	if (is_shm) {
		/* the kernel says who this is; a token adds nothing to that */
		if (peer->has_cred && peer->uid == 0) {
			ac->trust = ARFD_TRUST_ROOT;
		} else if (peer->has_cred) {
			ac->trust = ARFD_TRUST_PINNED;
			ac->id.uid = peer->uid;
			ac->id.gid = peer->gid;
			ac->id.ngroups = peer->ngroups < ARF_OPS_NGROUPS ? peer->ngroups : ARF_OPS_NGROUPS;
			memcpy(ac->id.groups, peer->groups, ac->id.ngroups * sizeof(ac->id.groups[0]));
		}
	} else if (arfd_access_proven_root(peer)) {
		ac->trust = ARFD_TRUST_ROOT;
	} else if (h->flags & ARF_PROTO_HELLO_TOKEN) {
		if ((rc = token_check(d, peer, h->token, &ac->id, msg, msglen))) {
			arfd_log_limited(ARFD_LOG_WARN, "refused %s: %s", peer->addr, msg);
			return rc;
		}
		ac->trust = ARFD_TRUST_PINNED;
	} else if (insecure) {
		ac->trust = ARFD_TRUST_CLAIMED;
	}
	ac->grant = policy == 'a' || (policy == 'r' && ac->trust == ARFD_TRUST_ROOT && !squash);
	from_key(peer, ac, ac->from, sizeof(ac->from));
	peer_addr16(peer, ac->addr);
	if (ac->trust != ARFD_TRUST_ROOT && stale_exhausted(d->identity, ac->from))
		ac->suspect_until_ms = mono_ms() + SUSPECT_MS; /* a guesser coming back */
	return 0;
}

const char *arfd_identity_trust_name(enum arfd_trust t)
{
	switch (t) {
	case ARFD_TRUST_ROOT: return "root";
	case ARFD_TRUST_PINNED: return "pinned";
	case ARFD_TRUST_CLAIMED: return "claimed";
	default: return "anonymous";
	}
}

void arfd_identity_cred(const struct arfd *d, const struct arfd_conn *ac,
			const struct arf_proto_cred *pc, struct arf_cred *cr, int *proven_root)
{
	enum arfd_trust trust = ac ? ac->trust : ARFD_TRUST_ANON;

	memset(cr, 0, sizeof(*cr));
	switch (trust) {
	case ARFD_TRUST_ROOT:
	case ARFD_TRUST_CLAIMED:
		cr->uid = pc->uid;
		cr->gid = pc->gid;
		cr->ngroups = pc->ngroups > ARF_OPS_NGROUPS ? ARF_OPS_NGROUPS : pc->ngroups;
		memcpy(cr->groups, pc->groups, cr->ngroups * sizeof(cr->groups[0]));
		break;
	case ARFD_TRUST_PINNED:
		*cr = ac->id;
		break;
	case ARFD_TRUST_ANON:
		cr->uid = (uint32_t)d->cfg.anon_uid;
		cr->gid = (uint32_t)d->cfg.anon_gid;
		break;
	}
	if (d->cfg.root_squash && cr->uid == 0) {
		cr->uid = (uint32_t)d->cfg.anon_uid;
		cr->gid = (uint32_t)d->cfg.anon_gid;
		cr->ngroups = 0;
	}
	if (proven_root)
		*proven_root = trust == ARFD_TRUST_ROOT && cr->uid == 0;
}

int arfd_identity_sees_regions(const struct arfd_conn *ac, int proven_root)
{
	return ac && ac->grant && proven_root;
}

int arfd_identity_mint(struct arfd *d, const struct arfd_conn *ac, const struct arf_cred *cr,
		       struct arf_proto_wr *w)
{
	struct token t;
	struct timespec now;

	if (!ac || ac->trust != ARFD_TRUST_ROOT)
		return -EPERM; /* only who may claim any identity may vouch for one */
	memset(&t, 0, sizeof(t));
	clock_gettime(CLOCK_REALTIME, &now);
	static const uint8_t zero[16];
	/* a peer with no address (shm) gets the server's token: one bound to
	 * no host must not be good on every server of the cell */
	int cell = token_home(d)->identity->has_cell_key && memcmp(ac->addr, zero, 16);
	t.version = cell ? TOKEN_VERSION_CELL : TOKEN_VERSION;
	t.uid = cr->uid;
	t.gid = cr->gid;
	t.ngroups = cr->ngroups > 16 ? 16 : cr->ngroups;
	memcpy(t.groups, cr->groups, t.ngroups * sizeof(t.groups[0]));
	t.expires = (uint64_t)now.tv_sec + ARFD_TOKEN_TTL_S;
	/* a cell's token names the host of the server that minted it, so
	 * that one bound to a loopback address is good only there */
	t.incarnation = cell ? token_home(d)->identity->host_tag : token_home(d)->incarnation;
	memcpy(t.addr, ac->addr, sizeof(t.addr));
	crypto_auth(t.mac, (const uint8_t *)&t, offsetof(struct token, mac),
		    cell ? token_home(d)->identity->cell_key : token_home(d)->identity->key);
	arf_proto_put_bytes(w, &t, sizeof(t));
	arf_proto_put_u32(w, ARFD_TOKEN_TTL_S);
	return 0;
}

/* Under id->lock: the slot of key, refilled to now (made if missing). */
static struct stale_slot *stale_slot(struct arfd_identity *id, const char *key, uint64_t now)
{
	struct stale_slot *s = NULL;

	for (unsigned i = 0; i < STALE_SLOTS; i++)
		if (id->stale[i].from[0] && !strcmp(id->stale[i].from, key))
			s = &id->stale[i];
	if (!s) {
		/* a slot that has refilled completely forgets nothing worth keeping */
		for (unsigned i = 0; i < STALE_SLOTS && !s; i++)
			if (!id->stale[i].from[0] ||
			    now - id->stale[i].at_ms > (uint64_t)(STALE_BURST / STALE_RATE * 1000))
				s = &id->stale[i];
		if (!s)
			s = &id->stale[id->next++ % STALE_SLOTS];
		memset(s, 0, sizeof(*s));
		snprintf(s->from, sizeof(s->from), "%s", key);
		s->tokens = STALE_BURST;
		s->at_ms = now;
	}
	s->tokens += (double)(now - s->at_ms) * STALE_RATE / 1000.0;
	if (s->tokens > STALE_BURST)
		s->tokens = STALE_BURST;
	s->at_ms = now;
	return s;
}

/* Has key's principal spent its allowance?  (A slot not there has not.) */
static int stale_exhausted(struct arfd_identity *id, const char *key)
{
	int out = 0;

	pthread_mutex_lock(&id->lock);
	for (unsigned i = 0; i < STALE_SLOTS; i++)
		if (id->stale[i].from[0] && !strcmp(id->stale[i].from, key))
			out = stale_slot(id, key, mono_ms())->tokens < 1.0;
	pthread_mutex_unlock(&id->lock);
	return out;
}

int arfd_identity_stale_check(struct arfd *d, struct arfd_conn *ac)
{
	struct arfd_identity *id = d->identity;
	int rc = 0;

	if (!ac || ac->trust == ARFD_TRUST_ROOT)
		return 0;
	uint64_t now = mono_ms();
	/* Only the connections that took part: another user's connection from
	 * the same host, which named no stale handle, is served as ever. */
	if (now >= __atomic_load_n(&ac->suspect_until_ms, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&id->lock);
	struct stale_slot *s = stale_slot(id, ac->from, now);
	if (s->tokens < 1.0) {
		rc = -ESTALE;
		if (now - s->logged_ms > 10000) {
			s->logged_ms = now;
			arfd_log(ARFD_LOG_WARN, "%s keeps naming file handles that do not exist "
				 "(guessing?): its handle requests are refused for a while", s->from);
		}
	}
	pthread_mutex_unlock(&id->lock);
	return rc;
}

void arfd_identity_stale(struct arfd *d, struct arfd_conn *ac)
{
	struct arfd_identity *id = d->identity;

	if (!ac || ac->trust == ARFD_TRUST_ROOT)
		return;
	uint64_t now = mono_ms();
	__atomic_store_n(&ac->suspect_until_ms, now + SUSPECT_MS, __ATOMIC_RELAXED);
	pthread_mutex_lock(&id->lock);
	struct stale_slot *s = stale_slot(id, ac->from, now);
	if (s->tokens > -STALE_BURST)
		s->tokens -= 1.0; /* in debt: a flood pays for itself before more is looked at */
	pthread_mutex_unlock(&id->lock);
}

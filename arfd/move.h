/* SPDX-License-Identifier: MIT */
/*
 * arfd/move — what the two ends of `arfctl vol move` share (move_out.c
 * sends, move_in.c takes): the steps of ARF_OP_VOLUME_IN and the MAC that
 * every one of them but the first carries.
 *
 * A request's body, after the credentials: u32 step, the step's fields,
 * and mac[32] = HMAC-SHA-512-256 (libsodium crypto_auth_hmacsha512256)
 * keyed with the cell's move secret ([cell] move_secret_file, hashed as
 * the shared secret is) over nonce[32] || counter (u64, little-endian) ||
 * the body from the step up to the MAC.  The nonce is the receiver's,
 * fresh for each session (CHALLENGE's answer); the counter is 1 for the
 * first request after it and one more for each, so nothing of a session
 * can be replayed, reordered or sent on another connection.  Clients of
 * the cell hold the shared secret, never the move secret.
 */
#ifndef ARFD_MOVE_H
#define ARFD_MOVE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#define ARFD_MOVE_MAC   32u
#define ARFD_MOVE_NONCE 32u
#define ARFD_MOVE_CHUNK (1u << 20) /* bytes of a file one DATA step carries, at most */
#define ARFD_MOVE_PATH  128u       /* a file's path in the volume's directory, at most */

enum arfd_move_step {
	ARFD_MOVE_CHALLENGE = 0, /* -> nonce[32]; a new session (no MAC) */
	ARFD_MOVE_BEGIN = 1,     /* name(volume), name(from server), bytes(settings),
				  * u32 flags (ARFD_MOVE_F_*) */
	ARFD_MOVE_FILE = 2,      /* name(path: "F" or "datalog/F"), u64 size, u64 keep: made
				  * of size bytes, the first keep of the file staged under
				  * that name kept (0: a new file) */
	ARFD_MOVE_DATA = 3,      /* u64 offset, bytes: into the last FILE's file */
	ARFD_MOVE_KEEP = 4,      /* u32 n, n x (name(path), u64 size): the whole volume;
				  * files staged and not named go */
	ARFD_MOVE_END = 5,       /* the files made durable, the volume served (its record
				  * still names the sender: hellos are sent there) */
	ARFD_MOVE_DONE = 6,      /* the record flipped: waits (3 s at most) until this
				  * server's copy of the cell says so */
	ARFD_MOVE_ABORT = 7,     /* staged or served copy removed */
};

#define ARFD_MOVE_F_REPLICA 1u /* BEGIN: a replica, NAME.readonly (vol release NAME SERVER):
				* served read-only at END, replacing one vol release made */

static inline void arfd_move_mac(uint8_t mac[ARFD_MOVE_MAC], const uint8_t key[32],
				 const uint8_t nonce[ARFD_MOVE_NONCE], uint64_t counter,
				 const uint8_t *body, size_t len)
{
	crypto_auth_hmacsha512256_state st;
	uint8_t c[8];

	for (int i = 0; i < 8; i++)
		c[i] = (uint8_t)(counter >> (8 * i));
	crypto_auth_hmacsha512256_init(&st, key, 32);
	crypto_auth_hmacsha512256_update(&st, nonce, ARFD_MOVE_NONCE);
	crypto_auth_hmacsha512256_update(&st, c, sizeof(c));
	crypto_auth_hmacsha512256_update(&st, body, len);
	crypto_auth_hmacsha512256_final(&st, mac);
}

/* A path a volume's directory may hold: "F" or "datalog/F", F of
 * [A-Za-z0-9._-], not starting with '.'. */
static inline int arfd_move_path_ok(const char *p)
{
	const char *f = p;
	if (!strncmp(p, "datalog/", 8))
		f = p + 8;
	if (!*f || *f == '.' || strlen(p) >= ARFD_MOVE_PATH)
		return 0;
	for (; *f; f++)
		if (!((*f >= 'A' && *f <= 'Z') || (*f >= 'a' && *f <= 'z') ||
		      (*f >= '0' && *f <= '9') || *f == '.' || *f == '_' || *f == '-'))
			return 0;
	return 1;
}

#endif

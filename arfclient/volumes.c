/* SPDX-License-Identifier: MIT */
/*
 * Mount points: the volumes one client reaches from the volume it
 * connected to (issue 18, AFS's mount points).
 *
 * A mount point is a symbolic link with the target "#VOLUME." and a mode
 * other than 0777 (AFS makes them 0644; arfd lets only root chmod a
 * symbolic link), made by arf_mkmount.  Every public call that turns a
 * name into a file -- arf_lookup, arf_resolve, arf_readdir,
 * arf_readdirplus -- crosses one it meets: it asks the server it talks to
 * where the volume lives (LOCATE), connects to that volume (one client of
 * its own per volume, shared by every mount point naming it, made with the
 * caller's options, secret and token), and answers with the volume's root
 * directory, never the link.  ".." at that root is the directory of the
 * mount point first crossed into the volume.
 *
 * Handles: a volume's number rides in the top 16 bits of every inode
 * number libarf hands out (ARF_VOL_SHIFT; arfd's inode numbers stay below
 * 2^32), 0 for the volume connected to, so the API and its ABI keep (ino,
 * gen), and st_ino stays unique across the volumes of one client.  The
 * number is a hash of the volume's name (number_of), so every process
 * and every client host numbers a volume alike: two mounts of one volume,
 * and a tool run on a mount, see one st_ino for one file.  Each public call taking a handle finds the volume's client
 * from those bits and calls its arf_v_ form, which works inside one
 * volume; handles of two volumes in one call (rename, link, copy) give
 * EXDEV, as two filesystems do.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

struct arf_vol {
	arf_client *c;     /* this client's connection to the volume */
};

#define MP_CACHE 64
#define NOT_MOUNT UINT32_MAX /* the mount point cache's "a plain link" */
struct arf_vols {
	pthread_mutex_t lock;           /* adding a volume; the mount point cache */
	struct arf_vol *v[ARF_VOLS_MAX]; /* by slot (slot_of(number); atomic: release on
					 * adding); v[0] unused: the client itself */
	struct {                        /* mount point handle -> volume, not to read the link
					 * at each crossing */
		uint64_t ino;
		uint32_t gen;
		unsigned vol;
	} mp[MP_CACHE];
};

/* Volume numbers are the process's, by name, not each client's: arf-fuse
 * hands the handles one client gave to another (its uncached one), and a
 * number must name the same volume in both; a client meeting a number
 * for the first time connects to that volume (route).  So is the way back
 * out of a volume: ".." at its root is the directory of the mount point
 * last crossed into it, kept as (that directory's volume by name, ino,
 * gen), which each client turns into a handle of its own.
 *
 * A number is the volume name's 16-bit FNV-1a hash (0 becomes 1), the same
 * in every process; should two names of one process hash alike, the one
 * met second takes the next free number, which then depends on the order
 * the process met them in.  Each number has a slot, its place in numbers[]
 * and in every client's table (at most ARF_VOLS_MAX - 1 volumes a
 * process), found from the number without a lock (slots[]). */
struct number {
	char name[ARF_PROTO_VOLUME_MAX];
	char pname[ARF_PROTO_VOLUME_MAX]; /* the volume of ".."; "" = none yet */
	uint64_t pino;
	uint32_t pgen;
	unsigned num;                     /* the volume's number */
};
static pthread_mutex_t numbers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct number numbers[ARF_VOLS_MAX];
static unsigned nnumbers = 1;
static uint16_t slots[1u << 16]; /* number -> slot, 0: none (atomic: release on giving) */

static unsigned name_hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	h = (h ^ (h >> 16)) & 0xffffu;
	return h ? h : 1;
}

/* Number k's slot, 0 for a number never given. */
static unsigned slot_of(unsigned k)
{
	return k && k < (1u << 16) ? __atomic_load_n(&slots[k], __ATOMIC_ACQUIRE) : 0;
}

/* name's number (1..65535), given it the first time; 0 when the process
 * has all the volumes it may have. */
static unsigned number_of(const char *name)
{
	unsigned i, k = 0;

	pthread_mutex_lock(&numbers_lock);
	for (i = 1; i < nnumbers && strcmp(numbers[i].name, name); i++)
		;
	if (i < nnumbers) {
		k = numbers[i].num;
	} else if (nnumbers < ARF_VOLS_MAX) {
		for (k = name_hash(name); slots[k]; k = k % 0xffffu + 1)
			; /* another name's: the next free one */
		snprintf(numbers[nnumbers].name, sizeof(numbers[0].name), "%s", name);
		numbers[nnumbers].num = k;
		__atomic_store_n(&slots[k], (uint16_t)nnumbers, __ATOMIC_RELEASE);
		nnumbers++;
	}
	pthread_mutex_unlock(&numbers_lock);
	return k;
}

/* Number k's name (into name, may be NULL) and its way out (pname, may be
 * NULL); 0, or -ESTALE for a number never given. */
static int number_get(unsigned k, char *name, char *pname, uint64_t *pino, uint32_t *pgen)
{
	int rc = -ESTALE;

	pthread_mutex_lock(&numbers_lock);
	k = slot_of(k);
	if (k) {
		if (name)
			memcpy(name, numbers[k].name, ARF_PROTO_VOLUME_MAX);
		if (pname) {
			memcpy(pname, numbers[k].pname, ARF_PROTO_VOLUME_MAX);
			*pino = numbers[k].pino;
			*pgen = numbers[k].pgen;
		}
		rc = 0;
	}
	pthread_mutex_unlock(&numbers_lock);
	return rc;
}

static void number_set_parent(unsigned k, const char *pname, uint64_t pino, uint32_t pgen)
{
	pthread_mutex_lock(&numbers_lock);
	k = slot_of(k);
	if (k) {
		snprintf(numbers[k].pname, sizeof(numbers[k].pname), "%s", pname);
		numbers[k].pino = pino;
		numbers[k].pgen = pgen;
	}
	pthread_mutex_unlock(&numbers_lock);
}

struct arf_vols *arf_vols_new(void)
{
	struct arf_vols *vs = calloc(1, sizeof(*vs));
	if (!vs)
		return NULL;
	pthread_mutex_init(&vs->lock, NULL);
	return vs;
}

void arf_vols_free(arf_client *c)
{
	struct arf_vols *vs = c->vols;
	if (!vs)
		return;
	for (unsigned i = 1; i < ARF_VOLS_MAX; i++)
		if (vs->v[i]) {
			arf_close(vs->v[i]->c);
			free(vs->v[i]);
		}
	pthread_mutex_destroy(&vs->lock);
	free(vs);
	c->vols = NULL;
}

/* The entry in slot i of c's table (i > 0), or NULL. */
static struct arf_vol *slot_entry(const arf_client *c, unsigned i)
{
	if (!c->vols || !i || i >= ARF_VOLS_MAX)
		return NULL;
	return __atomic_load_n(&c->vols->v[i], __ATOMIC_ACQUIRE);
}

/* Volume k's entry in c's table (k > 0), or NULL. */
static struct arf_vol *vol_entry(const arf_client *c, unsigned k)
{
	return slot_entry(c, slot_of(k));
}

/* The number of the volume in slot i. */
static unsigned slot_num(unsigned i)
{
	unsigned k;

	pthread_mutex_lock(&numbers_lock);
	k = i < nnumbers ? numbers[i].num : 0;
	pthread_mutex_unlock(&numbers_lock);
	return k;
}

static uint64_t tag(uint64_t ino, unsigned k)
{
	return ino ? ino | ((uint64_t)k << ARF_VOL_SHIFT) : 0;
}

static void tag_st(struct arf_stat *st, unsigned k)
{
	if (st)
		st->ino = tag(st->ino, k);
}

/* Connect c to volume number k, named name, unless it is already. */
static int attach(arf_client *c, unsigned k, const char *name)
{
	struct arf_vols *vs = c->vols;
	struct arf_location loc;
	struct arf_url u;
	arf_client *sub = NULL;
	char err[256] = "";
	int rc;

	if (!vs)
		return -ESTALE; /* a volume's own client: one volume only */
	if (vol_entry(c, k))
		return 0;
	/* where it lives, as the server this client talks to knows it */
	if ((rc = arf_locate(c, name, &loc))) {
		arf_log_msg(1, "mount point for volume %s: %s", name,
			    rc == -ENOENT ? "no such volume" : arf_strerror(rc));
		return rc == -ENOENT ? -ENODEV : rc;
	}
	arf_url_copy(c, &u); /* its path picks the export, on this server as on the others */
	if (!loc.here) {
		if (!loc.live) {
			arf_log_msg(1, "volume %s: its server %s is not live in the cell", name,
				    loc.server);
			return -EHOSTDOWN;
		}
		/* another server: tcp (or rdma where this client uses it), never
		 * that server's shm socket, which is on another host */
		int rdma = !strcmp(c->url.transport, "rdma") && loc.rdma_port;
		snprintf(u.transport, sizeof(u.transport), "%s", rdma ? "rdma" : "tcp");
		snprintf(u.host, sizeof(u.host), "%s", loc.address);
		u.port = rdma ? loc.rdma_port : loc.port;
		u.socket[0] = 0;
		if (!u.port)
			return -EHOSTDOWN;
	}
	/* a server's credential token is for the server that minted it, a
	 * cell's for every server of the cell with the cell's secret (conn.c);
	 * one without it refuses the token, and is reached as before, without
	 * it (the anonymous user) */
	int carry = loc.here || arf_cl_cell_token(c);
	rc = arf_connect_like(c, &u, name, carry, &sub, err, sizeof(err));
	if (rc == ARF_EAUTH && carry && !loc.here) {
		arf_log_msg(1, "volume %s: %s: going on without the credential token", name, err);
		err[0] = 0;
		rc = arf_connect_like(c, &u, name, 0, &sub, err, sizeof(err));
	}
	if (rc) {
		arf_log_msg(1, "volume %s: %s", name, err[0] ? err : arf_strerror(rc));
		return rc;
	}
	struct arf_vol *v = calloc(1, sizeof(*v));
	if (!v) {
		arf_close(sub);
		return -ENOMEM;
	}
	v->c = sub;
	sub->vol_index = k;
	unsigned i = slot_of(k); /* given: k came from number_of */
	pthread_mutex_lock(&vs->lock);
	if (i && !vs->v[i]) {
		__atomic_store_n(&vs->v[i], v, __ATOMIC_RELEASE);
		v = NULL;
	} /* else another thread connected first: keep its */
	pthread_mutex_unlock(&vs->lock);
	if (v) {
		arf_close(v->c);
		free(v);
	}
	return 0;
}

/* The client of volume k (k = 0, or one c is attached to). */
static arf_client *vol_client(arf_client *c, unsigned k)
{
	return k ? vol_entry(c, k)->c : c;
}

/* The client of volume k, connected on first use; NULL with the error
 * in *rc. */
static arf_client *reach(arf_client *c, unsigned k, int *rc)
{
	char name[ARF_PROTO_VOLUME_MAX];
	struct arf_vol *v;

	if (!k)
		return c;
	if ((v = vol_entry(c, k)))
		return v->c;
	if (!(*rc = number_get(k, name, NULL, NULL, NULL)) && !(*rc = attach(c, k, name)))
		return vol_client(c, k);
	return NULL;
}

/* The client answering for handle *ino, whose volume bits come off (*k
 * gets them), connected on first use; NULL with the error in *rc. */
static arf_client *route(arf_client *c, uint64_t *ino, unsigned *k, int *rc)
{
	*k = (unsigned)(*ino >> ARF_VOL_SHIFT);
	*ino &= ARF_VOL_INO_MASK;
	return reach(c, *k, rc);
}

#define ROUTE(c, ino, s, k)                                \
	unsigned k;                                        \
	int k##_rc = -ESTALE;                              \
	arf_client *s = route((c), &(ino), &k, &k##_rc);   \
	if (!s)                                            \
		return k##_rc;                             \
	(void)k

int arf_mount_target(const char *target, char *name, size_t cap)
{
	size_t len = strlen(target);

	if (len < 3 || target[0] != '#' || target[len - 1] != '.' || len - 2 >= cap)
		return 0;
	for (size_t i = 1; i < len - 1; i++) {
		char ch = target[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '.' || ch == '_' || ch == '-'))
			return 0;
	}
	memcpy(name, target + 1, len - 2);
	name[len - 2] = 0;
	return 1;
}

/* The name of c's own volume, as the cell and mount points name it. */
static const char *own_name(const arf_client *c)
{
	return c->volume[0] ? c->volume : "root";
}

/* Volume name's number (0: the volume c is connected to). */
static int vol_number(arf_client *c, const char *name, unsigned *out)
{
	if (!strcmp(name, own_name(c))) {
		*out = 0;
		return 0;
	}
	if (!(*out = number_of(name))) {
		arf_log_msg(1, "volume %s: this process reached %d volumes", name,
			    ARF_VOLS_MAX - 1);
		return -EMFILE;
	}
	return 0;
}

/* The volume mount point (ino, gen) of volume k names (ino untagged), in
 * directory (dir, dgen) of volume k (dir untagged): its number in *vol.
 * To cross it (connect): c connected to the volume, and its ".." made
 * (dir, dgen).  1 when the link is not a mount point. */
static int mount_volume(arf_client *c, unsigned k, uint64_t ino, uint32_t gen, uint64_t dir,
			uint32_t dgen, unsigned *vol, int connect)
{
	struct arf_vols *vs = c->vols;
	uint64_t key = tag(ino, k);
	size_t slot = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 58) % MP_CACHE;
	char target[ARF_PATH_MAX + 1], name[ARF_PROTO_VOLUME_MAX], pname[ARF_PROTO_VOLUME_MAX];
	int n, rc, hit;

	if (!vs)
		return 1; /* a client of one volume only (not one the caller holds) */
	pthread_mutex_lock(&vs->lock);
	hit = vs->mp[slot].ino == key && vs->mp[slot].gen == gen;
	if (hit)
		*vol = vs->mp[slot].vol;
	pthread_mutex_unlock(&vs->lock);
	if (hit && *vol == NOT_MOUNT)
		return 1;
	if (!hit) {
		n = arf_v_readlink(vol_client(c, k), ino, gen, target, sizeof(target));
		if (n < 0)
			return n;
		if (!arf_mount_target(target, name, sizeof(name)))
			*vol = NOT_MOUNT;
		else if ((rc = vol_number(c, name, vol)))
			return rc;
		pthread_mutex_lock(&vs->lock);
		vs->mp[slot].ino = key;
		vs->mp[slot].gen = gen;
		vs->mp[slot].vol = *vol;
		pthread_mutex_unlock(&vs->lock);
		if (*vol == NOT_MOUNT)
			return 1;
	}
	if (!connect || !*vol)
		return 0;
	if (k)
		number_get(k, pname, NULL, NULL, NULL);
	number_set_parent(*vol, k ? pname : own_name(c), dir, dgen);
	return reach(c, *vol, &rc) ? 0 : rc;
}

/* *st (volume k's attributes of a mount point, tagged) becomes the
 * attributes of the root of the volume it names: 0, an error, or 1 (*st
 * unchanged) when the link is not a mount point after all. */
static int cross(arf_client *c, unsigned k, struct arf_stat *st, uint64_t dir, uint32_t dgen)
{
	unsigned vol;
	int rc = mount_volume(c, k, st->ino & ARF_VOL_INO_MASK, st->gen, dir & ARF_VOL_INO_MASK,
			      dgen, &vol, 1);
	if (rc)
		return rc;
	arf_client *v = vol_client(c, vol);
	rc = arf_v_getattr(v, ARF_ROOT_INO, v->info.root_gen, st);
	tag_st(st, vol);
	return rc;
}

/* ".." at the root of volume k (k > 0): the directory (*dir, *dgen) of
 * volume *pk. */
static int vol_parent_of(arf_client *c, unsigned k, unsigned *pk, uint64_t *dir, uint32_t *dgen)
{
	char pname[ARF_PROTO_VOLUME_MAX];
	int rc = number_get(k, NULL, pname, dir, dgen);
	if (rc)
		return rc;
	if (!pname[0]) /* reached by handle alone, never crossed into: its own root */
		return *pk = k, *dir = ARF_ROOT_INO, *dgen = 0, 0;
	return vol_number(c, pname, pk);
}

static int vol_parent(arf_client *c, unsigned k, uint32_t kgen, struct arf_stat *out)
{
	unsigned pk;
	uint64_t dir;
	uint32_t dgen;
	int rc = vol_parent_of(c, k, &pk, &dir, &dgen);
	if (rc)
		return rc;
	if (pk == k && dir == ARF_ROOT_INO) /* as a filesystem's root: itself */
		return arf_getattr(c, tag(ARF_ROOT_INO, k), kgen, out);
	return arf_getattr(c, tag(dir, pk), dgen, out);
}

int arf_lookup(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, struct arf_stat *out)
{
	uint64_t d = dir;
	ROUTE(c, d, s, k);
	if (k && d == ARF_ROOT_INO && !strcmp(name, ".."))
		return vol_parent(c, k, dgen, out);
	int rc = arf_v_lookup(s, d, dgen, name, out);
	if (rc)
		return rc;
	tag_st(out, k);
	if (arf_mount_point_mode(out->mode) && (rc = cross(c, k, out, d, dgen)) > 0)
		rc = 0; /* a plain link */
	return rc;
}

int arf_resolve(arf_client *c, const char *path, struct arf_stat *out)
{
	unsigned k = 0;
	uint64_t dir = ARF_ROOT_INO;
	uint32_t dgen = c->info.root_gen;
	char *p = strdup(path);
	int rc = -ENOMEM;

	for (int hops = 0; p; hops++) {
		struct arf_handback hb;
		arf_client *s = reach(c, k, &rc);
		if (!s)
			break;
		rc = arf_v_resolve_at(s, dir, dgen, p, out, &hb);
		free(p);
		p = NULL;
		if (rc <= 0) {
			tag_st(out, k);
			return rc;
		}
		p = hb.rest;
		rc = -ELOOP;
		if (hops == 40)
			break;
		if (hb.kind == ARF_HB_MOUNT) {
			unsigned vol;
			rc = mount_volume(c, k, hb.ino, hb.gen, hb.dir, hb.dgen, &vol, 1);
			if (rc > 0) /* a plain link now (made again meanwhile) */
				rc = -ESTALE;
			if (rc)
				break;
			k = vol;
			dir = ARF_ROOT_INO;
			dgen = vol_client(c, k)->info.root_gen;
		} else if (hb.kind == ARF_HB_DOTDOT) {
			unsigned pk;
			if ((rc = vol_parent_of(c, k, &pk, &dir, &dgen)))
				break;
			if (pk == k && dir == ARF_ROOT_INO) /* no way out: a root's ".." */
				dgen = vol_client(c, k)->info.root_gen;
			k = pk;
		} else { /* ARF_HB_ABS */
			k = 0;
			dir = ARF_ROOT_INO;
			dgen = c->info.root_gen;
		}
	}
	free(p);
	return rc;
}

/* A listing's entries of volume k, in directory (dir, dgen) (a handle):
 * tagged, and each mount point shown as the root directory it leads to,
 * without its attributes (st[i].ino 0): a listing reads nothing of the
 * volumes behind its mount points, so `ls` of a directory works on while
 * one of them is unreachable (its handle's gen is 0 until this client
 * has reached that volume once). */
static void entries(arf_client *c, unsigned k, uint64_t dir, uint32_t dgen,
		    struct arf_dirent *ents, struct arf_stat *st, size_t n)
{
	arf_client *s = vol_client(c, k);

	for (size_t i = 0; i < n; i++) {
		struct arf_stat a;
		unsigned vol;
		ents[i].ino = tag(ents[i].ino, k);
		if (st)
			tag_st(&st[i], k);
		if (ents[i].type != DT_LNK)
			continue;
		if (st && st[i].ino)
			a = st[i];
		else if (arf_v_getattr(s, ents[i].ino & ARF_VOL_INO_MASK, ents[i].gen, &a))
			continue;
		if (!arf_mount_point_mode(a.mode) ||
		    mount_volume(c, k, ents[i].ino & ARF_VOL_INO_MASK, ents[i].gen,
				 dir & ARF_VOL_INO_MASK, dgen, &vol, 0))
			continue;
		arf_client *v = vol ? (vol_entry(c, vol) ? vol_entry(c, vol)->c : NULL) : c;
		ents[i].ino = tag(ARF_ROOT_INO, vol);
		ents[i].gen = v ? v->info.root_gen : 0;
		ents[i].type = DT_DIR;
		if (st) {
			memset(&st[i], 0, sizeof(st[i]));
			st[i].mode = S_IFDIR; /* a mount point: look it up by name */
		}
	}
}

int arf_readdir(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		struct arf_dirent *ents, size_t max, size_t *n, int *eof)
{
	uint64_t d = dir;
	ROUTE(c, d, s, k);
	int rc = arf_v_readdir(s, d, dgen, cookie, ents, max, n, eof);
	if (!rc)
		entries(c, k, dir, dgen, ents, NULL, *n);
	return rc;
}

int arf_readdirplus(arf_client *c, uint64_t dir, uint32_t dgen, uint64_t cookie,
		    struct arf_dirent *ents, struct arf_stat *st, size_t max, size_t *n, int *eof)
{
	uint64_t d = dir;
	ROUTE(c, d, s, k);
	int rc = arf_v_readdirplus(s, d, dgen, cookie, ents, st, max, n, eof);
	if (!rc)
		entries(c, k, dir, dgen, ents, st, *n);
	return rc;
}

/* ---- the rest: route, call, tag what comes back ---- */

int arf_getattr(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out)
{
	ROUTE(c, ino, s, k);
	int rc = arf_v_getattr(s, ino, gen, out);
	tag_st(out, k);
	return rc;
}

int arf_reply_attr(arf_client *c, uint64_t ino, uint32_t gen, struct arf_stat *out)
{
	ROUTE(c, ino, s, k);
	int rc = arf_v_reply_attr(s, ino, gen, out);
	tag_st(out, k);
	return rc;
}

void arf_reply_attr_drop(arf_client *c, uint64_t ino)
{
	unsigned k;
	int rc;
	arf_client *s = route(c, &ino, &k, &rc);
	if (s)
		arf_v_reply_attr_drop(s, ino);
}

ssize_t arf_read(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, void *buf, size_t len)
{
	ROUTE(c, ino, s, k);
	return arf_v_read(s, ino, gen, off, buf, len);
}

ssize_t arf_write(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, const void *buf,
		  size_t len)
{
	ROUTE(c, ino, s, k);
	ssize_t n = arf_v_write(s, ino, gen, off, buf, len);
	arf_behind_check(s);
	return n;
}

int arf_readlink(arf_client *c, uint64_t ino, uint32_t gen, char *buf, size_t cap)
{
	ROUTE(c, ino, s, k);
	return arf_v_readlink(s, ino, gen, buf, cap);
}

ssize_t arf_append(arf_client *c, uint64_t ino, uint32_t gen, const void *buf, size_t len,
		   uint64_t *off)
{
	ROUTE(c, ino, s, k);
	return arf_v_append(s, ino, gen, buf, len, off);
}

int arf_fallocate(arf_client *c, uint64_t ino, uint32_t gen, int mode, uint64_t off, uint64_t len,
		  struct arf_stat *out)
{
	ROUTE(c, ino, s, k);
	int rc = arf_v_fallocate(s, ino, gen, mode, off, len, out);
	tag_st(out, k);
	return rc;
}

int arf_seek(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, int whence,
	     uint64_t *result)
{
	ROUTE(c, ino, s, k);
	return arf_v_seek(s, ino, gen, off, whence, result);
}

int arf_create(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	       int exclusive, struct arf_stat *out)
{
	ROUTE(c, dir, s, k);
	int rc = arf_v_create(s, dir, dgen, name, mode, exclusive, out);
	tag_st(out, k);
	return rc;
}

int arf_mkdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      struct arf_stat *out)
{
	ROUTE(c, dir, s, k);
	int rc = arf_v_mkdir(s, dir, dgen, name, mode, out);
	tag_st(out, k);
	return rc;
}

int arf_mknod(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
	      uint64_t rdev, struct arf_stat *out)
{
	ROUTE(c, dir, s, k);
	int rc = arf_v_mknod(s, dir, dgen, name, mode, rdev, out);
	tag_st(out, k);
	return rc;
}

int arf_unlink(arf_client *c, uint64_t dir, uint32_t dgen, const char *name)
{
	ROUTE(c, dir, s, k);
	return arf_v_unlink(s, dir, dgen, name);
}

int arf_rmdir(arf_client *c, uint64_t dir, uint32_t dgen, const char *name)
{
	ROUTE(c, dir, s, k);
	return arf_v_rmdir(s, dir, dgen, name);
}

int arf_rename(arf_client *c, uint64_t odir, uint32_t ogen, const char *oname, uint64_t ndir,
	       uint32_t ngen, const char *nname, unsigned flags)
{
	if ((odir >> ARF_VOL_SHIFT) != (ndir >> ARF_VOL_SHIFT))
		return -EXDEV;
	ndir &= ARF_VOL_INO_MASK;
	ROUTE(c, odir, s, k);
	return arf_v_rename(s, odir, ogen, oname, ndir, ngen, nname, flags);
}

int arf_link(arf_client *c, uint64_t ino, uint32_t gen, uint64_t dir, uint32_t dgen,
	     const char *name, struct arf_stat *out)
{
	if ((ino >> ARF_VOL_SHIFT) != (dir >> ARF_VOL_SHIFT))
		return -EXDEV;
	dir &= ARF_VOL_INO_MASK;
	ROUTE(c, ino, s, k);
	int rc = arf_v_link(s, ino, gen, dir, dgen, name, out);
	tag_st(out, k);
	return rc;
}

int arf_symlink(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, const char *target,
		struct arf_stat *out)
{
	ROUTE(c, dir, s, k);
	int rc = arf_v_symlink(s, dir, dgen, name, target, out);
	tag_st(out, k);
	return rc;
}

int arf_setattr(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_setattr *sa,
		struct arf_stat *out)
{
	ROUTE(c, ino, s, k);
	int rc = arf_v_setattr(s, ino, gen, sa, out);
	tag_st(out, k);
	return rc;
}

int arf_fsync(arf_client *c, uint64_t ino, uint32_t gen)
{
	if (ino == 0 && gen == 0) {
		/* everything: every volume's writes */
		int rc = arf_v_fsync(c, 0, 0);
		for (unsigned i = 1; i < ARF_VOLS_MAX; i++) {
			struct arf_vol *v = slot_entry(c, i);
			int r = v ? arf_v_fsync(v->c, 0, 0) : 0;
			if (!rc)
				rc = r;
		}
		return rc;
	}
	ROUTE(c, ino, s, k);
	return arf_v_fsync(s, ino, gen);
}

int arf_flush(arf_client *c, uint64_t ino, uint32_t gen)
{
	ROUTE(c, ino, s, k);
	return arf_v_flush(s, ino, gen);
}

int arf_access(arf_client *c, uint64_t ino, uint32_t gen, int mask)
{
	ROUTE(c, ino, s, k);
	return arf_v_access(s, ino, gen, mask);
}

int arf_create_write(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, uint32_t mode,
		     const void *data, size_t len, const struct arf_setattr *sa,
		     struct arf_stat *out)
{
	ROUTE(c, dir, s, k);
	int rc = arf_v_create_write(s, dir, dgen, name, mode, data, len, sa, out);
	tag_st(out, k);
	return rc;
}

ssize_t arf_copy(arf_client *c, uint64_t src, uint32_t sgen, uint64_t soff, uint64_t dst,
		 uint32_t dgen, uint64_t doff, size_t len, unsigned flags, struct arf_stat *dst_st)
{
	if ((src >> ARF_VOL_SHIFT) != (dst >> ARF_VOL_SHIFT))
		return -EXDEV;
	dst &= ARF_VOL_INO_MASK;
	ROUTE(c, src, s, k);
	ssize_t n = arf_v_copy(s, src, sgen, soff, dst, dgen, doff, len, flags, dst_st);
	tag_st(dst_st, k);
	return n;
}

int arf_last_dir_change(arf_client *c, struct arf_dir_change *out)
{
	/* the thread's last change may have been through any volume's
	 * client: found by address only (it may be closed since) */
	const arf_client *s = arf_change_client();
	unsigned k = 0;
	for (unsigned i = 1; s && s != c && i < ARF_VOLS_MAX; i++)
		if (slot_entry(c, i) && slot_entry(c, i)->c == s) {
			k = slot_num(i);
			break;
		}
	int rc = arf_v_last_dir_change(vol_client(c, k), out);
	for (uint32_t i = 0; !rc && i < out->n && i < 2; i++)
		tag_st(&out->dir[i].post, k);
	return rc;
}

int arf_statfs(arf_client *c, struct arf_statfs *out)
{
	return arf_v_statfs(c, out);
}

int arf_statfs_at(arf_client *c, uint64_t ino, struct arf_statfs *out)
{
	ROUTE(c, ino, s, k);
	return arf_v_statfs(s, out);
}

ssize_t arf_getxattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name, void *buf,
		     size_t size)
{
	ROUTE(c, ino, s, k);
	return arf_v_getxattr(s, ino, gen, name, buf, size);
}

ssize_t arf_listxattr(arf_client *c, uint64_t ino, uint32_t gen, char *buf, size_t size)
{
	ROUTE(c, ino, s, k);
	return arf_v_listxattr(s, ino, gen, buf, size);
}

int arf_setxattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name, const void *value,
		 size_t size, int flags, struct arf_stat *out)
{
	ROUTE(c, ino, s, k);
	int rc = arf_v_setxattr(s, ino, gen, name, value, size, flags, out);
	tag_st(out, k);
	return rc;
}

int arf_removexattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name,
		    struct arf_stat *out)
{
	ROUTE(c, ino, s, k);
	int rc = arf_v_removexattr(s, ino, gen, name, out);
	tag_st(out, k);
	return rc;
}

int arf_lock(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_lock *lk, int wait,
	     uint64_t wait_id)
{
	ROUTE(c, ino, s, k);
	if (k && !wait_id)
		wait_id = arf_lock_wait_id(c); /* ids come from the caller's client only */
	return arf_v_lock(s, ino, gen, lk, wait, wait_id);
}

int arf_lock_cancel(arf_client *c, uint64_t wait_id)
{
	/* the wait may be on any volume's client: each forgets an id it lacks */
	int rc = arf_v_lock_cancel(c, wait_id);
	for (unsigned i = 1; i < ARF_VOLS_MAX; i++) {
		struct arf_vol *v = slot_entry(c, i);
		int r = v ? arf_v_lock_cancel(v->c, wait_id) : 0;
		if (!rc)
			rc = r;
	}
	return rc;
}

int arf_unlock(arf_client *c, uint64_t ino, uint32_t gen, const struct arf_lock *lk)
{
	ROUTE(c, ino, s, k);
	return arf_v_unlock(s, ino, gen, lk);
}

int arf_getlk(arf_client *c, uint64_t ino, uint32_t gen, struct arf_lock *lk)
{
	ROUTE(c, ino, s, k);
	return arf_v_getlk(s, ino, gen, lk);
}

int arf_lock_lost(arf_client *c, uint64_t ino, uint32_t gen)
{
	ROUTE(c, ino, s, k);
	return arf_v_lock_lost(s, ino, gen);
}

void arf_lock_forget_lost(arf_client *c, uint64_t ino, uint32_t gen)
{
	unsigned k;
	int rc;
	arf_client *s = route(c, &ino, &k, &rc);
	if (s)
		arf_v_lock_forget_lost(s, ino, gen);
}

/* ---- making and reading mount points ---- */

int arf_mkmount(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, const char *volume,
		struct arf_stat *out)
{
	char target[ARF_PROTO_VOLUME_MAX + 3], check[ARF_PROTO_VOLUME_MAX];
	struct arf_setattr sa = { .valid = ARF_SET_MODE, .mode = 0644 };
	struct arf_stat st;

	if (snprintf(target, sizeof(target), "#%s.", volume) >= (int)sizeof(target) ||
	    !arf_mount_target(target, check, sizeof(check)))
		return -EINVAL;
	ROUTE(c, dir, s, k);
	int rc = arf_v_symlink(s, dir, dgen, name, target, &st);
	if (rc)
		return rc;
	/* a symbolic link of mode 0644: only root may chmod one */
	if ((rc = arf_v_setattr(s, st.ino, st.gen, &sa, out ? out : &st))) {
		int r = arf_v_unlink(s, dir, dgen, name);
		if (r)
			arf_log_msg(0, "mkmount %s: the link made could not be removed: %s", name,
				    arf_strerror(r));
		return rc;
	}
	tag_st(out, k);
	return 0;
}

int arf_mount_point(arf_client *c, uint64_t dir, uint32_t dgen, const char *name, char *volume,
		    size_t cap)
{
	struct arf_stat st;
	char target[ARF_PATH_MAX + 1];

	ROUTE(c, dir, s, k);
	int rc = arf_v_lookup(s, dir, dgen, name, &st);
	if (rc)
		return rc;
	if (!arf_mount_point_mode(st.mode))
		return -EINVAL;
	int n = arf_v_readlink(s, st.ino, st.gen, target, sizeof(target));
	if (n < 0)
		return n;
	if (!arf_mount_target(target, volume, cap))
		return -EINVAL;
	return 0;
}

int arf_cred_token_at(arf_client *c, uint64_t ino, uint8_t token[ARF_TOKEN_SIZE],
		      uint32_t *ttl_s)
{
	ROUTE(c, ino, s, k);
	return arf_cred_token(s, token, ttl_s);
}

int arf_volume_url(arf_client *c, uint64_t ino, char *url, size_t cap, uint64_t *local)
{
	unsigned k;
	int n = -ESTALE;
	arf_client *s = route(c, &ino, &k, &n);

	if (!s)
		return n;
	struct arf_url uc;
	arf_url_copy(s, &uc);
	const struct arf_url *u = &uc;
	const char *t = u->transport, *vol = s->volume;
	if (!strcmp(t, "shm")) {
		n = snprintf(url, cap, "arf+shm://%s?socket=%s%s%s", u->path, u->socket,
			     vol[0] ? "&volume=" : "", vol);
	} else {
		int v6 = strchr(u->host, ':') != NULL, plain = !strcmp(t, "tcp");
		n = snprintf(url, cap, "arf%s%s://%s%s%s:%u%s%s%s", plain ? "" : "+", plain ? "" : t,
			     v6 ? "[" : "", u->host, v6 ? "]" : "", u->port, u->path,
			     vol[0] ? "?volume=" : "", vol);
	}
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	if (local)
		*local = ino;
	return 0;
}

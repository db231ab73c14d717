/* SPDX-License-Identifier: MIT */
/*
 * What this mount knows of a directory's names, so that a lookup of a name
 * that is not there costs no round trip.
 *
 * The kernel looks a name up before every mkdir, mknod, symlink, link,
 * rename target and open(O_CREAT): FUSE's LOOKUP carries no "for an
 * exclusive create" hint (NFS skips that lookup), so without this each of
 * them would pay a round trip to learn that the name is free.  tar, rsync,
 * git and cp make thousands of such names in directories they just made.
 *
 * Knowledge starts with a directory this mount makes itself (MKDIR's reply:
 * empty, at the ctime the reply gives) and is kept by this mount's own
 * changes of names: each reply carries the directory's ctime before the
 * change and its attributes after (the wcc, arf_last_dir_change).  When the
 * ctime before is the one the knowledge was right for, nobody else changed
 * the directory in between, and the change is applied (the name added or
 * removed, the new ctime kept); when it is not, or a change failed, or the
 * reply said nothing, the knowledge of that directory is dropped.
 *
 * Another client can still add a name after the last reply; so a "not
 * there" is believed only for the mount's name-cache time after the last
 * proof (libarf's entry timeout: 1 s by default; never under noac or
 * lookupcache=none), the same bound libarf puts on names it has seen.
 * A name that is there is looked up through libarf's cached client, whose
 * entry and attributes this mount's own change just put there (the
 * rename target the kernel always looks up again costs nothing); any other
 * directory's names come from the server's current state.  An ESTALE from
 * the server (another client replaced a file after all) drops everything
 * known, so the kernel's retried lookup asks the server.  Bounded: at most
 * NAMES_DIRS directories (the least recently proven one gives way) and
 * NAMES_MAX names in all (a directory that would pass it is forgotten).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arf_fuse.h"

#define NAMES_DIRS 64          /* directories known at once */
#define NAMES_MAX  (1u << 18)  /* names known in all */

static char tomb;              /* a removed name's slot */

struct names_dir {
	uint64_t ino;              /* 0 = unused */
	uint32_t gen;
	int64_t ctime_ns;          /* the directory's ctime the names are right for */
	uint64_t stamp_ms;         /* when a reply last proved them */
	size_t n, used, cap;       /* names, slots taken (with tombstones), slots */
	char **slot;               /* open addressing: NULL free, &tomb removed */
};

struct arf_fuse_names {
	pthread_mutex_t lock;
	uint32_t window_ms;        /* how long a proof is believed */
	size_t total;              /* names in all directories */
	struct names_dir dir[NAMES_DIRS];
};

uint64_t arf_fuse_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static size_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return (size_t)(h ^ (h >> 29));
}

/* The slot holding name, or the free slot where it would go (cap > used). */
static char **slot_of(struct names_dir *d, const char *name)
{
	size_t mask = d->cap - 1, i = hash(name) & mask;
	char **grave = NULL;

	for (;; i = (i + 1) & mask) {
		char *s = d->slot[i];
		if (!s)
			return grave ? grave : &d->slot[i];
		if (s == &tomb) {
			if (!grave)
				grave = &d->slot[i];
		} else if (!strcmp(s, name)) {
			return &d->slot[i];
		}
	}
}

static void forget(struct arf_fuse_names *t, struct names_dir *d)
{
	for (size_t i = 0; i < d->cap; i++)
		if (d->slot[i] && d->slot[i] != &tomb)
			free(d->slot[i]);
	free(d->slot);
	t->total -= d->n;
	memset(d, 0, sizeof(*d));
}

/* Rehash into twice (or as many) slots: 0 or -ENOMEM. */
static int grow(struct names_dir *d)
{
	size_t cap = d->n * 4 > d->cap ? d->cap * 2 : d->cap;
	char **old = d->slot, **nw = calloc(cap, sizeof(*nw));
	size_t ocap = d->cap;

	if (!nw)
		return -ENOMEM;
	d->slot = nw;
	d->cap = cap;
	d->used = d->n;
	for (size_t i = 0; i < ocap; i++)
		if (old[i] && old[i] != &tomb)
			*slot_of(d, old[i]) = old[i];
	free(old);
	return 0;
}

static int add(struct arf_fuse_names *t, struct names_dir *d, const char *name)
{
	if ((d->used + 1) * 4 > d->cap * 3 && grow(d))
		return -ENOMEM;
	char **s = slot_of(d, name);
	if (*s && *s != &tomb)
		return 0;
	if (t->total >= NAMES_MAX)
		return -ENOSPC;
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	if (!*s)
		d->used++;
	*s = copy;
	d->n++;
	t->total++;
	return 0;
}

static void del(struct arf_fuse_names *t, struct names_dir *d, const char *name)
{
	char **s = slot_of(d, name);
	if (!*s || *s == &tomb)
		return;
	free(*s);
	*s = &tomb;
	d->n--;
	t->total--;
}

static struct names_dir *find(struct arf_fuse_names *t, uint64_t ino, uint32_t gen)
{
	for (int i = 0; i < NAMES_DIRS; i++)
		if (t->dir[i].ino == ino && t->dir[i].gen == gen)
			return &t->dir[i];
	return NULL;
}

int arf_fuse_names_init(struct arf_fuse *fs)
{
	fs->names = NULL;
	/* the window is libarf's for names: none when names are not cached */
	if (!fs->cache_ms || !fs->opts.ac || !strcmp(fs->opts.lookupcache, "none"))
		return 0;
	struct arf_fuse_names *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	t->window_ms = fs->cache_ms;
	fs->names = t;
	return 0;
}

void arf_fuse_names_fini(struct arf_fuse *fs)
{
	struct arf_fuse_names *t = fs->names;

	if (!t)
		return;
	for (int i = 0; i < NAMES_DIRS; i++)
		if (t->dir[i].ino)
			forget(t, &t->dir[i]);
	pthread_mutex_destroy(&t->lock);
	free(t);
	fs->names = NULL;
}

int arf_fuse_names_state(struct arf_fuse *fs, uint64_t dir, uint32_t dgen, const char *name)
{
	struct arf_fuse_names *t = fs->names;
	int state = ARF_FUSE_NAME_UNKNOWN;

	if (!t || !strcmp(name, ".") || !strcmp(name, ".."))
		return state;
	pthread_mutex_lock(&t->lock);
	struct names_dir *d = find(t, dir, dgen);
	if (d && arf_fuse_now_ms() - d->stamp_ms < t->window_ms) {
		char **s = slot_of(d, name);
		state = !*s || *s == &tomb ? ARF_FUSE_NAME_ABSENT : ARF_FUSE_NAME_PRESENT;
	}
	pthread_mutex_unlock(&t->lock);
	return state;
}

void arf_fuse_names_forget_all(struct arf_fuse *fs)
{
	struct arf_fuse_names *t = fs->names;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < NAMES_DIRS; i++)
		if (t->dir[i].ino)
			forget(t, &t->dir[i]);
	pthread_mutex_unlock(&t->lock);
}

void arf_fuse_names_new_dir(struct arf_fuse *fs, const struct arf_stat *st)
{
	struct arf_fuse_names *t = fs->names;
	struct names_dir *d = NULL;

	if (!t || !S_ISDIR(st->mode) || st->size != 0)
		return;
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < NAMES_DIRS; i++) {
		struct names_dir *e = &t->dir[i];
		if (!e->ino || (e->ino == st->ino && e->gen == st->gen)) {
			d = e;
			break;
		}
		if (!d || e->stamp_ms < d->stamp_ms)
			d = e; /* the least recently proven gives way */
	}
	if (d->ino)
		forget(t, d);
	d->slot = calloc(16, sizeof(*d->slot));
	if (d->slot) {
		d->cap = 16;
		d->ino = st->ino;
		d->gen = st->gen;
		d->ctime_ns = st->ctime_ns;
		d->stamp_ms = arf_fuse_now_ms();
	}
	pthread_mutex_unlock(&t->lock);
}

void arf_fuse_names_after(struct arf_fuse *fs, int rc, const struct arf_fuse_names_change *ch,
			  int n)
{
	struct arf_fuse_names *t = fs->names;
	struct arf_dir_change dc;

	if (!t)
		return;
	if (rc || arf_last_dir_change(fs->c, &dc))
		dc.n = 0;
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < n; i++) {
		struct names_dir *d = find(t, ch[i].dir, ch[i].gen);
		if (!d)
			continue;
		int proven = 0;
		for (uint32_t k = 0; k < dc.n; k++)
			if (dc.dir[k].post.ino == d->ino && dc.dir[k].post.gen == d->gen &&
			    dc.dir[k].pre_ctime_ns == d->ctime_ns) {
				d->ctime_ns = dc.dir[k].post.ctime_ns;
				proven = 1;
			}
		if (proven && ch[i].del)
			del(t, d, ch[i].del);
		if (proven && ch[i].add && add(t, d, ch[i].add))
			proven = 0;
		if (proven)
			d->stamp_ms = arf_fuse_now_ms();
		else
			forget(t, d); /* someone else changed it, or the change failed */
	}
	pthread_mutex_unlock(&t->lock);
}

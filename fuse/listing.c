/* SPDX-License-Identifier: MIT */
/*
 * An open directory's listing, fetched ahead.
 *
 * The kernel asks for a directory one page at a time (readdir and
 * readdirplus requests of 4 KiB: a few dozen entries), each resuming after
 * the last entry it got.  Fetching that little per request, and then each
 * child's attributes one by one, made a 10,000-entry listing cost
 * thousands of round trips.  Here the listing is fetched in batches of
 * LIST_BATCH entries with their attributes (arf_readdirplus: over tcp one
 * execution of the shipped readdir program per batch, or READDIR requests
 * and one-sided reads as libarf's policy says), kept with the open
 * directory, and each kernel request is answered from it, resuming where
 * the previous answer stopped; a batch is fetched only when the kernel
 * reaches the end of what is here, after the last cookie fetched, never
 * from the start again.
 *
 * Entries are kept in listing order, whose cookies increase (a cookie is
 * the entry's listing page ordinal and slot), so a cookie the kernel hands
 * back is found by binary search; one that is not here (a seekdir far back,
 * or past what was dropped) starts the fetching over from it.  At most
 * LIST_KEEP entries stay: past that the older half goes.
 *
 * Ahead of the kernel.  Once a reply has gone, the worker that sent it
 * fetches the next batches (up to LIST_AHEAD entries past the last one
 * answered) while the lister's kernel takes in the reply: a first
 * readdirplus of a 10,000-entry directory carries ~6,500 entries, the
 * kernel then spends milliseconds making their dentries and inodes, and
 * the fetch of the remaining 3,500 had waited for the next request
 * (bench/README.md, "Listings through the mount").  The kernel sends one
 * request at a time on an open directory, but the next may come while the
 * last one's worker still fetches: each request holds the listing's lock,
 * so it waits for that fetch, which it would otherwise have made itself.
 * The fetch is the lister's: it runs with its credentials, and a hard
 * mount's wait in it ends when the lister is killed (hardmount.c).  It
 * gives way to any request on the listing (and to releasedir): it stops
 * between batches when one waits for the lock, and a wait in a fetch ends
 * then too (within hardmount.c's 100 ms), so the waiting request fetches
 * for itself, with its own caller's hard or soft wait: a second process
 * reading a shared directory descriptor, killed while the server is
 * stopped, does not wait on the first one's read ahead.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "arf_fuse.h"

#define LIST_BATCH 1024          /* entries one fetch asks for (a READDIR reply's most) */
#define LIST_KEEP  (16 * 1024)   /* entries kept with an open directory */
#define LIST_AHEAD (4 * LIST_BATCH) /* fetched past the last entry answered, after a reply */

struct arf_fuse_listing {
	pthread_mutex_t lock;        /* a request on it, and its read ahead */
	int waiting;                 /* requests waiting for lock (atomic): the read ahead
				      * gives way */
	struct arf_dirent *ents;     /* fetched, in listing order */
	struct arf_stat *st;         /* their attributes; st[i].ino == 0: none given */
	size_t n, cap;               /* entries held, room */
	size_t pos;                  /* the entry last answered */
	int started;                 /* ents[0] is the first entry after `from` */
	int eof;                     /* ents ends the listing */
	uint64_t from;               /* the cookie the entries held come after */
};

struct arf_fuse_listing *arf_fuse_listing_new(void)
{
	struct arf_fuse_listing *l = calloc(1, sizeof(struct arf_fuse_listing));
	if (l && pthread_mutex_init(&l->lock, NULL)) {
		free(l);
		return NULL;
	}
	return l;
}

void arf_fuse_listing_lock(struct arf_fuse_listing *l)
{
	__atomic_add_fetch(&l->waiting, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&l->lock);
	__atomic_sub_fetch(&l->waiting, 1, __ATOMIC_SEQ_CST);
}

void arf_fuse_listing_unlock(struct arf_fuse_listing *l)
{
	pthread_mutex_unlock(&l->lock);
}

void arf_fuse_listing_free(struct arf_fuse_listing *l)
{
	if (!l)
		return;
	/* releasedir: a worker may still read ahead for the last request */
	arf_fuse_listing_lock(l);
	pthread_mutex_unlock(&l->lock);
	pthread_mutex_destroy(&l->lock);
	free(l->ents);
	free(l->st);
	free(l);
}

void arf_fuse_listing_reset(struct arf_fuse_listing *l)
{
	l->n = 0;
	l->pos = 0;
	l->started = 0;
	l->eof = 0;
}

/* Room for one more batch: 0 or -ENOMEM.  Past LIST_KEEP the older half
 * of what is held is dropped first: *dropped entries, from the front. */
static int make_room(struct arf_fuse_listing *l, size_t *dropped)
{
	*dropped = 0;
	if (l->n + LIST_BATCH > LIST_KEEP && l->n >= 2) {
		size_t drop = l->n / 2;
		*dropped = drop;
		l->from = l->ents[drop - 1].cookie;
		memmove(l->ents, l->ents + drop, (l->n - drop) * sizeof(*l->ents));
		memmove(l->st, l->st + drop, (l->n - drop) * sizeof(*l->st));
		l->n -= drop;
		l->pos = l->pos >= drop ? l->pos - drop : 0;
	}
	if (l->n + LIST_BATCH <= l->cap)
		return 0;
	size_t cap = l->n + LIST_BATCH;
	struct arf_dirent *e = realloc(l->ents, cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	l->ents = e;
	struct arf_stat *s = realloc(l->st, cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	l->st = s;
	l->cap = cap;
	return 0;
}

/* Fetch the next batch, after the last entry held (or after `from`);
 * *dropped: entries make_room let go from the front. */
static int fetch(struct arf_fuse *fs, struct arf_fuse_node *dn, struct arf_fuse_listing *l,
		 size_t *dropped)
{
	size_t got = 0;
	int eof = 0, rc;

	if ((rc = make_room(l, dropped)))
		return rc;
	uint64_t after = l->n ? l->ents[l->n - 1].cookie : l->from;
	rc = arf_readdirplus(arf_fuse_reader(fs, dn), dn->ino, dn->gen, after, l->ents + l->n,
			     l->st + l->n, LIST_BATCH, &got, &eof);
	if (rc)
		return rc;
	l->n += got;
	l->eof = eof || got == 0;
	return 0;
}

/* Index of the entry whose cookie is c, or -1. */
static long find(const struct arf_fuse_listing *l, uint64_t c)
{
	size_t lo = 0, hi = l->n;

	if (l->pos < l->n && l->ents[l->pos].cookie == c)
		return (long)l->pos; /* the usual case: resuming after the last answer */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->ents[mid].cookie < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->n && l->ents[lo].cookie == c ? (long)lo : -1;
}

/* The read ahead's other reason to end a wait: a request wants l. */
static int wanted(void *arg)
{
	struct arf_fuse_listing *l = arg;
	return __atomic_load_n(&l->waiting, __ATOMIC_SEQ_CST) != 0;
}

void arf_fuse_listing_ahead(struct arf_fuse *fs, struct arf_fuse_node *dn,
			    struct arf_fuse_listing *l)
{
	arf_fuse_wait_also(wanted, l);
	/* only once a pass is under way (started), from the answered entry on */
	while (l->started && !l->eof && l->n && l->n - l->pos <= LIST_AHEAD && !wanted(l)) {
		size_t dropped = 0;
		if (fetch(fs, dn, l, &dropped))
			break; /* the next request fetches again, and says the error */
	}
	arf_fuse_wait_also(NULL, NULL);
}

int arf_fuse_listing_next(struct arf_fuse *fs, struct arf_fuse_node *dn,
			  struct arf_fuse_listing *l, uint64_t cookie,
			  const struct arf_dirent **de, const struct arf_stat **st)
{
	size_t idx;
	long at;
	int rc;

	if (l->started && cookie == l->from) {
		idx = 0;
	} else if (l->started && (at = find(l, cookie)) >= 0) {
		idx = (size_t)at + 1;
	} else {
		/* not here: fetch from that cookie on */
		arf_fuse_listing_reset(l);
		l->from = cookie;
		l->started = 1;
		idx = 0;
	}
	while (idx >= l->n) {
		size_t dropped = 0;
		if (l->eof)
			return 1;
		if ((rc = fetch(fs, dn, l, &dropped))) {
			arf_fuse_listing_reset(l); /* fetch afresh next time */
			return rc;
		}
		idx -= dropped; /* idx was past everything held, so past what went */
	}
	l->pos = idx;
	*de = &l->ents[idx];
	/* none given; or a mount point's (ino 0, S_IFDIR): the caller tells */
	*st = l->st[idx].ino || l->st[idx].mode ? &l->st[idx] : NULL;
	return 0;
}

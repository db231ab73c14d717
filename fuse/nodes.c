/* SPDX-License-Identifier: MIT */
/*
 * The node table: FUSE inode numbers <-> ARF file handles (ino, gen).
 *
 * As in libfuse's passthrough_ll, a node's address is its FUSE inode number
 * (the export root is FUSE_ROOT_ID), and a node lives while the kernel holds
 * a lookup reference to it or a file is open on it.  Nodes are also hashed
 * by (ino, gen) so that every name of a file gives the kernel the same
 * inode: the hard-link rule.  A reused ARF slot (same ino, new gen) is a
 * different node, so the kernel never mistakes a new file for an old one;
 * st_ino is the ARF ino and the generation goes in fuse_entry_param.
 * One mutex covers the table and the counts; ino and gen never change.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arf_fuse.h"

#define NBUCKETS_MIN 4096

/* Fibonacci hashing: the product's top bits, as many as the table has
 * (nbuckets is a power of two).  Bits from the middle of the product
 * spread consecutive inode numbers over a fraction of a large table (40,000
 * of them over 11,669 of 16,384 buckets, chains of up to 5), and
 * the walk of a listing's 6,500 references was 8% of arf-fuse's CPU. */
static size_t bucket(const struct arf_fuse *fs, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> (64 - __builtin_ctzll(fs->nbuckets)));
}

static uint64_t nodeid_of(struct arf_fuse *fs, struct arf_fuse_node *n)
{
	return n == &fs->root ? FUSE_ROOT_ID : (uint64_t)(uintptr_t)n;
}

int arf_fuse_nodes_init(struct arf_fuse *fs, const struct arf_stat *root)
{
	fs->nbuckets = NBUCKETS_MIN;
	fs->table = calloc(fs->nbuckets, sizeof(*fs->table));
	if (!fs->table)
		return -ENOMEM;
	memset(&fs->root, 0, sizeof(fs->root));
	fs->root.ino = root->ino;
	fs->root.gen = root->gen;
	fs->root.nlookup = 1; /* the kernel's, never forgotten */
	fs->root.next = NULL;
	fs->table[bucket(fs, root->ino)] = &fs->root;
	fs->nnodes = 1;
	return pthread_mutex_init(&fs->lock, NULL) ? -ENOMEM : 0;
}

void arf_fuse_nodes_fini(struct arf_fuse *fs)
{
	if (!fs->table)
		return;
	for (size_t i = 0; i < fs->nbuckets; i++) {
		struct arf_fuse_node *n = fs->table[i], *next;
		for (; n; n = next) {
			next = n->next;
			free(n->hidden);
			if (n != &fs->root)
				free(n);
		}
	}
	free(fs->table);
	fs->table = NULL;
	pthread_mutex_destroy(&fs->lock);
}

struct arf_fuse_node *arf_fuse_node(struct arf_fuse *fs, uint64_t nodeid)
{
	if (nodeid == FUSE_ROOT_ID)
		return &fs->root;
	return (struct arf_fuse_node *)(uintptr_t)nodeid;
}

/* Double the buckets when chains grow long (under fs->lock). */
static void grow(struct arf_fuse *fs)
{
	size_t old = fs->nbuckets;
	struct arf_fuse_node **ot = fs->table, **nt = calloc(old * 2, sizeof(*nt));

	if (!nt)
		return; /* longer chains, still correct */
	fs->table = nt;
	fs->nbuckets = old * 2;
	for (size_t i = 0; i < old; i++) {
		struct arf_fuse_node *n = ot[i], *next;
		for (; n; n = next) {
			next = n->next;
			size_t b = bucket(fs, n->ino);
			n->next = nt[b];
			nt[b] = n;
		}
	}
	free(ot);
}

static struct arf_fuse_node *find_locked(struct arf_fuse *fs, uint64_t ino, uint32_t gen)
{
	struct arf_fuse_node *n = fs->table[bucket(fs, ino)];
	while (n && (n->ino != ino || n->gen != gen))
		n = n->next;
	return n;
}

uint64_t arf_fuse_node_ref(struct arf_fuse *fs, uint64_t ino, uint32_t gen)
{
	uint64_t id = 0;

	pthread_mutex_lock(&fs->lock);
	struct arf_fuse_node *n = find_locked(fs, ino, gen);
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n)
			goto out;
		n->ino = ino;
		n->gen = gen;
		n->seen_mtime_ns = INT64_MIN;
		size_t b = bucket(fs, ino);
		n->next = fs->table[b];
		fs->table[b] = n;
		if (++fs->nnodes > fs->nbuckets)
			grow(fs);
	}
	n->nlookup++;
	id = nodeid_of(fs, n);
out:
	pthread_mutex_unlock(&fs->lock);
	return id;
}

/* Unhash and free n if nothing holds it (under fs->lock). */
static void maybe_free(struct arf_fuse *fs, struct arf_fuse_node *n)
{
	if (n == &fs->root || n->nlookup || n->nopen)
		return;
	struct arf_fuse_node **pp = &fs->table[bucket(fs, n->ino)];
	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (*pp)
		*pp = n->next;
	fs->nnodes--;
	free(n->hidden);
	free(n);
}

void arf_fuse_node_forget(struct arf_fuse *fs, uint64_t nodeid, uint64_t nlookup)
{
	struct arf_fuse_node *n = arf_fuse_node(fs, nodeid);

	pthread_mutex_lock(&fs->lock);
	n->nlookup = nlookup > n->nlookup ? 0 : n->nlookup - nlookup;
	maybe_free(fs, n);
	pthread_mutex_unlock(&fs->lock);
}

struct arf_fuse_node *arf_fuse_node_find(struct arf_fuse *fs, uint64_t ino, uint32_t gen,
					 uint32_t *nopen)
{
	pthread_mutex_lock(&fs->lock);
	struct arf_fuse_node *n = find_locked(fs, ino, gen);
	*nopen = n ? n->nopen : 0;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

void arf_fuse_node_open(struct arf_fuse *fs, struct arf_fuse_node *n)
{
	pthread_mutex_lock(&fs->lock);
	n->nopen++;
	fs->open_files++;
	pthread_mutex_unlock(&fs->lock);
}

char *arf_fuse_node_close(struct arf_fuse *fs, struct arf_fuse_node *n, uint64_t *hdir,
			  uint32_t *hgen, struct arf_cred *hcred)
{
	char *name = NULL;

	pthread_mutex_lock(&fs->lock);
	if (n->nopen)
		n->nopen--;
	if (fs->open_files)
		fs->open_files--;
	if (!n->nopen && n->hidden) {
		name = n->hidden;
		*hdir = n->hdir;
		*hgen = n->hgen;
		*hcred = n->hcred;
		n->hidden = NULL;
	}
	maybe_free(fs, n);
	pthread_mutex_unlock(&fs->lock);
	return name;
}

int arf_fuse_node_hide(struct arf_fuse *fs, uint64_t ino, uint32_t gen, char *name, uint64_t dir,
		       uint32_t dgen, const struct arf_cred *cred)
{
	char *old = NULL;
	int rc = -ENOENT;

	pthread_mutex_lock(&fs->lock);
	struct arf_fuse_node *n = find_locked(fs, ino, gen);
	if (n && n->nopen) {
		old = n->hidden; /* someone removed the hidden name itself: it is gone */
		n->hidden = name;
		n->hdir = dir;
		n->hgen = dgen;
		n->hcred = *cred;
		rc = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	free(old);
	return rc;
}

void arf_fuse_node_hidden_each(struct arf_fuse *fs,
			       void (*fn)(struct arf_fuse *fs, struct arf_fuse_node *n))
{
	pthread_mutex_lock(&fs->lock);
	for (size_t i = 0; i < fs->nbuckets; i++)
		for (struct arf_fuse_node *n = fs->table[i]; n; n = n->next)
			if (n->hidden)
				fn(fs, n);
	pthread_mutex_unlock(&fs->lock);
}

void arf_fuse_node_seen(struct arf_fuse *fs, struct arf_fuse_node *n, const struct arf_stat *st)
{
	pthread_mutex_lock(&fs->lock);
	/* a change of ctime alone (not a write, which moves mtime too) may be
	 * an ACL set elsewhere */
	int changed = n->seen_ctime_ns && n->seen_ctime_ns != st->ctime_ns &&
		      n->seen_mtime_ns == st->mtime_ns;
	n->seen_mtime_ns = st->mtime_ns;
	n->seen_size = st->size;
	n->seen_ctime_ns = st->ctime_ns;
	pthread_mutex_unlock(&fs->lock);
	if (changed) /* perhaps an ACL another client set: the kernel's copy goes */
		arf_fuse_acl_changed(fs, n);
}

arf_client *arf_fuse_reader(struct arf_fuse *fs, struct arf_fuse_node *n)
{
	uint64_t until = __atomic_load_n(&n->fresh_until_ms, __ATOMIC_RELAXED);
	if (until && arf_fuse_now_ms() < until)
		return fs->cf;
	return fs->c;
}

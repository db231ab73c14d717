/* SPDX-License-Identifier: MIT */
/*
 * common/arf_spin.h — adaptive spinning, the one rule every waiter of ARF
 * uses (libarf's reply wait, the soft-NIC's epoll loop, arfd's workers):
 * spin up to cur_us (at most max_us) before sleeping.  A wait that was
 * served while spinning restores the full spin; a spin that caught nothing
 * halves the next one, down to none; with none, one wait in ARF_SPIN_PROBE
 * spins in full again, to see whether the work got quicker.
 *
 * Why: on a machine whose cores are all busy (the 2-core VM that runs the
 * benchmarks: fio, arf-fuse and arfd share it), a 50 us spin that never
 * catches anything (a client waiting for a 4 KiB write that costs arfd
 * ~100 us, an arfd waiting for the next request of a client at queue depth
 * 1) takes that CPU from the process that would have answered.  Quick
 * exchanges (one-sided reads, ~20 us) keep their spin.
 *
 * Header-only; fields are read and written with relaxed atomics by the one
 * waiter at a time that spins: a race costs a spin, nothing else.
 */
#ifndef ARF_SPIN_H
#define ARF_SPIN_H

#include <stdint.h>

#define ARF_SPIN_PROBE 16u

struct arf_spin {
	uint32_t max_us;
	uint32_t cur_us;
	uint32_t waits;            /* since cur_us reached 0 */
};

static inline void arf_spin_init(struct arf_spin *s, uint32_t max_us)
{
	s->max_us = s->cur_us = max_us;
	s->waits = 0;
}

/* How long this wait spins. */
static inline uint32_t arf_spin_budget(struct arf_spin *s)
{
	uint32_t spin = __atomic_load_n(&s->cur_us, __ATOMIC_RELAXED);

	if (!spin && s->max_us &&
	    __atomic_add_fetch(&s->waits, 1, __ATOMIC_RELAXED) % ARF_SPIN_PROBE == 0)
		spin = s->max_us;
	return spin;
}

/* A spin of spin_us ended: caught (served while spinning) or not. */
static inline void arf_spin_done(struct arf_spin *s, uint32_t spin_us, int caught)
{
	if (caught)
		__atomic_store_n(&s->cur_us, s->max_us, __ATOMIC_RELAXED);
	else if (spin_us)
		__atomic_store_n(&s->cur_us, spin_us / 2 >= 2 ? spin_us / 2 : 0, __ATOMIC_RELAXED);
}

#endif

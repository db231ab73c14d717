/* SPDX-License-Identifier: MIT */
/*
 * failthread — an LD_PRELOAD shim that makes one of arfd's own thread
 * creations fail, for tests/integration/test_failpaths.py.
 *
 * ARF_TEST_FAIL_THREAD=N: the Nth pthread_create whose start routine lies
 * in the main program (arfd's workers, committer, soft-NIC, control
 * thread; never a library's own threads, such as RocksDB's) fails with
 * EAGAIN, as it does when a container's pids.max is reached.  Like glibc,
 * which stores the new thread's descriptor before the clone that fails and
 * frees it after, it leaves a value in *thread that must not be joined:
 * here one that crashes the process if it is.  It says on standard error
 * which creation it failed, and nothing else.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

struct where {
	uintptr_t addr;
	int in_main;
};

/* The main program is the first object dl_iterate_phdr reports. */
static int find(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct where *w = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && w->addr >= lo && w->addr < lo + ph->p_memsz)
			w->in_main = 1;
	}
	return 1; /* only the first */
}

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	static unsigned long count;
	create_fn real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
	const char *env = getenv("ARF_TEST_FAIL_THREAD");
	struct where w = { (uintptr_t)fn, 0 };

	if (env && *env) {
		dl_iterate_phdr(find, &w);
		if (w.in_main) {
			unsigned long n = __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED);
			if (n == strtoul(env, NULL, 10)) {
				fprintf(stderr, "failthread: failing thread creation %lu\n", n);
				*t = (pthread_t)(uintptr_t)0x10; /* joining it crashes */
				return EAGAIN;
			}
		}
	}
	return real(t, a, fn, arg);
}

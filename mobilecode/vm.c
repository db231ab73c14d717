/* SPDX-License-Identifier: MIT */
/*
 * The execution context: the region table that turns a program's addresses
 * into host pointers (and the JIT's copy of it, jit.c, kept in step with
 * every change), the stack, the lent output buffer.  Also the two
 * services helpers use while a program runs: address translation (the same
 * check the interpreter makes for its own loads and stores) and appending
 * output.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mc_int.h"

int arf_mc_vm_create(const struct arf_mc_helpers *h, struct arf_mc_vm **out)
{
	struct arf_mc_vm *vm = calloc(1, sizeof(*vm));

	*out = NULL;
	if (!vm)
		return -ENOMEM;
	vm->helpers = h;
	vm->stack_low = sizeof(vm->stack); /* calloc: all zero */
	vm->base[ARF_MC_REGION_STACK] = vm->stack;
	vm->rsize[ARF_MC_REGION_STACK] = sizeof(vm->stack);
	vm->wsize[ARF_MC_REGION_STACK] = sizeof(vm->stack);
	for (unsigned k = 0; k < MC_NREGIONS; k++)
		mc_jit_region_sync(vm, k);
	*out = vm;
	return 0;
}

void arf_mc_vm_destroy(struct arf_mc_vm *vm)
{
	free(vm);
}

int arf_mc_vm_add_region(struct arf_mc_vm *vm, const void *base, uint64_t size, unsigned flags,
			 uint64_t *addr)
{
	unsigned k;

	if (!vm || (!base && size) || size > ARF_MC_OFF_MASK || (flags & ~ARF_MC_REGION_WRITE))
		return -EINVAL;
	if (vm->nuser >= ARF_MC_MAX_USER_REGIONS)
		return -ENOSPC;
	k = ARF_MC_REGION_USER + vm->nuser++;
	/* The region table only ever stores through writable regions. */
	vm->base[k] = (uint8_t *)(uintptr_t)base;
	vm->rsize[k] = size;
	vm->wsize[k] = (flags & ARF_MC_REGION_WRITE) ? size : 0;
	mc_jit_region_sync(vm, k);
	if (addr)
		*addr = ARF_MC_ADDR(k, 0);
	return 0;
}

void arf_mc_vm_clear_regions(struct arf_mc_vm *vm)
{
	for (unsigned k = ARF_MC_REGION_USER; k < MC_NREGIONS; k++) {
		vm->base[k] = NULL;
		vm->rsize[k] = 0;
		vm->wsize[k] = 0;
		vm->rname[k] = NULL;
		mc_jit_region_sync(vm, k);
	}
	vm->nuser = 0;
}

void arf_mc_vm_set_output(struct arf_mc_vm *vm, void *buf, size_t cap)
{
	if (!buf)
		cap = 0;
	if (cap > ARF_MC_OFF_MASK)
		cap = ARF_MC_OFF_MASK;
	vm->out = buf;
	vm->out_cap = cap;
	vm->base[ARF_MC_REGION_OUT] = buf;
	vm->rsize[ARF_MC_REGION_OUT] = cap;
	vm->wsize[ARF_MC_REGION_OUT] = cap;
	mc_jit_region_sync(vm, ARF_MC_REGION_OUT);
}

void arf_mc_vm_set_user(struct arf_mc_vm *vm, void *user)
{
	vm->user = user;
}

void arf_mc_vm_name_region(struct arf_mc_vm *vm, uint64_t addr, const char *name)
{
	uint64_t k = addr >> ARF_MC_ADDR_SHIFT;

	if (k >= ARF_MC_REGION_USER && k < MC_NREGIONS)
		vm->rname[k] = name;
}

void arf_mc_vm_set_deadline(struct arf_mc_vm *vm, uint64_t deadline_ns)
{
	vm->deadline_ns = deadline_ns;
}

void arf_mc_vm_set_abort(struct arf_mc_vm *vm, const int *flag)
{
	vm->abort_flag = flag;
}

void *arf_mc_vm_translate(struct arf_mc_vm *vm, uint64_t addr, uint64_t len, int write)
{
	static uint8_t empty[1];
	uint64_t k = addr >> ARF_MC_ADDR_SHIFT, off = addr & ARF_MC_OFF_MASK;

	if (k >= MC_NREGIONS || !arf_range_ok(off, len, write ? vm->wsize[k] : vm->rsize[k]))
		return NULL;
	if (len == 0)
		return empty; /* never dereferenced; keeps memcpy & co. off NULL */
	if (write)
		mc_stack_touch(vm, addr);
	return vm->base[k] + off;
}

int arf_mc_vm_emit(struct arf_mc_vm *vm, const void *data, size_t len)
{
	if (!arf_range_ok(vm->out_len, len, vm->out_cap))
		return ARF_EOUTPUT;
	if (len)
		memmove(vm->out + vm->out_len, data, len);
	vm->out_len += len;
	return 0;
}

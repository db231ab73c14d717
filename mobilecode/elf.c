/* SPDX-License-Identifier: MIT */
/*
 * The ELF loader: turns a relocatable object from `clang -O2 -target bpf`
 * into code and read-only data, the way libbpf would for a program without
 * maps.  Executable sections are laid end to end in section order; every
 * other allocated section (.rodata*, .data*, .bss*, ...) goes, 8-aligned,
 * into the program's read-only data region.  Relocations applied:
 *
 *   R_BPF_64_64    in code: lddw of a data symbol's address, which becomes
 *                  ARF_MC_ADDR(ARF_MC_REGION_RODATA, offset);
 *   R_BPF_64_32    in code: a local call to a function of another section
 *                  (calls inside a section need none);
 *   R_BPF_64_ABS64 in data: a pointer to data (tables of strings).
 *
 * Anything else that would change the program's meaning (undefined symbols,
 * addresses of functions, 32-bit absolute pointers) is refused with a
 * message naming it; relocations of sections that are not loaded (debug
 * information, BTF) are ignored.  The object is copied before libelf sees it,
 * so the caller's bytes are never touched.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "mc_int.h"

#ifndef EM_BPF
#define EM_BPF 247
#endif
#define R_BPF_NONE       0
#define R_BPF_64_64      1
#define R_BPF_64_ABS64   2
#define R_BPF_64_ABS32   3
#define R_BPF_64_NODYLD32 4
#define R_BPF_64_32      10

#define NO_PLACE SIZE_MAX

struct eload {
	Elf *e;
	size_t nsec;
	size_t *code_base;   /* per section: first instruction, or NO_PLACE */
	size_t *data_off;    /* per section: offset in rodata, or NO_PLACE */
	Elf_Data *symtab;
	size_t symstr;       /* string table of the symbols */
	size_t shstr;        /* string table of the section names */
	struct arf_mc_image *img;
	char *err;
	size_t errlen;
};

static const char *sec_name(struct eload *l, size_t idx)
{
	Elf_Scn *scn = elf_getscn(l->e, idx);
	GElf_Shdr sh;
	const char *name;

	if (!scn || !gelf_getshdr(scn, &sh))
		return "?";
	name = elf_strptr(l->e, l->shstr, sh.sh_name);
	return name ? name : "?";
}

static int get_sym(struct eload *l, size_t idx, GElf_Sym *sym, const char **name)
{
	const char *s;

	if (!l->symtab || !gelf_getsym(l->symtab, (int)idx, sym))
		return mc_errf(l->err, l->errlen, -EINVAL, "relocation names symbol %zu, not in the symbol table", idx);
	s = elf_strptr(l->e, l->symstr, sym->st_name);
	*name = s && *s ? s : GELF_ST_TYPE(sym->st_info) == STT_SECTION
		? sec_name(l, sym->st_shndx) : "?";
	return 0;
}

/* Pass 1: find code, data and symbols; lay them out; copy their bytes. */
static int layout(struct eload *l)
{
	Elf_Scn *scn = NULL;
	size_t ninsn = 0, rolen = 0;

	while ((scn = elf_nextscn(l->e, scn))) {
		size_t idx = elf_ndxscn(scn);
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return mc_errf(l->err, l->errlen, -EINVAL, "bad section header %zu", idx);
		if (sh.sh_type == SHT_SYMTAB) {
			l->symtab = elf_getdata(scn, NULL);
			l->symstr = sh.sh_link;
			continue;
		}
		if (!(sh.sh_flags & SHF_ALLOC) || sh.sh_size == 0 ||
		    (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_NOBITS))
			continue;
		/* libelf gives no data (not an error we would see) for contents
		 * past the end of the object: refuse them here, before sizing
		 * the image by them. */
		size_t objlen = 0;
		if (sh.sh_type == SHT_PROGBITS &&
		    (!elf_rawfile(l->e, &objlen) || !arf_range_ok(sh.sh_offset, sh.sh_size, objlen)))
			return mc_errf(l->err, l->errlen, -EINVAL,
				       "section %s: contents past the end of the object",
				       sec_name(l, idx));
		if (sh.sh_flags & SHF_EXECINSTR) {
			if (sh.sh_size % sizeof(struct arf_mc_insn) || sh.sh_type != SHT_PROGBITS)
				return mc_errf(l->err, l->errlen, -EINVAL,
					       "section %s: size %llu is not a whole number of instructions",
					       sec_name(l, idx), (unsigned long long)sh.sh_size);
			l->code_base[idx] = ninsn;
			ninsn += sh.sh_size / sizeof(struct arf_mc_insn);
			if (ninsn > ARF_MC_MAX_INSNS)
				return mc_errf(l->err, l->errlen, ARF_EVERIFY,
					       "more than %u instructions", ARF_MC_MAX_INSNS);
		} else {
			rolen = (rolen + 7) & ~(size_t)7;
			l->data_off[idx] = rolen;
			if (sh.sh_size > (1u << 30) - rolen)
				return mc_errf(l->err, l->errlen, -EINVAL, "data sections too large");
			rolen += sh.sh_size;
		}
	}
	if (ninsn == 0)
		return mc_errf(l->err, l->errlen, -EINVAL, "no executable section");
	l->img->n = ninsn;
	l->img->insns = calloc(ninsn, sizeof(struct arf_mc_insn));
	l->img->rodata_len = rolen;
	l->img->rodata = rolen ? calloc(1, rolen) : NULL;
	if (!l->img->insns || (rolen && !l->img->rodata))
		return mc_errf(l->err, l->errlen, -ENOMEM, "out of memory");

	for (size_t idx = 1; idx < l->nsec; idx++) {
		Elf_Scn *s = elf_getscn(l->e, idx);
		Elf_Data *d = NULL;
		uint8_t *dst;
		size_t at = 0;
		GElf_Shdr sh;

		if (l->code_base[idx] == NO_PLACE && l->data_off[idx] == NO_PLACE)
			continue;
		if (!s || !gelf_getshdr(s, &sh))
			return mc_errf(l->err, l->errlen, -EINVAL, "bad section %zu", idx);
		if (sh.sh_type == SHT_NOBITS)
			continue; /* .bss: zeros already */
		dst = l->code_base[idx] != NO_PLACE
			? (uint8_t *)(l->img->insns + l->code_base[idx])
			: l->img->rodata + l->data_off[idx];
		while ((d = elf_getdata(s, d))) {
			if (!d->d_buf || d->d_size > sh.sh_size - at)
				return mc_errf(l->err, l->errlen, -EINVAL, "section %s: bad contents",
					       sec_name(l, idx));
			memcpy(dst + at, d->d_buf, d->d_size);
			at += d->d_size;
		}
		if (at != sh.sh_size) /* libelf could not give all of it */
			return mc_errf(l->err, l->errlen, -EINVAL, "section %s: bad contents",
				       sec_name(l, idx));
	}
	return 0;
}

/* Offset in rodata of a data symbol plus addend, or an error. */
static int data_addr(struct eload *l, const GElf_Sym *sym, const char *name, int64_t addend,
		     uint64_t *out)
{
	uint64_t off;

	if (sym->st_shndx == SHN_UNDEF)
		return mc_errf(l->err, l->errlen, -EINVAL, "unresolved symbol %s", name);
	if (sym->st_shndx >= l->nsec || l->data_off[sym->st_shndx] == NO_PLACE) {
		if (sym->st_shndx < l->nsec && l->code_base[sym->st_shndx] != NO_PLACE)
			return mc_errf(l->err, l->errlen, -EINVAL,
				       "address of function %s taken (unsupported)", name);
		return mc_errf(l->err, l->errlen, -EINVAL, "symbol %s is in no loaded section",
			       name);
	}
	off = l->data_off[sym->st_shndx] + sym->st_value + (uint64_t)addend;
	if (off > l->img->rodata_len)
		return mc_errf(l->err, l->errlen, -EINVAL, "symbol %s%+lld lies outside its data",
			       name, (long long)addend);
	*out = ARF_MC_ADDR(ARF_MC_REGION_RODATA, off);
	return 0;
}

static int reloc_code(struct eload *l, size_t sec, const GElf_Rel *r)
{
	struct arf_mc_image *img = l->img;
	Elf_Scn *scn = elf_getscn(l->e, sec);
	GElf_Shdr sh;
	GElf_Sym sym;
	const char *name;
	size_t i;
	int rc;

	if (!scn || !gelf_getshdr(scn, &sh) || r->r_offset % sizeof(struct arf_mc_insn) ||
	    !arf_range_ok(r->r_offset, sizeof(struct arf_mc_insn), sh.sh_size))
		return mc_errf(l->err, l->errlen, -EINVAL, "section %s: relocation at bad offset %llu",
			       sec_name(l, sec), (unsigned long long)r->r_offset);
	i = l->code_base[sec] + r->r_offset / sizeof(struct arf_mc_insn);
	rc = get_sym(l, GELF_R_SYM(r->r_info), &sym, &name);
	if (rc)
		return rc;
	switch (GELF_R_TYPE(r->r_info)) {
	case R_BPF_NONE:
		return 0;
	case R_BPF_64_64: {
		struct arf_mc_insn *in = &img->insns[i];
		uint64_t addr;
		int64_t addend;

		if (in->opcode != MC_OP_LDDW || !arf_range_ok(r->r_offset, 16, sh.sh_size))
			return mc_errf(l->err, l->errlen, -EINVAL,
				       "instruction %zu: R_BPF_64_64 (%s) on an instruction that is not lddw",
				       i, name);
		addend = (int64_t)((uint64_t)(uint32_t)in[0].imm | (uint64_t)(uint32_t)in[1].imm << 32);
		rc = data_addr(l, &sym, name, addend, &addr);
		if (rc)
			return rc;
		in[0].imm = (int32_t)(uint32_t)addr;
		in[1].imm = (int32_t)(uint32_t)(addr >> 32);
		return 0;
	}
	case R_BPF_64_32: {
		struct arf_mc_insn *in = &img->insns[i];
		int64_t target;

		if (in->opcode != MC_OP_CALL || in->src != MC_CALL_LOCAL)
			return mc_errf(l->err, l->errlen, -EINVAL,
				       "instruction %zu: call of %s, which is not a local function", i, name);
		if (sym.st_shndx >= l->nsec || l->code_base[sym.st_shndx] == NO_PLACE ||
		    sym.st_value % sizeof(struct arf_mc_insn))
			return mc_errf(l->err, l->errlen, -EINVAL,
				       "instruction %zu: call of %s, which is not in a loaded code section",
				       i, name);
		target = (int64_t)(l->code_base[sym.st_shndx] + sym.st_value / sizeof(*in)) +
			 in->imm + 1;
		if (target < 0 || (uint64_t)target >= img->n)
			return mc_errf(l->err, l->errlen, -EINVAL,
				       "instruction %zu: call of %s lands outside the code", i, name);
		in->imm = (int32_t)(target - (int64_t)i - 1);
		return 0;
	}
	default:
		return mc_errf(l->err, l->errlen, -EINVAL,
			       "instruction %zu: unsupported relocation type %llu (%s)", i,
			       (unsigned long long)GELF_R_TYPE(r->r_info), name);
	}
}

static int reloc_data(struct eload *l, size_t sec, const GElf_Rel *r)
{
	Elf_Scn *scn = elf_getscn(l->e, sec);
	GElf_Shdr sh;
	GElf_Sym sym;
	const char *name;
	uint64_t addr;
	int64_t addend;
	uint8_t *at;
	int rc;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
	    !arf_range_ok(r->r_offset, 8, sh.sh_size))
		return mc_errf(l->err, l->errlen, -EINVAL, "section %s: relocation at bad offset %llu",
			       sec_name(l, sec), (unsigned long long)r->r_offset);
	rc = get_sym(l, GELF_R_SYM(r->r_info), &sym, &name);
	if (rc)
		return rc;
	if (GELF_R_TYPE(r->r_info) == R_BPF_NONE)
		return 0;
	if (GELF_R_TYPE(r->r_info) != R_BPF_64_ABS64)
		return mc_errf(l->err, l->errlen, -EINVAL,
			       "section %s: unsupported relocation type %llu (%s)", sec_name(l, sec),
			       (unsigned long long)GELF_R_TYPE(r->r_info), name);
	at = l->img->rodata + l->data_off[sec] + r->r_offset;
	memcpy(&addend, at, 8);
	rc = data_addr(l, &sym, name, addend, &addr);
	if (rc)
		return rc;
	memcpy(at, &addr, 8);
	return 0;
}

/* Pass 2: apply the relocations of every loaded section. */
static int relocate(struct eload *l)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(l->e, scn))) {
		Elf_Data *d;
		GElf_Shdr sh;
		size_t target, nrel;
		int rc;

		if (!gelf_getshdr(scn, &sh))
			return mc_errf(l->err, l->errlen, -EINVAL, "bad section header");
		if (sh.sh_type != SHT_REL && sh.sh_type != SHT_RELA)
			continue;
		target = sh.sh_info;
		if (target >= l->nsec ||
		    (l->code_base[target] == NO_PLACE && l->data_off[target] == NO_PLACE))
			continue; /* debug information, BTF: not loaded */
		if (sh.sh_type == SHT_RELA)
			return mc_errf(l->err, l->errlen, -EINVAL,
				       "section %s: RELA relocations are not used by BPF objects",
				       sec_name(l, elf_ndxscn(scn)));
		d = elf_getdata(scn, NULL);
		nrel = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t k = 0; d && k < nrel; k++) {
			GElf_Rel r;

			if (!gelf_getrel(d, (int)k, &r))
				return mc_errf(l->err, l->errlen, -EINVAL, "section %s: bad relocation %zu",
					       sec_name(l, elf_ndxscn(scn)), k);
			rc = l->code_base[target] != NO_PLACE ? reloc_code(l, target, &r)
							       : reloc_data(l, target, &r);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Pass 3: where the program starts. */
static int find_entry(struct eload *l, const char *entry)
{
	size_t nsym = l->symtab ? l->symtab->d_size / sizeof(Elf64_Sym) : 0;
	size_t found = 0, at = 0;

	for (size_t k = 1; k < nsym; k++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(l->symtab, (int)k, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_shndx >= l->nsec || l->code_base[sym.st_shndx] == NO_PLACE)
			continue;
		name = elf_strptr(l->e, l->symstr, sym.st_name);
		if (entry ? !(name && strcmp(name, entry) == 0)
			  : GELF_ST_BIND(sym.st_info) != STB_GLOBAL)
			continue;
		found++;
		at = l->code_base[sym.st_shndx] + sym.st_value / sizeof(struct arf_mc_insn);
		if (entry)
			break;
	}
	if (entry && !found) {
		for (size_t idx = 1; idx < l->nsec; idx++) {
			if (l->code_base[idx] != NO_PLACE && strcmp(sec_name(l, idx), entry) == 0) {
				found = 1;
				at = l->code_base[idx];
				break;
			}
		}
		if (!found)
			return mc_errf(l->err, l->errlen, -EINVAL, "no function or section named %s",
				       entry);
	}
	if (found == 1 && at >= l->img->n)
		return mc_errf(l->err, l->errlen, -EINVAL, "entry function lies outside the code");
	l->img->entry = found == 1 ? at : 0;
	return 0;
}

int arf_mc_elf_read(const void *elf, size_t len, const char *entry, struct arf_mc_image *img,
		    char *err, size_t errlen)
{
	struct eload l = { .img = img, .err = err, .errlen = errlen };
	char *copy = NULL;
	GElf_Ehdr eh;
	int rc;

	memset(img, 0, sizeof(*img));
	if (err && errlen)
		err[0] = '\0';
	if (!elf || len == 0)
		return mc_errf(err, errlen, -EINVAL, "empty ELF object");
	if (elf_version(EV_CURRENT) == EV_NONE)
		return mc_errf(err, errlen, -EINVAL, "libelf: %s", elf_errmsg(-1));
	copy = malloc(len);
	if (!copy)
		return mc_errf(err, errlen, -ENOMEM, "out of memory");
	memcpy(copy, elf, len);
	l.e = elf_memory(copy, len);
	if (!l.e || elf_kind(l.e) != ELF_K_ELF || !gelf_getehdr(l.e, &eh)) {
		rc = mc_errf(err, errlen, -EINVAL, "not an ELF object");
		goto out;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_BPF || eh.e_type != ET_REL) {
		rc = mc_errf(err, errlen, -EINVAL,
			     "not a little-endian 64-bit BPF relocatable object (clang -target bpf -c)");
		goto out;
	}
	if (elf_getshdrnum(l.e, &l.nsec) || elf_getshdrstrndx(l.e, &l.shstr)) {
		rc = mc_errf(err, errlen, -EINVAL, "bad section table: %s", elf_errmsg(-1));
		goto out;
	}
	l.code_base = malloc(l.nsec * sizeof(size_t));
	l.data_off = malloc(l.nsec * sizeof(size_t));
	if (!l.code_base || !l.data_off) {
		rc = mc_errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < l.nsec; i++)
		l.code_base[i] = l.data_off[i] = NO_PLACE;
	rc = layout(&l);
	if (!rc)
		rc = relocate(&l);
	if (!rc)
		rc = find_entry(&l, entry);
out:
	if (rc)
		arf_mc_image_release(img);
	free(l.data_off);
	free(l.code_base);
	if (l.e)
		elf_end(l.e);
	free(copy);
	return rc;
}

void arf_mc_image_release(struct arf_mc_image *img)
{
	if (!img)
		return;
	free(img->insns);
	free(img->rodata);
	memset(img, 0, sizeof(*img));
}

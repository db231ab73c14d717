/* SPDX-License-Identifier: MIT */
/*
 * common/ — the few definitions every module shares: ARF's own error codes
 * (a reserved negative range below the -errno values) and the one
 * overflow-safe range check used by the VM, the soft-NIC and the region
 * table alike.  Header-only, so that depending on it links nothing.
 */
#ifndef ARF_COMMON_H
#define ARF_COMMON_H

#include <stdint.h>

/* 0 on success, -errno on failure everywhere; ARF's own failures below. */
enum arf_err {
	ARF_ETORN     = -1000, /* odd version: object is being written */
	ARF_ECSUM     = -1001, /* checksum mismatch: torn or corrupt copy */
	ARF_ETAG      = -1002, /* data block tag does not match the expected owner */
	ARF_EVERIFY   = -1003, /* mobile code rejected by the verifier */
	ARF_EBUDGET   = -1004, /* mobile code ran out of instructions */
	ARF_EFAULT    = -1005, /* mobile code accessed memory out of bounds */
	ARF_EPROTO    = -1006, /* malformed message from a peer */
	ARF_EVERSION  = -1007, /* protocol or format version mismatch */
	ARF_ERETRY    = -1008, /* bounded retries exhausted */
	ARF_ENOPROG   = -1009, /* program hash unknown to the server (reload it) */
	ARF_EOUTPUT   = -1010, /* mobile code output limit exceeded */
	ARF_EAUTH     = -1011, /* authentication or access refused */
	ARF_ERESTART  = -1012, /* server restarted (incarnation changed) */
	ARF_EKEY      = -1013, /* one-sided access refused: bad region, key, bounds or rights */
	ARF_ERR_MIN   = -1013,
	ARF_ERR_MAX   = -1000,
};

/* True if [off, off+len) lies within [0, limit), without overflow. */
static inline int arf_range_ok(uint64_t off, uint64_t len, uint64_t limit)
{
	return !(len > limit || off > limit - len);
}

/* Text for ARF's own codes, NULL for anything else (header-only helper). */
static inline const char *arf_err_text(int err)
{
	switch (err) {
	case ARF_ETORN: return "object is being written (torn read)";
	case ARF_ECSUM: return "checksum mismatch";
	case ARF_ETAG: return "data block tag mismatch";
	case ARF_EVERIFY: return "program rejected by the verifier";
	case ARF_EBUDGET: return "program instruction budget exhausted";
	case ARF_EFAULT: return "program memory access out of bounds";
	case ARF_EPROTO: return "protocol error";
	case ARF_EVERSION: return "version mismatch";
	case ARF_ERETRY: return "retries exhausted";
	case ARF_ENOPROG: return "unknown program";
	case ARF_EOUTPUT: return "program output limit exceeded";
	case ARF_EAUTH: return "access refused";
	case ARF_ERESTART: return "server restarted";
	case ARF_EKEY: return "one-sided access refused (region, key, bounds or rights)";
	default: return 0;
	}
}

#endif /* ARF_COMMON_H */

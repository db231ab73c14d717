/* SPDX-License-Identifier: MIT */
/*
 * libarf's texts: arf_strerror() for errno values and ARF's own codes
 * alike, and the names of the counters' buckets (fallback reasons, exec
 * reasons, request kinds) that tools print beside the numbers.  Tables
 * only: nothing here touches a connection.
 */
#include <string.h>

#include "client_int.h"

const char *arf_strerror(int err)
{
	const char *t = arf_err_text(err);
	if (t)
		return t;
	if (err < 0)
		return strerror(-err);
	return err == 0 ? "success" : "unknown error";
}

static const char *const fallback_names[ARF_FALLBACK_NREASONS] = { "torn", "hops", "tag",
								   "policy" };
static const char *const exec_names[ARF_EXEC_NREASONS] = { "user", "hops", "path", "readdir" };

const char *arf_fallback_reason_name(int reason)
{
	return reason >= 0 && reason < ARF_FALLBACK_NREASONS ? fallback_names[reason] : "unknown";
}

const char *arf_exec_reason_name(int reason)
{
	return reason >= 0 && reason < ARF_EXEC_NREASONS ? exec_names[reason] : "unknown";
}

/* The one list of request kinds is net/proto.c's; libarf counts its first
 * ARF_NKINDS - 1, the rest as "other" (arf_kind_slot). */
const char *arf_request_kind_name(int i)
{
	if (i == ARF_NKINDS - 1)
		return "other";
	return i >= 0 && i < ARF_NKINDS ? arf_proto_kind_name(i) : "unknown";
}

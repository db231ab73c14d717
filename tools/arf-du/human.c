/* SPDX-License-Identifier: MIT */
/*
 * Sizes as GNU du prints them (gnulib human.c, the parts du uses): in
 * whole output units rounded up; with -h or --si scaled to the largest
 * power of 1024 or 1000 that leaves at least 1, with one decimal below 10,
 * every step rounded up, and a letter (K M G T P E; k for --si's 1000).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "du_int.h"

static const char letters[] = "KMGTPEZYRQ";

char *du_human(uint64_t n, const struct du_opts *o, char *buf, size_t len)
{
	if (!o->human) {
		uint64_t b = o->block_size ? o->block_size : 1;
		uint64_t q = n / b + (n % b != 0);

		snprintf(buf, len, "%llu%s", (unsigned long long)q, o->suffix);
		return buf;
	}
	unsigned base = (unsigned)o->human, tenths = 0, rounding = 0;
	uint64_t amt = n;
	int exponent = 0, point = 0;

	if (amt >= base) {
		do {
			unsigned r10 = (unsigned)(amt % base) * 10 + tenths;
			unsigned r2 = (r10 % base) * 2 + (rounding >> 1);

			amt /= base;
			tenths = r10 / base;
			rounding = r2 < base ? (r2 + rounding) != 0 : 2 + (base < r2 + rounding);
			exponent++;
		} while (amt >= base && exponent < 8);
		if (amt < 10) {
			if (rounding > 0) {
				tenths++;
				rounding = 0;
				if (tenths == 10) {
					amt++;
					tenths = 0;
				}
			}
			if (amt < 10) {
				point = 1; /* one decimal: tenths */
			}
		}
	}
	if (!point && tenths + rounding > 0) {
		amt++;
		if (amt == base && exponent < 8) {
			exponent++;
			amt = 1;
			point = 1;
			tenths = 0;
		}
	}
	char suf[2] = { 0, 0 };

	if (exponent)
		suf[0] = base == 1000 && exponent == 1 ? 'k' : letters[exponent - 1];
	if (point)
		snprintf(buf, len, "%llu.%u%s", (unsigned long long)amt, tenths, suf);
	else
		snprintf(buf, len, "%llu%s", (unsigned long long)amt, suf);
	return buf;
}

int du_block_size(const char *spec, struct du_opts *o)
{
	const char *p = spec;
	uint64_t num = 1, mult = 1;
	int digits = 0;

	if (!strcmp(spec, "human-readable")) {
		o->human = 1024;
		return 0;
	}
	if (!strcmp(spec, "si")) {
		o->human = 1000;
		return 0;
	}
	if (*p >= '0' && *p <= '9') {
		num = 0;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (num > UINT64_MAX / 10)
				return -EINVAL;
			num = num * 10 + (uint64_t)(*p - '0');
		}
		digits = 1;
	}
	char letter = 0;

	if (*p) {
		const char *l = strchr(letters, *p >= 'a' ? *p - 32 : *p);

		if (!l || !*l)
			return -EINVAL;
		letter = *l;
		unsigned base = 1024;

		if (!strcmp(p + 1, "B"))
			base = 1000;
		else if (p[1] && strcmp(p + 1, "iB"))
			return -EINVAL;
		for (long k = 0; k <= l - letters; k++)
			mult *= base;
		if (base == 1000 && letter == 'K')
			letter = 'k';
	}
	if (num == 0 || (mult && num > UINT64_MAX / mult))
		return -EINVAL;
	o->human = 0;
	o->block_size = num * mult;
	memset(o->suffix, 0, sizeof(o->suffix));
	if (!digits && letter)
		snprintf(o->suffix, sizeof(o->suffix), "%c%s", letter, p[1] ? p + 1 : "");
	return 0;
}

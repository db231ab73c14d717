/* SPDX-License-Identifier: MIT */
/*
 * A restricted-C program for the ELF loader test, compiled at build time by
 * `clang -O2 -target bpf -mcpu=v3 -c`.  It exercises what the loader must
 * relocate: strings in .rodata, a table of pointers to them (.data with
 * R_BPF_64_ABS64), a global in .data, a zeroed one in .bss, and local calls
 * to a noinline static function (whose r6..r9 use the caller relies on).
 *
 * Context: at least 2 bytes.  It emits the greeting, then the word chosen
 * by ctx[0], and returns 1000 * (count of ctx[1] in ctx) + count of 'o' in
 * the greeting + the .data global + the .bss global (0).
 */
/* No system headers: glibc's do not know the bpf target. */
typedef unsigned char uint8_t;

static long (*arf_emit)(const void *p, unsigned long n) = (void *)1;

static const char greeting[] = "hello from the other side";
static const char *const words[] = { "alpha", "bravo", "charlie" };
int scale = 1000;
int zero;

static __attribute__((noinline)) int count(const uint8_t *s, unsigned long n, uint8_t c)
{
	int k = 0;

	for (unsigned long i = 0; i < n; i++)
		k += s[i] == c;
	return k;
}

static __attribute__((noinline)) unsigned long length(const char *s)
{
	unsigned long n = 0;

	while (s[n])
		n++;
	return n;
}

int entry(uint8_t *ctx, unsigned long len)
{
	/* kept in the frame: the stack must be clean for the next run */
	volatile unsigned long frame[2] = { 0x5a5a5a5a5a5a5a5aul, len };
	const char *w;

	if (len < 2)
		return -1;
	w = words[(ctx[0] + frame[1] - len) % 3];
	arf_emit(greeting, sizeof(greeting) - 1);
	arf_emit(w, length(w));
	return scale * count(ctx, len, ctx[1]) +
	       count((const uint8_t *)greeting, sizeof(greeting) - 1, 'o') + zero;
}

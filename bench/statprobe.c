/* SPDX-License-Identifier: MIT */
/*
 * statprobe — the victim of bench/attackbench.py: an ordinary client that
 * stats one file again and again and says how long each stat took.
 *
 *   statprobe URL SECONDS [--interval-us N] [--timeout-ms N] [--ino N --gen N]
 *
 * URL names the file (arf://HOST:PORT/PATH, arf+shm://...), or, with
 * --ino and --gen, the server only: then the probe sends nothing but its
 * stats (resolving the path is requests too, which would wait behind an
 * attack before the first stat is even timed).  The stat is
 * always a GETATTR *request* (one_sided = 0, attribute and name caches
 * off): a one-sided stat is served by the soft-NIC without ever waiting
 * for arfd's workers, so it would show nothing about what an attacker does
 * to them.  The probe resolves the path once, then for SECONDS sends one
 * stat, waits for its answer, sleeps --interval-us (default 5000) and goes
 * again; the stat in flight when SECONDS end is waited for (up to
 * --timeout-ms, default 30000, also the connect timeout), so a victim that
 * waits behind a flood reports that wait.  No reconnection: a broken or
 * refused connection is reported as such, not hidden by a retry.
 *
 * Prints one JSON object: connected (and connect_error), connect_us, count
 * (stats answered, the one that timed out included), errors (stats refused:
 * their latencies are not in the percentiles), timeouts, last_error, requests (GETATTR requests the client
 * counted: must equal count + errors + timeouts, which shows no stat was
 * served from a cache or one-sidedly), p50_us, p99_us, max_us, mean_us, and
 * cp50_us / cp99_us: the same percentiles corrected for coordinated
 * omission (a stat that took L > the interval also stands for the stats a
 * client sending at that pace would have sent meanwhile, which would have
 * waited L - interval, L - 2*interval, ...; as wrk2 and HdrHistogram's
 * recordValueWithExpectedInterval count them).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arf.h>

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* s as a JSON string (quotes and control characters escaped). */
static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The nearest-rank percentile of n sorted values (0 when there are none). */
static uint64_t pct(const uint64_t *v, size_t n, double q)
{
	if (!n)
		return 0;
	size_t i = (size_t)(q * (double)n);
	return v[i < n ? i : n - 1];
}

struct samples {
	uint64_t *v;
	size_t n, cap;
};

static int push(struct samples *s, uint64_t x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4096;
		uint64_t *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: statprobe URL SECONDS [--interval-us N] [--timeout-ms N] "
		"[--ino N --gen N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	const char *url = argv[1];
	double secs = strtod(argv[2], NULL);
	uint64_t interval_us = 5000;
	uint32_t timeout_ms = 30000;
	uint64_t ino = 0;
	uint32_t gen = 0;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--interval-us") && i + 1 < argc)
			interval_us = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc)
			timeout_ms = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--ino") && i + 1 < argc)
			ino = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--gen") && i + 1 < argc)
			gen = (uint32_t)strtoul(argv[++i], NULL, 10);
		else
			usage();
	}
	if (!(secs > 0))
		usage();

	struct arf_url u;
	char err[256] = "";
	if (arf_url_parse(url, &u, err, sizeof(err))) {
		fprintf(stderr, "statprobe: %s\n", err);
		return 2;
	}
	struct arf_client_opts o;
	arf_client_opts_init(&o);
	o.one_sided = 0;          /* every stat a request: see above */
	o.attr_timeout_ms = 0;
	o.entry_timeout_ms = 0;
	o.timeout_ms = timeout_ms;
	o.reconnect_ms = 0;       /* a lost connection is a result, not a retry */
	o.resvport = 0;           /* an ordinary client even when run as root */

	arf_client *c = NULL;
	uint64_t t0 = now_us();
	int rc = arf_connect(url, &o, &c, err, sizeof(err));
	uint64_t connect_us = now_us() - t0;
	if (rc) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s: %s", arf_strerror(rc), err);
		printf("{\"connected\": false, \"connect_us\": %" PRIu64 ", \"connect_error\": ",
		       connect_us);
		json_str(msg);
		printf(", \"count\": 0, \"errors\": 0, \"timeouts\": 0}\n");
		return 0;
	}
	struct arf_stat st = { .ino = ino, .gen = gen };
	rc = ino ? 0 : arf_resolve(c, u.path, &st);
	if (rc) {
		fprintf(stderr, "statprobe: resolve %s: %s\n", u.path, arf_strerror(rc));
		arf_close(c);
		return 1;
	}

	struct arf_client_stats s0, s1;
	struct samples lat = { 0 }, co = { 0 };
	size_t errors = 0, timeouts = 0;
	int last_err = 0;
	uint64_t sum = 0;
	arf_stats(c, &s0);
	uint64_t start = now_us(), end = start + (uint64_t)(secs * 1e6);
	while (now_us() < end) {
		struct arf_stat a;
		uint64_t t = now_us();
		rc = arf_getattr(c, st.ino, st.gen, &a);
		uint64_t l = now_us() - t;
		if (rc && l >= (uint64_t)timeout_ms * 900u) {
			/* no answer within the timeout (libarf gives up on the
			 * connection: -EIO with reconnect_ms 0): kept as a sample
			 * of at least this long, and the last one */
			timeouts++;
			last_err = rc;
			sum += l;
			if (push(&lat, l) || push(&co, l))
				return 1;
			break;
		}
		if (rc) {
			/* refused (ESTALE, EACCES, ...): counted apart, and
			 * paced like an answer, not retried at once */
			errors++;
			last_err = rc;
			if (rc == -EIO || rc == -ECONNRESET || rc == -EPIPE || rc == -ENOTCONN)
				break;
		} else {
			sum += l;
			if (push(&lat, l) || push(&co, l))
				return 1;
			for (uint64_t k = l; interval_us && k > interval_us;) {
				k -= interval_us;
				if (push(&co, k))
					return 1;
			}
		}
		if (interval_us) {
			struct timespec d = { (time_t)(interval_us / 1000000u),
					      (long)(interval_us % 1000000u) * 1000L };
			nanosleep(&d, NULL);
		}
	}
	double took = (double)(now_us() - start) / 1e6;
	arf_stats(c, &s1);
	arf_close(c);
	qsort(lat.v, lat.n, sizeof(*lat.v), cmp_u64);
	qsort(co.v, co.n, sizeof(*co.v), cmp_u64);
	printf("{\"connected\": true, \"connect_us\": %" PRIu64 ", \"seconds\": %.3f, "
	       "\"count\": %zu, \"errors\": %zu, \"timeouts\": %zu, \"last_error\": \"%s\", "
	       "\"requests\": %" PRIu64 ", \"one_sided_reads\": %" PRIu64 ", "
	       "\"p50_us\": %" PRIu64 ", \"p99_us\": %" PRIu64 ", \"max_us\": %" PRIu64 ", "
	       "\"mean_us\": %.1f, \"cp50_us\": %" PRIu64 ", \"cp99_us\": %" PRIu64 ", "
	       "\"interval_us\": %" PRIu64 ", \"timeout_ms\": %u}\n",
	       connect_us, took, lat.n, errors, timeouts, last_err ? arf_strerror(last_err) : "",
	       s1.requests - s0.requests, s1.one_sided_reads - s0.one_sided_reads,
	       pct(lat.v, lat.n, 0.50), pct(lat.v, lat.n, 0.99), lat.n ? lat.v[lat.n - 1] : 0,
	       lat.n ? (double)sum / (double)lat.n : 0.0, pct(co.v, co.n, 0.50),
	       pct(co.v, co.n, 0.99), interval_us, timeout_ms);
	free(lat.v);
	free(co.v);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * What helpers' work costs, and the clock that bounds a run, in both
 * engines: a helper's charge counts as instructions, the same in the
 * interpreter and in native code (every budget across a charge stops both
 * at the same instruction with the same count and message); a charge over
 * the budget fails the run; helper-heavy programs (memmem and memcmp over
 * tens of MiB, a helper that burns memory bandwidth, one helper call that
 * would loop for seconds) stop within 20 ms of the deadline; the abort
 * flag stops a runaway run from another thread, and a run that has not
 * started; memmem and memcmp in pieces give memmem(3)'s and memcmp(3)'s
 * answers.
 *
 * Timing asserts take the best of three tries: a loaded machine may delay
 * one, while an engine that does not look at the clock misses all three by
 * seconds (before helpers charged, each memmem over 64 MiB cost one
 * instruction and the clock was read every 65536 of them: minutes).
 */
#include <pthread.h>
#include <time.h>

#include "mc_test.h"

#define BIG (64u << 20)      /* the haystack */
#define SLACK_MS 20.0        /* a run stops within this of its deadline */
#define DEADLINE_MS 100u

struct fixture {
	struct arf_mc_helpers *h;
	struct arf_mc_vm *vm[2];     /* interpreter, JIT */
	uint8_t *big, *big2;
	uint8_t out[64];
	int abort_flag;
};

/* charge(n): charges n instructions; stops when told to. */
static int h_charge(struct arf_mc_call *c, uint64_t *ret)
{
	*ret = 0;
	return arf_mc_call_charge(c, c->arg[0]);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* churn(bytes): writes bytes of the test's buffer, charging for them. */
static int h_churn(struct arf_mc_call *c, uint64_t *ret)
{
	struct fixture *f = c->user;
	uint64_t n = c->arg[0] < BIG ? c->arg[0] : BIG;

	memset(f->big2, (int)(n & 0xff), (size_t)n);
	*ret = n;
	return arf_mc_call_charge_bytes(c, n);
}

/* spin(): one call that would work for 10 s, a MiB's worth per round,
 * charging each round and stopping when the charge says so. */
static int h_spin(struct arf_mc_call *c, uint64_t *ret)
{
	struct fixture *f = c->user;
	uint64_t end = now_ns() + 10000000000ull, rounds = 0;
	int rc = 0;

	while (now_ns() < end) {
		memset(f->big2, (int)rounds, 1u << 20);
		rounds++;
		if ((rc = arf_mc_call_charge_bytes(c, 1u << 20)))
			break;
	}
	*ret = rounds;
	return rc;
}

static int setup(void **state)
{
	static const struct arf_mc_helper_def defs[] = {
		{ 16, "charge", { ARF_MC_ARG_ANY }, h_charge, NULL },
		{ 17, "churn", { ARF_MC_ARG_ANY }, h_churn, NULL },
		{ 18, "spin", { 0 }, h_spin, NULL },
	};
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || arf_mc_helpers_create(&f->h) || arf_mc_helpers_add_std(f->h))
		return -1;
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if (arf_mc_helpers_add(f->h, &defs[i], NULL, 0))
			return -1;
	f->big = malloc(BIG);
	f->big2 = malloc(BIG);
	if (!f->big || !f->big2)
		return -1;
	memset(f->big, 'a', BIG);
	memset(f->big2, 'a', BIG);
	for (int k = 0; k < 2; k++) {
		if (arf_mc_vm_create(f->h, &f->vm[k]))
			return -1;
		/* region 5: the haystack; region 6: a copy of it */
		if (arf_mc_vm_add_region(f->vm[k], f->big, BIG, 0, NULL) ||
		    arf_mc_vm_add_region(f->vm[k], f->big2, BIG, 0, NULL))
			return -1;
		arf_mc_vm_set_output(f->vm[k], f->out, sizeof(f->out));
		arf_mc_vm_set_user(f->vm[k], f);
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (int k = 0; k < 2; k++)
		arf_mc_vm_destroy(f->vm[k]);
	arf_mc_helpers_destroy(f->h);
	free(f->big);
	free(f->big2);
	free(f);
	return 0;
}

static struct arf_mc_prog *load(const struct fixture *f, const char *text)
{
	struct arf_mc_prog *p = NULL;
	char err[256] = "";

	if (mc_test_load(f->h, text, &p, err, sizeof(err)))
		fail_msg("not loaded: %s\n--\n%s", err, text);
	if (arf_mc_prog_jit(p, err, sizeof(err)))
		fail_msg("not compiled: %s", err);
	return p;
}

/* Runs p in engine k (0: interpreter, 1: JIT). */
static int run_in(struct fixture *f, int k, const struct arf_mc_prog *p, uint64_t budget,
		  struct arf_mc_result *res)
{
	return k ? arf_mc_run(f->vm[k], p, NULL, 0, budget, res)
		 : arf_mc_run_interp(f->vm[k], p, NULL, 0, budget, res);
}

static const char *engine[2] = { "interpreter", "JIT" };

/* Both engines, one budget: the same code, count, instruction and message. */
static void agree(struct fixture *f, const struct arf_mc_prog *p, uint64_t budget,
		  struct arf_mc_result *out, int *rc_out)
{
	struct arf_mc_result r[2];
	int rc[2];

	for (int k = 0; k < 2; k++)
		rc[k] = run_in(f, k, p, budget, &r[k]);
	if (rc[0] != rc[1] || r[0].insns != r[1].insns || (rc[0] && r[0].pc != r[1].pc) ||
	    strcmp(r[0].msg, r[1].msg) || (!rc[0] && r[0].r0 != r[1].r0))
		fail_msg("budget %llu: interpreter rc %d insns %llu pc %u '%s'; JIT rc %d insns %llu "
			 "pc %u '%s'", (unsigned long long)budget, rc[0],
			 (unsigned long long)r[0].insns, r[0].pc, r[0].msg, rc[1],
			 (unsigned long long)r[1].insns, r[1].pc, r[1].msg);
	*out = r[0];
	*rc_out = rc[0];
}

/* A charge counts as instructions, alike in both engines, at every budget. */
static void test_charge_counts(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_prog *p = load(f, "mov %r1, 1000\ncall 16\nmov %r0, 7\nexit\n");
	struct arf_mc_result r;
	int rc;

	agree(f, p, 1u << 20, &r, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(r.insns, 4 + 1000);
	for (uint64_t b = 1; b <= 1004; b++) {
		agree(f, p, b, &r, &rc);
		if (b == 1004) {
			assert_int_equal(rc, 0);
			continue;
		}
		assert_int_equal(rc, ARF_EBUDGET);
		assert_int_equal(r.insns, b);
		if (b >= 2 && b <= 1001) {
			/* the charge does not fit: the helper's call fails the run */
			assert_int_equal(r.pc, 1);
			assert_non_null(strstr(r.msg, "helper charge: instruction budget of"));
		} else {
			assert_int_equal(r.pc, b == 1 ? 1 : b - 1000);
		}
	}
	print_message("charge(1000) costs 1000 instructions in both engines; every budget from 1 "
		      "to 1004 stops both alike\n");
	arf_mc_prog_destroy(p);

	/* charges across slices, with the clock on (a deadline far away) */
	p = load(f, "mov %r6, 0\nloop:\nmov %r1, 30001\ncall 16\nadd %r6, 1\njlt %r6, 10, loop\n"
		    "mov %r0, %r6\nexit\n");
	for (int k = 0; k < 2; k++)
		arf_mc_vm_set_deadline(f->vm[k], now_ns() + 60000000000ull);
	agree(f, p, 1u << 30, &r, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(r.r0, 10);
	uint64_t full = r.insns;
	assert_int_equal(full, 1 + 10 * (4 + 30001) + 2);
	for (uint64_t b = full - 40; b < full; b++)
		agree(f, p, b, &r, &rc);
	for (uint64_t b = 1; b < full; b += 7919)
		agree(f, p, b, &r, &rc);
	for (int k = 0; k < 2; k++)
		arf_mc_vm_set_deadline(f->vm[k], 0);
	arf_mc_prog_destroy(p);
}

/* Starts a deadline ms from now in engine k, runs, returns how far past it
 * the run stopped (ms), with its result. */
static double overshoot(struct fixture *f, int k, const struct arf_mc_prog *p, unsigned ms,
			struct arf_mc_result *res, int *rc)
{
	uint64_t t0 = now_ns(), dl = t0 + (uint64_t)ms * 1000000u;

	arf_mc_vm_set_deadline(f->vm[k], dl);
	*rc = run_in(f, k, p, UINT64_C(1) << 50, res);
	uint64_t t1 = now_ns();
	arf_mc_vm_set_deadline(f->vm[k], 0);
	return ((double)t1 - (double)dl) / 1e6;
}

/* Best of three: the run stops within SLACK_MS of its deadline, stopped by it. */
static void in_time(struct fixture *f, const char *what, const char *text)
{
	struct arf_mc_prog *p = load(f, text);

	for (int k = 0; k < 2; k++) {
		double best = 1e9;
		struct arf_mc_result res;
		int rc = 0;

		for (int t = 0; t < 3 && best > SLACK_MS; t++) {
			double o = overshoot(f, k, p, DEADLINE_MS, &res, &rc);

			assert_int_equal(rc, ARF_EBUDGET);
			assert_non_null(strstr(res.msg, "wall-clock limit reached"));
			if (o < best)
				best = o;
		}
		print_message("%s, %s: stopped %.1f ms past a %u ms deadline after %llu "
			      "instructions: %s\n", what, engine[k], best, DEADLINE_MS,
			      (unsigned long long)res.insns, res.msg);
		if (best > SLACK_MS)
			fail_msg("%s, %s: stopped %.1f ms past the deadline", what, engine[k], best);
	}
	arf_mc_prog_destroy(p);
}

static void test_helper_heavy_stops_in_time(void **state)
{
	struct fixture *f = *state;

	memset(f->big2, 'a', BIG); /* equal to big: memcmp reads it all */
	in_time(f, "memmem over 64 MiB in a loop",
		"lddw %r0, 0x7a7a7a7a7a7a7a7a\nstxdw [%r10-8], %r0\nloop:\n"
		"lddw %r1, 0x5000000000000\nlddw %r2, 0x4000000\nmov %r3, %r10\nadd %r3, -8\n"
		"mov %r4, 8\ncall 3\nja loop\n");
	in_time(f, "memcmp of 64 MiB in a loop",
		"loop:\nlddw %r1, 0x5000000000000\nlddw %r2, 0x6000000000000\n"
		"lddw %r3, 0x4000000\ncall 2\nja loop\n");
	in_time(f, "a helper writing 16 MiB a call, in a loop",
		"loop:\nlddw %r1, 0x1000000\ncall 17\nja loop\n");
	in_time(f, "one helper call that would loop for 10 s", "call 18\nexit\n");
	in_time(f, "instructions alone", "mov %r0, 0\nloop:\nadd %r0, 1\nja loop\n");
}

static void *set_later(void *arg)
{
	struct fixture *f = arg;
	struct timespec ts = { 0, 50 * 1000000 };

	nanosleep(&ts, NULL);
	__atomic_store_n(&f->abort_flag, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The abort flag, set by another thread, stops a run with no deadline at
 * all; a run after it never starts. */
static void test_abort(void **state)
{
	struct fixture *f = *state;
	const char *texts[2] = { "mov %r0, 0\nloop:\nadd %r0, 1\nja loop\n", "call 18\nexit\n" };

	for (int i = 0; i < 2; i++) {
		struct arf_mc_prog *p = load(f, texts[i]);

		for (int k = 0; k < 2; k++) {
			struct arf_mc_result res;
			pthread_t t;

			f->abort_flag = 0;
			arf_mc_vm_set_abort(f->vm[k], &f->abort_flag);
			uint64_t t0 = now_ns();
			assert_int_equal(pthread_create(&t, NULL, set_later, f), 0);
			int rc = run_in(f, k, p, UINT64_C(1) << 50, &res);
			double ms = (double)(now_ns() - t0) / 1e6;
			pthread_join(t, NULL);
			print_message("%s, %s: abort flag set at 50 ms, run ended at %.1f ms: %s\n",
				      i ? "a looping helper" : "a loop", engine[k], ms, res.msg);
			assert_int_equal(rc, -ECANCELED);
			assert_non_null(strstr(res.msg, "aborted"));
			assert_true(ms >= 50 && ms < 50 + 200);
			/* with the flag still set, the next run does not start */
			rc = run_in(f, k, p, 1000, &res);
			assert_int_equal(rc, -ECANCELED);
			assert_int_equal(res.insns, 0);
			arf_mc_vm_set_abort(f->vm[k], NULL);
		}
		arf_mc_prog_destroy(p);
	}
}

/* memmem and memcmp in pieces answer as memmem(3) and memcmp(3) do, with
 * matches and differences on either side of a piece's edge. */
static void test_pieces_answer_alike(void **state)
{
	struct fixture *f = *state;
	const uint64_t at[] = { 0, 1, ARF_MC_CHUNK - 8, ARF_MC_CHUNK - 5, ARF_MC_CHUNK - 1,
				ARF_MC_CHUNK, 3 * ARF_MC_CHUNK + 17, BIG - 8 };
	size_t checked = 0;

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		for (int hl = 0; hl < 2; hl++) {
			uint64_t hlen = hl ? BIG : at[i] + 7; /* one byte short of the match */
			memcpy(f->big + at[i], "needle!!", 8);
			const uint8_t *want = memmem(f->big, hlen, "needle!!", 8);
			for (int k = 0; k < 2; k++) {
				struct arf_mc_result r;
				char text[512];
				snprintf(text, sizeof(text),
					 "lddw %%r0, 0x2121656c6465656e\nstxdw [%%r10-8], %%r0\n"
					 "lddw %%r1, 0x5000000000000\nlddw %%r2, %llu\nmov %%r3, %%r10\n"
					 "add %%r3, -8\nmov %%r4, 8\ncall 3\nexit\n",
					 (unsigned long long)hlen);
				struct arf_mc_prog *p = load(f, text);
				assert_int_equal(run_in(f, k, p, UINT64_C(1) << 40, &r), 0);
				assert_int_equal(r.r0, want ? (uint64_t)(want - f->big) : (uint64_t)-1);
				arf_mc_prog_destroy(p);
				checked++;
			}
			memset(f->big + at[i], 'a', 8);
		}
	}

	/* memcmp: a difference before, at and after a piece's edge */
	struct arf_mc_prog *mc = load(f, "lddw %r1, 0x5000000000000\nlddw %r2, 0x6000000000000\n"
				      "lddw %r3, 0x300000\ncall 2\nexit\n");
	const uint64_t diff[] = { 5, ARF_MC_CHUNK - 1, ARF_MC_CHUNK, 2 * ARF_MC_CHUNK + 3 };
	memset(f->big2, 'a', 3u << 20);
	for (size_t i = 0; i < sizeof(diff) / sizeof(diff[0]); i++) {
		for (int sign = 0; sign < 2; sign++) {
			f->big2[diff[i]] = sign ? 'b' : '0';
			for (int k = 0; k < 2; k++) {
				struct arf_mc_result r;
				assert_int_equal(run_in(f, k, mc, UINT64_C(1) << 40, &r), 0);
				assert_int_equal((int64_t)r.r0, sign ? -1 : 1);
				checked++;
			}
			f->big2[diff[i]] = 'a';
		}
	}
	struct arf_mc_result r;
	for (int k = 0; k < 2; k++) {
		assert_int_equal(run_in(f, k, mc, UINT64_C(1) << 40, &r), 0);
		assert_int_equal(r.r0, 0);
		/* 3 MiB compared: 3 MiB / 8 instructions' worth, and the 5 instructions */
		assert_int_equal(r.insns, 5 + (3u << 20) / ARF_MC_BYTES_PER_INSN);
	}
	arf_mc_prog_destroy(mc);
	print_message("%zu memmem and memcmp runs in pieces agree with libc\n", checked);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_charge_counts),
		cmocka_unit_test(test_pieces_answer_alike),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_helper_heavy_stops_in_time),
	};

	return cmocka_run_group_tests_name("mc-charge", tests, setup, teardown);
}

# SPDX-License-Identifier: MIT
"""The mobile-code rows (mcbench): the kernels in the interpreter, the JIT,
natively and in DPDK's librte_bpf; chain lookups one-sided, shipped, by
request and by libarf's defaults, with where shipping starts to win
(crossover); listings one-sided, by READDIR requests and by the readdir
program, with where each starts to win (list_crossover)."""
import json
import os
import subprocess

from common import (ARF_WAIT, LIST_STRATEGIES, MC_ARFD, MC_FILES, MC_HOPS, MC_STRATEGIES, Fail,
                    bench_arfd, log)


class McRows:
    """Bench's mobile-code rows (a part of bench.Bench)."""

    def mcb(self, args, timeout=600):
        p = subprocess.run([self.mcbench] + args, capture_output=True, timeout=timeout)
        if p.returncode != 0:
            raise Fail("mcbench %s: %s" % (args[0], (p.stderr + p.stdout).decode(
                errors="replace")[-1500:]))
        out = []
        for line in p.stdout.decode().splitlines():
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
        return out

    def mc_kernels(self):
        res = self.mcb(["kernels", os.path.join(self.tools, "mckernels.bpf.o"),
                        "--secs", str(self.cfg["mc_kernel_secs"])])
        notes = [r for r in res if r["kind"] == "note"]
        for n in notes:
            self.mc_notes.append("%s: %s" % (n["what"], n["why"]))
            log("mcbench note: %s: %s" % (n["what"], n["why"]))
        dpdk = not any(n["what"] == "dpdk" for n in notes)
        jit = not any(n["what"] == "dpdk jit" for n in notes)
        for r in res:
            if r["kind"] != "kernel":
                continue
            engines = ["native C (cc -O2)", "ARF interpreter", "ARF JIT"]
            if r["loop_free"] and dpdk:
                engines.append("DPDK rte_bpf interpreter")
                if jit:
                    engines.append("DPDK rte_bpf JIT")
            if r["engine"] == engines[0]:
                for e in engines:
                    self.expect("interp", r["what"], e)
            ns = r["ns_op"]
            self.add(section="interp", test=r["what"], system=r["engine"], strategy="-",
                     client="mcbench", transport="-", wait="-", caching="-",
                     ops_s=1e9 / ns, mean_us=ns / 1000.0, ns_op=ns,
                     ratio_native=r["ratio_native"], insns=r["insns"] or "")
            log("%-34s %-26s %12.1f ns/op  %6.2fx native%s" % (
                r["engine"], r["what"], ns, r["ratio_native"],
                "  %d insns" % r["insns"] if r["insns"] else ""))

    def mc_chain(self):
        for tr in ("tcp", "shm"):
            for st in MC_STRATEGIES:
                for h in MC_HOPS:
                    self.expect("chain", "lookup at chain position %d" % h,
                                "ARF libarf %s [%s]" % (tr, st))
        arfd = self.procs.add(bench_arfd(self.build, os.path.join(self.work, "mc-arfd"),
                                         MC_ARFD, name="arfd-chain"))
        try:
            res = self.mcb(["chain", "--secs", str(self.cfg["mc_chain_secs"]),
                            "--files", str(MC_FILES), "--hops", ",".join(map(str, MC_HOPS)),
                            arfd.url("/", "tcp"), arfd.url("/", "shm")])
        finally:
            arfd.stop()
        by = {}
        for r in res:
            if r["kind"] != "chain":
                continue
            sysname = "ARF libarf %s [%s]" % (r["transport"], r["strategy"])
            self.add(section="chain", test="lookup at chain position %d" % r["hops"],
                     system=sysname, strategy=r["strategy"], client="mcbench (libarf)",
                     transport=r["transport"], wait=ARF_WAIT, caching="off",
                     ops_s=r["ops_per_s"], mean_us=r["mean_us"], hops=r["hops"],
                     one_sided_op=r["one_sided_reads"], rounds_op=r["rounds"],
                     requests_op=r["requests"], execs_op=r["execs"],
                     counter_source="client (libarf), one lookup")
            by[(r["transport"], r["strategy"], r["hops"])] = r["mean_us"]
            log("%-34s chain position %-3d %10.1f us  reads %d rounds %d req %d exec %d" % (
                sysname, r["hops"], r["mean_us"], r["one_sided_reads"], r["rounds"],
                r["requests"], r["execs"]))
        for tr in ("tcp", "shm"):
            self.crossover[tr] = crossover(by, tr)
            c = self.crossover[tr]
            self.add(section="crossover", test="shipped beats one-sided", system="ARF libarf " + tr,
                     strategy="-", transport=tr, hops=c["first"], counter_source=c["text"])
            log("CROSSOVER %s: %s" % (tr, c["text"]))

    def mc_listing(self):
        sizes = self.cfg["list_sizes"]
        for tr in ("tcp", "shm"):
            for call in ("readdir", "readdirplus"):
                for st in LIST_STRATEGIES:
                    for n in sizes:
                        self.expect("listing", "%s of %d entries" % (call, n),
                                    "ARF libarf %s [%s]" % (tr, st))
        res = self.mcb(["listing", "--secs", str(self.cfg["mc_list_secs"]),
                        "--sizes", ",".join(map(str, sizes)),
                        self.arfd.url("/", "tcp"), self.arfd.url("/", "shm")], timeout=1800)
        by = {}
        for r in res:
            if r["kind"] != "listing":
                continue
            sysname = "ARF libarf %s [%s]" % (r["transport"], r["strategy"])
            self.add(section="listing", test="%s of %d entries" % (r["call"], r["entries"]),
                     system=sysname, strategy=r["strategy"], client="mcbench (libarf)",
                     transport=r["transport"], wait=ARF_WAIT, caching="off",
                     ops_s=1e6 / r["mean_us"] if r["mean_us"] > 0 else float("nan"),
                     mean_us=r["mean_us"], one_sided_op=r["one_sided_reads"],
                     rounds_op=r["rounds"], requests_op=r["requests"], execs_op=r["execs"],
                     counter_source="client (libarf), one listing")
            by[(r["transport"], r["call"], r["strategy"], r["entries"])] = r["mean_us"]
            log("%-32s %-11s %5d entries %10.1f us  rounds %d req %d exec %d" % (
                sysname, r["call"], r["entries"], r["mean_us"], r["rounds"], r["requests"],
                r["execs"]))
        for tr in ("tcp", "shm"):
            for call in ("readdir", "readdirplus"):
                for st in ("request", "shipped"):
                    c = list_crossover(by, tr, call, st, sizes)
                    self.list_crossover[(tr, call, st)] = c
                    self.add(section="crossover", test="%s %s beats one-sided" % (call, st),
                             system="ARF libarf " + tr, strategy=st, transport=tr,
                             hops=c["first"], counter_source=c["text"])
                    log("LISTING %s %s %s: %s" % (tr, call, st, c["text"]))

    def run_mc(self):
        self.attempt("mcbench kernels", self.mc_kernels)
        self.attempt("mcbench chain", self.mc_chain)
        self.attempt("mcbench listing", self.mc_listing)


def crossover(by, tr):
    """Where shipping the chain lookup starts to beat the one-sided walk over
    transport tr: the first measured chain position from which the shipped
    row stays faster, and the break-even from a straight-line fit of the
    one-sided rows (cost per round) against the shipped rows' mean (cost of
    the execution)."""
    os_pts = [(h, by[(tr, "onesided", h)]) for h in MC_HOPS if (tr, "onesided", h) in by]
    sh = [by[(tr, "shipped", h)] for h in MC_HOPS if h >= 2 and (tr, "shipped", h) in by]
    first = "n/a"
    for i, h in enumerate(MC_HOPS):
        if all((tr, s, g) in by for s in ("onesided", "shipped") for g in MC_HOPS[i:]) and \
                all(by[(tr, "shipped", g)] < by[(tr, "onesided", g)] for g in MC_HOPS[i:]):
            first = h
            break
    if len(os_pts) < 2 or not sh:
        return dict(first=first, fit=float("nan"), round_us=float("nan"),
                    exec_us=float("nan"), text="not enough rows")
    n = len(os_pts)
    mx = sum(h for h, _ in os_pts) / n
    my = sum(v for _, v in os_pts) / n
    sxx = sum((h - mx) ** 2 for h, _ in os_pts)
    slope = sum((h - mx) * (v - my) for h, v in os_pts) / sxx
    icpt = my - slope * mx
    sh_us = sorted(sh)[len(sh) // 2]  # median: robust to a noisy point
    fit = (sh_us - icpt) / slope if slope > 0 else float("inf")
    if first == "n/a":
        text = ("one-sided stays faster up to %d hops (%.2f us per hop; shipped lookup "
                "%.1f us; straight-line break-even at %.0f hops)" % (
                    MC_HOPS[-1], slope, sh_us, fit))
    else:
        text = ("shipping wins from chain position %s on (one-sided %.2f us per hop + %.1f us; "
                "shipped lookup %.1f us; straight-line break-even at %.1f hops)" % (
                    first, slope, icpt, sh_us, fit))
    return dict(first=first, fit=fit, round_us=slope, exec_us=sh_us, text=text)


def list_crossover(by, tr, call, st, sizes):
    """Where listing by strategy st (READDIR requests, or the readdir
    program) starts to beat the one-sided listing over transport tr: the
    first measured size from which st stays faster, with the times there."""
    have = [n for n in sizes if (tr, call, st, n) in by and (tr, call, "onesided", n) in by]
    first = "n/a"
    for i, n in enumerate(have):
        if all(by[(tr, call, st, m)] < by[(tr, call, "onesided", m)] for m in have[i:]):
            first = n
            break
    if not have:
        return dict(first=first, text="not enough rows")
    if first == "n/a":
        n = have[-1]
        text = "one-sided stays faster up to %d entries (%d: %.0f against %.0f us)" % (
            n, n, by[(tr, call, "onesided", n)], by[(tr, call, st, n)])
    else:
        text = "%s wins from %d entries on (%d: %.0f against %.0f us one-sided)" % (
            st, first, first, by[(tr, call, st, first)], by[(tr, call, "onesided", first)])
    return dict(first=first, text=text)

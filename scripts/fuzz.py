#!/usr/bin/env python3
"""Mutation fuzzers of the compiler and the runtime.

  fa-opt      flashattn IR from the tests (split at "// -----"), mutated
              (numbers to edge values, element types swapped, attributes and
              lines dropped or doubled, characters flipped), through a random
              pass pipeline with random options;
  fa-compile  random option sets of fa-compile (the op as MLIR, host
              artifacts, sm90 PTX), with region files from test/gpu/regions
              mutated;
  runtime     build/bin/fuzz_runtime (ASan + UBSan): artifact metadata
              mutated, loaded and run (sm90 over the stand-in driver).

A finding is a process killed by a signal, an LLVM fatal error, a stack
dump, an ASan / UBSan report, or a run past the time limit (a hang); its
input and command go to --crashes DIR. Expected failures (a diagnostic, a
status) are not findings.

Usage: fuzz.py [fa-opt|fa-compile|runtime|all] --build DIR [--seconds S |
       --cases N] [--seed N] [--crashes DIR]
make check runs a short deterministic round (ctest fuzz.smoke); make fuzz a
long one (FUZZ_SECONDS, 1800 by default) that saves what it finds.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EDGE = ["0", "1", "-1", "2", "3", "7", "8", "63", "64", "65", "127", "128", "255", "256",
        "1023", "4096", "4097", "32768", "65536", "65537", "2147483647", "2147483648",
        "-2147483648", "4294967296", "4611686018427387904", "9223372036854775807",
        "-9223372036854775808", "1.0e30", "-0.0", "1.5"]
TYPES = ["f16", "bf16", "f32", "f64", "i32", "i1", "index", "f8E4M3FN"]
# Crashes of upstream MLIR 22 code that our inputs reach, with the upstream
# report; counted apart, not as findings.
KNOWN_UPSTREAM = [
    (re.compile(r"parseDenseArrayAttr"),
     "llvm/llvm-project#179045: array<index: ...> crashes MLIR 22's parser "
     "(fixed upstream by #179075, after Debian's 22.1)"),
]
FINDINGS = re.compile(r"LLVM ERROR|Stack dump|PLEASE submit a bug report|AddressSanitizer|"
                      r"runtime error:|Assertion .* failed|terminate called")


def seeds():
    """Op-level IR chunks of the lit tests that hold flashattn ops."""
    chunks = []
    for sub in ("test/Dialect/FlashAttn", "test/Transforms", "test/Integration/host",
                "test/Pipelines", "test/Conversion/FlashAttnToSm90"):
        d = os.path.join(ROOT, sub)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if not name.endswith(".mlir"):
                continue
            with open(os.path.join(d, name)) as f:
                text = f.read()
            for chunk in text.split("// -----"):
                if "flashattn." in chunk and len(chunk) < 20000:
                    chunks.append(chunk)
    return chunks


def mutate_text(rng, text):
    """One to three mutations of MLIR text."""
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        kind = rng.randrange(6)
        nums = list(re.finditer(r"(?<![\w.%#@])-?\d+(\.\d+)?(e\d+)?(?![\w.])", text))
        if kind <= 1 and nums:
            m = rng.choice(nums)
            text = text[:m.start()] + rng.choice(EDGE) + text[m.end():]
        elif kind == 2:
            types = list(re.finditer(r"\b(f16|bf16|f32|i32|index)\b", text))
            if types:
                m = rng.choice(types)
                text = text[:m.start()] + rng.choice(TYPES) + text[m.end():]
        elif kind == 3:
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            if rng.random() < 0.5:
                del lines[i]
            else:
                lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind == 4:
            for word, other in (("bottom_right", "top_left"), ("top_left", "none"),
                                ("none", "bottom_right"), ("ins(", "outs("), ("memref", "tensor")):
                if word in text and rng.random() < 0.3:
                    text = text.replace(word, other, 1)
        elif text:
            i = rng.randrange(len(text))
            text = text[:i] + rng.choice("{}()<>[],:%=x0-\"") + text[i + 1:]
    return text


def opt_pipeline(rng):
    """A pass pipeline for fa-opt with random options."""
    def val():
        return rng.choice(EDGE[:22])
    plan = rng.choice(["", "target=host", "target=sm90"])
    if rng.random() < 0.5:
        plan += " block-m=%s block-n=%s" % (val(), val())
    if rng.random() < 0.2:
        plan += " num-sms=%s" % val()
    if "sm90" in plan and rng.random() < 0.3:
        plan += " " + rng.choice(["tma-store=off", "scheduler-barrier=on", "kv-row-copies=on",
                                  "kv-heads-per-block=%s" % val(), "l2-hint-kv=first",
                                  "warp-specialize=off", "intra-wg-overlap=off",
                                  "fused-merge=off"])
    plan_pass = "--flashattn-plan=%s" % plan.strip() if plan.strip() else "--flashattn-plan"
    host_tail = ["--flashattn-split-kv", "--flashattn-tile", "--flashattn-lower-key-ranges",
                 "--convert-flashattn-to-vector=vector-bits=%s" % rng.choice(["256", "512", val()])]
    sm90_tail = ["--flashattn-split-kv", "--flashattn-tile", "--flashattn-sm90-pipeline-kv",
                 "--flashattn-sm90-warp-specialize", "--flashattn-sm90-warpgroup",
                 "--flashattn-lower-warp-specialize", "--flashattn-lower-key-ranges"]
    choice = rng.randrange(6)
    if choice == 0:
        return [plan_pass]
    if choice == 1:
        return [plan_pass] + host_tail[:rng.randint(1, 4)]
    if choice == 2:
        return [plan_pass.replace("target=host", "target=sm90")] + sm90_tail[:rng.randint(1, 7)]
    if choice == 3:
        return ["--flashattn-host-pipeline"]
    if choice == 4:
        return ["--flashattn-lower-key-ranges", "--flashattn-lower-warp-specialize"]
    return ["--one-shot-bufferize=bufferize-function-boundaries", plan_pass] + host_tail[:2]


def compile_args(rng, tmp):
    """A random option set for fa-compile."""
    def val():
        return rng.choice(EDGE[:24])
    def sometimes(valid, invalid):  # an invalid value one time in ten
        return rng.choice(invalid) if rng.random() < 0.1 else rng.choice(valid)
    a = ["--target", sometimes(["host", "sm90"], ["cpu", ""])]
    a += ["--d", sometimes(["64", "128", "256", "32", "80"], EDGE[:24])]
    a += ["--dtype", sometimes(["f16", "bf16", "f32"], ["f8", "", "i32"])]
    a += ["--causal", sometimes(["none", "top_left", "bottom_right"], ["diagonal", ""])]
    a += ["--hq", sometimes(["4", "8", "32"], EDGE[:24]),
          "--hkv", sometimes(["1", "2", "4", "8"], EDGE[:24])]
    for flag in ("--lse", "--varlen-q", "--varlen-k", "--seqused-k", "--append"):
        if rng.random() < 0.25:
            a.append(flag)
    if rng.random() < 0.1:
        a.append("--unpipelined")
    for opt in ("--window-left", "--window-right", "--num-splits", "--page-size", "--pack-gqa",
                "--block-n", "--block-m", "--stages", "--consumers"):
        if rng.random() < 0.15:
            a += [opt, sometimes(["0", "1", "2", "3", "16", "64", "128"], EDGE[:24])]
    for opt in ("--softcap", "--scale"):
        if rng.random() < 0.15:
            a += [opt, rng.choice(["0", "30", "-1", "1e30", "nan", "inf"])]
    if rng.random() < 0.15:
        regions = os.path.join(ROOT, "test/gpu/regions")
        names = sorted(os.listdir(regions))
        with open(os.path.join(regions, rng.choice(names))) as f:
            text = f.read()
        path = os.path.join(tmp, "regions.txt")
        with open(path, "w") as f:
            f.write(mutate_text(rng, text) if rng.random() < 0.7 else text)
        a += ["--regions-file", path]
    mode = rng.randrange(10)
    if mode < 6:
        a.append("--emit-mlir")
    elif mode < 9:
        a += ["-o", os.path.join(tmp, "out.faa")]
    else:
        a.append("--emit-ptx")
    return a


def run_case(cmd, timeout, stdin_text=None):
    """(finding, why) of one run; why is "" for a run that succeeded,
    "rejected" for an expected failure and "known upstream: ..." for a crash
    of KNOWN_UPSTREAM."""
    try:
        p = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True,
                           timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return True, "hang (past %d s)" % timeout
    if p.returncode < 0 or FINDINGS.search(p.stderr):
        for pattern, report in KNOWN_UPSTREAM:
            if pattern.search(p.stderr):
                return False, "known upstream: " + report
    if p.returncode < 0:
        return True, "signal %d" % -p.returncode
    m = FINDINGS.search(p.stderr)
    if m:
        return True, m.group(0)
    return False, "" if p.returncode == 0 else "rejected"


class Fuzzer:
    def __init__(self, args):
        self.a = args
        self.rng = random.Random(args.seed)
        self.deadline = time.time() + args.seconds if args.seconds else None
        self.found = 0
        self.accepted = 0
        self.upstream = {}
        os.makedirs(args.crashes, exist_ok=True)

    def count(self, why):
        self.accepted += why == ""
        if why.startswith("known upstream"):
            self.upstream[why] = self.upstream.get(why, 0) + 1

    def more(self, n):
        if self.deadline:
            return time.time() < self.deadline
        return n < self.a.cases

    def save(self, tool, n, why, cmd, text):
        base = os.path.join(self.a.crashes, "%s-%d-%d" % (tool, self.a.seed, n))
        if text is not None:
            with open(base + ".mlir", "w") as f:
                f.write(text)
        with open(base + ".txt", "w") as f:
            f.write("%s\n%s\n" % (why, json.dumps(cmd)))
        self.found += 1
        print("FINDING %s case %d: %s (%s)" % (tool, n, why, base), flush=True)

    def fa_opt(self):
        chunks = seeds()
        fa_opt = os.path.join(self.a.build, "bin", "fa-opt")
        n = 0
        while self.more(n):
            text = mutate_text(self.rng, self.rng.choice(chunks))
            cmd = [fa_opt, "-"] + opt_pipeline(self.rng)
            finding, why = run_case(cmd, self.a.timeout, text)
            self.count(why)
            if finding:
                self.save("fa-opt", n, why, cmd, text)
            n += 1
        return n

    def fa_compile(self):
        fa_compile = os.path.join(self.a.build, "bin", "fa-compile")
        n = 0
        with tempfile.TemporaryDirectory() as tmp:
            while self.more(n):
                cmd = [fa_compile] + compile_args(self.rng, tmp)
                finding, why = run_case(cmd, self.a.timeout)
                self.count(why)
                if finding:
                    self.save("fa-compile", n, why, cmd, None)
                n += 1
        return n

    def runtime(self):
        b = self.a.build
        fuzz = os.path.join(b, "bin", "fuzz_runtime")
        with tempfile.TemporaryDirectory() as tmp:
            seeds_ = []
            for i, opts in enumerate([
                    "--target host --lse --d 64 --dtype f16 --causal bottom_right --hq 4 --hkv 2",
                    "--target sm90 --lse --d 128 --dtype bf16 --causal bottom_right --hq 8 --hkv 2",
                    "--target sm90 --lse --d 128 --dtype bf16 --causal bottom_right --hq 32 "
                    "--hkv 8 --num-splits 0"]):
                path = os.path.join(tmp, "seed%d.faa" % i)
                r = subprocess.run([os.path.join(b, "bin", "fa-compile")] + opts.split() +
                                   ["-o", path], capture_output=True)
                if r.returncode == 0:
                    seeds_.append(path)  # sm90 seeds need ptxas
            n, batch = 0, 2000
            while self.more(n):
                last = os.path.join(tmp, "last.faa")
                cmd = [fuzz, str(batch), str(self.a.seed * 1000003 + n), last] + seeds_
                finding, why = run_case(cmd, max(self.a.timeout, 120))
                if finding:
                    with open(last, "rb") as f:
                        data = f.read()
                    base = os.path.join(self.a.crashes, "runtime-%d-%d" % (self.a.seed, n))
                    with open(base + ".faa", "wb") as f:
                        f.write(data)
                    self.save("runtime", n, why, cmd, None)
                n += batch
        return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tool", nargs="?", default="all",
                    choices=["fa-opt", "fa-compile", "runtime", "all"])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=0,
                    help="run each tool this long (instead of --cases)")
    ap.add_argument("--cases", type=int, default=100, help="cases per tool")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=60, help="seconds before a case is a hang")
    ap.add_argument("--crashes", default="fuzz-crashes")
    a = ap.parse_args()
    tools = ["fa-opt", "fa-compile", "runtime"] if a.tool == "all" else [a.tool]
    f = Fuzzer(a)
    for tool in tools:
        start, before = time.time(), f.found
        f.accepted, f.upstream = 0, {}
        f.deadline = start + a.seconds if a.seconds else None
        n = getattr(f, tool.replace("-", "_"))()
        print("fuzz %s: %d cases in %.0f s (%d accepted), %d findings"
              % (tool, n, time.time() - start, f.accepted, f.found - before), flush=True)
        for why, count in f.upstream.items():
            print("  %d cases hit a crash %s" % (count, why), flush=True)
    return 1 if f.found else 0


if __name__ == "__main__":
    sys.exit(main())

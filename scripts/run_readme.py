#!/usr/bin/env python3
"""Runs the shell blocks of README.md as written, against a build.

Usage: scripts/run_readme.py SOURCE_DIR BUILD_DIR WORK_DIR

WORK_DIR is emptied and set up as a stand-in for the repository's root: a
symbolic link to each top-level entry of SOURCE_DIR, and `build` linked to
BUILD_DIR (the README writes `build/bin/...`). HOME points into WORK_DIR, so
the runtime's default cache (~/.cache/flashattn) lands there too.

Fenced blocks are taken in order:
- ```sh blocks run with `bash -e` in WORK_DIR, one process per block (a
  variable set in one block is not seen by the next);
- a block after the line `<!-- file: NAME -->` is written to WORK_DIR/NAME
  (the examples the shell blocks use);
- a block after `<!-- skip-ci: REASON -->` is skipped (the two make commands,
  GPU steps, installs outside the scratch directory);
- a block after `<!-- ci-requires: ptxas -->` runs only where ptxas is found
  ($FLASHATTN_PTXAS, the PATH, $CUDA_HOME/bin, /usr/local/cuda/bin: the
  compiler's own lookup).
Every other block (C, CMake, MLIR without a file name, diagnostics) is text.
Exits 1 at the first block that fails, after printing it and its output.
"""

import os
import re
import shutil
import subprocess
import sys

MARK = re.compile(r"^<!--\s*(skip-ci|file|ci-requires):\s*(.*?)\s*-->\s*$")


def blocks(text):
    """(language, body, marker, marker argument, line) per fenced block."""
    out = []
    lines = text.split("\n")
    i = 0
    prev = ""
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^```(\S*)\s*$", line)
        if m:
            start = i + 1
            j = start
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            mark = MARK.match(prev)
            out.append((m.group(1), "\n".join(lines[start:j]) + "\n",
                        mark.group(1) if mark else None,
                        mark.group(2) if mark else None, start))
            i = j + 1
            prev = ""
            continue
        if line.strip():
            prev = line.strip()
        i += 1
    return out


def have_ptxas():
    cands = [os.environ.get("FLASHATTN_PTXAS", ""), shutil.which("ptxas") or ""]
    if os.environ.get("CUDA_HOME"):
        cands.append(os.path.join(os.environ["CUDA_HOME"], "bin", "ptxas"))
    cands.append("/usr/local/cuda/bin/ptxas")
    return any(c and os.access(c, os.X_OK) for c in cands)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, build, work = (os.path.abspath(a) for a in sys.argv[1:])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "home"))
    for name in os.listdir(src):
        if name in (".git", "build") or os.path.exists(os.path.join(work, name)):
            continue
        os.symlink(os.path.join(src, name), os.path.join(work, name))
    os.symlink(build, os.path.join(work, "build"))
    env = dict(os.environ, HOME=os.path.join(work, "home"))
    env.pop("FLASHATTN_CACHE_DIR", None)

    with open(os.path.join(src, "README.md")) as f:
        found = blocks(f.read())
    ran = skipped = 0
    for lang, body, mark, arg, line in found:
        where = "README.md:%d" % line
        if mark == "file":
            with open(os.path.join(work, arg), "w") as f:
                f.write(body)
            print("%s: wrote %s" % (where, arg))
            continue
        if lang != "sh":
            continue
        if mark == "skip-ci" or (mark == "ci-requires" and arg == "ptxas" and not have_ptxas()):
            print("%s: skipped (%s)" % (where, arg if mark == "skip-ci" else "needs ptxas"))
            skipped += 1
            continue
        print("%s: running" % where, flush=True)
        r = subprocess.run(["bash", "-e", "-c", body], cwd=work, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            print("%s: FAILED (exit %d):\n%s\n--- output ---\n%s" % (where, r.returncode, body,
                                                                   r.stdout[-8000:]))
            return 1
        ran += 1
    if ran == 0:
        print("no shell block ran")
        return 1
    print("README.md: %d shell blocks ran, %d skipped" % (ran, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())

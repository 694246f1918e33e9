#!/bin/sh
# Compares the sm90 kernels' PTX of this tree with an earlier commit's, for
# every configuration test/gpu/build_sm90_artifacts.sh compiles: a change to
# the kernel builders that should not change the kernels (a refactoring, a
# pass boundary moved) is checked without a GPU.
#
# Usage: scripts/compare_sm90_ptx.sh REF [BUILD_DIR]
#   REF        a commit (default HEAD: the tree's uncommitted changes)
#   BUILD_DIR  this tree's build (default build), with fa-compile built
# The reference is built in a git worktree under ${FA_REF_DIR:-/tmp/fa-ref}
# (kept between runs, so that a second comparison with the same REF only
# recompiles what changed). Prints "same PTX: NAME" or "DIFFERENT PTX:
# NAME" per configuration and exits 1 on any difference; the PTX files are
# left in ${FA_OUT:-/tmp/fa-ptx} (NAME.ptx and NAME.ref.ptx) to diff.
set -euf
ref=${1:-HEAD}
build=$(cd "${2:-build}" && pwd)
src=$(git rev-parse --show-toplevel)
refdir=${FA_REF_DIR:-/tmp/fa-ref}
if [ ! -d "$refdir" ]; then
  git -C "$src" worktree add --detach "$refdir" "$ref" >/dev/null
else
  git -C "$refdir" checkout -q --detach "$ref"
fi
cmake -G Ninja -S "$refdir" -B "$refdir/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$refdir/build" --target fa-compile >/dev/null
cmake --build "$build" --target fa-compile >/dev/null
out=${FA_OUT:-/tmp/fa-ptx}
rm -rf "$out" && mkdir -p "$out"
cd "$src"
FA_REFERENCE_BUILD="$refdir/build" FA_OUT="$out" sh test/gpu/build_sm90_artifacts.sh "$build"

"""The package's command line:

    python3 -m flashattn_mlir precompile --cache-dir DIR FILE...

compiles the kernel configurations of FILE (JSON, see precompile.py) into
the disk cache DIR."""

import argparse
import sys

from .precompile import precompile, read_configs


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m flashattn_mlir")
    sub = ap.add_subparsers(dest="command", required=True)
    pre = sub.add_parser("precompile", help="compile configurations into a cache directory")
    pre.add_argument("--cache-dir", required=True, help="the disk cache to fill")
    pre.add_argument("--compiler-library", help="libflashattn_compiler.so to use")
    pre.add_argument("configs", nargs="+", help="JSON files of configurations")
    a = ap.parse_args(argv)
    configs = read_configs(a.configs)
    stats = precompile(configs, a.cache_dir, a.compiler_library)
    print("%d configurations: %d compiled, %d already cached" %
          (len(configs), stats["compiles"], stats["disk_hits"] + stats["memory_hits"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

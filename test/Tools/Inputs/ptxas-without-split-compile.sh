#!/bin/sh
# A ptxas that predates --split-compile: refuses it as an older ptxas does,
# otherwise runs the real one ($REAL_PTXAS).
for a in "$@"; do
  if [ "$a" = "--split-compile" ]; then
    echo "ptxas fatal   : Unknown option '--split-compile'" >&2
    exit 1
  fi
done
exec "$REAL_PTXAS" "$@"

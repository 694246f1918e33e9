// REQUIRES: ptxas
// fa-compile assembles an artifact's entries with ptxas --split-compile 8
// (the option's count is in the cubin's tool note); a ptxas that does not
// know the option refuses it, and the artifact is assembled again without
// it: the same kernel, compiled on one thread.
// RUN: fa-compile --target sm90 --d 64 --dtype f16 --lse -o %t.split.faa
// RUN: grep -a -c -- '-split-compile 8' %t.split.faa
// RUN: env FLASHATTN_PTXAS=%S/Inputs/ptxas-without-split-compile.sh REAL_PTXAS=%ptxas fa-compile --target sm90 --d 64 --dtype f16 --lse -o %t.one.faa
// RUN: not grep -a -q -- 'split-compile' %t.one.faa
// RUN: grep -a -q '"fa_sm90_0"' %t.one.faa

// MLIR 22's parser crashes on a dense array of index elements
// (llvm/llvm-project#179045): fa-opt reports it as an error at the
// construct, and so does the compiler for region text (fa-compile
// --regions-file, the runtime's config.regions); outside comments only.
// RUN: not fa-opt %s 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: rm -f %t.faa
// RUN: not fa-compile --regions-file %S/Inputs/index-array.regions -o %t.faa 2>&1 | FileCheck %s --check-prefix=REGIONS
// RUN: not test -e %t.faa

// OPT: known-parser-crash.mlir:[[@LINE+2]]:32: error: a dense array of index elements (array<index: ...>) is not supported: MLIR 22's parser crashes on it (llvm/llvm-project#179045); use i64
// A comment that says array<index: 1> is not the construct.
func.func @f() attributes {a = array<index: 1, 2>} {
  return
}

// REGIONS: the config's regions: a dense array of index elements (array<index: ...>) is not supported

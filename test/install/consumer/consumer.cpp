// Parses an .mlir file with the installed flashattn dialect (and func),
// verifies it and prints how many flashattn.attention ops it holds.
// Exits 1 when the file does not parse or holds no attention op.
#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: consumer FILE.mlir\n";
    return 2;
  }
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::flashattn::FlashAttnDialect, mlir::func::FuncDialect>();
  ctx.allowUnregisteredDialects(false);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &ctx);
  if (!module)
    return 1;
  int count = 0;
  module->walk([&](mlir::flashattn::AttentionOp) { ++count; });
  llvm::outs() << "consumer: " << count << " flashattn.attention op(s)\n";
  return count > 0 ? 0 : 1;
}

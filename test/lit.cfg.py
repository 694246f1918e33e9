# -*- Python -*-
# lit configuration of flashattn-mlir: FileCheck tests of the dialect, the
# passes and the conversions, run with the tools of this build.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FLASHATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.flashattn_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "install", "CAPI"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.flashattn_tools_dir, config.llvm_tools_dir]
tools = [ToolSubst("fa-opt", unresolved="fatal"), ToolSubst("fa-run", unresolved="fatal"),
         ToolSubst("fa-compile", unresolved="fatal")]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Examples shipped at the top of the repository.
config.substitutions.append(("%examples", os.path.join(config.flashattn_src_root, "examples")))

# ptxas (CUDA 12+, sm_90a) is not a Debian package: tests that build cubins
# run only where it is found (REQUIRES: ptxas); PTX text needs only LLVM.
import shutil
ptxas = os.environ.get("FLASHATTN_PTXAS") or shutil.which("ptxas") or next(
    (p for p in (os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "ptxas"),
                 "/usr/local/cuda/bin/ptxas") if os.path.isfile(p)), None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# The source and build trees (scripts of test/gpu run from the source root).
config.substitutions.append(("%fa_src", config.flashattn_src_root))
config.substitutions.append(("%fa_obj", config.flashattn_obj_root))

# MLIR's runner and its runtime libraries (the executed raise test runs
# upstream's lowering of linalg with mlir-runner).
llvm_lib_dir = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
config.substitutions.append(("%mlir_runner_libs", ",".join(
    os.path.join(llvm_lib_dir, n) for n in ("libmlir_runner_utils.so",
                                            "libmlir_c_runner_utils.so"))))

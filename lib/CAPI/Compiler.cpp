//===- Compiler.cpp - one-call compile for C callers and the runtime -----===//

#include "flashattn-c/Compiler.h"

#include "flashattn/Target/HostArtifact.h"
#include "flashattn/compiler_abi.h"
#include "flashattn/version.h"

#include <cstdlib>
#include <cstring>

// The runtime's dlsym contract (flashattn/compiler_abi.h).
static_assert(std::is_same_v<decltype(&flashattnCompileArtifact),
                             fa_compiler_compile_fn>,
              "flashattnCompileArtifact must match fa_compiler_compile_fn");

extern "C" int flashattnCompileArtifact(const fa_attention_config *config,
                                        void **bytes, size_t *size,
                                        char *error, size_t errorSize) {
  auto fail = [&](fa_status st, const std::string &msg) {
    if (error && errorSize)
      snprintf(error, errorSize, "%s", msg.c_str());
    return static_cast<int>(st);
  };
  if (!config || !bytes || !size)
    return fail(FA_ERROR_INVALID_ARGUMENT, "null argument");
  *bytes = nullptr;
  *size = 0;
  std::vector<char> artifact;
  std::string message;
  if (mlir::failed(config->target == FA_TARGET_SM90
                       ? mlir::flashattn::compileSm90Artifact(*config, artifact,
                                                              message)
                       : mlir::flashattn::compileHostArtifact(*config, artifact,
                                                              message)))
    return fail(FA_ERROR_COMPILE_FAILED, message);
  void *out = std::malloc(artifact.size());
  if (!out)
    return fail(FA_ERROR_OUT_OF_MEMORY, "out of memory");
  std::memcpy(out, artifact.data(), artifact.size());
  *bytes = out;
  *size = artifact.size();
  return FA_OK;
}

extern "C" const char *flashattnCompilerVersion(void) {
  return FA_COMPILER_VERSION;
}

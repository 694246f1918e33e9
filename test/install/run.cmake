# cmake -P script: install, configure + build the consumer, run it.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/flashattn/Dialect/FlashAttn/IR/FlashAttn.h
          include/flashattn/Dialect/FlashAttn/IR/FlashAttnOps.h.inc
          include/flashattn-c/Dialects.h
          include/flashattn-c/Passes.h
          lib/cmake/FlashAttn/FlashAttnConfig.cmake
          bin/fa-opt
          include/flashattn/runtime.h
          lib/libflashattn_rt.so
          lib/libflashattn_compiler.so
          lib/pkgconfig/flashattn_rt.pc
          lib/cmake/FlashAttnRuntime/FlashAttnRuntimeConfig.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install tree lacks ${f}")
  endif()
endforeach()
run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build
    -G ${CMAKE_GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix}
    -DMLIR_DIR=${MLIR_DIR}
    -DCAPI_TEST_SOURCE=${CAPI_TEST_SOURCE}
    -DCAPI_PASSES_TEST_SOURCE=${CAPI_PASSES_TEST_SOURCE}
    -DRUNTIME_EXAMPLE_SOURCE=${RUNTIME_EXAMPLE_SOURCE})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer ${EXAMPLE})
run(${WORK_DIR}/build/capi-consumer)
run(${WORK_DIR}/build/capi-passes-consumer)
# The installed runtime example compiles its kernel with the installed
# compiler library into a scratch cache, and a second process hits the disk.
foreach(run 1 2)
  run(${CMAKE_COMMAND} -E env FLASHATTN_CACHE_DIR=${WORK_DIR}/cache
      FLASHATTN_COMPILER_LIB=${prefix}/lib/libflashattn_compiler.so
      ${WORK_DIR}/build/runtime-consumer)
endforeach()
# pkg-config finds the runtime.
run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/lib/pkgconfig
    pkg-config --exists --print-errors flashattn_rt)
# The installed fa-opt starts (it finds libMLIR.so through its RUNPATH).
run(${prefix}/bin/fa-opt ${EXAMPLE} -o ${WORK_DIR}/fa-opt-out.mlir)
# The installed Python package loads the installed runtime (its _paths.py
# names prefix/lib) and runs one host attention, compiled on first use.
if(EXISTS /usr/bin/python3)
  run(${CMAKE_COMMAND} -E env PYTHONPATH=${prefix}/lib/python3/dist-packages
      FLASHATTN_CACHE_DIR=${WORK_DIR}/py-cache
      /usr/bin/python3 -c "import torch, flashattn_mlir as fa, flashattn_mlir._runtime as r; assert r.library_path().startswith('${prefix}/'), r.library_path(); q = torch.randn(1, 4, 2, 64).bfloat16(); assert fa.flash_attn_func(q, q, q).shape == q.shape")
endif()

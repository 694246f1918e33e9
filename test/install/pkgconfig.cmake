# cmake -P script: pkg-config of an install with a non-default prefix.
# Installs the build into WORK_DIR/prefix-a, checks that
# `pkg-config flashattn_rt` gives that prefix's paths and the library's own
# version, builds and runs examples/runtime/attention.c with its flags, then
# moves the install to WORK_DIR/moved/prefix-b and checks that pkg-config
# follows it (the .pc file finds its prefix from where it lies).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix-a)

include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

# pkg-config ARGS... against the install at PREFIX, into OUT.
function(pc prefix out)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/lib/pkgconfig
      pkg-config ${ARGN} flashattn_rt
    RESULT_VARIABLE rc OUTPUT_VARIABLE text OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config ${ARGN} flashattn_rt failed (${rc})")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(check_prefix prefix)
  file(REAL_PATH ${prefix} real)
  pc(${prefix} got --variable=prefix)
  file(REAL_PATH "${got}" got_real)
  if(NOT got_real STREQUAL real)
    message(FATAL_ERROR "pkg-config prefix is ${got}, not ${prefix}")
  endif()
  pc(${prefix} flags --cflags --libs)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  foreach(f ${flags})
    if(f MATCHES "^-[IL](.*)$")
      file(REAL_PATH "${CMAKE_MATCH_1}" dir)
      string(FIND "${dir}" "${real}/" at)
      if(NOT at EQUAL 0 OR NOT IS_DIRECTORY "${dir}")
        message(FATAL_ERROR "pkg-config flag ${f} is outside ${prefix}")
      endif()
    endif()
  endforeach()
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# Version: the one in the library's file name, libflashattn_rt.so.X.Y.Z.
file(GLOB libs RELATIVE ${prefix}/lib ${prefix}/lib/libflashattn_rt.so.*.*.*)
list(LENGTH libs n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one libflashattn_rt.so.X.Y.Z, found: ${libs}")
endif()
string(REPLACE "libflashattn_rt.so." "" lib_version "${libs}")
pc(${prefix} version --modversion)
if(NOT version STREQUAL lib_version)
  message(FATAL_ERROR "pkg-config Version ${version} != library ${lib_version}")
endif()

check_prefix(${prefix})

# A C program built with the flags, run against the install.
pc(${prefix} flags --cflags --libs)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(cc -std=c11 ${RUNTIME_EXAMPLE_SOURCE} ${flags} -lm -o ${WORK_DIR}/attention)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib
    FLASHATTN_CACHE_DIR=${WORK_DIR}/cache ${WORK_DIR}/attention)

# The same install, moved.
file(MAKE_DIRECTORY ${WORK_DIR}/moved)
file(RENAME ${prefix} ${WORK_DIR}/moved/prefix-b)
check_prefix(${WORK_DIR}/moved/prefix-b)

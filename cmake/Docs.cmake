# The generated references (dialect, passes) are built with the default
# target; a test compares each with its committed copy under docs/
# (`make docs` refreshes the copies).
add_custom_target(flashattn-docs ALL)
add_dependencies(flashattn-docs FlashAttnDialectDocGen
  FlashAttnTransformPassesDocGen FlashAttnConversionPassesDocGen)
foreach(doc Dialects/FlashAttnDialect Passes/FlashAttnTransformPasses
            Passes/FlashAttnConversionPasses)
  string(REPLACE "/" "." name ${doc})
  add_test(NAME docs.${name}-up-to-date
    COMMAND ${CMAKE_COMMAND} -E compare_files
      ${PROJECT_BINARY_DIR}/docs/${doc}.md
      ${PROJECT_SOURCE_DIR}/docs/${doc}.md)
endforeach()

# The README's shell blocks, run as written in a scratch directory against
# this build (scripts/run_readme.py says which blocks are skipped and why).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME docs.readme
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/run_readme.py
    ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}
    ${PROJECT_BINARY_DIR}/readme-work)
set_tests_properties(docs.readme PROPERTIES TIMEOUT 600)

# Helpers of the install tests' cmake -P scripts.

# Runs ARGN; a non-zero exit fails the test with the command.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}")
  endif()
endfunction()

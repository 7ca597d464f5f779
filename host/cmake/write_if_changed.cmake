# write_if_changed(FILE TEXT): writes TEXT to FILE unless FILE holds it already, so a generated
# source that did not change does not recompile.
function(write_if_changed file text)
  if(EXISTS "${file}")
    file(READ "${file}" _old)
    if(_old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE "${file}" "${text}")
endfunction()

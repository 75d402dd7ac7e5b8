# Embedding data files in the binary (the shipped plan templates, route tables and
# schemas), so orch works from any folder. Included from the top CMakeLists.txt;
# used by src/flows/embedded_files.cmake and src/route/embedded_data.cmake.

# orch_embed_literal(OUT PATH): PATH's content as a C++ raw string literal in OUT.
# PATH becomes a configure dependency (editing it regenerates the sources).
function(orch_embed_literal out path)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path})
  file(READ ${path} content)
  string(FIND "${content}" ")orch_embed\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${path} contains the raw-string delimiter )orch_embed\"")
  endif()
  set(${out} "R\"orch_embed(${content})orch_embed\"" PARENT_SCOPE)
endfunction()

# orch_write_generated(TARGET PATH CONTENT): writes CONTENT to PATH when it
# changed (so an unrelated reconfigure rebuilds nothing) and adds PATH to
# TARGET's sources.
function(orch_write_generated target path content)
  set(old "")
  if(EXISTS ${path})
    file(READ ${path} old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE ${path} "${content}")
  endif()
  target_sources(${target} PRIVATE ${path})
endfunction()

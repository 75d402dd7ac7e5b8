# What `cmake --install` puts where (GNUInstallDirs; PREFIX is --prefix or
# CMAKE_INSTALL_PREFIX), and the files the build makes for it by running the
# built orch, so that neither can go stale:
#   bin/orch
#   share/orch/schemas/, templates/, data/      copies of the shipped files: orch
#                                               reads its own embedded copies (ARCHITECTURE.md)
#   share/man/man1/orch.1                       cmake/orch_man.cmake: docs/orch.1.in + `orch --help`
#   share/bash-completion/completions/orch      `orch completion bash`
#   share/zsh/vendor-completions/_orch          `orch completion zsh`
#   share/doc/orch/README.md, ARCHITECTURE.md, docs/*.md
# Included from the top CMakeLists.txt after the orch target.
include(GNUInstallDirs)

set(orch_share_dir ${CMAKE_BINARY_DIR}/share)
add_custom_command(
  OUTPUT ${orch_share_dir}/orch.1
  COMMAND ${CMAKE_COMMAND} -DORCH=$<TARGET_FILE:orch> -DTEMPLATE=${CMAKE_SOURCE_DIR}/docs/orch.1.in
          -DOUT=${orch_share_dir}/orch.1 -DVERSION=${PROJECT_VERSION} -P ${CMAKE_SOURCE_DIR}/cmake/orch_man.cmake
  DEPENDS orch ${CMAKE_SOURCE_DIR}/docs/orch.1.in ${CMAKE_SOURCE_DIR}/cmake/orch_man.cmake
  COMMENT "Making the man page orch.1 from docs/orch.1.in and orch --help"
  VERBATIM)
foreach(shell bash zsh)
  add_custom_command(
    OUTPUT ${orch_share_dir}/completion.${shell}
    COMMAND ${CMAKE_COMMAND} -DOUT=${orch_share_dir}/completion.${shell} -P ${CMAKE_SOURCE_DIR}/cmake/orch_capture.cmake
            -- $<TARGET_FILE:orch> completion ${shell}
    DEPENDS orch ${CMAKE_SOURCE_DIR}/cmake/orch_capture.cmake
    COMMENT "Making the ${shell} completion script (orch completion ${shell})"
    VERBATIM)
endforeach()
add_custom_target(orch_share_files ALL
  DEPENDS ${orch_share_dir}/orch.1 ${orch_share_dir}/completion.bash ${orch_share_dir}/completion.zsh)

install(TARGETS orch RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# `orch serve` execs the orch-serve beside orch (src/serve/main.cc).
if(TARGET orch-serve)
  install(TARGETS orch-serve RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/schemas ${CMAKE_SOURCE_DIR}/templates ${CMAKE_SOURCE_DIR}/data
        DESTINATION ${CMAKE_INSTALL_DATADIR}/orch)
install(FILES ${orch_share_dir}/orch.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${orch_share_dir}/completion.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME orch)
install(FILES ${orch_share_dir}/completion.zsh DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions
        RENAME _orch)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/ARCHITECTURE.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")

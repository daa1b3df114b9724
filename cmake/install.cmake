# `cmake --install BUILD --prefix DIR` puts zfetch (and zfetch-gpu where CUDA was found) in DIR/bin,
# the docs and the example scenarios in DIR/share/doc/zfetch; `cpack` in BUILD makes a .deb whose
# dependencies are the Debian runtime packages of the libraries zfetch links.
include(GNUInstallDirs)

install(TARGETS zfetch RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET zfetch-gpu)
  install(TARGETS zfetch-gpu RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(DIRECTORY scenarios/seed scenarios/models DESTINATION ${CMAKE_INSTALL_DOCDIR}/scenarios)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME zfetch)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Deterministic simulator and trace verifier for DeepSpeed ZeRO-3 parameter-fetch schedules")
set(CPACK_PACKAGE_CONTACT "zfetch maintainers")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The runtime libraries zfetch links dynamically (Boost, CLI11 and nlohmann-json are header-only).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libyaml-cpp0.7, libfmt9")
if(Protobuf_FOUND)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libprotobuf32")  # --chakra
endif()
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
include(CPack)

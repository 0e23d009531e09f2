# `cpack -G DEB` in a build folder: te-bench, te-workbench, desktop entry and icon. LibTorch is not
# bundled (it is gigabytes): the binaries load it from the set-up script's virtual environment.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME te-workbench)
set(CPACK_PACKAGE_CONTACT "TE Workbench developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(_deb_depends "libsqlite3-0")
if(TEWB_BUILD_GUI)
  string(APPEND _deb_depends ", libqt6widgets6, libqt6charts6, libqt6svg6")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_deb_depends}")
include(CPack)

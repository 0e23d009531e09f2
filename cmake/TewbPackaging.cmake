# `cpack -G DEB` in a build folder: te-bench, te-workbench, te-workbench-setup, the desktop entry and the
# icon. LibTorch is not bundled (it is gigabytes, as the torch wheel): the launcher finds it in a virtual
# environment, and on first run without one names the command that installs it (te-workbench-setup).
# The dependencies are listed by hand (dpkg-shlibdeps stops at LibTorch, which no Debian package has);
# tests/fresh-machine/check.sh installs the package with --no-install-recommends into a bare Debian 12 to
# prove the list complete.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME te-workbench)
set(CPACK_PACKAGE_VENDOR "TE Workbench developers")
set(CPACK_PACKAGE_CONTACT "TE Workbench developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION "Trains a small GPT with plain LibTorch and with Transformer-Engine-style fused modules in BF16 and FP8, and shows loss, step time and memory side by side (te-workbench), or headless (te-bench). LibTorch comes from PyPI: run te-workbench-setup once after installing.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
# python3-venv: te-workbench-setup makes the virtual environment for LibTorch.
set(_deb_depends "libc6, libstdc++6, libgcc-s1, libsqlite3-0, libssl3, python3, python3-venv")
if(TEWB_BUILD_GUI)
  string(APPEND _deb_depends ", libqt6core6 (>= 6.4), libqt6gui6 (>= 6.4), libqt6widgets6 (>= 6.4), libqt6charts6 (>= 6.4), libqt6svg6 (>= 6.4)")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "fonts-dejavu-core")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_deb_depends}")
include(CPack)

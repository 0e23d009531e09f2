# The libraries every build needs, the fuzz build included; a missing one stops configure naming its
# Debian package.
# OpenSSL: its libcrypto's SHA-256 names the token files runs train on (core/data).
foreach(_entry nlohmann_json:nlohmann-json3-dev CLI11:libcli11-dev SQLite3:libsqlite3-dev OpenSSL:libssl-dev)
  string(REPLACE ":" ";" _pair "${_entry}")
  list(GET _pair 0 _name)
  list(GET _pair 1 _package)
  find_package(${_name} QUIET)
  if(NOT ${_name}_FOUND)
    message(FATAL_ERROR "TE Workbench: ${_name} was not found: install the Debian package ${_package} "
                        "(packaging/setup-deps.sh does), or pass its prefix in CMAKE_PREFIX_PATH.")
  endif()
endforeach()
if(nlohmann_json_VERSION VERSION_LESS 3.10)
  message(FATAL_ERROR "TE Workbench: nlohmann_json ${nlohmann_json_VERSION} is too old; 3.10 or newer is needed")
endif()

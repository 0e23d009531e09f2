# Run at build time (cmake -P): writes BuildInfo.cpp with the current git commit. configure_file only
# touches the output when its content changes, so an unchanged commit rebuilds nothing.
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE TEWB_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                OUTPUT_VARIABLE _dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT TEWB_GIT_COMMIT)
  set(TEWB_GIT_COMMIT "unknown")
elseif(_dirty)
  string(APPEND TEWB_GIT_COMMIT "-dirty")
endif()
configure_file("${INPUT}" "${OUTPUT}" @ONLY)

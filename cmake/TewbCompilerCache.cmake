find_program(TEWB_CCACHE ccache)
if(TEWB_CCACHE)
  # The sloppiness lets ccache cache translation units built with the LibTorch precompiled header;
  # base_dir and nohashdir let a fresh clone in another folder (as CI makes) hit what an earlier one stored.
  set(_launcher ${CMAKE_COMMAND} -E env
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=true
      ${TEWB_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_launcher})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${_launcher})
  message(STATUS "TE Workbench: compiler cache ${TEWB_CCACHE}")
else()
  message(STATUS "TE Workbench: no ccache found; rebuilds will be slow (apt-get install ccache)")
endif()

# The linker: gold where the compiler accepts it (binutils ships it beside ld, so every machine the README sets
# up has it). The project links about sixty programs against LibTorch and a large static core; ld.bfd spends
# 3 to 4 s on each of them under ASan, gold about half that (docs/reliability.md, "CI's time"). The CUDA
# objects are device-linked by nvcc before; only the host link uses it. TEWB_LINKER=default keeps the
# compiler's own choice.
set(TEWB_LINKER "gold" CACHE STRING "The host linker: gold or default")
set_property(CACHE TEWB_LINKER PROPERTY STRINGS gold default)
if(TEWB_LINKER STREQUAL "gold")
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=gold" TEWB_LINKER_GOLD_WORKS)
  if(TEWB_LINKER_GOLD_WORKS)
    add_link_options($<$<LINK_LANGUAGE:CXX>:-fuse-ld=gold>)
    message(STATUS "TE Workbench: linking with gold")
  else()
    message(STATUS "TE Workbench: the compiler does not accept -fuse-ld=gold; linking with its default linker")
  endif()
elseif(NOT TEWB_LINKER STREQUAL "default")
  message(FATAL_ERROR "TEWB_LINKER '${TEWB_LINKER}': unknown; allowed: gold, default")
endif()

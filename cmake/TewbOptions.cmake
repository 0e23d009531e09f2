# What the build includes. TEWB_BUILD_GUI and TEWB_BUILD_KERNELS are ON by default: a missing Qt module or
# CUDA compiler stops configure with the Debian package (or set-up step) that provides it, because a
# silently smaller build once passed CI with 3 of 22 suites. AUTO ("on if found") is there for those who
# ask for it (the gpu-server preset, -DTEWB_BUILD_GUI=AUTO); OFF leaves a part out.
set(TEWB_BUILD_GUI ON CACHE STRING "Build the Qt GUI (te-workbench) and the Qt test suites: ON, AUTO or OFF")
set(TEWB_BUILD_KERNELS ON CACHE STRING "Build the CUDA kernels library with nvcc: ON, AUTO or OFF")
set_property(CACHE TEWB_BUILD_GUI PROPERTY STRINGS ON AUTO OFF)
set_property(CACHE TEWB_BUILD_KERNELS PROPERTY STRINGS ON AUTO OFF)
foreach(_option TEWB_BUILD_GUI TEWB_BUILD_KERNELS)
  if(NOT ${_option} MATCHES "^(ON|AUTO|OFF)$")
    message(FATAL_ERROR "${_option}=${${_option}}: allowed values are ON, AUTO and OFF")
  endif()
endforeach()

include(TewbVenv)

# A part that was asked for (ON) and cannot be built stops configure; under AUTO it is left out, said once.
function(tewb_part_missing option wanted what)
  if(wanted STREQUAL "ON")
    message(FATAL_ERROR "TE Workbench: ${what}\n"
                        "Run packaging/setup-deps.sh (it installs what is missing), or configure with "
                        "-D${option}=AUTO (build it only where found) or -D${option}=OFF.")
  endif()
  message(STATUS "TE Workbench: ${option} is AUTO and ${what} — left out")
endfunction()

# --- CUDA compiler and kernels --------------------------------------------------------------
function(tewb_nvcc_release nvcc out)
  execute_process(COMMAND "${nvcc}" --version OUTPUT_VARIABLE _text ERROR_QUIET RESULT_VARIABLE _rc)
  set(_release "")
  if(_rc EQUAL 0 AND _text MATCHES "release ([0-9]+\\.[0-9]+)")
    set(_release "${CMAKE_MATCH_1}")
  endif()
  set(${out} "${_release}" PARENT_SCOPE)
endfunction()

# LibTorch's CUDA build enables the CUDA language in its own CMake config, kernels or not, and fails
# there when it has to guess the compiler (a toolkit off PATH, say). So the compiler is looked for and
# set up whenever one is found; TEWB_BUILD_KERNELS decides only whether the kernels library is built.
set(_want_kernels ${TEWB_BUILD_KERNELS})
set(TEWB_BUILD_KERNELS OFF)
# The first CUDA 13 nvcc, in the same order as packaging/setup-deps.sh; the set-up script's PyPI
# compiler in the virtual environment comes last.
set(_looked "CMAKE_CUDA_COMPILER, CUDACXX, PATH, /usr/local/cuda/bin, /usr/local/cuda-13*/bin, ${TEWB_VENV_DIR}/cuda/bin")
set(_other_releases "")
if(NOT CMAKE_CUDA_COMPILER)
  find_program(_path_nvcc nvcc NO_CACHE)
  file(GLOB _versioned_nvcc /usr/local/cuda-13*/bin/nvcc)
  foreach(_candidate "$ENV{CUDACXX}" "${_path_nvcc}" /usr/local/cuda/bin/nvcc ${_versioned_nvcc} "${TEWB_VENV_DIR}/cuda/bin/nvcc")
    if(_candidate AND EXISTS "${_candidate}")
      tewb_nvcc_release("${_candidate}" _release)
      if(_release MATCHES "^13\\.")
        set(CMAKE_CUDA_COMPILER "${_candidate}" CACHE FILEPATH "nvcc" FORCE)
        break()
      endif()
      list(APPEND _other_releases "${_candidate} (release ${_release})")
    endif()
  endforeach()
endif()
if(CMAKE_CUDA_COMPILER)
  tewb_nvcc_release("${CMAKE_CUDA_COMPILER}" _release)
  if(NOT _release MATCHES "^13\\.")
    if(_release STREQUAL "")
      set(_problem "does not run (`nvcc --version` failed)")
    else()
      set(_problem "is CUDA release ${_release}")
    endif()
    message(FATAL_ERROR "TE Workbench: CUDA compiler ${CMAKE_CUDA_COMPILER} ${_problem}; LibTorch (torch 2.11.0) "
                        "is built for CUDA 13.0. Point CMAKE_CUDA_COMPILER or CUDACXX at a CUDA 13 nvcc, or run "
                        "packaging/setup-deps.sh, which installs one from PyPI when none is found.")
  endif()
  # The toolkit is the nvcc's; tell LibTorch's config (FindCUDA) too, or it searches PATH on its own.
  get_filename_component(_toolkit_root "${CMAKE_CUDA_COMPILER}" DIRECTORY)
  get_filename_component(_toolkit_root "${_toolkit_root}" DIRECTORY)
  set(CUDAToolkit_ROOT "${_toolkit_root}")
  set(CUDA_TOOLKIT_ROOT_DIR "${_toolkit_root}" CACHE PATH "CUDA toolkit (the nvcc's)")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # Ampere (TE capable), Ada and Hopper (FP8 capable): every CI run compiles all three.
    set(CMAKE_CUDA_ARCHITECTURES 80 89 90 CACHE STRING "CUDA architectures")
  endif()
  # One shared CUDA runtime for the kernels and LibTorch: a static copy would keep its own state.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  if(CMAKE_VERSION VERSION_LESS 3.25.2 AND NOT TARGET CUDA::nvToolsExt)
    # Debian 12's CMake 3.25.1 sets a property on CUDA::nvToolsExt without checking that the target
    # exists, and CUDA 13 has no nvToolsExt library (NVTX 3 is header-only), so configure would stop
    # there. An empty stand-in lets it through; nothing here links nvToolsExt.
    add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
  endif()
  find_package(CUDAToolkit REQUIRED)
  if(NOT TARGET CUDA::cuda_driver)
    # PyPI's CUDA wheels ship no libcuda stub. Nothing here links the driver (LibTorch loads it at run
    # time), but LibTorch's CMake config names this target, so it must exist.
    add_library(CUDA::cuda_driver INTERFACE IMPORTED)
  endif()
endif()

if(_want_kernels STREQUAL "OFF")
  message(STATUS "TE Workbench: CUDA kernels OFF — disabled by TEWB_BUILD_KERNELS=OFF")
elseif(CMAKE_CUDA_COMPILER)
  set(TEWB_BUILD_KERNELS ON)
  message(STATUS "TE Workbench: CUDA kernels ON — nvcc ${CMAKE_CUDA_COMPILER_VERSION} at ${CMAKE_CUDA_COMPILER}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES}")
else()
  set(_what "no CUDA 13 compiler (nvcc) was found; looked at ${_looked}")
  if(_other_releases)
    string(JOIN ", " _others ${_other_releases})
    string(APPEND _what "; found only ${_others}")
  endif()
  tewb_part_missing(TEWB_BUILD_KERNELS "${_want_kernels}" "${_what}")
endif()

# --- Qt GUI ------------------------------------------------------------------------------------
# Each module with the Debian package that has its CMake files, in dependency order, so the message names
# the first thing missing (Charts needs OpenGL, whose CMake files only libqt6opengl6-dev has).
set(_want_gui ${TEWB_BUILD_GUI})
set(TEWB_BUILD_GUI OFF)
if(NOT _want_gui STREQUAL "OFF")
  set(_qt_modules Core:qt6-base-dev Gui:qt6-base-dev Widgets:qt6-base-dev Test:qt6-base-dev
                  OpenGL:libqt6opengl6-dev OpenGLWidgets:qt6-base-dev Charts:qt6-charts-dev)
  set(_qt_missing "")
  foreach(_entry IN LISTS _qt_modules)
    string(REPLACE ":" ";" _pair "${_entry}")
    list(GET _pair 0 _module)
    list(GET _pair 1 _package)
    find_package(Qt6${_module} 6.4 QUIET)
    if(NOT Qt6${_module}_FOUND)
      set(_qt_missing "Qt 6.4+ ${_module} was not found: install the Debian package ${_package}")
      break()
    endif()
  endforeach()
  if(NOT _qt_missing)
    find_package(Qt6 6.4 REQUIRED COMPONENTS Widgets Charts Test)
    set(TEWB_BUILD_GUI ON)
    message(STATUS "TE Workbench: GUI ON — Qt ${Qt6_VERSION} Widgets + Charts at ${Qt6_DIR}")
  else()
    tewb_part_missing(TEWB_BUILD_GUI "${_want_gui}" "${_qt_missing}")
  endif()
else()
  message(STATUS "TE Workbench: GUI OFF — disabled by TEWB_BUILD_GUI=OFF")
endif()

include(TewbLibraries)  # JSON, CLI11, SQLite: every build, the fuzz build too
find_package(Threads REQUIRED)

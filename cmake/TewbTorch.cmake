# LibTorch comes from the torch wheel. Without a Torch_DIR or CMAKE_PREFIX_PATH, ask the python of the
# set-up script's virtual environment ($TEWB_VENV, default ~/.local/share/te-workbench/venv) or, failing
# that, python3 on PATH, where torch.utils.cmake_prefix_path is.
include(TewbVenv)
if(NOT Torch_DIR)
  set(_pythons "${TEWB_VENV_DIR}/bin/python")
  find_program(_system_python python3)
  if(_system_python)
    list(APPEND _pythons "${_system_python}")
  endif()
  foreach(_py IN LISTS _pythons)
    if(EXISTS "${_py}")
      execute_process(COMMAND "${_py}" -c "import torch, sys; sys.stdout.write(torch.utils.cmake_prefix_path)"
                      OUTPUT_VARIABLE _torch_prefix RESULT_VARIABLE _rc ERROR_QUIET)
      if(_rc EQUAL 0 AND _torch_prefix)
        list(APPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
        set(TEWB_TORCH_PYTHON "${_py}" CACHE FILEPATH "python whose torch package provides LibTorch")
        break()
      endif()
    endif()
  endforeach()
endif()

# Without it, LibTorch's config tries to run a program on the local GPU to pick architectures, and
# development machines and CI have none.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "8.0;8.9;9.0")
endif()
find_package(Torch QUIET)
if(NOT Torch_FOUND)
  message(FATAL_ERROR "LibTorch not found. Run packaging/setup-deps.sh (installs torch==2.11.0 into "
                      "~/.local/share/te-workbench/venv), or pass -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')")
endif()
# Torch's config adds its flags globally through TORCH_CXX_FLAGS (the C++ ABI macro); targets get them via torch.
set(TEWB_TORCH_HAS_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(TEWB_TORCH_HAS_CUDA ON)
endif()
message(STATUS "TE Workbench: LibTorch ${Torch_VERSION} at ${Torch_DIR} (CUDA: ${TEWB_TORCH_HAS_CUDA})")

# One cuBLASLt and one CUDA runtime per process, and they must be LibTorch's: the wheel ships its own
# (site-packages/nvidia/cu13/lib; cuBLASLt 13.1 there against the toolkit's 13.0). A process loads one
# copy per library name, the first one found, and the programs' own dependencies are looked up first, so
# every target links those very files (CUDA::cudart and CUDA::cublasLt point at them; the toolkit still
# gives the headers and nvcc) and that folder goes first in the build tree's run path. Installed programs
# get it from the launcher's LD_LIBRARY_PATH (packaging/launcher.sh).
set(TEWB_WHEEL_CUDA_LIBDIR "")
if(TEWB_TORCH_HAS_CUDA)
  get_filename_component(_wheel_cuda_lib "${TORCH_INSTALL_PREFIX}/../nvidia/cu13/lib" ABSOLUTE)
  if(EXISTS "${_wheel_cuda_lib}/libcublasLt.so.13" AND EXISTS "${_wheel_cuda_lib}/libcudart.so.13")
    set(TEWB_WHEEL_CUDA_LIBDIR "${_wheel_cuda_lib}")
    list(PREPEND CMAKE_BUILD_RPATH "${_wheel_cuda_lib}")
    foreach(_lib cudart cublasLt)
      if(TARGET CUDA::${_lib})
        set_target_properties(CUDA::${_lib} PROPERTIES IMPORTED_LOCATION "${_wheel_cuda_lib}/lib${_lib}.so.13")
      endif()
    endforeach()
    message(STATUS "TE Workbench: cuBLASLt and the CUDA runtime from the torch wheel: ${_wheel_cuda_lib}")
  else()
    message(STATUS "TE Workbench: the torch wheel carries no CUDA 13 libraries at ${_wheel_cuda_lib}; the toolkit's are used")
  endif()
endif()

# Data parallelism (core/dist) runs on LibTorch's own distributed runtime, c10d. Its Gloo backend is in
# libtorch_cpu, but the wheel ships no Gloo headers, and ProcessGroupGloo.hpp includes them: Debian's
# libgloo-dev provides them (headers only; nothing links against its library). NCCL's headers come with
# the wheel's nvidia-nccl package.
find_path(TEWB_GLOO_INCLUDE_DIR gloo/context.h)
set(TEWB_HAVE_GLOO OFF)
if(TEWB_GLOO_INCLUDE_DIR)
  set(TEWB_HAVE_GLOO ON)
  message(STATUS "TE Workbench: data parallelism over Gloo (headers at ${TEWB_GLOO_INCLUDE_DIR})")
else()
  message(STATUS "TE Workbench: no Gloo headers (Debian: libgloo-dev); data-parallel CPU runs are refused with that reason")
endif()
set(TEWB_HAVE_NCCL OFF)
if(TEWB_TORCH_HAS_CUDA)
  get_filename_component(_nccl_include "${TORCH_INSTALL_PREFIX}/../nvidia/nccl/include" ABSOLUTE)
  if(EXISTS "${_nccl_include}/nccl.h")
    set(TEWB_HAVE_NCCL ON)
    set(TEWB_NCCL_INCLUDE_DIR "${_nccl_include}")
    message(STATUS "TE Workbench: data parallelism over NCCL (headers at ${_nccl_include})")
  endif()
endif()

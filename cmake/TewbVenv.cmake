# The set-up script's virtual environment (packaging/setup-deps.sh): LibTorch lives there, and the CUDA
# compiler from PyPI when the machine has no toolkit. Same rule as the script: $TEWB_VENV, else
# ~/.local/share/te-workbench/venv.
if(NOT DEFINED TEWB_VENV_DIR)
  if(DEFINED ENV{TEWB_VENV} AND NOT "$ENV{TEWB_VENV}" STREQUAL "")
    set(TEWB_VENV_DIR "$ENV{TEWB_VENV}")
  else()
    set(TEWB_VENV_DIR "$ENV{HOME}/.local/share/te-workbench/venv")
  endif()
endif()

# PythonPackage: builds python/ (convgen's Python extension and package) when the interpreter has nanobind.
# The interpreter: -DPython3_EXECUTABLE, else the project's .venv (scripts/setup.sh makes it, with nanobind,
# scikit-build-core and pytest from PyPI and Debian's numpy and matplotlib through --system-site-packages), else
# CMake's search. CONVGEN_PYTHON=OFF skips the package; ON makes a missing nanobind an error.
set(CONVGEN_PYTHON AUTO CACHE STRING "Build the Python package (AUTO: where nanobind is found; ON; OFF)")
set_property(CACHE CONVGEN_PYTHON PROPERTY STRINGS AUTO ON OFF)
# Under the sanitizers (preset asan) the extension would need the sanitizer runtimes preloaded into the interpreter:
# the package and its tests are left to the release build there.
if(CONVGEN_SANITIZE AND CONVGEN_PYTHON STREQUAL "AUTO")
  message(STATUS "convgen: sanitizer build: the Python package and its tests are built by the release build only")
elseif(NOT CONVGEN_PYTHON STREQUAL "OFF")
  if(NOT Python3_EXECUTABLE AND Python_EXECUTABLE)  # scikit-build-core (pip install .) names its interpreter
    set(Python3_EXECUTABLE ${Python_EXECUTABLE})
  elseif(NOT Python3_EXECUTABLE AND EXISTS ${PROJECT_SOURCE_DIR}/.venv/bin/python3)
    set(Python3_EXECUTABLE ${PROJECT_SOURCE_DIR}/.venv/bin/python3 CACHE FILEPATH "The project's venv (scripts/setup.sh)")
  endif()
  find_package(Python3 COMPONENTS Interpreter)
  # nanobind's CMake package reads FindPython's `Python` variables: the same interpreter.
  set(Python_EXECUTABLE ${Python3_EXECUTABLE})
  find_package(Python 3.9 COMPONENTS Interpreter Development.Module)
  set(nanobind_dir "")
  if(Python_Interpreter_FOUND AND Python_Development.Module_FOUND)
    execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir OUTPUT_VARIABLE nanobind_dir
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  if(nanobind_dir)
    list(APPEND CMAKE_PREFIX_PATH ${nanobind_dir})
    find_package(nanobind CONFIG REQUIRED)
    set(CONVGEN_PYTHON_BUILT ON)
    add_subdirectory(python)
  elseif(CONVGEN_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "convgen: CONVGEN_PYTHON=ON but ${Python3_EXECUTABLE} has no nanobind or Python headers: "
                        "run scripts/setup.sh (it makes .venv with nanobind) or pip install nanobind")
  else()
    message(STATUS "convgen: no nanobind for ${Python3_EXECUTABLE}: the Python package is not built "
                   "(scripts/setup.sh makes .venv with it; configure again)")
  endif()
endif()

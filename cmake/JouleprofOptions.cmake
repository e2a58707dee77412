# Compiler warnings, sanitizers, the generated config header and CUDA detection.
add_library(jouleprof_warnings INTERFACE)
target_compile_options(jouleprof_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
  -Wcast-align -Woverloaded-virtual -Wdouble-promotion -Wformat=2>)
if(JOULEPROF_WERROR)
  target_compile_options(jouleprof_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()

if(JOULEPROF_SANITIZE)
  string(REPLACE ";" "," _san "${JOULEPROF_SANITIZE}")
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_san})
endif()

set(JOULEPROF_CUDA_ENABLED OFF)
if(NOT JOULEPROF_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no C++20 flag for nvcc
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(JOULEPROF_CUDA_ENABLED ON)
  elseif(JOULEPROF_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "JOULEPROF_WITH_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "jouleprof: CUDA workloads ${JOULEPROF_CUDA_ENABLED}")

execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  OUTPUT_VARIABLE JOULEPROF_GIT_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT JOULEPROF_GIT_REVISION)
  set(JOULEPROF_GIT_REVISION "unknown")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/config.hpp.in ${PROJECT_BINARY_DIR}/generated/jouleprof/config.hpp)

# lowerline_add_model: a model file exported by `lowerline export` as a
# linkable static library target.
#
#   include(path/to/lowerline/cmake/Lowerline.cmake)   # or add_subdirectory(lowerline)
#   lowerline_add_model(classifier model.py TARGET cpu:cortex-a72)
#   lowerline_add_model(server_model model.py THREADS 4)   # x86: OpenMP threads
#   target_link_libraries(app PRIVATE classifier)      # classifier.h on the include path
#
# The file defines `model` and `example_inputs`, as for `lowerline compile`.
# TARGET is a lowerline CPU target ("cpu": this machine, the default; or
# "cpu:NAME", e.g. cpu:cortex-a72). The export runs at build time, again when
# the file changes, with ${LOWERLINE_PYTHON} (a Python where lowerline is
# installed) and the project's C compiler (LOWERLINE_EXPORT_CC), so a
# cross-compiling toolchain file builds the model for the board as well.
# THREADS (default 1) is the exported code's thread count. With 1 the library
# needs only libc and libm; more (x86 targets only) link the OpenMP runtime
# the export copies beside the library (libiomp5.so): the target carries it
# in its link interface as the imported shared library ${name}_openmp.
include_guard(GLOBAL)

if(NOT LOWERLINE_PYTHON)
  if(Python3_EXECUTABLE)
    set(_lowerline_python ${Python3_EXECUTABLE})
  else()
    find_program(_lowerline_python NAMES python3 REQUIRED NO_CMAKE_FIND_ROOT_PATH)
  endif()
  set(LOWERLINE_PYTHON ${_lowerline_python} CACHE FILEPATH
      "the Python that runs `lowerline export` (lowerline installed)")
endif()

function(lowerline_add_model name file)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "TARGET;THREADS" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lowerline_add_model(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET cpu)
  endif()
  if(NOT ARG_THREADS)
    set(ARG_THREADS 1)
  endif()
  if(NOT ARG_THREADS MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "lowerline_add_model(${name}): THREADS must be a positive integer, got ${ARG_THREADS}")
  endif()
  get_filename_component(file ${file} ABSOLUTE)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/lowerline/${name})
  # An imported target's include folder must exist when CMake generates.
  file(MAKE_DIRECTORY ${out})
  set(compiler "")
  if(CMAKE_C_COMPILER)
    set(compiler LOWERLINE_EXPORT_CC=${CMAKE_C_COMPILER})
  endif()
  set(outputs ${out}/lib${name}.a ${out}/${name}.h)
  if(ARG_THREADS GREATER 1)
    list(APPEND outputs ${out}/libiomp5.so)
  endif()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E env ${compiler}
            ${LOWERLINE_PYTHON} -m lowerline.tools.cli export ${file}
            --target ${ARG_TARGET} -o ${out} --name ${name} --num-threads ${ARG_THREADS}
    DEPENDS ${file}
    COMMENT "lowerline export ${name} (${ARG_TARGET})"
    VERBATIM)
  add_custom_target(${name}_lowerline_export DEPENDS ${outputs})
  add_library(${name} STATIC IMPORTED GLOBAL)
  set_target_properties(${name} PROPERTIES
    IMPORTED_LOCATION ${out}/lib${name}.a
    INTERFACE_INCLUDE_DIRECTORIES ${out}
    INTERFACE_LINK_LIBRARIES m)
  add_dependencies(${name} ${name}_lowerline_export)
  if(ARG_THREADS GREATER 1)
    # An imported shared library: CMake puts its folder on the build tree's
    # rpath, so the program finds the runtime where the export put it.
    add_library(${name}_openmp SHARED IMPORTED GLOBAL)
    set_target_properties(${name}_openmp PROPERTIES
      IMPORTED_LOCATION ${out}/libiomp5.so
      IMPORTED_SONAME libiomp5.so)
    add_dependencies(${name}_openmp ${name}_lowerline_export)
    set_property(TARGET ${name} APPEND PROPERTY INTERFACE_LINK_LIBRARIES ${name}_openmp)
  endif()
endfunction()

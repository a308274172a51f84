# lowerline_add_model: a model file exported by `lowerline export` as a
# linkable static library target.
#
#   include(path/to/lowerline/cmake/Lowerline.cmake)   # or add_subdirectory(lowerline)
#   lowerline_add_model(classifier model.py TARGET cpu:cortex-a72)
#   target_link_libraries(app PRIVATE classifier)      # classifier.h on the include path
#
# The file defines `model` and `example_inputs`, as for `lowerline compile`.
# TARGET is a lowerline CPU target ("cpu": this machine, the default; or
# "cpu:NAME", e.g. cpu:cortex-a72). The export runs at build time, again when
# the file changes, with ${LOWERLINE_PYTHON} (a Python where lowerline is
# installed) and the project's C compiler (LOWERLINE_EXPORT_CC), so a
# cross-compiling toolchain file builds the model for the board as well.
# Exported libraries are single-threaded and need only libc and libm.
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
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "TARGET" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lowerline_add_model(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET cpu)
  endif()
  get_filename_component(file ${file} ABSOLUTE)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/lowerline/${name})
  # An imported target's include folder must exist when CMake generates.
  file(MAKE_DIRECTORY ${out})
  set(compiler "")
  if(CMAKE_C_COMPILER)
    set(compiler LOWERLINE_EXPORT_CC=${CMAKE_C_COMPILER})
  endif()
  add_custom_command(
    OUTPUT ${out}/lib${name}.a ${out}/${name}.h
    COMMAND ${CMAKE_COMMAND} -E env ${compiler}
            ${LOWERLINE_PYTHON} -m lowerline.tools.cli export ${file}
            --target ${ARG_TARGET} -o ${out} --name ${name}
    DEPENDS ${file}
    COMMENT "lowerline export ${name} (${ARG_TARGET})"
    VERBATIM)
  add_custom_target(${name}_lowerline_export DEPENDS ${out}/lib${name}.a ${out}/${name}.h)
  add_library(${name} STATIC IMPORTED GLOBAL)
  set_target_properties(${name} PROPERTIES
    IMPORTED_LOCATION ${out}/lib${name}.a
    INTERFACE_INCLUDE_DIRECTORIES ${out}
    INTERFACE_LINK_LIBRARIES m)
  add_dependencies(${name} ${name}_lowerline_export)
endfunction()

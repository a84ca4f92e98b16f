# Finds OpenFst (Debian libfst-dev): the WFST graph builder and the loader of decoding graphs use it.
# Defines OpenFst_FOUND and the imported target OpenFst::fst. OpenFst ships no CMake package of its own.
find_path(OpenFst_INCLUDE_DIR fst/fstlib.h)
find_library(OpenFst_LIBRARY fst)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenFst REQUIRED_VARS OpenFst_LIBRARY OpenFst_INCLUDE_DIR)
if(OpenFst_FOUND AND NOT TARGET OpenFst::fst)
  add_library(OpenFst::fst UNKNOWN IMPORTED)
  # SYSTEM: OpenFst's headers are not built with our warning flags.
  set_target_properties(OpenFst::fst PROPERTIES
    IMPORTED_LOCATION "${OpenFst_LIBRARY}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${OpenFst_INCLUDE_DIR}"
    INTERFACE_INCLUDE_DIRECTORIES "${OpenFst_INCLUDE_DIR}")
endif()
mark_as_advanced(OpenFst_INCLUDE_DIR OpenFst_LIBRARY)

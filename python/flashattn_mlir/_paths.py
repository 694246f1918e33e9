"""Where libflashattn_rt is: written by CMake into the build tree's and
the installed copy of the package; None in the source tree (the loader's
search path, or $FLASHATTN_RT_LIB)."""

LIB_DIR = None

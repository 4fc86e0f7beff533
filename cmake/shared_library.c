/* libtangram.so is made of the whole static archive (CMakeLists.txt); a shared library target
 * needs at least one source of its own, and this is it. */
typedef int tg__shared_library_unit;

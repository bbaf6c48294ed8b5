# zlib: mod_deflate, and compression in libxml2 and curl.  Debian's tarball
# has no win32/ (its .rc and .def are gone), so CMake's Windows target does
# not build: zlib1.dll is compiled here from the library's files, with the
# import library libzlib.dll.a.
SOURCE="zlib=1:1.2.13.dfsg-1 zlib_1.2.13.dfsg.orig.tar.bz2 71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1"
PATCH=
DEPENDS=""

recipe() {
  local f objs=()
  mkdir -p "$2" "$3/bin" "$3/lib" "$3/include"
  for f in adler32 compress crc32 deflate gzclose gzlib gzread gzwrite infback inffast \
           inflate inftrees trees uncompr zutil; do
    run_logged $TRIPLET-gcc -O2 -Wall -DZLIB_DLL -c "$1/$f.c" -o "$2/$f.o"
    objs+=("$2/$f.o")
  done
  run_logged $TRIPLET-gcc -shared -static-libgcc -o "$3/bin/zlib1.dll" "${objs[@]}" \
    -Wl,--out-implib,"$3/lib/libzlib.dll.a"
  cp -p "$1/zlib.h" "$1/zconf.h" "$3/include/"
}

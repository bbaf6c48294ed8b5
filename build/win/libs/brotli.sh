# Brotli: mod_brotli.
SOURCE="brotli=1.0.9-2 brotli_1.0.9.orig.tar.gz f9e8d81d0405ba66d181529af42a3354f838c939095ff99930da6aa9cdf6fe46"
PATCH=
DEPENDS=""

recipe() {
  cmake_install "$1" "$2" "$3" -DBROTLI_DISABLE_TESTS=ON -DBUILD_SHARED_LIBS=ON
  rm -f "$3"/lib/*-static.a
}

# libxml2: mod_xml2enc and mod_proxy_html.  No iconv, ICU, lzma or Python:
# the encodings libxml2 knows itself (UTF-8/16, ISO-8859-x, ASCII).
# Win32 threads, not mingw's pthread emulation: with pthread.h found,
# libxml2.dll imported libwinpthread-1.dll, which neither the zip nor
# Windows has, and mod_xml2enc/mod_proxy_html could not be loaded.
SOURCE="libxml2=2.9.14+dfsg-1.3~deb12u6 libxml2_2.9.14+dfsg.orig.tar.xz 4fe913dec8b1ab89d13b489b419a8203176ea39e931eaa0d25b17eafb9c279e9"
PATCH=
DEPENDS="zlib"

recipe() {
  cmake_install "$1" "$2" "$3" -DBUILD_SHARED_LIBS=ON -DLIBXML2_WITH_ICONV=OFF \
    -DLIBXML2_WITH_ICU=OFF -DLIBXML2_WITH_LZMA=OFF -DLIBXML2_WITH_PYTHON=OFF \
    -DLIBXML2_WITH_ZLIB=ON -DZLIB_INCLUDE_DIR="$DEP_zlib/include" \
    -DZLIB_LIBRARY="$DEP_zlib/lib/libzlib.dll.a" \
    -DLIBXML2_WITH_TESTS=OFF -DLIBXML2_WITH_PROGRAMS=OFF -DLIBXML2_WITH_HTTP=OFF \
    -DLIBXML2_WITH_FTP=OFF -DHAVE_PTHREAD_H=0
}

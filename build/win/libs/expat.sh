# Expat: XML parsing for APR-util (mod_dav, mod_xml2enc's callers).
SOURCE="expat=2.5.0-1+deb12u2 expat_2.5.0.orig.tar.gz ab00ee05c7067fd10a35c5d2a4922ebba746ddd50ff83b79c828da17bbdf1757"
PATCH=
DEPENDS=""

recipe() {  # the tarball is the GitHub tag: the sources are in expat/
  cmake_install "$1/expat" "$2" "$3" -DEXPAT_SHARED_LIBS=ON -DEXPAT_BUILD_TOOLS=OFF \
    -DEXPAT_BUILD_EXAMPLES=OFF -DEXPAT_BUILD_TESTS=OFF -DEXPAT_BUILD_DOCS=OFF \
    -DEXPAT_BUILD_PKGCONFIG=OFF
}

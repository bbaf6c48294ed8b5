# Jansson: JSON for mod_md.
SOURCE="jansson=2.14-2 jansson_2.14.orig.tar.gz c739578bf6b764aa0752db9a2fdadcfe921c78f1228c7ec0bb47fa804c55d17b"
PATCH=
DEPENDS=""

recipe() {
  cmake_install "$1" "$2" "$3" -DJANSSON_BUILD_SHARED_LIBS=ON -DJANSSON_WITHOUT_TESTS=ON \
    -DJANSSON_EXAMPLES=OFF -DJANSSON_BUILD_DOCS=OFF
}

# APR 1.7: the portability layer under httpd.  Shared libapr-1.dll only, with
# its private headers (httpd's Windows code includes arch/win32 ones).
SOURCE="apr=1.7.2-3+deb12u1 apr_1.7.2.orig.tar.bz2 75e77cc86776c030c0a5c408dfbd0bf2a0b75eed5351e52d5439fa1e5509a43e"
PATCH=apr-1.7.2.patch
DEPENDS=""

recipe() {  # $1 = source, $2 = build dir, $3 = prefix
  cmake_install "$1" "$2" "$3" -DCMAKE_USER_MAKE_RULES_OVERRIDE="$NOPREFIX" \
    -DAPR_INSTALL_PRIVATE_H=ON -DAPR_BUILD_STATIC=OFF -DINSTALL_PDB=OFF
}

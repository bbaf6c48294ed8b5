# APR-util 1.6: buckets, brigades, DBM, XML (expat), apr_crypto (OpenSSL,
# for mod_session_crypto), LDAP (the system's wldap32, for mod_ldap and
# mod_authnz_ldap).  No ODBC.
SOURCE="apr-util=1.6.3-1+deb12u1 apr-util_1.6.3.orig.tar.bz2 a41076e3710746326c3945042994ad9a4fcac0ce0277dd8fea076fec3c9772b5"
PATCH=apr-util-1.6.3.patch
DEPENDS="apr expat openssl"

recipe() {
  local apr=$DEP_apr expat=$DEP_expat ssl=$DEP_openssl
  cmake_install "$1" "$2" "$3" -DCMAKE_USER_MAKE_RULES_OVERRIDE="$NOPREFIX" \
    -DAPU_BUILD_STATIC=OFF -DINSTALL_PDB=OFF \
    -DAPR_INCLUDE_DIR="$apr/include" -DAPR_LIBRARIES="$apr/lib/libapr-1.dll.a" \
    -DEXPAT_INCLUDE_DIR="$expat/include" -DEXPAT_LIBRARY="$expat/lib/libexpat.dll.a" \
    -DAPU_HAVE_ODBC=OFF -DAPR_HAS_LDAP=ON -DAPU_HAVE_CRYPTO=ON \
    -DOPENSSL_ROOT_DIR="$ssl" -DOPENSSL_INCLUDE_DIR="$ssl/include" \
    -DOPENSSL_CRYPTO_LIBRARY="$ssl/lib/libcrypto.dll.a" \
    -DOPENSSL_SSL_LIBRARY="$ssl/lib/libssl.dll.a" \
    -DLIB_EAY="$ssl/lib/libcrypto.dll.a" -DSSL_EAY="$ssl/lib/libssl.dll.a"
}

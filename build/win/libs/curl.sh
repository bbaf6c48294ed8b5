# libcurl: mod_md's ACME client.  HTTP(S) only, OpenSSL, zlib; no curl.exe.
SOURCE="curl=7.88.1-10+deb12u15 curl_7.88.1.orig.tar.gz cdb38b72e36bc5d33d5b8810f8018ece1baa29a8f215b4495e495ded82bbf3c7"
PATCH=
DEPENDS="openssl zlib"

recipe() {
  local ssl=$DEP_openssl z=$DEP_zlib
  cmake_install "$1" "$2" "$3" -DBUILD_SHARED_LIBS=ON -DBUILD_CURL_EXE=OFF \
    -DBUILD_TESTING=OFF -DENABLE_MANUAL=OFF -DHTTP_ONLY=ON -DCURL_USE_LIBSSH2=OFF \
    -DCURL_USE_OPENSSL=ON -DCURL_USE_SCHANNEL=OFF -DUSE_NGHTTP2=OFF -DCURL_DISABLE_LDAP=ON \
    -DCURL_CA_BUNDLE=none -DCURL_CA_PATH=none \
    -DOPENSSL_ROOT_DIR="$ssl" -DOPENSSL_INCLUDE_DIR="$ssl/include" \
    -DOPENSSL_CRYPTO_LIBRARY="$ssl/lib/libcrypto.dll.a" \
    -DOPENSSL_SSL_LIBRARY="$ssl/lib/libssl.dll.a" \
    -DLIB_EAY="$ssl/lib/libcrypto.dll.a" -DSSL_EAY="$ssl/lib/libssl.dll.a" \
    -DZLIB_INCLUDE_DIR="$z/include" -DZLIB_LIBRARY="$z/lib/libzlib.dll.a"
}

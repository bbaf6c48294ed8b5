# OpenSSL 3.0: mod_ssl, ab's https, apr_crypto, curl (mod_md); openssl.exe
# for the distribution.  Paths compiled in are the distribution's
# (\Apache24 on the drive httpd runs from): the default openssl.cnf is
# \Apache24\conf\openssl.cnf, as in the Windows builds users know.
# Only what is used is built: the DLLs, openssl.exe and the legacy
# provider; not the static libraries (a second compile of every libcrypto
# file), the engines or the tests.
SOURCE="openssl=3.0.22-1~deb12u2 openssl_3.0.22.orig.tar.gz 67ebca7e50d17383028045486653492195b83db95f8558709701bb47b5c1ef81"
PATCH=
DEPENDS=""

recipe() {
  local s=$1 d=$3
  # OpenSSL builds in its source tree; $1 is a fresh copy.
  cd "$s"
  run_logged perl Configure mingw64 --cross-compile-prefix=$TRIPLET- \
    --prefix=/Apache24 --openssldir=/Apache24/conf --libdir=lib shared no-tests
  run_logged make -j "$JOBS" build_generated
  run_logged make -j "$JOBS" libcrypto-3-x64.dll libssl-3-x64.dll apps/openssl.exe \
    providers/legacy.dll
  mkdir -p "$d/bin" "$d/lib/ossl-modules" "$d/include/openssl" "$d/conf"
  cp -p libcrypto-3-x64.dll libssl-3-x64.dll apps/openssl.exe "$d/bin/"
  cp -p libcrypto.dll.a libssl.dll.a "$d/lib/"
  cp -p providers/legacy.dll "$d/lib/ossl-modules/"
  cp -p include/openssl/*.h "$d/include/openssl/"
  # the default configuration openssl.exe reads
  cp -p apps/openssl.cnf "$d/conf/"
}

# The httpd builds: how httpd 2.4 is configured and built for Windows.
# Sourced by build.sh, which calls build_stock and build_ng.
#
# stock: httpd with the stock WinNT MPM, every module that builds, the
#        support programs (ab, htpasswd, rotatelogs, ...).
# ng:    the same tree with mpm_winnt_ng built in instead.  On Windows the
#        MPM lives in libhttpd.dll, and modules import httpd's API from it
#        by name, so ng is stock's installation with httpd.exe and
#        libhttpd.dll (and its import library) rebuilt: both builds carry
#        the very same module files, and only the MPM differs.
#
# Set by the caller: HERE, SRC_HTTPD (patched source tree), DEPS (merged
# library prefix), LOG, JOBS, MPM_DIR, COMMON_INC.

# Every module httpd's CMake build can build is built: ENABLE_MODULES=i
# raises each module's default ("O" off, "I" inactive, "A" active) to at
# least "built if its prerequisites are there"; httpd's default set stays
# active in the generated httpd.conf.  What is left out and why is in
# docs/getting-started-windows.md; what the distribution leaves out of its
# zip (httpd's API examples and test filters), in dist.sh.

httpd_cmake_options() {  # everything but the MPM
  echo "-DCMAKE_USER_MAKE_RULES_OVERRIDE=$NOPREFIX"
  echo "-DAPR_INCLUDE_DIR=$DEPS/include"
  echo "-DAPR_LIBRARIES=$DEPS/lib/libapr-1.dll.a;$DEPS/lib/libaprutil-1.dll.a"
  echo "-DPCRE_INCLUDE_DIR=$DEPS/include"
  echo "-DPCRE_LIBRARIES=$DEPS/lib/libpcre2-8.dll.a"
  echo "-DPCRE_CFLAGS=-DHAVE_PCRE2"
  echo "-DOPENSSL_ROOT_DIR=$DEPS"
  echo "-DOPENSSL_INCLUDE_DIR=$DEPS/include"
  echo "-DOPENSSL_CRYPTO_LIBRARY=$DEPS/lib/libcrypto.dll.a"
  echo "-DOPENSSL_SSL_LIBRARY=$DEPS/lib/libssl.dll.a"
  # CMake's FindOpenSSL takes these names under MinGW
  echo "-DLIB_EAY=$DEPS/lib/libcrypto.dll.a"
  echo "-DSSL_EAY=$DEPS/lib/libssl.dll.a"
  echo "-DZLIB_INCLUDE_DIR=$DEPS/include"
  echo "-DZLIB_LIBRARY=$DEPS/lib/libzlib.dll.a"
  echo "-DNGHTTP2_INCLUDE_DIR=$DEPS/include"
  echo "-DNGHTTP2_LIBRARIES=$DEPS/lib/libnghttp2.dll.a"
  echo "-DBROTLI_INCLUDE_DIR=$DEPS/include"
  echo "-DBROTLI_LIBRARIES=$DEPS/lib/libbrotlienc.dll.a;$DEPS/lib/libbrotlicommon.dll.a"
  echo "-DLIBXML2_INCLUDE_DIR=$DEPS/include/libxml2"
  echo "-DLIBXML2_LIBRARY=$DEPS/lib/libxml2.dll.a"
  echo "-DLUA_INCLUDE_DIR=$DEPS/include"
  echo "-DLUA_LIBRARY=$DEPS/lib/liblua54.dll.a"
  echo "-DCURL_INCLUDE_DIR=$DEPS/include"
  echo "-DCURL_LIBRARY=$DEPS/lib/libcurl.dll.a"
  echo "-DJANSSON_INCLUDE_DIR=$DEPS/include"
  echo "-DJANSSON_LIBRARIES=$DEPS/lib/libjansson.dll.a"
  echo "-DINSTALL_PDB=OFF"
  echo "-DINSTALL_MANUAL=OFF"
  echo "-DBUILD_SUPPORT=ON"
  echo "-DENABLE_MODULES=i"
}

httpd_configure() {  # $1 = build dir, rest = MPM options
  local bld=$1 opts=(); shift
  mapfile -t opts < <(httpd_cmake_options)
  # CMAKE_INSTALL_PREFIX is a staging dir (the perl install steps copy conf,
  # htdocs and icons there); the real install goes to the keyed prefix
  # with cmake --install --prefix.
  run_logged cmake -S "$SRC_HTTPD" -B "$bld" -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$bld/stage" "${opts[@]}" "$@"
}

# Names of the modules the build made (modules/mod_NAME.so), sorted.
built_modules() {  # $1 = install prefix
  find "$1/modules" -maxdepth 1 -name 'mod_*.so' -printf '%f\n' \
    | sed -E 's/^mod_(.*)\.so$/\1/' | LC_ALL=C sort | tr '\n' ' '
}

build_stock() {  # $1 = build dir, $2 = install prefix (new)
  local bld=$1 d=$2
  httpd_configure "$bld" -UMPM_NAME -UMPM_SOURCES -UMPM_INCLUDE
  grep -q '^extern module mpm_winnt_module;' "$bld/modules.c" \
    || die "stock: generated modules.c does not reference mpm_winnt_module"
  run_logged cmake --build "$bld" -j "$JOBS"
  run_logged cmake --install "$bld" --prefix "$d"
  # dependencies next to httpd.exe; headers and import libraries for
  # modules built outside this tree (ours)
  cp -p "$DEPS"/bin/*.dll "$d/bin/"
  [ ! -f "$DEPS/bin/openssl.exe" ] || cp -p "$DEPS/bin/openssl.exe" "$d/bin/"
  cp -rp "$DEPS/include/." "$d/include/"
  cp -p "$DEPS"/lib/*.a "$d/lib/"
  # the configuration httpd's build generated for the modules it built
  rm -rf "$d/conf"; mkdir -p "$d/conf"
  cp -rp "$bld/conf/." "$d/conf/"
  rm -rf "$d/conf/original"
  cp -rp "$bld/stage/htdocs" "$bld/stage/icons" "$bld/stage/error" "$d/" 2>/dev/null || true
}

build_ng() {  # $1 = build dir, $2 = install prefix (new), $3 = stock's install prefix
  local bld=$1 d=$2 stock=$3 f srcs=""
  for f in $(find "$MPM_DIR" -maxdepth 1 -name '*.c' | LC_ALL=C sort) \
           $(find "$COMMON_DIR" -maxdepth 1 -name '*.c' | LC_ALL=C sort); do
    srcs="$srcs${srcs:+;}$f"
  done
  # A call without a declaration would truncate a returned pointer on x64:
  # an error here (httpd's own files in libhttpd make none).
  httpd_configure "$bld" -DMPM_NAME=mpm_winnt_ng "-DMPM_SOURCES=$srcs" \
    "-DMPM_INCLUDE=$MPM_DIR;$COMMON_INC" \
    "-DCMAKE_C_FLAGS=-Werror=implicit-function-declaration"
  grep -q '^extern module mpm_winnt_ng_module;' "$bld/modules.c" \
    || die "ng: generated modules.c does not reference mpm_winnt_ng_module"
  run_logged cmake --build "$bld" -j "$JOBS" --target httpd
  cp -a "$stock" "$d"
  cp -p "$bld/httpd.exe" "$bld/libhttpd.dll" "$d/bin/"
  cp -p "$bld/libhttpd.dll.a" "$d/lib/"
  echo "$srcs"
}

# Loaded via CMAKE_USER_MAKE_RULES_OVERRIDE (after CMake's Windows-GNU platform
# rules, which add a "lib" prefix): keep the MSVC-style names that APR, APR-util
# and httpd expect (libapr-1.dll, libhttpd.dll, mod_dir.so).
set(CMAKE_SHARED_LIBRARY_PREFIX "")
set(CMAKE_SHARED_MODULE_PREFIX "")
set(CMAKE_IMPORT_LIBRARY_PREFIX "")
set(CMAKE_STATIC_LIBRARY_PREFIX "")

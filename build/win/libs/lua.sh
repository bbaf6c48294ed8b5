# Lua 5.4: mod_lua.  Lua has no CMake or mingw cross target: lua54.dll is
# compiled here from src/ (the library's files, not lua.c/luac.c), as Lua's
# own makefile does for its "mingw" target.
SOURCE="lua5.4=5.4.4-3+deb12u1 lua5.4_5.4.4.orig.tar.gz 164c7849653b80ae67bec4b7473b884bf5cc8d2dca05653475ec2ed27b9ebf61"
PATCH=
DEPENDS=""

recipe() {
  local f objs=()
  mkdir -p "$2" "$3/bin" "$3/lib" "$3/include"
  for f in "$1"/src/*.c; do
    case "$(basename "$f")" in lua.c|luac.c) continue ;; esac
    run_logged $TRIPLET-gcc -O2 -Wall -std=gnu99 -DLUA_BUILD_AS_DLL -DLUA_COMPAT_5_3 \
      -c "$f" -o "$2/$(basename "${f%.c}").o"
    objs+=("$2/$(basename "${f%.c}").o")
  done
  run_logged $TRIPLET-gcc -shared -static-libgcc -o "$3/bin/lua54.dll" "${objs[@]}" \
    -Wl,--out-implib,"$3/lib/liblua54.dll.a"
  cp -p "$1"/src/{lua.h,luaconf.h,lualib.h,lauxlib.h} "$1"/src/lua.hpp "$3/include/"
  # Lua's licence is in its readme (and at the end of lua.h)
  mkdir -p "$3/licenses/lua"; cp -p "$1/doc/readme.html" "$3/licenses/lua/"
}

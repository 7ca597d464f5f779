# Sourced by the build scripts: compile through ccache (Debian's ccache) when it is installed. Its
# cache outlives the build folder and the clone, so a second clone on the same machine compiles
# almost nothing. Paths are hashed relative to the checkout (base_dir), and -ffile-prefix-map
# already makes the objects path-free, so clones in different folders share entries.
# Sets `launcher` to the CMake arguments; HOOKHOST_CCACHE=0 turns it off.
launcher=()
if [ "${HOOKHOST_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 CCACHE_IGNOREOPTIONS='-ffile-prefix-map=*'
  # The precompiled headers of the test executables (target_precompile_headers).
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
fi

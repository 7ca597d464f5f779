# Sourced by the build scripts: compile through ccache (Debian's ccache) when it is installed. Its
# cache outlives the build folder and the clone, so a second clone on the same machine compiles
# almost nothing. Paths are hashed relative to the checkout (base_dir), and -ffile-prefix-map
# already makes the objects path-free, so clones in different folders share entries.
# Sets `launcher` to the CMake arguments; HOOKHOST_CCACHE=0 turns it off.
launcher=()
if [ "${HOOKHOST_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  # ccache-launch.sh: ccache, with a clang precompiled header hashed by its contents.
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER="$PWD/scripts/ccache-launch.sh"
    -DCMAKE_CXX_COMPILER_LAUNCHER="$PWD/scripts/ccache-launch.sh")
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 CCACHE_IGNOREOPTIONS='-ffile-prefix-map=*'
  # Precompiled headers (target_precompile_headers); a clang .pch hashed by its .sum
  # (pch_external_checksum, written by ccache-launch.sh).
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  export CCACHE_PCH_EXTSUM=1
  # Depend mode: a miss is hashed from the compiler's own dependency list (-MD), with no separate
  # preprocessor pass, which costs a tenth of each compile of a file that misses.
  export CCACHE_DEPEND=1
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
fi

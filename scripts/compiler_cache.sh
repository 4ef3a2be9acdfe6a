# Sourced (from the repository's root) by the scripts that build: compile through ccache when it
# is installed, so a build of sources compiled before, in any checkout of this machine (the next
# CI run's clean clone, a second build directory, a worktree), reuses their objects instead of
# recompiling: CI builds the tree four times (the wheel with its tests, ASan, TSan, the fuzzers).
# CMake takes the launcher from these variables when it configures a new build directory.
# CCACHE_BASEDIR makes the paths in the commands relative to the root, and CCACHE_NOHASHDIR
# leaves the working directory out of the hash, so another clone's paths still hit.
if command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi

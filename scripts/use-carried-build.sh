# use-carried-build: sourced by the scripts that run on the GPU machine (gpu-check.sh, tuning-study.sh) from the
# repository root: puts the build that scripts/pack-build.sh carried (build-carry/) in place as build/, and makes
# the absolute source path it was configured in reach this tree.
# A build/ with object files was built here, not carried: it stays (a study script run on the machine that packed the
# carry must not replace the full build with the stripped one).
if [[ -e build-carry && -n $(find build -name '*.o' -print -quit 2>/dev/null) ]]; then
  echo "use-carried-build: build/ holds object files (a build made here): it stays, build-carry/ is not used" >&2
elif [[ -f build-carry/build.tar.xz ]]; then
  rm -rf build && mkdir build && xz -dc build-carry/build.tar.xz | tar -C build -xf - && rm -rf build-carry
elif [[ -d build-carry ]]; then
  rm -rf build && mv build-carry build
fi
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt)
if [[ -n "$src" && "$src" != "$PWD" && ! -e "$src" ]]; then
  mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"
fi

# use-carried-build: sourced by the scripts that run on the GPU machine (gpu-check.sh, tuning-study.sh) from the
# repository root: puts the build that scripts/pack-build.sh carried (build-carry/) in place as build/, and makes
# the absolute source path it was configured in reach this tree.
if [[ -f build-carry/build.tar.xz ]]; then
  rm -rf build && mkdir build && xz -dc build-carry/build.tar.xz | tar -C build -xf - && rm -rf build-carry
elif [[ -d build-carry ]]; then
  rm -rf build && mv build-carry build
fi
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt)
if [[ -n "$src" && "$src" != "$PWD" && ! -e "$src" ]]; then
  mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"
fi

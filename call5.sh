#!/usr/bin/env bash
# device call 5: im2col kernels (ta2) through emit-lib on the GPU: the tuned best of conv4_1_3x3 and conv5_3x3 at
# batch 32 (both ta2), a library built here, its example checking every output against a CPU loop.
set -uo pipefail
source scripts/use-carried-build.sh
export CONVGEN_CACHE_DIR=/tmp/convgen-cache
c=build/tools/convgen/convgen
O=$OUT/r; mkdir -p $O
cp build-dbs/r50-n32.sqlite /tmp/
{ $c gpu detect --out /tmp/gpu.json && grep '"name"' /tmp/gpu.json &&
  timeout 60 $c emit-lib --shapes build-dbs/ta2-layers.csv --gpu /tmp/gpu.json --name tatwo --out /tmp/tatwo \
    --db /tmp/r50-n32.sqlite --precision fp16 --layout nhwc &&
  grep -o "igemm_wgmma_[a-z0-9_]*ta2[a-z0-9_]*" /tmp/tatwo/src/tatwo_kernels.cpp | sort -u &&
  grep -c "const TensorMap" /tmp/tatwo/src/tatwo_kernels.cpp && grep "const TensorMap" /tmp/tatwo/src/tatwo_kernels.cpp &&
  timeout 120 cmake -S /tmp/tatwo -B /tmp/tatwo/build -G Ninja > /dev/null &&
  timeout 200 cmake --build /tmp/tatwo/build > /dev/null && timeout 120 /tmp/tatwo/build/tatwo_example; } \
  > $O/emit-lib.log 2>&1
echo "rc $?" >> $O/emit-lib.log

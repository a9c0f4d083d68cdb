#!/usr/bin/env bash
# device call 6: Nsight Compute on ResNet-50's conv3_expand (128 -> 512 1x1 at 28x28) at batch 32 in fp16, the worst
# weighted layer left (0.77x cuDNN): the fastest igemm_wgmma kernel and its twin with the pixel rows by TMA (ta1).
set -uo pipefail
O=$OUT/r; mkdir -p $O
FAMILY=igemm_wgmma KERNELS="igemm_wgmma_m128_n256_kb1_st3_sk1_co0_ws3_tma1_fw0_cr0_ta1_wn0_mc1_hl0_sw0" \
  timeout 200 scripts/profile-layer.sh $O/ncu shapes/resnet50.csv conv3_expand 32 --precision fp16 --layout nhwc \
  > $O/profile.log 2>&1
echo "rc $?" >> $O/profile.log
tar -C $OUT -czf $OUT/r.tgz r

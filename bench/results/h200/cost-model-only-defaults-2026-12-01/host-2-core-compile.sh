# The compile part of cost_model_only's first call for 23 DenseNet-121 fp16 problems, cold JIT cache, three compile
# limits (1: the families' defaults alone; 40: what a tune with budget 10 compiles; 0: every candidate). Run from the
# repository root with dn-keys.txt beside it; SCRATCH is any empty folder.
cd REPO
for L in 1 40 0; do
  rm -rf SCRATCH/jit; export CONVGEN_CACHE_DIR=SCRATCH/jit
  s=$(date +%s.%N)
  build/tools/convgen/convgen analyze $(cat dn-keys.txt) --gpu h200 --candidates --compile $L > cold-$L.txt 2>/dev/null
  e=$(date +%s.%N)
  echo "compile limit $L: $(echo "$e - $s" | bc) s wall, $(grep -c 'candidates' cold-$L.txt) problems, $(grep -cE '^ +[0-9]+  ' cold-$L.txt) kernels"
done

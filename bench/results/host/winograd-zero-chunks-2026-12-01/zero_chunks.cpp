// zero_chunks: for cuSNN's eight layers (3x3, stride 1, padding 1), the share of (input channel, chunk of 32
// Winograd tiles) pairs whose input patches hold a nonzero, with convgen's own activation generator (blob and uniform
// zeros at 50, 70 and 90%, seed 1), for F(2x2, 3x3) and F(4x4, 3x3), at batch 1 and 8. A winograd_gemm that skipped
// the GEMM steps of all-zero (channel, tile block) pairs would save at most the rest. Tiles are numbered as
// templates/winograd_gemm.cu numbers them (image, tile row, tile column), 32 to a chunk (a warp of its input
// transform). Build from the repository root after a build (see README.md).
#include <algorithm>
#include <cstdio>

#include "reference/inputs.hpp"

using namespace convgen;

int main() {
  struct Layer {
    const char* name;
    int channels, extent;
  };
  const Layer layers[] = {{"dense_128to32_56", 128, 56}, {"dense_128to32_28", 128, 28}, {"dense_128to32_14", 128, 14},
                          {"dense_128to32_7", 128, 7},   {"res_64to64_56", 64, 56},     {"res_128to128_28", 128, 28},
                          {"res_256to256_14", 256, 14},  {"res_512to512_7", 512, 7}};
  std::printf("| tile | pattern | zeros | batch | live share per layer (cuSNN's order) |\n|--:|---|--:|--:|---|\n");
  for (int m : {2, 4})
    for (SparsityPattern pattern : {SparsityPattern::blob, SparsityPattern::uniform})
      for (double zeros : {0.5, 0.7, 0.9})
        for (int n : {1, 8}) {
          std::printf("| %d | %s | %.0f%% | %d |", m, pattern == SparsityPattern::blob ? "blob" : "uniform",
                      zeros * 100, n);
          for (const Layer& l : layers) {
            const Problem p{.n = n, .c = l.channels, .k = l.channels, .input = {1, l.extent, l.extent},
                            .filter = {1, 3, 3}, .padding = {0, 1, 1}};
            const HostTensor a = make_tensor(p, TensorRole::activation, SparseRandom{pattern, zeros}, 1);
            const int tiles_w = (l.extent + m - 1) / m, tiles = n * tiles_w * tiles_w, chunks = (tiles + 31) / 32;
            long live = 0;
            for (int c = 0; c < l.channels; ++c)
              for (int chunk = 0; chunk < chunks; ++chunk) {
                bool any = false;
                for (int t = chunk * 32; t < std::min(tiles, chunk * 32 + 32) && !any; ++t) {
                  const int image = t / (tiles_w * tiles_w), rest = t % (tiles_w * tiles_w);
                  const int h0 = rest / tiles_w * m - 1, w0 = rest % tiles_w * m - 1;  // padding 1
                  for (int i = 0; i < m + 2 && !any; ++i)
                    for (int j = 0; j < m + 2 && !any; ++j) {
                      const int h = h0 + i, w = w0 + j;
                      if (h < 0 || h >= l.extent || w < 0 || w >= l.extent) continue;
                      any = a.get((static_cast<long>(image) * l.channels + c) * l.extent * l.extent + h * l.extent + w) !=
                            0.0f;
                    }
                }
                live += any;
              }
            std::printf(" %.2f", static_cast<double>(live) / (static_cast<double>(l.channels) * chunks));
          }
          std::printf(" |\n");
        }
}

// winograd_transforms: the matrices of Winograd's F(m, 3), m = 2 or 4, and the 2-D transform that applies them,
// shared by templates/winograd.cu and templates/winograd_gemm.cu. Included inside a template's namespace after its
// constant TILE (no include guard: each inclusion sees its own cfg); InputMatrix, FilterMatrix and OutputMatrix are
// TILE's, the ...Of<M> templates any tile's (winograd_gemm's depth axis is F(2, 3) whatever TILE is).
// ---- The transforms (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016) ---------------
// Each matrix is a function of constant indices: every caller runs in fully unrolled loops, so after inlining the
// coefficient is a constant, zero terms vanish and products by 1 or -1 fold to additions.
template <int M>
struct InputMatrixOf {  // B^T, (M + 2) x (M + 2)
  static_assert(M == 2 || M == 4, "Winograd tiles are 2 or 4");
  static constexpr int ROWS = M + 2, COLS = M + 2;
  __device__ static __forceinline__ double at(int i, int j) {
    if constexpr (M == 2) {
      constexpr double kBT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
      return kBT[i][j];  // convgen-lint: allow per-thread-dynamic-index (constant indices after unrolling)
    } else {
      constexpr double kBT[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                    {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
      return kBT[i][j];  // convgen-lint: allow per-thread-dynamic-index (constant indices after unrolling)
    }
  }
};
template <int M>
struct FilterMatrixOf {  // G, (M + 2) x 3
  static_assert(M == 2 || M == 4, "Winograd tiles are 2 or 4");
  static constexpr int ROWS = M + 2, COLS = 3;
  __device__ static __forceinline__ double at(int i, int j) {
    if constexpr (M == 2) {
      constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
      return kG[i][j];  // convgen-lint: allow per-thread-dynamic-index (constant indices after unrolling)
    } else {
      constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0, 0, 1}};
      return kG[i][j];  // convgen-lint: allow per-thread-dynamic-index (constant indices after unrolling)
    }
  }
};
template <int M>
struct OutputMatrixOf {  // A^T, M x (M + 2)
  static_assert(M == 2 || M == 4, "Winograd tiles are 2 or 4");
  static constexpr int ROWS = M, COLS = M + 2;
  __device__ static __forceinline__ double at(int i, int j) {
    if constexpr (M == 2) {
      constexpr double kAT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
      return kAT[i][j];  // convgen-lint: allow per-thread-dynamic-index (constant indices after unrolling)
    } else {
      constexpr double kAT[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
      return kAT[i][j];  // convgen-lint: allow per-thread-dynamic-index (constant indices after unrolling)
    }
  }
};
using InputMatrix = InputMatrixOf<TILE>;
using FilterMatrix = FilterMatrixOf<TILE>;
using OutputMatrix = OutputMatrixOf<TILE>;

// y = sum_j M(i, j) * x[j] over the nonzero coefficients, the first term a product (not 0 + a product, which the
// compiler may not fold under strict fp32 rules).
template <class M, class F>
__device__ __forceinline__ F dot_row(int i, const F (&x)[M::COLS]) {
  F sum = 0;
  bool first = true;
#pragma unroll
  for (int j = 0; j < M::COLS; ++j) {
    const F m = (F)M::at(i, j);
    if (m == (F)0) continue;
    sum = first ? m * x[j] : sum + m * x[j];
    first = false;
  }
  return sum;
}

// out = M x M^T for an M::COLS x M::COLS x: the 2-D transform of one patch, tile or filter.
template <class M, class F>
__device__ __forceinline__ void transform_2d(F (&out)[M::ROWS][M::ROWS], const F (&x)[M::COLS][M::COLS]) {
  F tmp[M::COLS][M::ROWS];  // (M x)^T: tmp[col][i] = sum_j M(i, j) x[j][col]
#pragma unroll
  for (int col = 0; col < M::COLS; ++col) {
    F column[M::COLS];
#pragma unroll
    for (int j = 0; j < M::COLS; ++j) column[j] = x[j][col];
#pragma unroll
    for (int i = 0; i < M::ROWS; ++i) tmp[col][i] = dot_row<M, F>(i, column);
  }
#pragma unroll
  for (int i = 0; i < M::ROWS; ++i) {
    F row[M::COLS];  // row i of M x
#pragma unroll
    for (int j = 0; j < M::COLS; ++j) row[j] = tmp[j][i];
#pragma unroll
    for (int b = 0; b < M::ROWS; ++b) out[i][b] = dot_row<M, F>(b, row);
  }
}

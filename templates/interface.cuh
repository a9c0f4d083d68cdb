// interface: how a kernel template declares its interface (tunable parameters, entry points) to convgen's
// template scanner (tools/template_scanner), which reads it with Clang and generates the family's C++ side.
#pragma once

// CONVGEN_PARAM(token, values, doc) marks a tunable constant in the template's `#ifndef CONVGEN_PRELUDE` block:
//   CONVGEN_PARAM("m", "16,32,64,128,256", "output channels per block") constexpr int BLOCK_M = 64;
// token: the parameter's prefix in the canonical kernel name (igemm_m64_...); values: the allowed values, a comma
// list ("1,2,4"), an inclusive range ("1..64") or "bool" for a constexpr bool; doc: one line for humans. The
// constant's name (BLOCK_M) is what the prelude defines in namespace cfg; its value there is the default.
// Only the scanner (clang, CONVGEN_TEMPLATE_SCANNER defined) sees the annotation; NVRTC and host compilers see a
// plain constant. Clang 14 keeps all three string arguments of the annotation (checked by the scanner's tests).
#if defined(CONVGEN_TEMPLATE_SCANNER)
#define CONVGEN_PARAM(token, values, doc) [[clang::annotate("convgen.param", token, values, doc)]]
#else
#define CONVGEN_PARAM(token, values, doc)
#endif

// Entry points: the main kernel is named CONVGEN_ENTRY (the canonical kernel name); a family with more than one
// kernel in its plan (a filter transform, a second pass) names the others CONVGEN_ENTRY_NAMED(suffix), which is
// `<kernel name>_<suffix>`. Entry parameters are device pointers named for what they bind to: g_activation,
// g_filter, g_output, g_workspace, or g_<buffer> for a buffer of the family's launch plan.
#define CONVGEN_ENTRY_CAT2(a, b) a##_##b
#define CONVGEN_ENTRY_CAT(a, b) CONVGEN_ENTRY_CAT2(a, b)
#define CONVGEN_ENTRY_NAMED(suffix) CONVGEN_ENTRY_CAT(CONVGEN_ENTRY, suffix)

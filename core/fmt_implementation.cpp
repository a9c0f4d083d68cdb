// fmt_implementation: fmt's out-of-line functions (its format-inl.h), compiled once here and linked into every
// program and into libconvgen.a, instead of fmt's header-only mode, which compiled and optimized them again in every
// file (half of some files' compile time). The binaries still need no libfmt at run time (the GPU machine has none).
// The explicit instantiations are the templates format.h declares and leaves to its implementation: floating-point
// formatting (dragonbox) and the locale's separators.
#include <fmt/format-inl.h>

#include <locale>

FMT_BEGIN_NAMESPACE
namespace detail {
template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template locale_ref::locale_ref(const std::locale& loc);
template auto locale_ref::get<std::locale>() const -> std::locale;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl(locale_ref) -> char;
template auto decimal_point_impl(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE

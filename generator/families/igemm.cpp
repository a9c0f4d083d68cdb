// igemm: placeholder until the family lands (see issue 2).
#include "generator/families/families.hpp"

#include "convgen/error.hpp"

namespace convgen {
namespace {
class Placeholder final : public Family {
 public:
  FamilyKind kind() const override { return FamilyKind::igemm; }
  std::vector<KernelSpec> enumerate(const Problem&, const Gpu&) const override { return {}; }
  std::optional<std::string> check_support(const Problem&, const Gpu&, const KernelSpec&) const override {
    return "not implemented yet";
  }
  KernelSource render(const Problem&, const KernelSpec&) const override { throw Error("not implemented"); }
  LaunchGeometry launch_geometry(const Problem&, const KernelSpec&) const override { return {}; }
  CostFeatures cost_features(const Problem&, const KernelSpec&) const override { return {}; }
  std::optional<KernelSpec> default_spec(const Problem&, const Gpu&) const override { return std::nullopt; }
};
}  // namespace
const Family& igemm_family() {
  static const Placeholder instance;
  return instance;
}
}  // namespace convgen

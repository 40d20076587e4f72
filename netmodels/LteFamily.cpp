// The `lte` family's declaration (NetworkRegistry lists it).
#include <memory>
#include <string>

#include "netmodels/FamilyConfig.h"
#include "netmodels/LteNetwork.h"
#include "netmodels/NetworkFamilyInfo.h"
#include "netmodels/NetworkParams.h"

namespace gradwire {

namespace {

class LteFamilyConfig final : public FamilyConfig {
 public:
  explicit LteFamilyConfig(LteConfig config) : config_(std::move(config)) {}
  nlohmann::json to_json() const override { return config_.to_json(); }
  std::uint32_t mtu() const override { return 1500; }  // every link it builds
  std::unique_ptr<Network> build(std::size_t hosts) const override {
    return std::make_unique<LteNetwork>(config_, hosts);
  }

 private:
  LteConfig config_;
};

}  // namespace

NetworkFamilyInfo lte_family() {
  NetworkFamilyInfo f;
  f.name = "lte";
  f.summary =
      "LTE radio access and EPC core: worker UEs around one or more eNodeBs; the last host is "
      "a remote server behind the PGW, an edge host next to it, or another UE. UE to UE "
      "traffic crosses the PGW, as in a real EPC";
  f.params = lte_params();
  f.group_params = lte_group_params();
  f.minimal = {{"family", f.name}};
  f.resolve = [](const nlohmann::json& object,
                 const std::string& path) -> std::shared_ptr<const FamilyConfig> {
    return std::make_shared<LteFamilyConfig>(
        read_resolved<LteConfig>(object, path));
  };
  return f;
}

}  // namespace gradwire

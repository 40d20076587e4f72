// The `wifi` family's declaration (NetworkRegistry lists it).
#include <memory>
#include <string>

#include "netmodels/FamilyConfig.h"
#include "netmodels/NetworkFamilyInfo.h"
#include "netmodels/NetworkParams.h"
#include "netmodels/WifiNetwork.h"

namespace gradwire {

namespace {

class WifiFamilyConfig final : public FamilyConfig {
 public:
  explicit WifiFamilyConfig(WifiConfig config) : config_(std::move(config)) {}
  nlohmann::json to_json() const override { return config_.to_json(); }
  std::uint32_t mtu() const override { return 1500; }  // every link it builds
  std::unique_ptr<Network> build(std::size_t hosts) const override {
    return std::make_unique<WifiNetwork>(config_, hosts);
  }

 private:
  WifiConfig config_;
};

}  // namespace

NetworkFamilyInfo wifi_family() {
  NetworkFamilyInfo f;
  f.name = "wifi";
  f.summary =
      "One 802.11n, ac or ax BSS: worker stations around an access point share the radio "
      "channel; the last host is another station, the AP itself or a wired host behind it";
  f.params = wifi_params();
  f.group_params = wifi_group_params();
  f.minimal = {{"family", f.name}};
  f.resolve = [](const nlohmann::json& object,
                 const std::string& path) -> std::shared_ptr<const FamilyConfig> {
    return std::make_shared<WifiFamilyConfig>(
        read_resolved<WifiConfig>(object, path));
  };
  return f;
}

}  // namespace gradwire

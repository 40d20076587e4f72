#include "netmodels/WifiChannels.h"

#include <ns3/double.h>
#include <ns3/yans-wifi-helper.h>

#include "netmodels/NetworkParams.h"

namespace gradwire {

ns3::Ptr<ns3::YansWifiChannel> WifiChannels::channel_for(const WifiConfig& config) {
  const auto medium = std::make_tuple(config.band, config.channel_number(), config.width_mhz);
  const bool positioned = config.ap_position.has_value();
  if (positioned) {
    for (const Made& m : made_) {
      if (m.positioned && m.medium == medium) return m.channel;
    }
  }
  ns3::YansWifiChannelHelper helper;
  helper.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel");
  if (config.propagation == "friis") {
    helper.AddPropagationLoss("ns3::FriisPropagationLossModel", "Frequency",
                              ns3::DoubleValue(wifi_band_frequency_hz(config.band)));
  } else {
    helper.AddPropagationLoss("ns3::LogDistancePropagationLossModel", "Exponent",
                              ns3::DoubleValue(config.exponent), "ReferenceLoss",
                              ns3::DoubleValue(config.reference_loss_db));
  }
  const bool fading = config.fading == "nakagami";
  if (fading) {
    // One shape at every distance: the model's distance bands (Distance1, Distance2) then do
    // not matter.
    helper.AddPropagationLoss("ns3::NakagamiPropagationLossModel", "m0",
                              ns3::DoubleValue(config.nakagami_m), "m1",
                              ns3::DoubleValue(config.nakagami_m), "m2",
                              ns3::DoubleValue(config.nakagami_m));
  }
  Made made;
  made.positioned = positioned;
  made.medium = medium;
  made.fading = fading;
  made.channel = helper.Create();
  made_.push_back(made);
  return made.channel;
}

void WifiChannels::assign_streams(StreamAllocator& streams) const {
  for (const Made& m : made_) {
    // The path-loss models draw nothing; the Nakagami model draws from two variables (Erlang
    // for whole m, gamma otherwise).
    if (m.fading) m.channel->AssignStreams(streams.reserve(2));
  }
}

}  // namespace gradwire

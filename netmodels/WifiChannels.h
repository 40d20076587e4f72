// The radio channels of one network's Wi-Fi cells (ns-3 YansWifiChannel objects). Cells whose
// APs have a position (`ap_position`) stand on one floor plan: those on the same band, channel
// number and width share one channel object, so every frame reaches every radio of them and
// they defer to, and collide with, each other's frames as co-channel cells do. A cell without a
// position gets a channel of its own and hears nothing but itself: where it stands relative to
// the others is unknown, and guessing would make configurations that never said so interfere.
// (A YansWifiChannel delivers only to radios on the sender's channel number, so cells on other
// channels never interfere, shared object or not.)
//
// Each channel carries its cell's propagation: constant-speed delay, the path loss (`friis` or
// `log-distance`) and, with `fading` `nakagami`, ns-3's NakagamiPropagationLossModel after it.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <ns3/yans-wifi-channel.h>

#include "netmodels/StreamAllocator.h"
#include "netmodels/WifiNetwork.h"

namespace gradwire {

class WifiChannels {
 public:
  /// The channel a cell of `config` transmits on: with an `ap_position`, the one every
  /// positioned cell on the same band, channel number and width shares (made for the first of
  /// them, with its propagation: the builders check that the others' agree); without, a new
  /// one of its own.
  ns3::Ptr<ns3::YansWifiChannel> channel_for(const WifiConfig& config);

  /// Gives the fading models of the channels made so far their streams, 2 per channel with
  /// fading, in the order the channels were made. The builders call it once every other part
  /// has its streams, so turning fading on leaves every other draw of the network as it was.
  void assign_streams(StreamAllocator& streams) const;

  /// Channel objects made so far.
  std::size_t size() const { return made_.size(); }

 private:
  struct Made {
    bool positioned = false;
    std::tuple<std::string, std::uint32_t, std::uint32_t> medium;  ///< band, number, width
    bool fading = false;
    ns3::Ptr<ns3::YansWifiChannel> channel;
  };
  std::vector<Made> made_;
};

}  // namespace gradwire

// Keeps a Block Ack recipient's window start past the MPDUs it delivered while its agreement
// was still waiting for the acknowledgement of its ADDBA response.
//
// ns-3.37's recipient (HtFrameExchangeManager) holds an agreement aside from the moment it
// queues its ADDBA response until that response is acknowledged, and meanwhile receives the
// originator's QoS data as if there were no agreement. The originator, though, uses the
// agreement as soon as the response reaches it. When the acknowledgement of the response is
// lost (an overlapping frame at the recipient), the originator's first MPDUs under the
// agreement, starting with the agreement's starting sequence number, are delivered outside it;
// when the retransmitted response is acknowledged the recipient's window still starts at that
// number, and every later MPDU waits in the reorder buffer for MPDUs that have already been
// delivered and acknowledged. A TCP connection whose SYN opened the agreement never opens;
// other traffic waits until the originator's sequence numbers pass the window (64 MPDUs).
// ns-3.38 makes the agreement active at once.
//
// Here the recipient's waiting agreement is made anew (HtFrameExchangeManager's public
// CreateBlockAckAgreement, with the response it queued) with a starting sequence number one
// past the latest QoS data MPDU that arrives from the originator in that interval, which is
// where ns-3.38's window would stand. Nothing else changes: the PHY is watched only while a
// response is unacknowledged, and no random number is drawn.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include <ns3/mac48-address.h>
#include <ns3/mgt-headers.h>
#include <ns3/net-device-container.h>
#include <ns3/ptr.h>
#include <ns3/simple-ref-count.h>
#include <ns3/wifi-mpdu.h>
#include <ns3/wifi-phy.h>

namespace ns3 {
class HtFrameExchangeManager;
class Packet;
class WifiNetDevice;
}  // namespace ns3

namespace gradwire {

class BlockAckRecipientSync : public ns3::SimpleRefCount<BlockAckRecipientSync> {
 public:
  /// Watches every HT (or later) Wi-Fi device among `devices`; the others are left alone.
  static void install(const ns3::NetDeviceContainer& devices);

  explicit BlockAckRecipientSync(ns3::Ptr<ns3::WifiNetDevice> device);

 private:
  using AgreementKey = std::pair<ns3::Mac48Address, std::uint8_t>;

  void on_enqueue(ns3::Ptr<const ns3::WifiMpdu> mpdu);
  void on_received(ns3::Ptr<const ns3::Packet> packet, std::uint16_t frequency_mhz,
                   ns3::WifiTxVector tx_vector, ns3::MpduInfo mpdu_info,
                   ns3::SignalNoiseDbm signal_noise, std::uint16_t sta_id);
  void stop_watching_if_idle();
  void watch_phy(bool on);

  ns3::Ptr<ns3::WifiPhy> phy_;
  ns3::Ptr<ns3::HtFrameExchangeManager> fem_;
  ns3::Mac48Address self_;
  struct Waiting {
    ns3::MgtAddBaResponseHeader response;
    bool moved = false;        // `start` is set: MPDUs arrived while waiting
    std::uint16_t start = 0;   // one past the latest of them, in sequence-number order
  };
  // The last ADDBA response queued to each originator and TID whose agreement is not yet
  // established.
  std::map<AgreementKey, Waiting> waiting_;
  bool watching_ = false;
};

}  // namespace gradwire

#include "netmodels/BlockAckRecipientSync.h"

#include <ns3/ampdu-subframe-header.h>
#include <ns3/callback.h>
#include <ns3/ht-frame-exchange-manager.h>
#include <ns3/log.h>
#include <ns3/packet.h>
#include <ns3/qos-txop.h>
#include <ns3/simulator.h>
#include <ns3/wifi-mac-header.h>
#include <ns3/wifi-mac-queue.h>
#include <ns3/wifi-mac.h>
#include <ns3/wifi-net-device.h>

NS_LOG_COMPONENT_DEFINE("BlockAckRecipientSync");

namespace gradwire {

void BlockAckRecipientSync::install(const ns3::NetDeviceContainer& devices) {
  for (auto it = devices.Begin(); it != devices.End(); ++it) {
    auto device = ns3::DynamicCast<ns3::WifiNetDevice>(*it);
    if (device == nullptr || !device->GetMac()->GetQosSupported()) continue;
    if (ns3::DynamicCast<ns3::HtFrameExchangeManager>(
            device->GetMac()->GetFrameExchangeManager()) == nullptr) {
      continue;  // no Block Ack before 802.11n
    }
    // The callbacks hold the object: it lives as long as the device's queues and PHY.
    ns3::Ptr<BlockAckRecipientSync> sync = ns3::Create<BlockAckRecipientSync>(device);
    for (auto ac : {ns3::AC_BE, ns3::AC_BK, ns3::AC_VI, ns3::AC_VO}) {
      device->GetMac()->GetQosTxop(ac)->GetWifiMacQueue()->TraceConnectWithoutContext(
          "Enqueue", ns3::MakeCallback(&BlockAckRecipientSync::on_enqueue, sync));
    }
  }
}

BlockAckRecipientSync::BlockAckRecipientSync(ns3::Ptr<ns3::WifiNetDevice> device)
    : phy_(device->GetPhy()),
      fem_(ns3::DynamicCast<ns3::HtFrameExchangeManager>(
          device->GetMac()->GetFrameExchangeManager())),
      self_(device->GetMac()->GetAddress()) {}

void BlockAckRecipientSync::on_enqueue(ns3::Ptr<const ns3::WifiMpdu> mpdu) {
  if (!mpdu->GetHeader().IsAction()) return;
  ns3::Ptr<ns3::Packet> payload = mpdu->GetPacket()->Copy();
  ns3::WifiActionHeader action;
  payload->RemoveHeader(action);
  if (action.GetCategory() != ns3::WifiActionHeader::BLOCK_ACK ||
      action.GetAction().blockAck != ns3::WifiActionHeader::BLOCK_ACK_ADDBA_RESPONSE) {
    return;
  }
  ns3::MgtAddBaResponseHeader response;
  payload->RemoveHeader(response);
  waiting_[{mpdu->GetHeader().GetAddr1(), response.GetTid()}] = Waiting{response};
  NS_LOG_DEBUG(self_ << " queued an ADDBA response to " << mpdu->GetHeader().GetAddr1()
                     << " for TID " << +response.GetTid());
  watch_phy(true);
}

void BlockAckRecipientSync::on_received(ns3::Ptr<const ns3::Packet> packet, std::uint16_t,
                                        ns3::WifiTxVector, ns3::MpduInfo mpdu_info,
                                        ns3::SignalNoiseDbm, std::uint16_t) {
  NS_LOG_FUNCTION(this << self_);
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (fem_->GetBaAgreementEstablished(it->first.first, it->first.second)) {
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  if (waiting_.empty()) {
    // Not from inside the trace's own call: the PHY is iterating over its callbacks.
    ns3::Simulator::ScheduleNow(&BlockAckRecipientSync::stop_watching_if_idle, ns3::Ptr(this));
    return;
  }
  ns3::Ptr<ns3::Packet> mpdu = packet->Copy();
  if (mpdu_info.type != ns3::NORMAL_MPDU) {
    ns3::AmpduSubframeHeader subframe;
    mpdu->RemoveHeader(subframe);
  }
  ns3::WifiMacHeader header;
  mpdu->PeekHeader(header);
  if (!header.IsQosData() || !header.HasData() || header.GetAddr1() != self_) return;
  const auto it = waiting_.find({header.GetAddr2(), header.GetQosTid()});
  if (it == waiting_.end()) return;
  // The PHY reports the MPDU before the MAC takes it: the MAC then delivers it outside the
  // agreement, which must therefore start after it. A retransmitted earlier MPDU does not move
  // the start back (sequence numbers are modulo 4096; "after" is within half of that).
  Waiting& waiting = it->second;
  const std::uint16_t next = (header.GetSequenceNumber() + 1) % 4096;
  if (waiting.moved && (next - waiting.start + 4096) % 4096 >= 2048) return;
  waiting.moved = true;
  waiting.start = next;
  NS_LOG_DEBUG(self_ << " got MPDU " << header.GetSequenceNumber() << " from "
                     << header.GetAddr2() << " before its agreement was established; it starts at "
                     << next);
  fem_->CreateBlockAckAgreement(&waiting.response, it->first.first, next);
}

void BlockAckRecipientSync::stop_watching_if_idle() {
  if (waiting_.empty()) watch_phy(false);  // a response may have been queued since
}

void BlockAckRecipientSync::watch_phy(bool on) {
  if (on == watching_) return;
  watching_ = on;
  NS_LOG_LOGIC(self_ << (on ? " watches" : " stops watching") << " its PHY");
  const auto callback = ns3::MakeCallback(&BlockAckRecipientSync::on_received, ns3::Ptr(this));
  if (on) {
    phy_->TraceConnectWithoutContext("MonitorSnifferRx", callback);
  } else {
    phy_->TraceDisconnectWithoutContext("MonitorSnifferRx", callback);
  }
}

}  // namespace gradwire

// Test support: saturation experiments on gradwire's Wi-Fi and LTE cells, built as gradwire
// builds them (build_wifi_cell / WifiNetwork / LteNetwork), for the validation against the
// references of WirelessReferences.h. Each returns the goodput an application sink measured
// over a window after association / attach, and what the sender's radio actually sent.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <ns3/application-container.h>
#include <ns3/boolean.h>
#include <ns3/bulk-send-helper.h>
#include <ns3/config.h>
#include <ns3/core-module.h>
#include <ns3/inet-socket-address.h>
#include <ns3/ipv4.h>
#include <ns3/lte-common.h>
#include <ns3/on-off-helper.h>
#include <ns3/packet-sink-helper.h>
#include <ns3/packet-sink.h>
#include <ns3/wifi-mac-queue.h>
#include <ns3/wifi-mac.h>
#include <ns3/wifi-net-device.h>
#include <ns3/wifi-phy.h>
#include <ns3/wifi-psdu.h>

#include "netmodels/LteNetwork.h"
#include "netmodels/StreamAllocator.h"
#include "netmodels/WifiChannels.h"
#include "netmodels/WifiNetwork.h"

namespace gradwire::testing {

/// What one sender's PHY put on the air during the measurement window: its data PPDUs.
struct PpduLog {
  std::uint64_t ppdus = 0;       ///< PPDUs carrying QoS data
  std::uint64_t mpdus = 0;       ///< data MPDUs in them
  std::uint64_t psdu_bytes = 0;  ///< their PSDU bytes
  double airtime_s = 0;          ///< their durations
  std::string mode;              ///< the last one's mode and guard interval
  std::uint16_t guard_interval_ns = 0;

  double mpdus_per_ppdu() const { return ppdus ? double(mpdus) / double(ppdus) : 0.0; }
  double psdu_bytes_per_ppdu() const { return ppdus ? double(psdu_bytes) / double(ppdus) : 0.0; }
};

/// Logs `device`'s data PPDUs while `*counting` is true.
inline void log_data_ppdus(ns3::Ptr<ns3::NetDevice> device, PpduLog* log, const bool* counting) {
  auto wifi = ns3::DynamicCast<ns3::WifiNetDevice>(device);
  auto phy = wifi->GetPhy();
  const ns3::WifiPhyBand band = phy->GetPhyBand();
  phy->TraceConnectWithoutContext(
      "PhyTxPsduBegin", ns3::Callback<void, ns3::WifiConstPsduMap, ns3::WifiTxVector, double>(
                            [log, counting, band](ns3::WifiConstPsduMap psdus,
                                                  ns3::WifiTxVector tx, double) {
                              if (!*counting) return;
                              for (const auto& [id, psdu] : psdus) {
                                std::uint64_t data = 0;
                                for (auto it = psdu->begin(); it != psdu->end(); ++it) {
                                  if ((*it)->GetHeader().IsQosData()) ++data;
                                }
                                if (data == 0) continue;
                                ++log->ppdus;
                                log->mpdus += data;
                                log->psdu_bytes += psdu->GetSize();
                                log->airtime_s +=
                                    ns3::WifiPhy::CalculateTxDuration(psdu, tx, band).GetSeconds();
                                log->mode = tx.GetMode().GetUniqueName();
                                log->guard_interval_ns = tx.GetGuardInterval();
                              }
                            }));
}

/// Sets the A-MPDU and A-MSDU limits of every access category on `devices`' MACs (0: no
/// aggregation).
inline void set_aggregation(const ns3::NetDeviceContainer& devices, std::uint32_t max_ampdu,
                            std::uint32_t max_amsdu) {
  for (auto it = devices.Begin(); it != devices.End(); ++it) {
    auto mac = ns3::DynamicCast<ns3::WifiNetDevice>(*it)->GetMac();
    for (const char* ac : {"BE", "BK", "VI", "VO"}) {
      mac->SetAttribute(std::string(ac) + "_MaxAmpduSize", ns3::UintegerValue(max_ampdu));
      mac->SetAttribute(std::string(ac) + "_MaxAmsduSize", ns3::UintegerValue(max_amsdu));
    }
  }
}

/// A saturating UDP source: `payload` bytes per datagram at `rate_bps` from `from` to
/// `to_address`:`port`.
inline ns3::ApplicationContainer udp_source(ns3::Ptr<ns3::Node> from, ns3::Ipv4Address to_address,
                                            std::uint16_t port, double rate_bps,
                                            std::uint32_t payload, double start_s) {
  ns3::OnOffHelper onoff("ns3::UdpSocketFactory", ns3::InetSocketAddress(to_address, port));
  onoff.SetConstantRate(ns3::DataRate(static_cast<std::uint64_t>(rate_bps)), payload);
  auto apps = onoff.Install(from);
  apps.Start(ns3::Seconds(start_s));
  return apps;
}

inline ns3::Ptr<ns3::PacketSink> sink_on(ns3::Ptr<ns3::Node> node, const std::string& factory,
                                         std::uint16_t port) {
  ns3::PacketSinkHelper helper(factory,
                               ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port));
  auto apps = helper.Install(node);
  apps.Start(ns3::Seconds(0));
  return ns3::DynamicCast<ns3::PacketSink>(apps.Get(0));
}

/// Bytes `sink` receives in [start_s, start_s + window_s], as bits/s, running the simulation
/// to the end of the window. `counting` is true during the window.
inline double measure_goodput(const std::vector<ns3::Ptr<ns3::PacketSink>>& sinks,
                              double start_s, double window_s, bool* counting = nullptr) {
  std::uint64_t at_start = 0, at_end = 0;
  ns3::Simulator::Schedule(ns3::Seconds(start_s), [&] {
    for (const auto& s : sinks) at_start += s->GetTotalRx();
    if (counting) *counting = true;
  });
  ns3::Simulator::Schedule(ns3::Seconds(start_s + window_s), [&] {
    for (const auto& s : sinks) at_end += s->GetTotalRx();
    if (counting) *counting = false;
    ns3::Simulator::Stop();
  });
  ns3::Simulator::Run();
  return 8.0 * static_cast<double>(at_end - at_start) / window_s;
}

// ---------------------------------------------------------------------------------------------
// Wi-Fi.

struct WifiSaturationResult {
  double goodput_bps = 0;  ///< UDP payload received by the AP, all stations together
  PpduLog first_station;   ///< what station 0 sent in the window
};

/// `stations` stations, all `distance_m` from the AP, each sending `payload`-byte UDP
/// datagrams to the AP faster than the cell can carry them. The cell is gradwire's
/// (build_wifi_cell with `config`) with aggregation switched off; `adjust` may change it
/// before the simulation starts. Traffic starts at 0.3 s; the window starts at 0.8 s.
inline WifiSaturationResult wifi_saturation(
    WifiConfig config, std::uint32_t stations, std::uint32_t payload, double window_s,
    const std::function<void(WifiCell&)>& adjust = {}) {
  ns3::Simulator::Destroy();
  ns3::RngSeedManager::SetSeed(1);
  ns3::RngSeedManager::SetRun(1);
  StreamAllocator streams;
  WifiChannels channels;
  WifiCell cell = build_wifi_cell(config, stations, "10.1.0.0", channels.channel_for(config),
                                  "gradwire", streams);
  channels.assign_streams(streams);
  set_aggregation(cell.station_devices, 0, 0);
  set_aggregation(ns3::NetDeviceContainer(cell.ap_device), 0, 0);
  // A saturated station of Bianchi's model never discards a frame; ns-3's MAC queue drops
  // frames older than 500 ms, and a dropped frame that had a sequence number leaves a hole
  // the block ack agreement (ns-3 sets one up with every VHT/HE peer) must then skip with a
  // BlockAckReq. Frames that find the queue full are still dropped, before they are numbered.
  for (std::uint32_t i = 0; i < cell.station_devices.GetN(); ++i) {
    auto mac = ns3::DynamicCast<ns3::WifiNetDevice>(cell.station_devices.Get(i))->GetMac();
    mac->GetTxopQueue(ns3::AC_BE)->SetMaxDelay(ns3::Seconds(100));
  }
  if (adjust) adjust(cell);
  auto sink = sink_on(cell.ap, "ns3::UdpSocketFactory", 9);
  // Together the stations offer the PHY rate of the mode: more than the cell carries.
  const double offered = config.peak_phy_rate_bps() / stations;
  for (std::uint32_t i = 0; i < stations; ++i) {
    udp_source(cell.stations.Get(i), cell.ap_address, 9, offered, payload,
               0.3 + 0.001 * i);
  }
  WifiSaturationResult out;
  bool counting = false;
  log_data_ppdus(cell.station_devices.Get(0), &out.first_station, &counting);
  out.goodput_bps = measure_goodput({sink}, 0.8, window_s, &counting);
  ns3::Simulator::Destroy();
  return out;
}

struct WifiLinkResult {
  double goodput_bps = 0;
  PpduLog station;  ///< the station's data PPDUs in the window
  PpduLog ap;       ///< the AP's (TCP ACKs)
};

/// One station `distance_m` from the AP sending to the AP (server "ap") through gradwire's
/// WifiNetwork: UDP datagrams of `payload` bytes at the PHY rate, or one TCP bulk transfer.
/// The window starts at `start_s` (after slow start for TCP).
inline WifiLinkResult wifi_link(const nlohmann::json& network, bool tcp, std::uint32_t payload,
                                double start_s, double window_s) {
  ns3::Simulator::Destroy();
  ns3::RngSeedManager::SetSeed(1);
  ns3::RngSeedManager::SetRun(1);
  const WifiConfig config = WifiConfig::from_json(network, "network");
  WifiNetwork net(config, 2);
  ns3::Ptr<ns3::PacketSink> sink;
  if (tcp) {
    sink = sink_on(net.host(1), "ns3::TcpSocketFactory", 9);
    ns3::BulkSendHelper bulk("ns3::TcpSocketFactory",
                             ns3::InetSocketAddress(net.address(1), 9));
    bulk.SetAttribute("MaxBytes", ns3::UintegerValue(0));
    bulk.Install(net.host(0)).Start(ns3::Seconds(0.3));
  } else {
    sink = sink_on(net.host(1), "ns3::UdpSocketFactory", 9);
    udp_source(net.host(0), net.address(1), 9, 1.2 * config.peak_phy_rate_bps(), payload, 0.3);
  }
  WifiLinkResult out;
  bool counting = false;
  log_data_ppdus(net.cell().station_devices.Get(0), &out.station, &counting);
  log_data_ppdus(net.cell().ap_device, &out.ap, &counting);
  out.goodput_bps = measure_goodput({sink}, start_s, window_s, &counting);
  ns3::Simulator::Destroy();
  return out;
}

// ---------------------------------------------------------------------------------------------
// LTE.

/// The transport blocks an eNodeB's scheduler granted in the measurement window.
struct TransportBlockLog {
  std::uint64_t blocks = 0;
  std::uint64_t bytes = 0;
  std::uint32_t max_mcs = 0;
  std::map<std::uint32_t, std::uint64_t> mcs;  ///< blocks per MCS

  void add(std::uint32_t m, std::uint32_t size) {
    ++blocks;
    bytes += size;
    max_mcs = std::max(max_mcs, m);
    ++mcs[m];
  }
  /// The MCS most blocks used.
  std::uint32_t usual_mcs() const {
    std::uint32_t best = 0;
    std::uint64_t count = 0;
    for (const auto& [m, n] : mcs) {
      if (n > count) best = m, count = n;
    }
    return best;
  }
  double mean_bytes() const { return blocks ? double(bytes) / double(blocks) : 0.0; }
};

struct LteSaturationResult {
  std::vector<double> goodput_bps;  ///< per UE, UDP payload
  TransportBlockLog dl, ul;         ///< all UEs' blocks
};

/// `ues` UEs of gradwire's LteNetwork (`network`, a server behind the PGW as the last host),
/// each with one saturating UDP flow of `payload`-byte datagrams at `offered_bps`: uplink
/// (UE -> server) or downlink. Traffic starts at 0.3 s (after attach); the window at 0.6 s.
inline LteSaturationResult lte_saturation(const nlohmann::json& network, std::uint32_t ues,
                                          bool uplink, std::uint32_t payload,
                                          double offered_bps, double window_s) {
  ns3::Simulator::Destroy();
  ns3::RngSeedManager::SetSeed(1);
  ns3::RngSeedManager::SetRun(1);
  LteNetwork net(LteConfig::from_json(network, "network"), ues + 1);
  std::vector<ns3::Ptr<ns3::PacketSink>> sinks;
  for (std::uint32_t i = 0; i < ues; ++i) {
    const auto port = static_cast<std::uint16_t>(9 + i);
    const std::size_t from = uplink ? i : ues, to = uplink ? ues : i;
    sinks.push_back(sink_on(net.host(to), "ns3::UdpSocketFactory", port));
    udp_source(net.host(from), net.address(to), port, offered_bps, payload, 0.3);
  }
  LteSaturationResult out;
  bool counting = false;
  ns3::Config::ConnectWithoutContext(
      "/NodeList/*/DeviceList/*/ComponentCarrierMap/*/LteEnbMac/DlScheduling",
      ns3::Callback<void, ns3::DlSchedulingCallbackInfo>(
          [&](ns3::DlSchedulingCallbackInfo info) {
            if (counting) out.dl.add(info.mcsTb1, info.sizeTb1);
          }));
  ns3::Config::ConnectWithoutContext(
      "/NodeList/*/DeviceList/*/ComponentCarrierMap/*/LteEnbMac/UlScheduling",
      ns3::Callback<void, std::uint32_t, std::uint32_t, std::uint16_t, std::uint8_t,
                    std::uint16_t, std::uint8_t>(
          [&](std::uint32_t, std::uint32_t, std::uint16_t, std::uint8_t mcs, std::uint16_t size,
              std::uint8_t) {
            if (counting) out.ul.add(mcs, size);
          }));
  const double start = 0.6;
  std::vector<std::uint64_t> at_start(ues), at_end(ues);
  ns3::Simulator::Schedule(ns3::Seconds(start), [&] {
    for (std::uint32_t i = 0; i < ues; ++i) at_start[i] = sinks[i]->GetTotalRx();
    counting = true;
  });
  ns3::Simulator::Schedule(ns3::Seconds(start + window_s), [&] {
    for (std::uint32_t i = 0; i < ues; ++i) at_end[i] = sinks[i]->GetTotalRx();
    counting = false;
    ns3::Simulator::Stop();
  });
  ns3::Simulator::Run();
  for (std::uint32_t i = 0; i < ues; ++i) {
    out.goodput_bps.push_back(8.0 * static_cast<double>(at_end[i] - at_start[i]) / window_s);
  }
  ns3::Simulator::Destroy();
  return out;
}

}  // namespace gradwire::testing

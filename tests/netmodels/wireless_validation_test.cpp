#include <cstdio>
#include <gtest/gtest.h>
#include "WirelessExperiments.h"
#include <ns3/sta-wifi-mac.h>
#include <map>
#include <ns3/he-configuration.h>
#include "WirelessReferences.h"

namespace gradwire::testing {
namespace {

TEST(Proto, Bianchi) {
  for (std::string std : {"ax"}) {
  for (std::uint32_t n : {1u, 2u, 5u, 10u, 20u}) {
    WifiConfig c;
    c.standard = std; c.band = "5GHz"; c.width_mhz = 20; c.rate_control = "constant"; c.mcs = 7;
    c.placement.kind = "distance"; c.placement.distance_m = 1.0;
    const std::uint32_t payload = 1472;
    std::string ackmode; std::map<int,int> drops, macdrops;
    auto r = wifi_saturation(c, n, payload, 1.0, [&](WifiCell& cell) {
      auto phy = ns3::DynamicCast<ns3::WifiNetDevice>(cell.ap_device)->GetPhy();
      phy->TraceConnectWithoutContext("PhyTxPsduBegin", ns3::Callback<void, ns3::WifiConstPsduMap, ns3::WifiTxVector, double>(
        [&](ns3::WifiConstPsduMap m, ns3::WifiTxVector tx, double) {
          for (auto& [id, p] : m) if (p->GetHeader(0).IsAck()) ackmode = tx.GetMode().GetUniqueName() + " size " + std::to_string(p->GetSize());
        }));
      phy->TraceConnectWithoutContext("PhyRxDrop", ns3::Callback<void, ns3::Ptr<const ns3::Packet>, ns3::WifiPhyRxfailureReason>(
        [&](ns3::Ptr<const ns3::Packet>, ns3::WifiPhyRxfailureReason r) { if (ns3::Simulator::Now().GetSeconds() > 0.8) drops[int(r)]++; }));
      for (std::uint32_t i = 0; i < cell.station_devices.GetN(); ++i) {
        auto mac = ns3::DynamicCast<ns3::WifiNetDevice>(cell.station_devices.Get(i))->GetMac();
        mac->TraceConnectWithoutContext("DroppedMpdu", ns3::Callback<void, ns3::WifiMacDropReason, ns3::Ptr<const ns3::WifiMpdu>>(
          [&](ns3::WifiMacDropReason r, ns3::Ptr<const ns3::WifiMpdu>) { if (ns3::Simulator::Now().GetSeconds() > 0.8) macdrops[int(r)]++; }));
      }
      std::printf("assoc check later\n");
      ns3::Simulator::Schedule(ns3::Seconds(0.8), [&cell] {
        int a = 0;
        for (std::uint32_t i = 0; i < cell.station_devices.GetN(); ++i)
          a += ns3::DynamicCast<ns3::StaWifiMac>(ns3::DynamicCast<ns3::WifiNetDevice>(cell.station_devices.Get(i))->GetMac())->IsAssociated();
        std::printf("associated %d\n", a);
      });
    });
    EdcaBestEffort e;
    const std::uint32_t mpdu = payload + kUdpBytes + kIpv4Bytes + kLlcSnapBytes + kQosMacBytes + (std != "n" ? kDelimiterBytes : 0);
    auto dtx = data_tx_vector(std, c.mcs, 20, false);
    auto atx = control_tx_vector(std, c.mcs);
    double td = tx_time_s(mpdu, dtx), ta = tx_time_s(kAckBytes, atx);
    double ta6 = tx_time_s(kAckBytes, ns3::WifiTxVector(ns3::OfdmPhy::GetOfdmRate6Mbps(), 0, ns3::WIFI_PREAMBLE_LONG, 800, 1,1,0,20,false));
    double ts = td + e.sifs_s + ta + e.aifs_s();
    double tc_difs = td + e.aifs_s();
    double tc_eifs = td + e.sifs_s + ta6 + e.aifs_s();
    double tc_to = td + e.sifs_s + e.slot_s + 20e-6 + e.aifs_s();
    int W = 16, m = 6;
    auto b1 = bianchi_saturation(n, W, m, payload * 8.0, e.slot_s, ts, tc_difs);
    auto b2 = bianchi_saturation(n, W, m, payload * 8.0, e.slot_s, ts, tc_eifs);
    auto b3 = bianchi_saturation(n, W, m, payload * 8.0, e.slot_s, ts, tc_to);
    std::printf("%s n=%u sim %.3f Mb/s  difs %.3f eifs %.3f ackto %.3f | psdu %.0f (mine %u) mode %s gi %u td %.1f us (sim %.1f) ack %s\n",
      std.c_str(), n, r.goodput_bps/1e6, b1.throughput_bps/1e6, b2.throughput_bps/1e6, b3.throughput_bps/1e6,
      r.first_station.psdu_bytes_per_ppdu(), mpdu, r.first_station.mode.c_str(), r.first_station.guard_interval_ns,
      td*1e6, r.first_station.airtime_s/r.first_station.ppdus*1e6, ackmode.c_str());
    for (auto& [k,v]: drops) std::printf("  phy drop reason %d: %d\n", k, v);
    for (auto& [k,v]: macdrops) std::printf("  mac drop reason %d: %d\n", k, v);
    std::printf("  sta0 ppdus %lu\n", (unsigned long)r.first_station.ppdus);
  }}
}

}  // namespace
}  // namespace gradwire::testing

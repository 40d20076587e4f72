// Test support: the outside references that gradwire's Wi-Fi and LTE models are validated
// against (tests/netmodels/wireless_validation_test.cpp, tests/bench/wireless_bench.cpp).
// Nothing here runs ns-3's network: these are the analytic models and the standard's tables.
//
//  - Bianchi's saturation model of the 802.11 DCF: G. Bianchi, "Performance Analysis of the
//    IEEE 802.11 Distributed Coordination Function", IEEE Journal on Selected Areas in
//    Communications 18(3), pp. 535-547, 2000 (eqs. 7, 9, 13 and the basic-access Ts, Tc).
//  - The single-station A-MPDU exchange of IEEE 802.11-2020 (clause 10.3.2.3 interframe
//    spaces, 10.23.2 EDCA, 10.24 block ack) with the PPDU durations of clauses 19 (HT),
//    21 (VHT) and IEEE 802.11ax-2021 clause 27 (HE), as ns-3's WifiPhy computes them.
//  - LTE transport block sizes: 3GPP TS 36.213 (Release 8 onwards) Table 7.1.7.2.1-1.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <ns3/he-phy.h>
#include <ns3/ht-phy.h>
#include <ns3/nstime.h>
#include <ns3/ofdm-phy.h>
#include <ns3/vht-phy.h>
#include <ns3/wifi-phy.h>
#include <ns3/wifi-tx-vector.h>

namespace gradwire::testing {

// ---------------------------------------------------------------------------------------------
// 802.11 timing at 5 GHz, from the standard (not from the model under test).

/// IEEE 802.11-2020 Table 17-21 (OFDM PHY, 20 MHz spacing; HT, VHT and HE at 5 GHz inherit
/// it): aSlotTime 9 us, aSIFSTime 16 us. Table 9-155 (default EDCA parameter set, AC_BE):
/// AIFSN 3, CWmin = aCWmin = 15, CWmax = aCWmax = 1023. AIFS = SIFS + AIFSN x slot (10.23.2.4).
struct EdcaBestEffort {
  double slot_s = 9e-6;
  double sifs_s = 16e-6;
  std::uint32_t aifsn = 3;
  std::uint32_t cw_min = 15;
  std::uint32_t cw_max = 1023;
  double aifs_s() const { return sifs_s + aifsn * slot_s; }
};

/// MAC framing of one UDP or TCP packet in a QoS data MPDU (IEEE 802.11-2020 9.3.2.1):
/// QoS data header 26 + FCS 4 bytes, LLC/SNAP 8 bytes, IPv4 20 bytes.
constexpr std::uint32_t kQosMacBytes = 26 + 4;
constexpr std::uint32_t kLlcSnapBytes = 8;
constexpr std::uint32_t kIpv4Bytes = 20;
constexpr std::uint32_t kUdpBytes = 8;
constexpr std::uint32_t kTcpWithTimestampsBytes = 32;  ///< 20 + 12 (RFC 7323 timestamps)
/// Control frames: Ack 14 bytes (9.3.1.3), compressed BlockAck with a 64-bit bitmap 32 bytes
/// (9.3.1.8); A-MPDU subframe delimiter 4 bytes, subframes padded to 4 bytes (9.7).
constexpr std::uint32_t kAckBytes = 14;
constexpr std::uint32_t kBlockAckBytes = 32;
constexpr std::uint32_t kDelimiterBytes = 4;

/// The data TXVECTOR of a single-stream SU PPDU at `mcs` of `standard` ("n", "ac", "ax") with
/// the 800 ns guard interval (HT mixed format, VHT SU, HE SU).
inline ns3::WifiTxVector data_tx_vector(const std::string& standard, std::uint32_t mcs,
                                        std::uint16_t width_mhz, bool aggregation) {
  const auto m = static_cast<std::uint8_t>(mcs);
  if (standard == "n") {
    return ns3::WifiTxVector(ns3::HtPhy::GetHtMcs(m), 0, ns3::WIFI_PREAMBLE_HT_MF, 800, 1, 1, 0,
                             width_mhz, aggregation);
  }
  if (standard == "ac") {
    return ns3::WifiTxVector(ns3::VhtPhy::GetVhtMcs(m), 0, ns3::WIFI_PREAMBLE_VHT_SU, 800, 1, 1,
                             0, width_mhz, aggregation);
  }
  return ns3::WifiTxVector(ns3::HePhy::GetHeMcs(m), 0, ns3::WIFI_PREAMBLE_HE_SU, 800, 1, 1, 0,
                           width_mhz, aggregation);
}

/// The TXVECTOR of a control response (Ack, BlockAck) to data at `mcs`: a non-HT PPDU at the
/// highest mandatory OFDM rate (6, 12 or 24 Mb/s) not above the data's non-HT reference rate
/// (IEEE 802.11-2020 10.6.6.5.2; gradwire's cells have no basic rate set beyond the mandatory).
inline ns3::WifiTxVector control_tx_vector(const std::string& standard, std::uint32_t mcs) {
  const auto m = static_cast<std::uint8_t>(mcs);
  const std::uint64_t reference = standard == "n"    ? ns3::HtPhy::GetNonHtReferenceRate(m)
                                  : standard == "ac" ? ns3::VhtPhy::GetNonHtReferenceRate(m)
                                                     : ns3::HePhy::GetNonHtReferenceRate(m);
  const ns3::WifiMode mode = reference >= 24'000'000   ? ns3::OfdmPhy::GetOfdmRate24Mbps()
                             : reference >= 12'000'000 ? ns3::OfdmPhy::GetOfdmRate12Mbps()
                                                       : ns3::OfdmPhy::GetOfdmRate6Mbps();
  return ns3::WifiTxVector(mode, 0, ns3::WIFI_PREAMBLE_LONG, 800, 1, 1, 0, 20, false);
}

/// PPDU duration of `bytes` of PSDU at `tx` in the 5 GHz band (the standard's TXTIME
/// equations: IEEE 802.11-2020 19.4.3 HT, 21.4.3 VHT, 17.4.3 non-HT; 802.11ax-2021 27.4.3 HE).
inline double tx_time_s(std::uint32_t bytes, const ns3::WifiTxVector& tx) {
  return ns3::WifiPhy::CalculateTxDuration(bytes, tx, ns3::WIFI_PHY_BAND_5GHZ).GetSeconds();
}

// ---------------------------------------------------------------------------------------------
// Bianchi.

struct BianchiPoint {
  double tau = 0;             ///< probability that a station transmits in a random slot
  double p = 0;               ///< conditional collision probability
  double throughput_bps = 0;  ///< saturation throughput S of the payload, all stations together
};

/// Bianchi's fixed point and saturation throughput for `n` stations with minimum window
/// W = CWmin + 1 and `m` backoff stages (CWmax + 1 = 2^m W). Times in seconds: `slot` the
/// empty slot sigma, `ts` / `tc` the busy periods of a success / a collision, each ending with
/// the idle time before the backoff countdown resumes.
inline BianchiPoint bianchi_saturation(int n, int W, int m, double payload_bits, double slot,
                                       double ts, double tc) {
  // Eq. 7 written as tau = 2 / (1 + W + p W sum_{i<m} (2p)^i) (no 0/0 at p = 1/2).
  const auto tau_of = [&](double p) {
    double sum = 0, term = 1;
    for (int i = 0; i < m; ++i) {
      sum += term;
      term *= 2 * p;
    }
    return 2.0 / (1.0 + W + p * W * sum);
  };
  // Eq. 9: p = 1 - (1 - tau)^(n-1). p - (1 - (1 - tau(p))^(n-1)) rises with p: bisection.
  double lo = 0, hi = 1;
  for (int it = 0; it < 200 && n > 1; ++it) {
    const double mid = 0.5 * (lo + hi);
    const double f = mid - (1 - std::pow(1 - tau_of(mid), n - 1));
    (f > 0 ? hi : lo) = mid;
  }
  BianchiPoint out;
  out.p = n > 1 ? 0.5 * (lo + hi) : 0.0;
  out.tau = tau_of(out.p);
  // Eq. 13.
  const double p_tr = 1 - std::pow(1 - out.tau, n);
  const double p_s = n * out.tau * std::pow(1 - out.tau, n - 1) / p_tr;
  out.throughput_bps = p_s * p_tr * payload_bits /
                       ((1 - p_tr) * slot + p_tr * p_s * ts + p_tr * (1 - p_s) * tc);
  return out;
}

// ---------------------------------------------------------------------------------------------
// LTE transport block sizes.

/// TS 36.213 Table 7.1.7.2.1-1, the columns N_PRB = 6, 15, 25, 50, 75, 100 of the rows
/// I_TBS = 0..26 (bits per 1 ms transport block, one layer).
inline std::uint32_t lte_tbs_bits(std::uint32_t i_tbs, std::uint32_t rbs) {
  static const std::uint32_t kRows[27][6] = {
      {152, 392, 680, 1384, 2088, 2792},         // I_TBS 0
      {208, 520, 904, 1800, 2728, 3624},         // 1
      {256, 648, 1096, 2216, 3368, 4584},        // 2
      {328, 872, 1416, 2856, 4392, 5736},        // 3
      {408, 1064, 1800, 3624, 5352, 7224},       // 4
      {504, 1320, 2216, 4392, 6712, 8760},       // 5
      {600, 1544, 2600, 5160, 7736, 10296},      // 6
      {712, 1800, 3112, 6200, 9144, 12216},      // 7
      {808, 2088, 3496, 6968, 10680, 14112},     // 8
      {936, 2344, 4008, 7992, 11832, 15840},     // 9
      {1032, 2664, 4392, 8760, 12960, 17568},    // 10
      {1192, 2984, 4968, 9912, 15264, 19848},    // 11
      {1352, 3368, 5736, 11448, 16992, 22920},   // 12
      {1544, 3880, 6456, 12960, 19080, 25456},   // 13
      {1736, 4264, 7224, 14112, 21384, 28336},   // 14
      {1800, 4584, 7736, 15264, 22920, 30576},   // 15
      {1928, 4968, 7992, 16416, 24496, 32856},   // 16
      {2152, 5352, 9144, 18336, 27376, 36696},   // 17
      {2344, 5992, 9912, 19848, 29296, 39232},   // 18
      {2600, 6456, 10680, 21384, 32856, 43816},  // 19
      {2792, 6968, 11448, 22920, 35160, 46888},  // 20
      {2984, 7480, 12576, 25456, 37888, 51024},  // 21
      {3240, 7992, 13536, 27376, 40576, 55056},  // 22
      {3496, 8504, 14112, 28336, 43816, 57336},  // 23
      {3624, 9144, 15264, 30576, 45352, 61664},  // 24
      {3752, 9528, 15840, 31704, 46888, 63776},  // 25
      {4392, 11064, 18336, 36696, 55056, 75376}, // 26
  };
  const std::uint32_t columns[6] = {6, 15, 25, 50, 75, 100};
  for (int c = 0; c < 6; ++c) {
    if (columns[c] == rbs && i_tbs <= 26) return kRows[i_tbs][c];
  }
  throw std::invalid_argument("no TBS for I_TBS " + std::to_string(i_tbs) + " and " +
                              std::to_string(rbs) + " RBs");
}

}  // namespace gradwire::testing

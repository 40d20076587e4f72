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

/// Saturation throughput of `n` stations sending `payload`-byte UDP datagrams to the AP, one
/// MPDU per channel access (no aggregation), normal Ack: Bianchi's model with the EDCA
/// best-effort parameters (W = CWmin + 1, m = log2((CWmax + 1) / W), sigma = slot) and the
/// basic-access busy periods
///   Ts = T_data + SIFS + T_ack + AIFS,   Tc = T_data + AIFS.
/// AIFS takes the place of Bianchi's DIFS: ns-3 (like the standard's EDCA, 10.23.2.5) resumes
/// the countdown after AIFS and takes one slot off the counter at its end, the busy period
/// counting as one of Bianchi's generic slots. Tc: ns-3 charges EIFS (SIFS + Ack at 6 Mb/s
/// before AIFS) only at a station whose PHY decoded a PHY header and then failed the payload.
/// In a cell where the colliding stations reach the others at about the same power, the
/// signal-to-interference ratio at the preamble is ~0 dB, under the 4 dB of ns-3's preamble
/// detection, so no station decodes the collision: the medium is merely busy (CCA) and the
/// stations that did not transmit resume after AIFS. Only the colliding stations wait their
/// AckTimeout (SIFS + slot + the Ack's PHY header, 45 us) before AIFS; the others count down
/// meanwhile, so the channel is busy for T_data + AIFS. `tc_ack_timeout` = true charges the
/// colliders' view instead (Tc + AckTimeout), a lower bound on the throughput.
struct BianchiCell {
  std::string standard = "ax";
  std::uint32_t mcs = 7;
  std::uint16_t width_mhz = 20;
  std::uint32_t payload = 1472;
  EdcaBestEffort edca;

  /// The PSDU: UDP/IP/LLC/QoS MAC framing; VHT and HE PPDUs carry it as an S-MPDU (one
  /// A-MPDU subframe with its delimiter, IEEE 802.11-2020 10.12.8), HT as a plain MPDU.
  std::uint32_t psdu_bytes() const {
    return payload + kUdpBytes + kIpv4Bytes + kLlcSnapBytes + kQosMacBytes +
           (standard == "n" ? 0 : kDelimiterBytes);
  }
  double t_data_s() const {
    return tx_time_s(psdu_bytes(), data_tx_vector(standard, mcs, width_mhz, false));
  }
  double t_ack_s() const { return tx_time_s(kAckBytes, control_tx_vector(standard, mcs)); }
  double ts_s() const { return t_data_s() + edca.sifs_s + t_ack_s() + edca.aifs_s(); }
  double tc_s(bool ack_timeout = false) const {
    const double timeout =
        edca.sifs_s + edca.slot_s +
        ns3::WifiPhy::CalculatePhyPreambleAndHeaderDuration(control_tx_vector(standard, mcs))
            .GetSeconds();
    return t_data_s() + edca.aifs_s() + (ack_timeout ? timeout : 0.0);
  }
  int W() const { return static_cast<int>(edca.cw_min + 1); }
  int m() const {
    return static_cast<int>(std::lround(std::log2((edca.cw_max + 1.0) / (edca.cw_min + 1.0))));
  }
  BianchiPoint saturation(int n, bool tc_ack_timeout = false) const {
    return bianchi_saturation(n, W(), m(), 8.0 * payload, edca.slot_s, ts_s(),
                              tc_s(tc_ack_timeout));
  }
};

// ---------------------------------------------------------------------------------------------
// One station's A-MPDU exchanges.

/// One EDCA channel access of a lone sender carrying an A-MPDU and its block ack:
///   T = AIFS + CWmin/2 x slot + TXTIME(A-MPDU) + SIFS + TXTIME(BlockAck)
/// (IEEE 802.11-2020 10.23.2 EDCA with the mean backoff of a first attempt, 10.25.6 HT-immediate
/// block ack). The A-MPDU holds as many `mpdu_bytes` MPDUs as fit every limit: the block ack
/// window (64, the buffer size ns-3 negotiates), the maximum A-MPDU length (65 535 bytes: the
/// HT limit, and ns-3's BE_MaxAmpduSize, which gradwire keeps for VHT and HE too) and
/// aPPDUMaxTime (5.484 ms, the L-SIG limit of HT-mixed, VHT and HE PPDUs: IEEE 802.11-2020
/// Tables 19-25 and 21-29, 802.11ax-2021 Table 27-54). Subframes are the 4-byte delimiter plus
/// the MPDU, padded to 4 bytes except the last (9.7.1).
struct AmpduExchange {
  std::uint32_t mpdus = 0;
  std::uint32_t psdu_bytes = 0;
  double ppdu_s = 0;
  double exchange_s = 0;
};

inline AmpduExchange ampdu_exchange(std::uint32_t mpdu_bytes, std::uint32_t want_mpdus,
                                    const ns3::WifiTxVector& data,
                                    const ns3::WifiTxVector& control,
                                    const EdcaBestEffort& edca = {}) {
  constexpr std::uint32_t kWindow = 64, kMaxAmpduBytes = 65535;
  constexpr double kPpduMaxTime = 5.484e-3;
  const std::uint32_t subframe = kDelimiterBytes + mpdu_bytes;
  const std::uint32_t padded = (subframe + 3) / 4 * 4;
  AmpduExchange out;
  for (std::uint32_t k = 1; k <= std::min(kWindow, want_mpdus); ++k) {
    const std::uint32_t bytes = (k - 1) * padded + subframe;
    if (bytes > kMaxAmpduBytes) break;
    const double t = tx_time_s(bytes, data);
    if (t > kPpduMaxTime && k > 1) break;
    out.mpdus = k;
    out.psdu_bytes = bytes;
    out.ppdu_s = t;
  }
  out.exchange_s = edca.aifs_s() + edca.cw_min / 2.0 * edca.slot_s + out.ppdu_s + edca.sifs_s +
                   tx_time_s(kBlockAckBytes, control);
  return out;
}

/// The analytic goodput of one station sending to the AP at `mcs`, as A-MPDUs.
///  UDP:  G = N x payload / T(N data MPDUs)
///  TCP:  G = N x MSS / (T(N data MPDUs) + T(ceil(N/2) TCP ACK MPDUs))
/// with T() of ampdu_exchange: the receiver acknowledges every second segment (delayed ACK,
/// RFC 1122 / 5681) and the AP returns the ACKs of one data A-MPDU in one A-MPDU of its own,
/// contending like the station. Not modelled: collisions between the station and the AP
/// (both contend after each exchange; equal backoffs, ~1/16 of contentions, cost a data
/// A-MPDU) and the AP carrying the ACKs of two data A-MPDUs in one when the station wins twice
/// in a row (fewer AP exchanges): opposite effects, each a few percent.
struct WifiLinkModel {
  std::string standard;
  std::uint32_t mcs = 0;
  std::uint16_t width_mhz = 20;
  std::uint32_t udp_payload = 1472;
  std::uint32_t tcp_mss = 1448;  ///< 1500-byte MTU less IP, TCP and timestamps (gradwire's)

  AmpduExchange data(bool tcp) const {
    const std::uint32_t mpdu = (tcp ? tcp_mss + kTcpWithTimestampsBytes : udp_payload + kUdpBytes) +
                               kIpv4Bytes + kLlcSnapBytes + kQosMacBytes;
    return ampdu_exchange(mpdu, 64, data_tx_vector(standard, mcs, width_mhz, true),
                          control_tx_vector(standard, mcs));
  }
  AmpduExchange acks(std::uint32_t count) const {
    const std::uint32_t mpdu = kTcpWithTimestampsBytes + kIpv4Bytes + kLlcSnapBytes + kQosMacBytes;
    return ampdu_exchange(mpdu, count, data_tx_vector(standard, mcs, width_mhz, true),
                          control_tx_vector(standard, mcs));
  }
  double goodput_bps(bool tcp) const {
    const AmpduExchange d = data(tcp);
    if (!tcp) return 8.0 * d.mpdus * udp_payload / d.exchange_s;
    const AmpduExchange a = acks((d.mpdus + 1) / 2);
    return 8.0 * d.mpdus * tcp_mss / (d.exchange_s + a.exchange_s);
  }
};

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

/// UDP goodput of one UE granted every TTI a transport block of `tbs_bits` (1 ms TTI), carrying
/// `payload`-byte datagrams: per datagram UDP/IPv4 28 bytes and the PDCP data PDU header
/// (2 bytes, 12-bit SN, TS 36.323 6.2.3) and RLC AM length indicator (1.5 bytes, TS 36.322
/// 6.2.1.4); per block the RLC AM data PDU header (2 bytes) and a MAC subheader (3 bytes,
/// TS 36.321 6.1.2). GTP-U/UDP/IP on S1-U do not travel over the air.
inline double lte_goodput_bps(std::uint32_t tbs_bits, std::uint32_t payload) {
  const double per_block = tbs_bits / 8.0 - 2 - 3;
  return 8.0 * per_block * payload / (payload + 28 + 2 + 1.5) * 1000.0;
}

}  // namespace gradwire::testing

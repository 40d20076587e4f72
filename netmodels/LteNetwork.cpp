#include "netmodels/LteNetwork.h"

#include <cmath>
#include <functional>
#include <sstream>
#include <stdexcept>

#include <ns3/config.h>
#include <ns3/double.h>
#include <ns3/enum.h>
#include <ns3/internet-stack-helper.h>
#include <ns3/lte-enb-rrc.h>
#include <ns3/lte-helper.h>
#include <ns3/lte-ue-net-device.h>
#include <ns3/lte-ue-rrc.h>
#include <ns3/nstime.h>
#include <ns3/spectrum-channel.h>
#include <ns3/point-to-point-epc-helper.h>
#include <ns3/uinteger.h>
#include <ns3/virtual-net-device.h>

#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "common/Units.h"
#include "common/DeclaredFields.h"
#include "common/FieldTable.h"
#include "netmodels/FamilyKeys.h"
#include "netmodels/HostTcpSocketFactory.h"
#include "netmodels/NetworkParams.h"
#include "netmodels/TcpDefaults.h"

namespace gradwire {

namespace {

const std::vector<std::pair<std::string, std::string>>& schedulers() {
  static const std::vector<std::pair<std::string, std::string>> kSchedulers = {
      {"pf", "ns3::PfFfMacScheduler"},       {"rr", "ns3::RrFfMacScheduler"},
      {"fdmt", "ns3::FdMtFfMacScheduler"},   {"tdmt", "ns3::TdMtFfMacScheduler"},
      {"tta", "ns3::TtaFfMacScheduler"},     {"fdbet", "ns3::FdBetFfMacScheduler"},
      {"tdbet", "ns3::TdBetFfMacScheduler"}, {"fdtbfq", "ns3::FdTbfqFfMacScheduler"},
      {"tdtbfq", "ns3::TdTbfqFfMacScheduler"}, {"pss", "ns3::PssFfMacScheduler"},
      {"cqa", "ns3::CqaFfMacScheduler"}};
  return kSchedulers;
}

/// The ns-3 type of a declared scheduler name.
const std::string& scheduler_type(const std::string& name) {
  for (const auto& s : schedulers()) {
    if (s.first == name) return s.second;
  }
  throw std::logic_error("no ns-3 scheduler for the declared scheduler '" + name + "'");
}

using namespace params;

// Every key of the family, each bound to the member that holds it: read, written and listed
// from here.
const FamilyKeys<LteConfig>& keys() {
  static const FamilyKeys<LteConfig> kKeys(
      "lte",
      FieldTable<LteConfig>()
          .add(integer(
                   "enbs", 1, 1, 16,
                   "eNodeBs on a line, `enb_spacing_m` apart; worker UE i attaches to eNodeB i mod "
                   "`enbs`"),
               &LteConfig::enbs)
          .add(number("enb_spacing_m", 500.0, 1.0, 100000.0,
                      "distance between neighbouring eNodeBs, metres"),
               &LteConfig::enb_spacing_m)
          .add(
              object("placement",
                     "where UEs stand around their eNodeB (`placement` below; default 100 m away)"),
              &LteConfig::placement, PlacementSpec::reader(100.0), &PlacementSpec::to_json)
          .add(integer("ul_bandwidth", 100, 6, 100,
                       "uplink resource blocks: 6, 15, 25, 50, 75 or 100 (1.4 to 20 MHz)"),
               &LteConfig::ul_bandwidth)
          .add(integer("dl_bandwidth", 100, 6, 100, "downlink resource blocks, as `ul_bandwidth`"),
               &LteConfig::dl_bandwidth)
          .add(choice("scheduler", "pf",
                      {"pf", "rr", "fdmt", "tdmt", "tta", "fdbet", "tdbet", "fdtbfq", "tdtbfq",
                       "pss", "cqa"},
                      "ns-3's FF MAC scheduler: `pf` proportional fair, `rr` round robin, "
                      "`fdmt`/`tdmt` maximum throughput (frequency/time domain), `tta` "
                      "throughput to average, "
                      "`fdbet`/`tdbet` blind equal throughput, `fdtbfq`/`tdtbfq` token bank fair "
                      "queue, `pss` priority set, `cqa` channel and QoS aware"),
               &LteConfig::scheduler)
          .add(
              choice(
                  "rlc", "am", {"am", "um"},
                  "RLC mode of the bearers: `am` (acknowledged, as TCP bearers use in practice) or "
                  "`um` (unacknowledged); RLC buffers hold 4 MiB"),
              &LteConfig::rlc)
          .add(number("ue_tx_power_dbm", 23.0, -40.0, 40.0, "UE transmit power, dBm"),
               &LteConfig::ue_tx_power_dbm)
          .add(number("enb_tx_power_dbm", 43.0, 0.0, 60.0, "eNodeB transmit power, dBm"),
               &LteConfig::enb_tx_power_dbm)
          .add(choice("pathloss", "friis", {"friis", "log-distance", "cost231"},
                      "path loss: `friis` (free space), `log-distance` (`exponent`) or `cost231` "
                      "(COST-231 Hata)"),
               &LteConfig::pathloss)
          .add(number("exponent", 3.0, 1.0, 8.0, "log-distance path-loss exponent"),
               &LteConfig::exponent)
          .add(fading_param(
                   "fast fading on every radio link, downlink and uplink: `nakagami` scales each "
                   "transmission's received power by a Nakagami-m draw (ns-3's "
                   "NakagamiPropagationLossModel, chained onto the path loss; a new draw per "
                   "transmission, the same over its resource blocks)"),
               &LteConfig::fading)
          .add(nakagami_m_param(
                   "`fading` `nakagami`: the shape m (1 = Rayleigh; larger = milder fading)"),
               &LteConfig::nakagami_m)
          .add(
              choice("handover", "none", {"none", "a3-rsrp"},
                     "`a3-rsrp`: X2 links between every pair of eNodeBs and ns-3's "
                     "A3RsrpHandoverAlgorithm (a UE hands over when a neighbour's RSRP exceeds its "
                     "cell's by `hysteresis_db` for `time_to_trigger`); `none`: UEs stay with the "
                     "eNodeB they attached to. Handovers reach summary.json's `network_events`"),
              &LteConfig::handover)
          .add(number("hysteresis_db", 3.0, 0.0, 15.0,
                      "`handover` `a3-rsrp`: how much stronger a neighbour must be, dB"),
               &LteConfig::hysteresis_db)
          .add(at_most(duration("time_to_trigger", "256ms",
                                "`handover` `a3-rsrp`: how long it must stay stronger, whole "
                                "milliseconds (5.12s is 3GPP's longest)"),
                       5.12),
               &LteConfig::time_to_trigger_s)
          .add(rate("backhaul_rate", "10Gbps",
                    "PGW <-> server host (`server` `remote` or `edge`) or, in a hybrid group, PGW "
                    "<-> core router"),
               &LteConfig::backhaul_rate_bps)
          .add(derived(duration("backhaul_delay", "10ms", "one-way delay of the backhaul"),
                       "10ms (100us with server edge)"),
               &LteConfig::backhaul_delay_s,
               // A server next to the PGW (MEC) sits behind a short link; an Internet one far.
               [](ParamSpec s, const LteConfig& c) {
                 s.default_value = c.server == "edge" ? "100us" : "10ms";
                 return s;
               })
          .add(impairments_param(true), &LteConfig::impairments, ImpairmentsConfig::reader(true),
               ImpairmentsConfig::writer(true))
          .add(object("radio_energy",
                      "the UEs' power model, for the energy each UE's radio used (`radio_energy` "
                      "below); measures only, changes nothing in the simulation"),
               &LteConfig::radio_energy, &LteRadioEnergyConfig::from_json,
               &LteRadioEnergyConfig::to_json)
          .add(
              choice(
                  "server", "remote", {"remote", "edge", "ue"},
                  "where the last host sits: `remote` (behind the PGW: an Internet server), `edge` "
                  "(next to the PGW: MEC) or `ue` (another UE). Under topology `ps` that host is "
                  "the parameter server; under `ring` it is the last worker, so keep `ue` for "
                  "rings"),
              &LteConfig::server)
          .add(tcp_buffer_param(), &LteConfig::tcp_buffer_bytes));
  return kKeys;
}

/// ConfigError unless `key`'s resource blocks are a bandwidth LTE has.
void check_resource_blocks(const JsonFields& f, const char* key, std::uint32_t v) {
  if (v != 6 && v != 15 && v != 25 && v != 50 && v != 75 && v != 100) {
    throw ConfigError(f.path_of(key),
                      "expected resource blocks 6, 15, 25, 50, 75 or 100 (1.4 to 20 MHz)");
  }
}

}  // namespace

const std::vector<ParamSpec>& lte_params() { return keys().params(); }

const std::vector<ParamSpec>& lte_group_params() { return keys().params(true); }

LteConfig LteConfig::from_json(const nlohmann::json& object, const std::string& path,
                               bool group) {
  LteConfig c = keys().read(object, path, group);
  const JsonFields f(object, path);
  check_resource_blocks(f, "ul_bandwidth", c.ul_bandwidth);
  check_resource_blocks(f, "dl_bandwidth", c.dl_bandwidth);
  return c;
}

nlohmann::json LteConfig::to_json(bool group) const { return keys().write(*this, group); }

LteCell build_lte_cell(const LteConfig& config, std::size_t worker_ues,
                       StreamAllocator& streams) {
  const std::size_t extra = config.impairments.background.size();
  const std::size_t total = worker_ues + extra;
  // Reliable RLC for TCP, with buffers that hold a TCP window (ns-3's 10 KiB default drops).
  ns3::Config::SetDefault("ns3::LteEnbRrc::EpsBearerToRlcMapping",
                          ns3::EnumValue(config.rlc == "am" ? ns3::LteEnbRrc::RLC_AM_ALWAYS
                                                            : ns3::LteEnbRrc::RLC_UM_ALWAYS));
  ns3::Config::SetDefault("ns3::LteRlcAm::MaxTxBufferSize", ns3::UintegerValue(4 << 20));
  ns3::Config::SetDefault("ns3::LteRlcUm::MaxTxBufferSize", ns3::UintegerValue(4 << 20));
  ns3::Config::SetDefault("ns3::LteUePhy::TxPower", ns3::DoubleValue(config.ue_tx_power_dbm));
  ns3::Config::SetDefault("ns3::LteEnbPhy::TxPower", ns3::DoubleValue(config.enb_tx_power_dbm));
  // Sounding reference signals: the period bounds how many UEs one eNodeB can serve.
  std::uint32_t srs = 40;
  const std::size_t per_enb = (total + config.enbs - 1) / config.enbs;
  for (std::uint32_t p : {40u, 80u, 160u, 320u}) {
    srs = p;
    if (per_enb < p) break;
  }
  if (per_enb >= 320) throw ConfigError("network", "at most 319 UEs per eNodeB");
  ns3::Config::SetDefault("ns3::LteEnbRrc::SrsPeriodicity", ns3::UintegerValue(srs));

  LteCell cell;
  auto lte = ns3::CreateObject<ns3::LteHelper>();
  auto epc = ns3::CreateObject<ns3::PointToPointEpcHelper>();
  lte->SetEpcHelper(epc);
  cell.lte_helper = lte;
  cell.epc_helper = epc;
  lte->SetSchedulerType(scheduler_type(config.scheduler));
  if (config.pathloss == "friis") {
    lte->SetPathlossModelType(ns3::TypeId::LookupByName("ns3::FriisPropagationLossModel"));
  } else if (config.pathloss == "cost231") {
    lte->SetPathlossModelType(ns3::TypeId::LookupByName("ns3::Cost231PropagationLossModel"));
  } else {
    lte->SetPathlossModelType(ns3::TypeId::LookupByName("ns3::LogDistancePropagationLossModel"));
    lte->SetPathlossModelAttribute("Exponent", ns3::DoubleValue(config.exponent));
  }
  if (config.handover == "a3-rsrp") {
    lte->SetHandoverAlgorithmType("ns3::A3RsrpHandoverAlgorithm");
    lte->SetHandoverAlgorithmAttribute("Hysteresis", ns3::DoubleValue(config.hysteresis_db));
    lte->SetHandoverAlgorithmAttribute(
        "TimeToTrigger",
        ns3::TimeValue(ns3::MilliSeconds(std::llround(config.time_to_trigger_s * 1000))));
  }
  lte->SetEnbDeviceAttribute("UlBandwidth", ns3::UintegerValue(config.ul_bandwidth));
  lte->SetEnbDeviceAttribute("DlBandwidth", ns3::UintegerValue(config.dl_bandwidth));
  cell.pgw = epc->GetPgwNode();

  ns3::NodeContainer& enbs = cell.enbs;
  enbs.Create(config.enbs);
  std::vector<ns3::Vector> enb_positions;
  for (std::uint32_t e = 0; e < config.enbs; ++e) {
    enb_positions.emplace_back(e * config.enb_spacing_m, 0.0, 30.0);
  }
  place_fixed(enbs, enb_positions);
  cell.ues.Create(static_cast<std::uint32_t>(total));
  // Worker UEs around their eNodeB by placement (and mobility); background UEs fixed.
  for (std::uint32_t e = 0; e < config.enbs; ++e) {
    ns3::NodeContainer group;
    for (std::size_t i = e; i < worker_ues; i += config.enbs) {
      group.Add(cell.ues.Get(static_cast<std::uint32_t>(i)));
    }
    const ns3::Vector center(enb_positions[e].x, 0.0, 1.5);
    place_mobile(group, config.placement.positions(group.GetN(), center, streams),
                 config.impairments.mobility, center, streams);
  }
  for (std::size_t i = 0; i < extra; ++i) {
    const double d = config.impairments.background[i].distance_m;
    const double angle = 0.5 + 2.0 * static_cast<double>(i);
    place_fixed(ns3::NodeContainer(cell.ues.Get(static_cast<std::uint32_t>(worker_ues + i))),
                {ns3::Vector(d * std::cos(angle), d * std::sin(angle), 1.5)});
  }
  cell.enb_devices = lte->InstallEnbDevice(enbs);
  const ns3::NetDeviceContainer& enb_devices = cell.enb_devices;
  cell.ue_devices = lte->InstallUeDevice(cell.ues);
  // Energy only reads the UEs' PHY traces: no random draws, no change to what they do.
  for (std::uint32_t i = 0; i < cell.ue_devices.GetN(); ++i) {
    cell.ue_energy.push_back(
        std::make_shared<LteUeEnergyModel>(config.radio_energy, cell.ue_devices.Get(i)));
  }
  if (config.fading == "nakagami") {
    // The channels exist once the first device is installed. Each gets its own model: a new
    // draw per transmission and receiver, on top of the path loss. The same m at every
    // distance (ns-3's model allows three ranges).
    for (const auto& channel :
         {lte->GetDownlinkSpectrumChannel(), lte->GetUplinkSpectrumChannel()}) {
      auto fading = ns3::CreateObject<ns3::NakagamiPropagationLossModel>();
      for (const char* m : {"m0", "m1", "m2"}) {
        fading->SetAttribute(m, ns3::DoubleValue(config.nakagami_m));
      }
      channel->AddPropagationLossModel(fading);
      cell.fading.push_back(fading);
    }
  }
  lte->AssignStreams(enb_devices, streams.reserve(64 * static_cast<std::int64_t>(enbs.GetN())));
  lte->AssignStreams(cell.ue_devices,
                     streams.reserve(64 * static_cast<std::int64_t>(cell.ues.GetN())));
  ns3::InternetStackHelper stack;
  stack.SetIpv6StackInstall(false);  // no IPv6 router solicitations on the air
  stack.Install(cell.ues);
  ns3::Ipv4InterfaceContainer ifaces = epc->AssignUeIpv4Address(cell.ue_devices);
  for (std::uint32_t i = 0; i < cell.ues.GetN(); ++i) {
    cell.ue_addresses.push_back(ifaces.GetAddress(i));
    add_default_route(cell.ues.Get(i), epc->GetUeDefaultGatewayAddress(),
                      interface_of(cell.ue_devices.Get(i)));
    const std::uint32_t enb = i < worker_ues ? i % config.enbs : 0;
    lte->Attach(cell.ue_devices.Get(i), enb_devices.Get(enb));
  }
  if (config.handover != "none") {
    lte->AddX2Interface(enbs);
    cell.reports_events = true;
    const std::shared_ptr<LteEventCounts> events = cell.events;
    for (std::uint32_t i = 0; i < cell.ue_devices.GetN(); ++i) {
      auto rrc = ns3::DynamicCast<ns3::LteUeNetDevice>(cell.ue_devices.Get(i))->GetRrc();
      const auto count = [&rrc](const char* trace, std::function<void()> add) {
        if (!rrc->TraceConnectWithoutContext(
                trace, ns3::Callback<void, std::uint64_t, std::uint16_t, std::uint16_t>(
                           [add](std::uint64_t, std::uint16_t, std::uint16_t) { add(); }))) {
          throw std::logic_error(std::string("LteUeRrc has no trace ") + trace);
        }
      };
      count("HandoverEndOk", [events] { ++events->handovers; });
      count("HandoverEndError", [events] { ++events->handover_failures; });
      count("RadioLinkFailure", [events] { ++events->radio_link_failures; });
    }
  }
  for (std::uint32_t d = 0; d < cell.pgw->GetNDevices(); ++d) {
    if (ns3::DynamicCast<ns3::VirtualNetDevice>(cell.pgw->GetDevice(d))) {
      cell.pgw_tun = cell.pgw->GetDevice(d);
    }
  }
  return cell;
}

void assign_fading_streams(const LteCell& cell, StreamAllocator& streams) {
  for (const auto& fading : cell.fading) {
    // The Erlang and the Gamma variable behind each model.
    if (fading->AssignStreams(streams.reserve(2)) > 2) {
      throw std::logic_error("a Nakagami model used more than the 2 streams reserved for it");
    }
  }
}

std::map<std::string, std::uint64_t> LteCell::event_counts() const {
  if (!reports_events) return {};
  return {{"handovers", events->handovers},
          {"handover_failures", events->handover_failures},
          {"radio_link_failures", events->radio_link_failures}};
}

std::map<std::size_t, double> LteCell::ue_joules(std::size_t hosts) const {
  std::map<std::size_t, double> out;
  for (std::size_t i = 0; i < hosts && i < ue_energy.size(); ++i) out[i] = ue_energy[i]->joules();
  return out;
}

std::map<std::size_t, double> LteNetwork::radio_joules() const {
  return cell_.ue_joules(hosts_.size() - (config_.server != "ue" ? 1 : 0));
}

LteNetwork::LteNetwork(const LteConfig& config, std::size_t hosts) : config_(config) {
  apply_tcp_defaults(1500, config_.tcp_buffer_bytes);
  apply_wireless_tcp_defaults();
  const bool server_apart = config_.server != "ue";
  if (hosts < (server_apart ? 2u : 1u)) throw ConfigError("network", "too few hosts for LTE");
  const std::size_t ues = hosts - (server_apart ? 1 : 0);
  cell_ = build_lte_cell(config_, ues, streams_);

  // The server (or, in a ring of UEs, a sink for background traffic) behind the PGW.
  auto remote = ns3::CreateObject<ns3::Node>();
  ns3::InternetStackHelper stack;
  stack.SetIpv6StackInstall(false);  // no IPv6 router solicitations on the air
  stack.Install(remote);
  const WiredLink link = connect_p2p(cell_.pgw, remote, config_.backhaul_rate_bps,
                                     config_.backhaul_delay_s, 1500, "1.0.0.0");
  add_network_route(remote, ns3::Ipv4Address("7.0.0.0"), ns3::Ipv4Mask("255.0.0.0"),
                    link.a_address, link.b_interface);

  std::vector<HostAttachment> attachments;
  for (std::size_t i = 0; i < ues; ++i) {
    hosts_.push_back(cell_.ues.Get(static_cast<std::uint32_t>(i)));
    addresses_.push_back(cell_.ue_addresses[i]);
    attachments.push_back(HostAttachment{cell_.ue_devices.Get(static_cast<std::uint32_t>(i)),
                                         cell_.pgw_tun, true, cell_.ue_addresses[i]});
  }
  if (server_apart) {
    hosts_.push_back(remote);
    addresses_.push_back(link.b_address);
    attachments.push_back(HostAttachment{link.b_device, link.a_device, false, link.b_address});
  }
  netems_ = apply_impairments(config_.impairments, attachments, streams_);

  for (std::size_t i = 0; i < config_.impairments.background.size(); ++i) {
    const auto& flow = config_.impairments.background[i];
    const long target =
        flow.target < 0 ? static_cast<long>(hosts_.size()) + flow.target : flow.target;
    if (target < 0 || target >= static_cast<long>(hosts_.size())) {
      throw ConfigError("network.impairments.background[" + std::to_string(i) + "].target",
                        "expected a host index in [-" + std::to_string(hosts_.size()) + ", " +
                            std::to_string(hosts_.size() - 1) + "]");
    }
    auto extra = cell_.ues.Get(static_cast<std::uint32_t>(ues + i));
    if (flow.direction == "uplink") {
      start_background_flow(flow, extra, hosts_[target], addresses_[target], streams_);
    } else {
      start_background_flow(flow, hosts_[target], extra, cell_.ue_addresses[ues + i], streams_);
    }
  }
  assign_fading_streams(cell_, streams_);
  // Every host keeps Linux's small queues below its TCP sockets where its device allows.
  HostTcpSocketFactory::FollowHostQueues(*this);
}

std::string LteNetwork::describe() const {
  std::ostringstream out;
  out << "lte " << config_.enbs << " eNodeB, " << cell_.ues.GetN() << " UEs ("
      << config_.impairments.background.size() << " background), UL/DL " << config_.ul_bandwidth
      << "/" << config_.dl_bandwidth << " RBs, " << config_.scheduler << " scheduler, RLC "
      << config_.rlc;
  if (config_.fading != "none") out << ", Nakagami fading m=" << config_.nakagami_m;
  if (config_.handover != "none") out << ", " << config_.handover << " handover over X2";
  out << ", server " << config_.server << " ("
      << format_duration(config_.backhaul_delay_s) << " backhaul)";
  if (config_.impairments.shapes_packets()) out << ", impaired";
  return out.str();
}

}  // namespace gradwire

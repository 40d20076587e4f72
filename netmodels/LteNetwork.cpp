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

std::uint32_t read_rbs(const JsonFields& f, const ParamSpec& spec) {
  const auto v = static_cast<std::uint32_t>(declared_integer(f, spec));
  if (v != 6 && v != 15 && v != 25 && v != 50 && v != 75 && v != 100) {
    throw ConfigError(f.path_of(spec.name),
                      "expected resource blocks 6, 15, 25, 50, 75 or 100 (1.4 to 20 MHz)");
  }
  return v;
}

/// The ns-3 type of a declared scheduler name.
const std::string& scheduler_type(const std::string& name) {
  for (const auto& s : schedulers()) {
    if (s.first == name) return s.second;
  }
  throw std::logic_error("no ns-3 scheduler for the declared scheduler '" + name + "'");
}

}  // namespace

LteConfig LteConfig::from_json(const nlohmann::json& object, const std::string& path,
                               bool group) {
  const std::vector<ParamSpec>& declared = group ? lte_group_params() : lte_params();
  const auto spec = [&](const char* name) -> const ParamSpec& {
    return param_named(declared, name);
  };
  JsonFields f(object, path);
  f.allow(group ? allowed_keys({"family"}, declared, {"workers"})
                : allowed_keys({"family"}, declared));
  LteConfig c;
  c.enbs = static_cast<std::uint32_t>(declared_integer(f, spec("enbs")));
  c.enb_spacing_m = declared_number(f, spec("enb_spacing_m"));
  c.placement = PlacementSpec::from_json(f.object_at("placement"), f.path_of("placement"), 100.0);
  c.ul_bandwidth = read_rbs(f, spec("ul_bandwidth"));
  c.dl_bandwidth = read_rbs(f, spec("dl_bandwidth"));
  c.scheduler = declared_string(f, spec("scheduler"));
  c.rlc = declared_string(f, spec("rlc"));
  c.ue_tx_power_dbm = declared_number(f, spec("ue_tx_power_dbm"));
  c.enb_tx_power_dbm = declared_number(f, spec("enb_tx_power_dbm"));
  c.pathloss = declared_string(f, spec("pathloss"));
  c.exponent = declared_number(f, spec("exponent"));
  c.fading = declared_string(f, spec("fading"));
  c.nakagami_m = declared_number(f, spec("nakagami_m"));
  c.handover = declared_string(f, spec("handover"));
  c.hysteresis_db = declared_number(f, spec("hysteresis_db"));
  c.time_to_trigger_s = declared_duration(f, spec("time_to_trigger"));
  if (!group) {
    c.server = declared_string(f, spec("server"));
    c.tcp_buffer_bytes = static_cast<std::uint32_t>(declared_integer(f, spec("tcp_buffer")));
  }
  c.backhaul_rate_bps = declared_rate(f, spec("backhaul_rate"));
  // A server next to the PGW (MEC) sits behind a short link; an Internet server far away.
  c.backhaul_delay_s =
      declared_duration(f, spec("backhaul_delay"), c.server == "edge" ? 100e-6 : 10e-3);
  c.impairments =
      ImpairmentsConfig::from_json(f.object_at("impairments"), f.path_of("impairments"), true);
  c.radio_energy = LteRadioEnergyConfig::from_json(f.object_at("radio_energy"),
                                                   f.path_of("radio_energy"));
  return c;
}

nlohmann::json LteConfig::to_json(bool group) const {
  nlohmann::json j = {{"family", "lte"},
                      {"enbs", enbs},
                      {"enb_spacing_m", enb_spacing_m},
                      {"placement", placement.to_json()},
                      {"ul_bandwidth", ul_bandwidth},
                      {"dl_bandwidth", dl_bandwidth},
                      {"scheduler", scheduler},
                      {"rlc", rlc},
                      {"ue_tx_power_dbm", ue_tx_power_dbm},
                      {"enb_tx_power_dbm", enb_tx_power_dbm},
                      {"pathloss", pathloss},
                      {"exponent", exponent},
                      {"fading", fading},
                      {"nakagami_m", nakagami_m},
                      {"handover", handover},
                      {"hysteresis_db", hysteresis_db},
                      {"time_to_trigger", format_duration(time_to_trigger_s)},
                      {"backhaul_rate", format_bps(backhaul_rate_bps)},
                      {"backhaul_delay", format_duration(backhaul_delay_s)},
                      {"impairments", impairments.to_json(true)},
                      {"radio_energy", radio_energy.to_json()}};
  if (!group) {
    j["server"] = server;
    j["tcp_buffer"] = tcp_buffer_bytes;
  }
  return j;
}

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

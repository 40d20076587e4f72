#include "netmodels/Impairments.h"

#include <ns3/data-rate.h>
#include <ns3/double.h>
#include <ns3/inet-socket-address.h>
#include <ns3/on-off-helper.h>
#include <ns3/packet-sink-helper.h>
#include <ns3/packet-sink.h>
#include <ns3/pointer.h>
#include <ns3/string.h>
#include <ns3/traffic-control-helper.h>
#include <ns3/traffic-control-layer.h>
#include <ns3/uinteger.h>

#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "common/Units.h"
#include "common/DeclaredFields.h"
#include "netmodels/NetworkParams.h"

namespace gradwire {

using namespace params;

namespace {

/// `spec` with an exclusive lower bound; ranges the builders cannot declare (durations).
ParamSpec above(ParamSpec spec, double min) {
  spec.min = min;
  spec.min_exclusive = true;
  return spec;
}

constexpr std::uint16_t kBackgroundPort = 9;

std::vector<int> read_host_list(const JsonFields& f, const std::string& key, bool allow_all) {
  if (!f.has(key)) return {};
  const auto& v = f.object().at(key);
  const std::string where = f.path_of(key);
  if (allow_all && v.is_string() && v.get<std::string>() == "all") return {};
  if (!v.is_array()) {
    throw ConfigError(where, std::string("expected ") + (allow_all ? "\"all\" or " : "") +
                                 "a list of host indices (negative counts from the end), got " +
                                 json_brief(v));
  }
  std::vector<int> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < -100000 ||
        v[i].get<std::int64_t>() > 100000) {
      throw ConfigError(where + "[" + std::to_string(i) + "]",
                        "expected a host index (integer; -1 = last host), got " +
                            json_brief(v[i]));
    }
    out.push_back(v[i].get<int>());
  }
  return out;
}

bool host_listed(const std::vector<int>& list, std::size_t index, std::size_t hosts) {
  if (list.empty()) return true;
  for (int h : list) {
    const long resolved = h < 0 ? static_cast<long>(hosts) + h : h;
    if (resolved == static_cast<long>(index)) return true;
  }
  return false;
}

nlohmann::json hosts_json(const std::vector<int>& hosts) {
  if (hosts.empty()) return "all";
  return hosts;
}

/// A list of host indices or "all", in `member`.
template <typename Config>
void add_hosts(FieldTable<Config>& keys, ParamSpec spec, std::vector<int> Config::*member) {
  keys.add(
      std::move(spec),
      [member](const JsonFields& f, const ParamSpec& s, Config& c) {
        c.*member = read_host_list(f, s.name, true);
      },
      [member](const Config& c, const ParamSpec& s, nlohmann::json& out) {
        out[s.name] = hosts_json(c.*member);
      });
}

/// A list of objects, each read by `read` at path[i].
template <typename Config, typename Entry>
void add_entries(FieldTable<Config>& keys, ParamSpec spec, std::vector<Entry> Config::*member,
                 std::function<Entry(const nlohmann::json&, const std::string&)> read,
                 std::function<nlohmann::json(const Entry&)> write) {
  keys.add(
      std::move(spec),
      [member, read](const JsonFields& f, const ParamSpec& s, Config& c) {
        if (!f.has(s.name)) return;
        const auto& list = f.object().at(s.name);
        if (!list.is_array()) {
          throw ConfigError(f.path_of(s.name), "expected a list of objects, got " + json_brief(list));
        }
        for (std::size_t i = 0; i < list.size(); ++i) {
          (c.*member).push_back(read(list[i], f.path_of(s.name) + "[" + std::to_string(i) + "]"));
        }
      },
      [member, write](const Config& c, const ParamSpec& s, nlohmann::json& out) {
        out[s.name] = nlohmann::json::array();
        for (const auto& e : c.*member) out[s.name].push_back(write(e));
      });
}

FieldTable<ImpairmentsConfig> impairment_keys(bool wireless);

}  // namespace

double LossSpec::mean_loss() const {
  if (model == "uniform") return rate;
  if (model == "gilbert-elliott") {
    const double bad = p / (p + r);  // stationary probability of the bad state
    return (1 - bad) * loss_good + bad * loss_bad;
  }
  return 0.0;
}

const FieldTable<LossSpec>& LossSpec::keys() {
  static const FieldTable<LossSpec> kKeys = [] {
    const auto model_is = [](const char* m) {
      return [m](const LossSpec& l) { return l.model == m; };
    };
    FieldTable<LossSpec> k;
    k.add(choice("model", "none", {"none", "uniform", "gilbert-elliott"},
                 "`uniform`: each packet is lost with probability `rate`; `gilbert-elliott`: "
                 "bursts, from a two-state (good, bad) Markov chain stepped per packet"),
          &LossSpec::model)
        .add(number("rate", 0.01, 0.0, 1.0, "`uniform`: probability that a packet is lost"),
             &LossSpec::rate)
        .only_when(model_is("uniform"))
        .add(number("p", 0.01, 0.0, 1.0, "`gilbert-elliott`: P(good -> bad) per packet"),
             &LossSpec::p)
        .only_when(model_is("gilbert-elliott"))
        .add(number("r", 0.25, 0.0, 1.0,
                    "`gilbert-elliott`: P(bad -> good) per packet; bursts last 1 / r packets on "
                    "average",
                    true),
             &LossSpec::r)
        .only_when(model_is("gilbert-elliott"))
        .add(number("loss_good", 0.0, 0.0, 1.0,
                    "`gilbert-elliott`: loss probability in the good state"),
             &LossSpec::loss_good)
        .only_when(model_is("gilbert-elliott"))
        .add(number("loss_bad", 1.0, 0.0, 1.0,
                    "`gilbert-elliott`: loss probability in the bad state; mean loss = (r "
                    "loss_good + p loss_bad) / (p + r)"),
             &LossSpec::loss_bad)
        .only_when(model_is("gilbert-elliott"));
    return k;
  }();
  return kKeys;
}

const FieldTable<OutageSpec>& OutageSpec::keys() {
  static const FieldTable<OutageSpec> kKeys = [] {
    FieldTable<OutageSpec> k;
    k.add(required_key(duration("down", "", "the hosts' links go down at this simulated time")),
          &OutageSpec::down_s)
        .add(required_key(duration("up", "",
                                   "and come back at this time, after `down`: nothing crosses "
                                   "in [down, up)")),
             &OutageSpec::up_s);
    add_hosts(k,
              key_with_default(list("hosts",
                                    "hosts whose links go down: `\"all\"` (every impaired "
                                    "host) or a list of host indices (-1 is the last host)"),
                               "all"),
              &OutageSpec::hosts);
    return k;
  }();
  return kKeys;
}

const FieldTable<BackgroundFlowSpec>& BackgroundFlowSpec::keys(bool wireless) {
  static const FieldTable<BackgroundFlowSpec> kWired = [] {
    FieldTable<BackgroundFlowSpec> k;
    k.add(rate("rate", "10Mbps", "sending rate while on"), &BackgroundFlowSpec::rate_bps)
        .add(above(duration("on", "1s", "mean on period"), 0.0),
             [](const JsonFields& f, const ParamSpec& s, BackgroundFlowSpec& b) {
               b.on_s = declared_duration(f, s);
               check_declared_bounds(f, s, b.on_s);
             },
             [](const BackgroundFlowSpec& b, const ParamSpec& s, nlohmann::json& out) {
               out[s.name] = format_duration(b.on_s);
             })
        .add(duration("off", "1s", "mean off period"), &BackgroundFlowSpec::off_s)
        .add(choice("distribution", "constant", {"constant", "exponential"},
                    "on and off periods: `constant` or `exponential` (with those means)"),
             &BackgroundFlowSpec::distribution)
        .add(integer("packet_bytes", 1000, 12, 1472, "UDP payload per packet, bytes"),
             &BackgroundFlowSpec::packet_bytes)
        .add(choice("direction", "uplink", {"uplink", "downlink"},
                    "`uplink`: the flow's extra node sends to `target`; `downlink`: `target` "
                    "sends to it"),
             &BackgroundFlowSpec::direction)
        .add(integer("target", -1, -100000, 100000,
                     "host the flow exchanges with (negative counts from the end: -1 is the "
                     "last host); a global host index, also in a hybrid group"),
             &BackgroundFlowSpec::target)
        .add(duration("start", "500ms",
                      "when the flow starts: after Wi-Fi association and LTE attach (earlier "
                      "flows kept a station's TCP connection from ever opening in tests)"),
             &BackgroundFlowSpec::start_s);
    return k;
  }();
  static const FieldTable<BackgroundFlowSpec> kWireless = [] {
    FieldTable<BackgroundFlowSpec> k = kWired;
    k.add(number("distance_m", 10.0, 0.0, 100000.0,
                 "wireless families only: the extra station's or UE's distance from the AP / "
                 "eNodeB, metres"),
          &BackgroundFlowSpec::distance_m);
    return k;
  }();
  return wireless ? kWireless : kWired;
}

const FieldTable<MobilitySpec>& MobilitySpec::keys() {
  static const FieldTable<MobilitySpec> kKeys = [] {
    const auto moving = [](const MobilitySpec& m) { return m.model != "static"; };
    FieldTable<MobilitySpec> k;
    k.add(choice("model", "static", {"static", "random-walk", "random-waypoint", "straight"},
                 "how worker stations and UEs move: `static`, `random-walk` (a new direction "
                 "every second), `random-waypoint` or `straight` (each walks from where it "
                 "stands along `heading_deg` until it reaches the edge of the square)"),
          &MobilitySpec::model)
        .add(number("speed_mps", 1.0, 0.0, 1000.0, "speed, metres per second", true),
             &MobilitySpec::speed_mps)
        .only_when(moving)
        .add(duration("pause", "0s", "`random-waypoint`: pause at each waypoint"),
             &MobilitySpec::pause_s)
        .only_when([](const MobilitySpec& m) { return m.model == "random-waypoint"; })
        .add(number("heading_deg", 0.0, -360.0, 360.0,
                    "`straight`: direction, degrees counterclockwise from the x axis (0: along "
                    "the line of eNodeBs, towards the next one)"),
             &MobilitySpec::heading_deg)
        .only_when([](const MobilitySpec& m) { return m.model == "straight"; })
        .add(number("bounds_m", 50.0, 0.0, 100000.0,
                    "moves inside a square of +-bounds_m around the AP / eNodeB", true),
             &MobilitySpec::bounds_m)
        .only_when(moving);
    return k;
  }();
  return kKeys;
}

namespace {

FieldTable<ImpairmentsConfig> impairment_keys(bool wireless) {
  FieldTable<ImpairmentsConfig> k;
  add_hosts(k,
            key_with_default(list("hosts",
                                  "impaired hosts: `\"all\"` or a list of host indices "
                                  "(negative counts from the end: -1 is the last host)"),
                             "all"),
            &ImpairmentsConfig::hosts);
  k.add<LossSpec>(
       object("loss", "packet loss (`loss` below)"), &ImpairmentsConfig::loss,
       [](const nlohmann::json& o, const std::string& p) { return LossSpec::keys().read_object(o, p); },
       [](const LossSpec& l) { return LossSpec::keys().write_object(l); })
      .add(at_most(duration("delay", "0s", "extra one-way delay per direction (at most 1s)"), 1.0),
           &ImpairmentsConfig::delay_s)
      .add(duration("jitter", "0s",
                    "each packet's extra delay is uniform in [delay - jitter, delay + jitter]; "
                    "packet order is kept"),
           &ImpairmentsConfig::jitter_s)
      // null, the declared default, means no cap.
      .add(derived(key_with_default(rate("rate_cap", "",
                                         "bandwidth cap per direction of each impaired host: "
                                         "packets serialise at the cap, up to `queue` wait, the "
                                         "rest are dropped; null: no cap"),
                                    nullptr),
                   "null"),
           [](const JsonFields& f, const ParamSpec& s, ImpairmentsConfig& c) {
             if (f.has(s.name) && !f.object().at(s.name).is_null()) {
               c.rate_cap_bps = declared_rate(f, s);
             }
           },
           [](const ImpairmentsConfig& c, const ParamSpec& s, nlohmann::json& out) {
             out[s.name] = c.rate_cap_bps > 0 ? nlohmann::json(format_bps(c.rate_cap_bps))
                                              : nlohmann::json(nullptr);
           })
      .add(integer("queue", 1000, 1, 1000000, "packets held by the impairment stage (tail drop)"),
           &ImpairmentsConfig::queue_packets);
  add_entries<ImpairmentsConfig, OutageSpec>(
      k, list("outages", "windows in which the hosts' links carry nothing (`outages` entries below)"),
      &ImpairmentsConfig::outages,
      [](const nlohmann::json& o, const std::string& p) {
        JsonFields f(o, p);
        if (!f.has("down") || !f.has("up")) {
          f.allow(param_names(OutageSpec::keys().params()));
          throw ConfigError(p, "expected {\"down\": \"1s\", \"up\": \"2s\"} (both required)");
        }
        OutageSpec s = OutageSpec::keys().read_object(o, p);
        if (s.up_s <= s.down_s) throw ConfigError(f.path_of("up"), "expected a time after `down`");
        return s;
      },
      [](const OutageSpec& s) { return OutageSpec::keys().write_object(s); });
  add_entries<ImpairmentsConfig, BackgroundFlowSpec>(
      k, list("background", "UDP on/off flows sharing the bottleneck (`background` entries below)"),
      &ImpairmentsConfig::background,
      [wireless](const nlohmann::json& o, const std::string& p) {
        return BackgroundFlowSpec::keys(wireless).read_object(o, p);
      },
      [wireless](const BackgroundFlowSpec& b) {
        return BackgroundFlowSpec::keys(wireless).write_object(b);
      });
  if (wireless) {
    k.add<MobilitySpec>(
        object("mobility",
               "wireless families only: how worker stations and UEs move (`mobility` below)"),
        &ImpairmentsConfig::mobility,
        [](const nlohmann::json& o, const std::string& p) {
          return MobilitySpec::keys().read_object(o, p);
        },
        [](const MobilitySpec& m) { return MobilitySpec::keys().write_object(m); });
  }
  return k;
}

}  // namespace

const FieldTable<ImpairmentsConfig>& ImpairmentsConfig::keys(bool wireless) {
  static const FieldTable<ImpairmentsConfig> kWired = impairment_keys(false);
  static const FieldTable<ImpairmentsConfig> kWireless = impairment_keys(true);
  return wireless ? kWireless : kWired;
}

ImpairmentsConfig ImpairmentsConfig::from_json(const nlohmann::json& object,
                                               const std::string& path, bool wireless) {
  return keys(wireless).read_object(object, path);
}

std::function<ImpairmentsConfig(const nlohmann::json&, const std::string&)>
ImpairmentsConfig::reader(bool wireless) {
  return [wireless](const nlohmann::json& object, const std::string& path) {
    return from_json(object, path, wireless);
  };
}

std::function<nlohmann::json(const ImpairmentsConfig&)> ImpairmentsConfig::writer(
    bool wireless) {
  return [wireless](const ImpairmentsConfig& c) { return c.to_json(wireless); };
}

nlohmann::json ImpairmentsConfig::to_json(bool wireless) const {
  return keys(wireless).write_object(*this);
}

bool ImpairmentsConfig::shapes_packets() const {
  return loss.model != "none" || delay_s > 0 || jitter_s > 0 || rate_cap_bps > 0 ||
         !outages.empty();
}

bool ImpairmentsConfig::impairs(std::size_t index, std::size_t hosts_total) const {
  return host_listed(hosts, index, hosts_total);
}

std::vector<std::pair<double, double>> ImpairmentsConfig::outages_for(
    std::size_t index, std::size_t hosts_total) const {
  std::vector<std::pair<double, double>> out;
  for (const auto& o : outages) {
    if (host_listed(o.hosts, index, hosts_total)) out.emplace_back(o.down_s, o.up_s);
  }
  return out;
}

ns3::Ptr<NetemQueueDisc> install_netem(
    ns3::Ptr<ns3::NetDevice> device, const ImpairmentsConfig& config,
    NetemQueueDisc::Windows outages, StreamAllocator& streams,
    const std::map<ns3::Ipv4Address, NetemQueueDisc::Windows>& only_to) {
  ns3::TrafficControlHelper tc;
  auto layer = device->GetNode()->GetObject<ns3::TrafficControlLayer>();
  if (layer && layer->GetRootQueueDiscOnDevice(device)) tc.Uninstall(device);
  const LossSpec& loss = config.loss;
  tc.SetRootQueueDisc("gradwire::NetemQueueDisc",
                      "LossModel", ns3::StringValue(loss.model),
                      "LossRate", ns3::DoubleValue(loss.rate),
                      "GoodToBad", ns3::DoubleValue(loss.p),
                      "BadToGood", ns3::DoubleValue(loss.r),
                      "LossGood", ns3::DoubleValue(loss.loss_good),
                      "LossBad", ns3::DoubleValue(loss.loss_bad),
                      "DelaySeconds", ns3::DoubleValue(config.delay_s),
                      "JitterSeconds", ns3::DoubleValue(config.jitter_s),
                      "RateCapBps", ns3::DoubleValue(config.rate_cap_bps),
                      "Limit", ns3::UintegerValue(config.queue_packets));
  ns3::QueueDiscContainer installed = tc.Install(device);
  auto netem = ns3::DynamicCast<NetemQueueDisc>(installed.Get(0));
  netem->AssignStreams(streams.reserve(1));
  if (only_to.empty()) {
    netem->SetOutages(std::move(outages));
  } else {
    for (const auto& [destination, windows] : only_to) netem->ImpairOnlyTo(destination, windows);
  }
  return netem;
}

std::vector<ns3::Ptr<NetemQueueDisc>> apply_impairments(
    const ImpairmentsConfig& config, const std::vector<HostAttachment>& hosts,
    StreamAllocator& streams) {
  std::vector<ns3::Ptr<NetemQueueDisc>> out;
  if (!config.shapes_packets()) return out;
  // Per device: either impaired for everything (with these windows) or per destination. Each
  // queue disc takes the next stream, so they are installed in host order (each host's own
  // device, then the one that sends to it; devices impaired for everything first), never in
  // the order the devices happen to lie in memory.
  std::vector<ns3::Ptr<ns3::NetDevice>> whole_order, filtered_order;
  std::map<const ns3::NetDevice*, NetemQueueDisc::Windows> whole;
  std::map<const ns3::NetDevice*, std::map<ns3::Ipv4Address, NetemQueueDisc::Windows>> filtered;
  const auto impair_whole = [&](const ns3::Ptr<ns3::NetDevice>& device,
                                const NetemQueueDisc::Windows& windows) {
    if (!whole.count(ns3::PeekPointer(device))) whole_order.push_back(device);
    whole[ns3::PeekPointer(device)] = windows;
  };
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    if (!config.impairs(h, hosts.size())) continue;
    const auto windows = config.outages_for(h, hosts.size());
    const HostAttachment& a = hosts[h];
    if (a.own) impair_whole(a.own, windows);
    if (a.far && !a.far_shared) impair_whole(a.far, windows);
    if (a.far && a.far_shared) {
      if (!filtered.count(ns3::PeekPointer(a.far))) filtered_order.push_back(a.far);
      filtered[ns3::PeekPointer(a.far)][a.address] = windows;
    }
  }
  for (const auto& device : whole_order) {
    out.push_back(install_netem(device, config, whole.at(ns3::PeekPointer(device)), streams));
  }
  for (const auto& device : filtered_order) {
    if (whole.count(ns3::PeekPointer(device))) continue;  // impaired for everything already
    out.push_back(
        install_netem(device, config, {}, streams, filtered.at(ns3::PeekPointer(device))));
  }
  return out;
}

void start_background_flow(const BackgroundFlowSpec& flow, ns3::Ptr<ns3::Node> from,
                           ns3::Ptr<ns3::Node> sink, ns3::Ipv4Address to,
                           StreamAllocator& streams) {
  const ns3::InetSocketAddress address(to, kBackgroundPort);
  ns3::OnOffHelper source("ns3::UdpSocketFactory", address);
  auto period = [&](double mean) -> ns3::Ptr<ns3::RandomVariableStream> {
    if (flow.distribution == "exponential") {
      auto rv = ns3::CreateObject<ns3::ExponentialRandomVariable>();
      rv->SetAttribute("Mean", ns3::DoubleValue(mean));
      return rv;
    }
    auto rv = ns3::CreateObject<ns3::ConstantRandomVariable>();
    rv->SetAttribute("Constant", ns3::DoubleValue(mean));
    return rv;
  };
  source.SetAttribute("OnTime", ns3::PointerValue(period(flow.on_s)));
  source.SetAttribute("OffTime", ns3::PointerValue(period(flow.off_s)));
  source.SetAttribute("DataRate", ns3::DataRateValue(ns3::DataRate(
                                      static_cast<std::uint64_t>(flow.rate_bps))));
  source.SetAttribute("PacketSize", ns3::UintegerValue(flow.packet_bytes));
  ns3::ApplicationContainer apps = source.Install(from);
  source.AssignStreams(ns3::NodeContainer(from), streams.reserve(4));
  apps.Start(ns3::Seconds(flow.start_s));

  // One sink per node is enough; a second flow to the same node would fail to bind.
  for (std::uint32_t i = 0; i < sink->GetNApplications(); ++i) {
    if (sink->GetApplication(i)->GetInstanceTypeId() == ns3::PacketSink::GetTypeId()) return;
  }
  ns3::PacketSinkHelper receiver("ns3::UdpSocketFactory",
                                 ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(),
                                                        kBackgroundPort));
  receiver.Install(sink).Start(ns3::Seconds(0));
}

}  // namespace gradwire

#include "sim/emulate/Emulation.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <ostream>
#include <sstream>
#include <thread>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ns3/core-module.h>
#include <ns3/ipv4.h>
#include <ns3/ipv4-routing-protocol.h>
#include <ns3/node-list.h>
#include <ns3/realtime-simulator-impl.h>

#include <nlohmann/json.hpp>

#include "common/AtomicOutput.h"
#include "common/ConfigError.h"
#include "common/InterruptCleanup.h"
#include "netmodels/Network.h"
#include "netmodels/RadioEnergySummary.h"
#include "sim/emulate/CommandRunner.h"
#include "sim/emulate/CongestionControl.h"
#include "sim/emulate/EmulationLease.h"
#include "sim/emulate/IpCommand.h"
#include "sim/emulate/NetworkNamespace.h"
#include "sim/emulate/RealTimeMonitor.h"
#include "sim/emulate/StaleEmulations.h"
#include "sim/emulate/TapDevice.h"
#include "sim/emulate/TapLink.h"
#include "sim/engine/Scenario.h"

namespace gradwire {

namespace {

constexpr double kLagSamplePeriodS = 0.001;
/// Behind the wall clock this often, ns-3 is the bottleneck (see LagStatistics).
constexpr double kBehindWarning = 0.5;

std::string to_string(ns3::Ipv4Address a) {
  std::ostringstream s;
  a.Print(s);
  return s.str();
}

std::string to_string(ns3::Mac48Address a) {
  std::ostringstream s;
  s << a;
  return s.str();
}

/// The host's route to one other host, as its ns-3 routing table has it.
struct HostRoute {
  std::string destination;
  std::string gateway;      ///< "" when on-link
  std::string next_hop;     ///< gateway or destination
  std::string next_hop_mac; ///< with ARP devices: the MAC behind next_hop
};

struct HostPlan {
  ns3::Ptr<ns3::NetDevice> device;
  std::uint32_t interface = 0;
  std::string address;
  unsigned prefix = 32;
  ns3::Mac48Address mac;
  bool arp = false;
  std::vector<HostRoute> routes;
};

ns3::Ptr<ns3::NetDevice> device_with_address(ns3::Ipv4Address address) {
  for (auto it = ns3::NodeList::Begin(); it != ns3::NodeList::End(); ++it) {
    auto ipv4 = (*it)->GetObject<ns3::Ipv4>();
    if (!ipv4) continue;
    const int32_t i = ipv4->GetInterfaceForAddress(address);
    if (i >= 0) return ipv4->GetNetDevice(static_cast<std::uint32_t>(i));
  }
  return nullptr;
}

HostPlan plan_host(const Network& network, std::size_t i) {
  HostPlan plan;
  auto node = network.host(i);
  auto ipv4 = node->GetObject<ns3::Ipv4>();
  const ns3::Ipv4Address own = network.address(i);
  const int32_t interface = ipv4 ? ipv4->GetInterfaceForAddress(own) : -1;
  if (interface < 0) throw EmulationError("host " + std::to_string(i) + " has no IPv4 interface");
  plan.interface = static_cast<std::uint32_t>(interface);
  plan.device = ipv4->GetNetDevice(plan.interface);
  plan.address = to_string(own);
  plan.prefix = static_cast<unsigned>(ipv4->GetAddress(plan.interface, 0).GetMask().GetPrefixLength());
  plan.arp = TapLink::uses_arp(plan.device);
  if (ns3::Mac48Address::IsMatchingType(plan.device->GetAddress())) {
    plan.mac = ns3::Mac48Address::ConvertFrom(plan.device->GetAddress());
  } else {
    // LTE devices have no Ethernet address; the TAP gets a locally administered one.
    const std::uint8_t bytes[6] = {0x02, 0x67, 0x77, 0x01, static_cast<std::uint8_t>(i >> 8),
                                   static_cast<std::uint8_t>(i & 0xff)};
    plan.mac.CopyFrom(bytes);
  }
  for (std::size_t j = 0; j < network.host_count(); ++j) {
    if (j == i) continue;
    ns3::Ipv4Header header;
    header.SetDestination(network.address(j));
    header.SetSource(own);
    ns3::Socket::SocketErrno error;
    auto route = ipv4->GetRoutingProtocol()->RouteOutput(ns3::Create<ns3::Packet>(), header,
                                                         plan.device, error);
    HostRoute r;
    r.destination = to_string(network.address(j));
    r.next_hop = r.destination;
    ns3::Ipv4Address next_hop = network.address(j);
    if (route && route->GetGateway() != ns3::Ipv4Address::GetAny()) {
      r.gateway = to_string(route->GetGateway());
      r.next_hop = r.gateway;
      next_hop = route->GetGateway();
    }
    if (plan.arp) {
      auto peer = device_with_address(next_hop);
      if (!peer || !ns3::Mac48Address::IsMatchingType(peer->GetAddress())) {
        throw EmulationError("host " + std::to_string(i) + ": no Ethernet address for next hop " +
                             r.next_hop);
      }
      r.next_hop_mac = to_string(ns3::Mac48Address::ConvertFrom(peer->GetAddress()));
    }
    plan.routes.push_back(r);
  }
  return plan;
}

/// Puts a TAP into its namespace and gives it the host's addresses and routes.
void configure_tap(const NetworkNamespace& ns, const TapDevice& tap, const HostPlan& plan,
                   std::uint32_t mtu, const std::string& congestion_control) {
  run_ip({"link", "set", tap.name(), "netns", ns.name()});
  if (!congestion_control.empty()) ns.sysctl("net/ipv4/tcp_congestion_control", congestion_control);
  // No IPv6: ns-3's hosts carry IPv4 only, and router solicitations would be noise.
  ns.sysctl("net/ipv6/conf/all/disable_ipv6", "1");
  ns.sysctl("net/ipv6/conf/default/disable_ipv6", "1");
  ns.ip({"link", "set", tap.name(), "address", to_string(plan.mac), "mtu", std::to_string(mtu)});
  if (!plan.arp) ns.ip({"link", "set", tap.name(), "arp", "off"});
  ns.ip({"addr", "add", plan.address + "/" + std::to_string(plan.prefix), "dev", tap.name()});
  ns.ip({"link", "set", tap.name(), "up"});
  for (const HostRoute& r : plan.routes) {
    if (plan.arp) {
      // ns-3's nodes never ask (their neighbour caches are filled); neither does the kernel.
      ns.ip({"neigh", "replace", r.next_hop, "lladdr", r.next_hop_mac, "dev", tap.name(), "nud",
             "permanent"});
    }
    if (r.gateway.empty() || !plan.arp) {
      ns.ip({"route", "replace", r.destination + "/32", "dev", tap.name()});
    } else {
      ns.ip({"route", "replace", r.destination + "/32", "via", r.gateway, "dev", tap.name(),
             "onlink"});
    }
  }
}

/// ns-3 must keep up with the wall clock, and the commands (four Python processes importing
/// torch, say) compete with it for the cores: the simulation thread, and the TAP readers it
/// starts, run at a higher priority than the commands while the emulation lasts. The commands
/// are started by a thread made before, so they keep the ordinary priority.
struct SimulationPriority {
  static constexpr int kNice = -10;
  int before = 0;
  bool changed = false;
  SimulationPriority() {
    const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
    errno = 0;
    before = ::getpriority(PRIO_PROCESS, tid);
    changed = errno == 0 && ::setpriority(PRIO_PROCESS, tid, kNice) == 0;
    // The real-time simulator sleeps until its next event's wall time; Linux lets an ordinary
    // thread's sleep end up to 50 us late (timer slack), and a packet leaves ns-3 for its TAP
    // that much late.
    slack_before = ::prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  }
  ~SimulationPriority() {
    if (changed) ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), before);
    if (slack_before > 0) ::prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(slack_before), 0, 0, 0);
  }
  int slack_before = 0;
};

/// Restores the default interruption clean-up when the emulation ends, however it ends.
struct DivertedInterrupts {
  explicit DivertedInterrupts(CommandRunner& runner) {
    InterruptCleanup::divert([&runner](int signal) { runner.interrupt(signal); });
  }
  ~DivertedInterrupts() { InterruptCleanup::divert(nullptr); }
};

/// Leaves no simulator behind (a later run in this process starts from scratch).
struct SimulatorScope {
  ~SimulatorScope() { ns3::Simulator::Destroy(); }
};

std::string outcome_name(RunOutcome outcome, bool lagged, int first_failure) {
  if (lagged) return "lagged";
  switch (outcome) {
    case RunOutcome::kTimedOut: return "timed_out";
    case RunOutcome::kInterrupted: return "interrupted";
    case RunOutcome::kAborted: return "aborted";
    case RunOutcome::kCompleted: break;
  }
  return first_failure >= 0 ? "command_failed" : "ok";
}

}  // namespace

void check_emulation_commands(const Scenario& scenario, const EmulationOptions& options) {
  const auto hosts = static_cast<std::size_t>(scenario.training.workers);
  for (const auto& [host, argv] : options.host_commands) {
    if (host >= hosts) {
      throw ConfigError("--host", "expected a host index in [0, " + std::to_string(hosts - 1) +
                                      "] (the scenario has " + std::to_string(hosts) +
                                      " hosts, training.workers); got " + std::to_string(host));
    }
    if (argv.empty()) throw ConfigError("--host " + std::to_string(host), "expected a command after --");
  }
  if (options.command.empty() && options.host_commands.size() < hosts) {
    throw ConfigError("COMMAND", "expected `-- COMMAND ARGS...` (run on every host without a "
                                 "--host command of its own)");
  }
  if (options.max_lag_s <= 0) throw ConfigError("--max-lag", "expected a positive number of ms");
  if (options.timeout_s < 0) throw ConfigError("--timeout", "expected seconds >= 0");
  choose_congestion_control(options.congestion_control);
}

EmulationResult run_emulation(const Scenario& scenario, const EmulationOptions& options,
                              std::ostream& out, std::ostream& err) {
  check_emulation_commands(scenario, options);
  const auto wall_start = std::chrono::steady_clock::now();
  const std::size_t hosts = static_cast<std::size_t>(scenario.training.workers);
  const std::string run_id = std::to_string(::getpid());
  const std::string parent = options.out_dir.empty() ? scenario.output_dir : options.out_dir;
  const std::string problem = prepare_output_parent(parent);
  if (!problem.empty()) {
    throw ConfigError(options.out_dir.empty() ? "output.dir" : "--out",
                      "expected a folder where run folders can be made; " + parent + ": " + problem);
  }
  RunDirectory directory(parent, scenario.name + "-emulate");
  const CongestionControlChoice congestion = choose_congestion_control(options.congestion_control);

  // Marks this emulator live for as long as its namespaces exist (declared before them, so
  // released after them), then removes what dead emulators left: their namespaces would keep
  // their commands running, and a namespace named after a reused pid would block this run's.
  EmulationLease lease;
  report_stale_emulations(remove_stale_emulations(), err);

  CommandRunner runner(out, options.timeout_s);
  DivertedInterrupts diverted(runner);

  // The real-time simulator, best effort (late events run at once, the lag is measured), with
  // checksums so the packets ns-3 forwards are valid for the kernels behind the TAPs.
  ns3::Simulator::Destroy();
  SimulatorScope simulator_scope;
  ns3::GlobalValue::Bind("SimulatorImplementationType",
                         ns3::StringValue("ns3::RealtimeSimulatorImpl"));
  ns3::GlobalValue::Bind("ChecksumEnabled", ns3::BooleanValue(true));
  ns3::Config::SetDefault("ns3::RealtimeSimulatorImpl::SynchronizationMode",
                          ns3::EnumValue(ns3::RealtimeSimulatorImpl::SYNC_BEST_EFFORT));
  ns3::RngSeedManager::SetSeed(static_cast<std::uint32_t>(scenario.seed % 4294967295u) + 1);
  ns3::RngSeedManager::SetRun(1);

  std::unique_ptr<Network> network = scenario.network.build(hosts);
  struct NetworkScope {  // after the simulator, as SimulatedWorld does
    std::unique_ptr<Network>& network;
    ~NetworkScope() {
      ns3::Simulator::Destroy();
      network.reset();
    }
  } network_scope{network};
  const std::uint32_t mtu = scenario.network.mtu();

  std::vector<HostPlan> plans;
  for (std::size_t i = 0; i < hosts; ++i) plans.push_back(plan_host(*network, i));

  // Made in this order, removed in reverse: namespaces outlive their TAPs, TAPs their links.
  std::vector<std::unique_ptr<NetworkNamespace>> namespaces;
  std::vector<std::unique_ptr<TapDevice>> taps;
  std::vector<std::unique_ptr<TapLink>> links;
  struct LinkScope {
    std::vector<std::unique_ptr<TapLink>>& links;
    ~LinkScope() {
      for (auto& l : links) l->Stop();
    }
  } link_scope{links};
  std::vector<HostCommand> commands;
  std::string congestion_control;  // what the hosts' kernels run
  for (std::size_t i = 0; i < hosts; ++i) {
    const std::string label = "h" + std::to_string(i);
    namespaces.push_back(std::make_unique<NetworkNamespace>("gradwire-" + run_id + "-" + label));
    taps.push_back(std::make_unique<TapDevice>("gw" + run_id + "t" + std::to_string(i)));
    configure_tap(*namespaces.back(), *taps.back(), plans[i], mtu, congestion.name);
    if (i == 0) congestion_control = namespaces.back()->read_sysctl("net/ipv4/tcp_congestion_control");
    // The kernel behind the TAP is the host's IP stack now; ns-3's stays silent on it.
    plans[i].device->GetNode()->GetObject<ns3::Ipv4>()->SetDown(plans[i].interface);
    links.push_back(std::make_unique<TapLink>(plans[i].device, taps.back()->fd(), plans[i].mac));

    HostCommand command;
    command.host = i;
    command.label = label;
    command.netns = namespaces.back()->name();
    std::map<std::string, std::string> values{
        {"rank", std::to_string(i)},
        {"world", std::to_string(hosts)},
        {"addr", plans[i].address},
        {"master_addr", plans[0].address}};
    for (std::size_t j = 0; j < hosts; ++j) values["addr:" + std::to_string(j)] = plans[j].address;
    const auto own = options.host_commands.find(i);
    command.argv = substitute_placeholders(
        own != options.host_commands.end() ? own->second : options.command, values);
    command.environment = {"RANK=" + std::to_string(i),
                           "WORLD_SIZE=" + std::to_string(hosts),
                           "LOCAL_RANK=0",
                           "MASTER_ADDR=" + plans[0].address,
                           "MASTER_PORT=" + std::to_string(options.master_port),
                           // gloo and tensorpipe pick their interface by name; the hostname
                           // would resolve to loopback inside the namespace.
                           "GLOO_SOCKET_IFNAME=" + taps.back()->name(),
                           "TP_SOCKET_IFNAME=" + taps.back()->name(),
                           "GRADWIRE_HOST=" + std::to_string(i),
                           "GRADWIRE_HOST_ADDR=" + plans[i].address};
    commands.push_back(std::move(command));
  }

  if (congestion.name.empty() && congestion_control != kSimulatedCongestionControl) {
    err << "emulate: the hosts run " << congestion_control << ", a new namespace's default here, "
        << "not " << kSimulatedCongestionControl << " (the simulator's TCP): this machine lets a "
        << "namespace choose only " << congestion.allowed
        << " (net.ipv4.tcp_allowed_congestion_control); --congestion-control picks one of those, "
        << "and where the kernel has CUBIC, root allows it with `sysctl -w "
        << "net.ipv4.tcp_allowed_congestion_control=\"" << congestion.allowed << " cubic\"`\n";
  }

  double lagged_by_s = 0;
  double lagged_at_s = 0;
  RealTimeMonitor monitor(kLagSamplePeriodS, options.max_lag_s, [&](double lag, double at) {
    lagged_by_s = lag;
    lagged_at_s = at;
  });
  monitor.Start();
  const double ready_s = network->ready_time_s();
  ns3::Simulator::Schedule(ns3::Seconds(ready_s), [&runner] { runner.notify_ready(); });
  if (!options.quiet) {
    err << "emulate: " << network->describe() << "; " << hosts << " hosts in namespaces "
        << namespaces.front()->name() << " .. " << namespaces.back()->name()
        << "; TCP " << congestion_control << "; commands start at simulated " << ready_s << " s\n";
  }

  std::exception_ptr runner_error;
  std::thread supervisor([&] {
    try {
      runner.run(commands);
    } catch (...) {
      runner_error = std::current_exception();
    }
    ns3::Simulator::ScheduleWithContext(0xffffffff, ns3::Time(0), [] { ns3::Simulator::Stop(); });
  });
  struct JoinScope {
    std::thread& thread;
    CommandRunner& runner;
    ~JoinScope() {
      if (thread.joinable()) {
        runner.abort();
        thread.join();
      }
    }
  } join_scope{supervisor, runner};

  SimulationPriority priority;
  for (auto& l : links) l->Start();
  ns3::Simulator::Run();
  const double simulated_s = ns3::Simulator::Now().GetSeconds();
  if (monitor.exceeded()) runner.abort();
  supervisor.join();
  for (auto& l : links) l->Stop();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (runner_error) std::rethrow_exception(runner_error);

  // The outcome and the exit status.
  EmulationResult result;
  const RunOutcome outcome = runner.outcome();
  const int first_failure = runner.first_failure();
  if (monitor.exceeded()) {
    result.exit_code = kEmulationLagged;
    err << "error: ns-3 fell " << lagged_by_s * 1e3 << " ms behind the wall clock at simulated "
        << lagged_at_s << " s (--max-lag " << options.max_lag_s * 1e3
        << " ms): the emulated network was slower than the simulated one, so the run was "
           "stopped. Use a lighter network (fewer hosts, lower rates, larger MTU), fewer "
           "processes on this machine, or a larger --max-lag.\n";
  } else if (outcome == RunOutcome::kTimedOut) {
    result.exit_code = kEmulationTimedOut;
    err << "error: --timeout " << options.timeout_s << " s passed; the commands were stopped\n";
  } else if (outcome == RunOutcome::kInterrupted) {
    result.exit_code = 128 + runner.interrupt_signal();
    err << "emulate: interrupted; commands stopped, namespaces and TAP devices removed\n";
  } else if (first_failure >= 0) {
    result.exit_code = runner.results()[static_cast<std::size_t>(first_failure)].exit_code;
    err << "emulate: the command of h" << first_failure << " failed (exit status "
        << result.exit_code << "); the other hosts were stopped\n";
  }

  const LagStatistics lag = monitor.statistics();
  nlohmann::json host_entries = nlohmann::json::array();
  for (std::size_t i = 0; i < hosts; ++i) {
    const TapLinkCounters& c = links[i]->counters();
    const CommandResult& r = runner.results().empty() ? CommandResult{} : runner.results()[i];
    host_entries.push_back({{"host", i},
                            {"address", plans[i].address},
                            {"namespace", namespaces[i]->name()},
                            {"command", commands[i].argv},
                            {"started", r.started},
                            {"exit_code", r.finished ? nlohmann::json(r.exit_code) : nlohmann::json()},
                            {"command_wall_time_s", r.wall_s},
                            {"sent_bytes", c.sent_bytes},
                            {"sent_packets", c.sent_packets},
                            {"received_bytes", c.received_bytes},
                            {"received_packets", c.received_packets},
                            {"dropped_frames", c.dropped_frames}});
  }
  nlohmann::json summary = {
      {"scenario", scenario.name},
      {"mode", "emulate"},
      {"network", network->describe()},
      {"family", network->family()},
      {"congestion_control", congestion_control},
      {"outcome", outcome_name(outcome, monitor.exceeded(), first_failure)},
      {"exit_code", result.exit_code},
      {"ready_time_s", ready_s},
      {"sim_time_s", simulated_s},
      {"wall_time_s", wall_s},
      {"lag", {{"max_ms", lag.max_s * 1e3},
               {"p99_ms", lag.p99_s * 1e3},
               {"mean_ms", lag.mean_s * 1e3},
               {"max_at_sim_s", lag.max_at_s},
               {"samples", lag.samples},
               {"behind_fraction", lag.behind_fraction},
               {"limit_ms", options.max_lag_s * 1e3}}},
      {"hosts", host_entries}};
  const auto network_events = network->event_counts();
  if (!network_events.empty()) summary["network_events"] = network_events;
  // Every emulated host is a worker (emulate has no server host).
  add_radio_energy(summary, network->radio_joules(), hosts);
  write_file_atomically(directory.staging() + "/scenario.json", scenario.resolved.dump(2) + "\n");
  write_file_atomically(directory.staging() + "/summary.json", summary.dump(2) + "\n");
  directory.commit();
  result.directory = directory.final_path();
  if (!options.quiet) {
    err << "emulate: lag max " << lag.max_s * 1e3 << " ms, p99 " << lag.p99_s * 1e3
        << " ms over " << simulated_s << " simulated s; results: " << result.directory << "\n";
  }
  if (lag.behind_fraction > kBehindWarning && !monitor.exceeded()) {
    err << "warning: ns-3 ran more than " << kBehindS * 1e3 << " ms behind the wall clock "
        << static_cast<int>(lag.behind_fraction * 100 + 0.5)
        << " % of the time: it was the bottleneck, so the rates the commands saw are this "
           "machine's, not the simulated network's (docs/emulate.md)\n";
  }
  return result;
}

}  // namespace gradwire

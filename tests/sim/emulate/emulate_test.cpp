// `gradwire emulate` end to end, as root: real programs in network namespaces over ns-3 in real
// time. The emulated network is checked against the simulated one (the same scenario through
// SimulatedWorld, as `gradwire run` builds it), and clean-up is checked after every way a run
// can end. Skipped, with the reason, where namespaces or /dev/net/tun are not available.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <ns3/core-module.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "EmulationFolder.h"
#include "GlooAllReduceRuns.h"
#include "RunGradwire.h"
#include "SimulatedReference.h"
#include "codecs/CodecRegistry.h"
#include "netmodels/Network.h"
#include "nodes/schemes/RingAllReduce.h"
#include "nodes/transport/Messenger.h"
#include "sim/emulate/EmulationPrivileges.h"
#include "sim/emulate/HostCommand.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/engine/SimulatedWorld.h"

extern char** environ;

namespace gradwire {
namespace {

namespace fs = std::filesystem;

const std::string kPython = "/usr/bin/python3";
const std::string kTools = std::string(GRADWIRE_SOURCE_DIR) + "/tests/sim/emulate/";

std::string shell_output(const std::string& command) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ::pclose(p);
  return out;
}

class Emulate : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = missing_emulation_privileges();
    if (!missing.empty()) GTEST_SKIP() << "cannot emulate here: " << missing;
    if (::access(kPython.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << kPython;
    dir_ = fs::temp_directory_path() / ("gradwire-emulate-test-" + std::to_string(::getpid()) +
                                        "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    testing::make_open_folder(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  /// Writes a scenario with `hosts` workers and `network`; returns its path.
  std::string scenario(const std::string& name, int hosts, const nlohmann::json& network) {
    return testing::write_scenario(dir_, name, hosts, network);
  }

  nlohmann::json summary(const std::string& name) {
    std::ifstream in(dir_ / "runs" / (name + "-emulate") / "summary.json");
    EXPECT_TRUE(in.good()) << "no summary.json for " << name;
    return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
  }

  fs::path dir_;
};

/// The JSON line a host printed ("[hN] {...}") whose `key` is `value`.
nlohmann::json line_with(const std::string& output, const std::string& key, const std::string& value) {
  std::size_t at = 0;
  while ((at = output.find("] {", at)) != std::string::npos) {
    const std::size_t end = output.find('\n', at);
    const std::string text = output.substr(at + 2, end - at - 2);
    at = end;
    const auto line = nlohmann::json::parse(text, nullptr, false);
    if (!line.is_discarded() && line.contains(key) && line[key] == value) return line;
  }
  return nlohmann::json();
}

/// Whether process `pid` has ended: gone, or a zombie its new parent has not reaped yet (a
/// command's orphaned children are reparented to init). Waits a little for that to settle.
bool ended(pid_t pid) {
  for (int i = 0; i < 40; ++i) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    bool zombie = false;
    while (std::getline(status, line)) zombie = zombie || line.rfind("State:\tZ", 0) == 0;
    if (!status.is_open() && ::kill(pid, 0) != 0) return true;
    if (zombie) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

/// Nothing of emulator process `pid` is left: no namespace, no TAP, no listed process.
void expect_nothing_left(pid_t pid, const std::vector<pid_t>& processes) {
  const std::string netns = shell_output("ip netns list");
  EXPECT_EQ(netns.find("gradwire-" + std::to_string(pid) + "-"), std::string::npos) << netns;
  const std::string links = shell_output("ip -o link show");
  EXPECT_EQ(links.find("gw" + std::to_string(pid) + "t"), std::string::npos) << links;
  for (pid_t p : processes) EXPECT_TRUE(ended(p)) << "process " << p << " of the emulation still runs";
}

using testing::simulated_transfer_s;

std::string bulk_transfer_args(const std::string& path, std::size_t bytes) {
  const std::string b = std::to_string(bytes);
  return "emulate " + path + " --timeout 50 --max-lag 250 --host 1 -- " + kPython + " " + kTools +
         "bulk_tcp.py server 5001 " + b + " -- " + kPython + " " + kTools +
         "bulk_tcp.py client {peer} 5001 " + b;
}

TEST_F(Emulate, BulkTcpOverEthernetReachesTheSimulatedGoodput) {
  const std::size_t bytes = 4000000;
  const std::string path = scenario("eth10", 2, {{"family", "ethernet"}, {"rate", "10Mbps"}});
  const double simulated_bps = 8.0 * static_cast<double>(bytes) / simulated_transfer_s(path, bytes);

  std::string args = bulk_transfer_args(path, bytes);
  args.replace(args.find("{peer}"), 6, "10.1.1.1");
  const auto run = testing::run_gradwire(args);
  ASSERT_EQ(run.code, 0) << run.output;
  const auto client = line_with(run.output, "role", "client");
  ASSERT_TRUE(client.is_object()) << run.output;
  const double emulated_bps = client["goodput_bps"].get<double>();
  const auto s = summary("eth10");
  std::printf("10 Mbit/s Ethernet, %zu bytes: emulated %.3f Mbit/s, simulated %.3f Mbit/s "
              "(ratio %.4f); lag max %.2f ms, p99 %.2f ms\n",
              bytes, emulated_bps / 1e6, simulated_bps / 1e6, emulated_bps / simulated_bps,
              s["lag"]["max_ms"].get<double>(), s["lag"]["p99_ms"].get<double>());
  EXPECT_NEAR(emulated_bps / simulated_bps, 1.0, 0.05);
  // The bytes crossed ns-3: host 1 received at least the payload from the network.
  EXPECT_GE(s["hosts"][1]["received_bytes"].get<std::uint64_t>(), bytes);
  EXPECT_GE(s["hosts"][0]["sent_bytes"].get<std::uint64_t>(), bytes);
  EXPECT_EQ(s["outcome"], "ok");
}

// The same comparison over the radio families: a real kernel's TCP through the emulated cell
// against gradwire's simulated transfer of the same bytes over the same scenario. One direction
// at a time, so ns-3 keeps up with real time on a 2-core machine. Wi-Fi: two stations of one
// 802.11n 20 MHz cell (every byte crosses the air twice, through the AP); LTE: a UE of a 5 MHz
// cell sending to the remote server behind the PGW (25 resource blocks, since ns-3 computes
// every block of every TTI and 100 fall behind real time). Not two UEs: the receiving UE's ACKs
// would share the uplink, whose resource blocks ns-3's scheduler splits equally between the
// UEs with data waiting, so the goodput would follow the receiver's ACK cadence, which differs
// between the kernel and ns-3 (docs/emulate.md).
TEST_F(Emulate, BulkTcpOverWifiAndLteReachesTheSimulatedGoodput) {
  // Wi-Fi's emulated goodput varies more from run to run than LTE's: the kernel's segments
  // reach the cell at wall-clock instants that differ between runs, and the contention and
  // its random backoffs follow them (alone: 0.967-1.058 in twenty-one runs, and once 0.84 with
  // the same lag as the others; LTE 0.984-0.985). So Wi-Fi is judged by the median of three
  // runs, which one such run does not move out of its wider bound.
  struct Cell {
    std::string name;
    nlohmann::json network;
    std::size_t bytes;
    int runs;
    double tolerance;  ///< of the median emulated / simulated goodput
  };
  const std::vector<Cell> cells = {
      {"wifi-n20", {{"family", "wifi"}, {"standard", "n"}, {"band", "2.4GHz"}, {"width_mhz", 20}}, 3000000, 3, 0.08},
      {"lte-5mhz", {{"family", "lte"}, {"server", "remote"}, {"ul_bandwidth", 25}, {"dl_bandwidth", 25}}, 3000000, 1, 0.05}};
  for (const auto& [name, network, bytes, runs, tolerance] : cells) {
    const std::string path = scenario(name, 2, network);
    const double simulated_bps = 8.0 * static_cast<double>(bytes) / simulated_transfer_s(path, bytes);
    std::string args = bulk_transfer_args(path, bytes);
    args.replace(args.find("{peer}"), 6, "{addr:1}");
    std::vector<double> ratios;
    for (int r = 0; r < runs; ++r) {
      const auto run = testing::run_gradwire(args);
      ASSERT_EQ(run.code, 0) << name << "\n" << run.output;
      const auto client = line_with(run.output, "role", "client");
      ASSERT_TRUE(client.is_object()) << run.output;
      const double emulated_bps = client["goodput_bps"].get<double>();
      const auto s = summary(name);
      std::printf("%s, %zu bytes: emulated %.3f Mbit/s, simulated %.3f Mbit/s (ratio %.4f); lag "
                  "max %.2f ms, p99 %.2f ms\n",
                  name.c_str(), bytes, emulated_bps / 1e6, simulated_bps / 1e6,
                  emulated_bps / simulated_bps, s["lag"]["max_ms"].get<double>(),
                  s["lag"]["p99_ms"].get<double>());
      EXPECT_EQ(s["outcome"], "ok") << name;
      ratios.push_back(emulated_bps / simulated_bps);
    }
    std::sort(ratios.begin(), ratios.end());
    EXPECT_NEAR(ratios[ratios.size() / 2], 1.0, tolerance) << name;
  }
}

// An added delay on every host's up- and downlink (the netem-like impairment) lengthens each
// round trip by four times the delay. The client's "seconds" spans two round trips (the
// handshake, then 1000 bytes and the one-byte answer), so 8 x 20 ms = 160 ms more.
TEST_F(Emulate, AddedDelayLengthensEveryRoundTrip) {
  const double delay_s = 0.020;
  double seconds[2] = {0, 0};
  for (int impaired : {0, 1}) {
    const std::string name = impaired ? "eth100delay" : "eth100";
    nlohmann::json network = {{"family", "ethernet"}, {"rate", "100Mbps"}};
    if (impaired) network["impairments"] = {{"delay", "20ms"}};
    const std::string path = scenario(name, 2, network);
    std::string args = bulk_transfer_args(path, 1000);
    args.replace(args.find("{peer}"), 6, "10.1.1.1");
    const auto run = testing::run_gradwire(args);
    ASSERT_EQ(run.code, 0) << run.output;
    const auto client = line_with(run.output, "role", "client");
    ASSERT_TRUE(client.is_object()) << run.output;
    seconds[impaired] = client["seconds"].get<double>();
  }
  std::printf("1000 bytes and an answer over 100 Mbit/s: %.1f ms, with 20 ms added per link "
              "direction %.1f ms\n", seconds[0] * 1e3, seconds[1] * 1e3);
  EXPECT_NEAR(seconds[1] - seconds[0], 8 * delay_s, 0.25 * 8 * delay_s);
}

// The link `delay` of an emulated Ethernet (every host <-> switch link, each way) lengthens a
// small request/response exchange by the round trips it adds: 64-byte messages echoed over one
// TCP connection cross four links per round trip, so the round trip is 4 x (delay + one frame's
// serialisation) plus what the kernels, the Python processes and the emulation loop take (the
// floor, docs/emulate.md: 0.05-0.4 ms measured, 0.2-0.4 ms more once the delay is long enough
// for the cores to go idle). The emulator never delivers before ns-3's
// schedule (the real-time simulator waits for the wall clock), so even the fastest round trip
// pays the whole delay: a delay absorbed by the emulation loop's own latency, or not applied,
// fails that bound. The fastest round trip must also stay within the floor plus 2 ms and 5 %
// (a delay applied twice fails). Not the median: with three busy loops beside it on two
// cores, the median at 1 ms rose to 8.0 ms (the echoing processes waited for a core after
// each 4 ms sleep) while the fastest stayed at 4.24 ms.
TEST_F(Emulate, LinkDelayLengthensARequestResponseExchangeByItsRoundTrips) {
  const double rate_bps = 100e6;
  // 64 bytes of payload, 52 of TCP (with timestamps) and IP headers, 38 of Ethernet framing.
  const double frame_s = (64 + 52 + 38) * 8 / rate_bps;
  const double allowance_s = 0.002;
  struct Case {
    std::string delay;
    double delay_s;
    int exchanges;
  };
  const std::vector<Case> cases = {
      {"0us", 0, 200}, {"50us", 50e-6, 200}, {"1ms", 1e-3, 60}, {"20ms", 20e-3, 15}};
  double median_without_s = 0;
  for (const Case& c : cases) {
    const std::string name = "rtt-" + c.delay;
    const std::string path =
        scenario(name, 2, {{"family", "ethernet"}, {"rate", "100Mbps"}, {"delay", c.delay}});
    const std::string n = std::to_string(c.exchanges);
    const auto run = testing::run_gradwire(
        "emulate " + path + " --timeout 50 --max-lag 250 --host 1 -- " + kPython + " " + kTools +
        "ping_pong.py server 5001 64 " + n + " -- " + kPython + " " + kTools +
        "ping_pong.py client {addr:1} 5001 64 " + n);
    ASSERT_EQ(run.code, 0) << name << "\n" << run.output;
    const auto client = line_with(run.output, "role", "client");
    ASSERT_TRUE(client.is_object()) << run.output;
    const double expected_s = 4 * (c.delay_s + frame_s);
    const double min_s = client["min_ms"].get<double>() / 1e3;
    const double median_s = client["median_ms"].get<double>() / 1e3;
    if (c.delay_s == 0) median_without_s = median_s;
    std::printf("link delay %s: round trip expected %.3f ms, emulated min %.3f ms, median %.3f ms "
                "(%.3f ms longer than without delay; %.3f ms added)\n",
                c.delay.c_str(), expected_s * 1e3, min_s * 1e3, median_s * 1e3,
                (median_s - median_without_s) * 1e3, 4 * c.delay_s * 1e3);
    EXPECT_GE(min_s, 0.99 * expected_s) << name << ": a round trip was shorter than the network's";
    EXPECT_LT(min_s, expected_s + allowance_s + 0.05 * expected_s) << name;
  }
}

// The hosts' kernels run the simulator's congestion control (CUBIC) where the machine lets a
// namespace choose it, otherwise a new namespace's default (and the run says so), or the one
// --congestion-control names; summary.json records it.
TEST_F(Emulate, HostsRunTheSimulatorsCongestionControlOrTheOneAskedFor) {
  std::string allowed, machine;
  std::getline(std::ifstream("/proc/sys/net/ipv4/tcp_allowed_congestion_control"), allowed);
  std::getline(std::ifstream("/proc/sys/net/ipv4/tcp_congestion_control"), machine);
  const bool cubic = (" " + allowed + " ").find(" cubic ") != std::string::npos;
  const std::string path = scenario("cc", 2, {{"family", "ethernet"}});
  for (const std::string asked : {"", "reno"}) {
    const auto run = testing::run_gradwire(
        "emulate " + path + " --timeout 20 --max-lag 250" +
        (asked.empty() ? "" : " --congestion-control " + asked) +
        " -- /bin/cat /proc/sys/net/ipv4/tcp_congestion_control");
    ASSERT_EQ(run.code, 0) << run.output;
    const std::string expected = !asked.empty() ? asked : cubic ? "cubic" : machine;
    for (const std::string host : {"[h0] ", "[h1] "}) {
      EXPECT_NE(run.output.find(host + expected + "\n"), std::string::npos) << run.output;
    }
    EXPECT_EQ(summary("cc")["congestion_control"], expected);
    EXPECT_EQ(run.output.find("not cubic (the simulator's TCP)") != std::string::npos,
              asked.empty() && expected != "cubic") << run.output;
  }
}

TEST_F(Emulate, LossOnTheLinkCostsRetransmissionsAndGoodput) {
  const std::size_t bytes = 3000000;
  const std::string clean = scenario("eth10clean", 2, {{"family", "ethernet"}, {"rate", "10Mbps"}});
  const double clean_bps = 8.0 * static_cast<double>(bytes) / simulated_transfer_s(clean, bytes);
  const std::string path =
      scenario("eth10loss", 2,
               {{"family", "ethernet"},
                {"rate", "10Mbps"},
                {"impairments", {{"loss", {{"model", "uniform"}, {"rate", 0.02}}}}}});
  std::string args = bulk_transfer_args(path, bytes);
  args.replace(args.find("{peer}"), 6, "10.1.1.1");
  const auto run = testing::run_gradwire(args);
  ASSERT_EQ(run.code, 0) << run.output;
  const auto client = line_with(run.output, "role", "client");
  ASSERT_TRUE(client.is_object()) << run.output;
  const double lossy_bps = client["goodput_bps"].get<double>();
  std::printf("2%% loss: %lld retransmissions, %.3f Mbit/s (lossless simulated %.3f Mbit/s)\n",
              client["retransmissions"].get<long long>(), lossy_bps / 1e6, clean_bps / 1e6);
  EXPECT_GT(client["retransmissions"].get<long long>(), 0);
  EXPECT_LT(lossy_bps, 0.99 * clean_bps);
}

TEST_F(Emulate, TheSendersUplinkImpairmentsApply) {
  // Only host 0 is impaired: its data crosses its own uplink queue disc (which the TAP's
  // frames reach through the host's traffic-control layer) and an unimpaired switch port.
  const std::size_t bytes = 2000000;
  const std::string path = scenario(
      "cap", 2,
      {{"family", "ethernet"}, {"rate", "100Mbps"},
       {"impairments", {{"hosts", {0}}, {"rate_cap", "5Mbps"}}}});
  const double simulated_bps = 8.0 * static_cast<double>(bytes) / simulated_transfer_s(path, bytes);
  std::string args = bulk_transfer_args(path, bytes);
  args.replace(args.find("{peer}"), 6, "10.1.1.1");
  const auto run = testing::run_gradwire(args);
  ASSERT_EQ(run.code, 0) << run.output;
  const auto client = line_with(run.output, "role", "client");
  ASSERT_TRUE(client.is_object()) << run.output;
  const double emulated_bps = client["goodput_bps"].get<double>();
  std::printf("5 Mbit/s cap on the sender's uplink of a 100 Mbit/s link: emulated %.3f Mbit/s, "
              "simulated %.3f Mbit/s\n", emulated_bps / 1e6, simulated_bps / 1e6);
  EXPECT_NEAR(emulated_bps / simulated_bps, 1.0, 0.05);
}

TEST(HostCommandPlaceholders, KnownNamesAreReplacedOthersKept) {
  const std::map<std::string, std::string> values{
      {"rank", "2"}, {"world", "4"}, {"addr", "10.1.2.1"}, {"master_addr", "10.1.0.1"},
      {"addr:3", "10.1.3.1"}};
  EXPECT_EQ(substitute_placeholders({"--rank={rank}/{world}", "{master_addr}:{addr:3}", "{addr}",
                                     "{unknown}", "{", "a{rank", "{{rank}}", "{addr:9}"},
                                    values),
            (std::vector<std::string>{"--rank=2/4", "10.1.0.1:10.1.3.1", "10.1.2.1", "{unknown}",
                                      "{", "a{rank", "{2}", "{addr:9}"}));
}

TEST(EmulateArguments, BadArgumentsAreExitTwoBeforeAnythingIsMade) {
  const std::string dir = fs::temp_directory_path() / ("gradwire-emulate-args-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = dir + "/two.json";
  std::ofstream(path) << R"({"gradwire": 1, "name": "two", "training": {"workers": 2},
                             "network": {"family": "ethernet"}})";
  const auto help = testing::run_gradwire("emulate --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.output.find("--max-lag"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("--clean"), std::string::npos) << help.output;
  struct Case {
    std::string args, expected;
  };
  for (const Case& c : {Case{"emulate " + path, "COMMAND"},
                        Case{"emulate " + path + " --host 2 -- true -- true", "--host"},
                        Case{"emulate " + path + " --host 0 -- true --", "COMMAND"},
                        Case{"emulate " + path + " --max-lag 0 -- true", "--max-lag"},
                        Case{"emulate " + path + " --bogus -- true", "--bogus"},
                        Case{"emulate " + path + " --congestion-control no-such -- true", "--congestion-control"},
                        Case{"emulate " + dir + "/missing.json -- true", "missing.json"},
                        Case{"emulate " + path + " --set training.workers=0 -- true", "training.workers"},
                        Case{"emulate --clean " + path, "--clean"},
                        Case{"emulate --clean -- true", "--clean"}}) {
    const auto r = testing::run_gradwire(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.args << "\n" << r.output;
  }
  fs::remove_all(dir);
}

TEST_F(Emulate, WifiCarriesTrafficBothWays) {
  const std::size_t bytes = 1000000;
  // 802.11n at 20 MHz: light enough for ns-3 to stay in real time on a loaded 2-core machine
  // while both directions run (802.11ax at 80 MHz both ways is not, docs/emulate.md).
  const std::string path = scenario(
      "wifi2", 2, {{"family", "wifi"}, {"standard", "n"}, {"band", "2.4GHz"}, {"width_mhz", 20}});
  const std::string b = std::to_string(bytes);
  // Each host sends to the other at once: host 0 serves on 5001, host 1 on 5002.
  const std::string both = "/bin/sh -c '" + kPython + " " + kTools + "bulk_tcp.py server {port} " +
                           b + " & " + kPython + " " + kTools + "bulk_tcp.py client {peer} {peer_port} " +
                           b + "; wait $!'";
  std::string h0 = both, h1 = both;
  for (auto [text, port, peer, peer_port] :
       {std::tuple<std::string*, std::string, std::string, std::string>{&h0, "5001", "192.168.1.3", "5002"},
        {&h1, "5002", "192.168.1.2", "5001"}}) {
    text->replace(text->find("{port}"), 6, port);
    text->replace(text->find("{peer}"), 6, peer);
    text->replace(text->find("{peer_port}"), 11, peer_port);
  }
  const auto run = testing::run_gradwire("emulate " + path + " --timeout 50 --max-lag 250 --host 0 -- " + h0 +
                                         " -- --host 1 -- " + h1 + " --");
  ASSERT_EQ(run.code, 0) << run.output;
  const auto s = summary("wifi2");
  for (int h : {0, 1}) {
    EXPECT_EQ(s["hosts"][h]["exit_code"], 0);
    EXPECT_GE(s["hosts"][h]["sent_bytes"].get<std::uint64_t>(), bytes) << "host " << h;
    EXPECT_GE(s["hosts"][h]["received_bytes"].get<std::uint64_t>(), bytes) << "host " << h;
  }
  std::printf("Wi-Fi both ways: lag max %.2f ms, p99 %.2f ms\n", s["lag"]["max_ms"].get<double>(),
              s["lag"]["p99_ms"].get<double>());
}

// LTE and the hybrid family carry packets over other kinds of ns-3 device (an LTE UE's IP-level
// device; a core router joining Wi-Fi, LTE and Ethernet groups): every host sends to the next
// one around a ring at once, so every host's uplink and downlink carry traffic.
TEST_F(Emulate, LteAndHybridNetworksCarryTrafficBetweenEveryHost) {
  const std::size_t bytes = 200000;
  const std::vector<std::pair<std::string, nlohmann::json>> networks = {
      {"lte2", {{"family", "lte"}, {"server", "ue"}}},
      {"hybrid3", {{"family", "hybrid"},
                   {"groups", {{{"family", "wifi"}, {"workers", 1}, {"standard", "n"},
                                {"band", "2.4GHz"}, {"width_mhz", 20}},
                               {{"family", "lte"}, {"workers", 1}},
                               {{"family", "ethernet"}, {"workers", 1}, {"rate", "100Mbps"}}}}}}};
  for (const auto& [name, network] : networks) {
    const int hosts = name == "lte2" ? 2 : 3;
    const std::string path = scenario(name, hosts, network);
    std::string args = "emulate " + path + " --timeout 50 --max-lag 250";
    for (int h = 0; h < hosts; ++h) {
      const int next = (h + 1) % hosts;
      args += " --host " + std::to_string(h) + " -- /bin/sh -c '" + kPython + " " + kTools +
              "bulk_tcp.py server " + std::to_string(5000 + h) + " " + std::to_string(bytes) +
              " & " + kPython + " " + kTools + "bulk_tcp.py client {addr:" + std::to_string(next) +
              "} " + std::to_string(5000 + next) + " " + std::to_string(bytes) + "; wait $!' --";
    }
    const auto run = testing::run_gradwire(args);
    ASSERT_EQ(run.code, 0) << name << "\n" << run.output;
    const auto s = summary(name);
    for (int h = 0; h < hosts; ++h) {
      EXPECT_EQ(s["hosts"][h]["exit_code"], 0) << name << " host " << h;
      EXPECT_GE(s["hosts"][h]["sent_bytes"].get<std::uint64_t>(), bytes) << name << " host " << h;
      EXPECT_GE(s["hosts"][h]["received_bytes"].get<std::uint64_t>(), bytes) << name << " host " << h;
    }
    std::printf("%s: lag max %.2f ms, p99 %.2f ms\n", name.c_str(), s["lag"]["max_ms"].get<double>(),
                s["lag"]["p99_ms"].get<double>());
  }
}

using testing::simulated_all_reduce;

// gloo's all_reduce over Ethernet, one Wi-Fi cell and one LTE cell (4 hosts each), against
// gradwire's simulated ring all-reduce of the same bytes on the same scenario.
TEST_F(Emulate, GlooAllReduceGivesTheSumAndTakesTheSimulatedTime) {
  if (shell_output(kPython + " -c 'import torch.distributed as d; print(d.is_gloo_available())'")
          .find("True") == std::string::npos) {
    GTEST_SKIP() << kPython << " has no torch.distributed with gloo (Debian's python3-torch)";
  }
  // 10 MB over Ethernet; 1 MB over the radios, whose shared medium carries every host's
  // sends one at a time (802.11n 20 MHz; LTE at 25 resource blocks so ns-3 keeps real time).
  // The bound is per network: 100 Mbit/s of Ethernet through eight link traversals is ~90,000
  // packet hops a second, which ns-3 carries in real time only on a quiet machine, while the
  // radios' rates leave it room. The radios agree within 5 % with the machine to themselves
  // (docs/emulate.md); beside other tests under ctest -j2 real time runs up to ~6 % slow, never
  // fast, so the upper bound leaves 10 %. The lower one is 5 % for Wi-Fi and 8 % for LTE: on a
  // quiet machine the kernels' TCP finishes the LTE all-reduce 5 % sooner than ns-3's TCP
  // simulated (0.948-0.952 in three runs), a difference between the two TCPs, not the machine.
  struct Case {
    std::string name;
    nlohmann::json network;
    std::int64_t elements;
    double low, high;  // emulated / simulated
  };
  const std::vector<Case> cases = {
      {"eth100", {{"family", "ethernet"}, {"rate", "100Mbps"}}, 2500000, 0.8, 4.0},
      {"wifi-n20-4", {{"family", "wifi"}, {"standard", "n"}, {"band", "2.4GHz"}, {"width_mhz", 20}}, 250000, 0.95, 1.10},
      {"lte-5mhz-4", {{"family", "lte"}, {"server", "ue"}, {"ul_bandwidth", 25}, {"dl_bandwidth", 25}}, 250000, 0.92, 1.10}};
  constexpr int kRepeats = 3;
  // Real time only gets slower when other work takes the cores (ns-3's thread or the Python
  // processes miss their turn), never faster: a run over the bound is run again, up to three
  // times, and the shortest repetition of all counts.
  constexpr int kAttempts = 3;
  for (const Case& c : cases) {
    const std::string path = scenario(c.name, 4, c.network);
    // The same bytes in the same pattern through the simulator: gloo's ring schedule (its
    // segments, two in flight). gradwire's own ring moves the same bytes chunk by chunk, for
    // comparison.
    const double gloo_s = simulated_all_reduce(path, c.elements, true);
    const double ring_s = simulated_all_reduce(path, c.elements, false);
    ASSERT_GT(gloo_s, 0) << c.name << ": the simulated gloo schedule did not finish";
    ASSERT_GT(ring_s, 0) << c.name << ": the simulated ring all-reduce did not finish";
    double emulated_s = -1;
    for (int attempt = 1; attempt <= kAttempts; ++attempt) {
      const testing::GlooAllReduceRun run =
          testing::emulated_gloo_all_reduce(path, c.elements, kRepeats, 80);
      ASSERT_EQ(run.exit_code, 0) << c.name << "\n" << run.output;
      ASSERT_EQ(run.ranks, 4) << run.output;
      EXPECT_TRUE(run.correct) << run.output;
      const double best = run.best();
      emulated_s = emulated_s < 0 ? best : std::min(emulated_s, best);
      const auto s = summary(c.name);
      std::string load = shell_output("cut -d' ' -f1 /proc/loadavg");
      while (!load.empty() && (load.back() == '\n' || load.back() == ' ')) load.pop_back();
      std::printf("gloo all_reduce of %lld float32 over 4 hosts on %s, attempt %d: emulated %.3f s "
                  "(repetitions",
                  static_cast<long long>(c.elements), c.name.c_str(), attempt, best);
      for (double v : run.slowest) std::printf(" %.3f", v);
      std::printf("), simulated gloo schedule %.3f s (ratio %.3f), gradwire's ring %.3f s; lag "
                  "max %.2f ms, p99 %.2f ms; load average %s\n",
                  gloo_s, best / gloo_s, ring_s, s["lag"]["max_ms"].get<double>(),
                  s["lag"]["p99_ms"].get<double>(), load.c_str());
      if (emulated_s < c.high * gloo_s) break;
    }
    EXPECT_GT(emulated_s, c.low * gloo_s) << c.name;
    EXPECT_LT(emulated_s, c.high * gloo_s) << c.name;
  }
}

/// Starts `[PREFIX...] gradwire ARGS...` with its output in `log`; returns its pid.
pid_t start_gradwire(const std::vector<std::string>& args, const std::string& log,
                     const std::vector<std::string>& prefix = {}) {
  std::vector<std::string> words(prefix);
  words.push_back(GRADWIRE_BINARY);
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  EXPECT_EQ(::posix_spawn(&pid, words[0].c_str(), &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

/// Waits for `pid` up to `seconds`; its exit status (128 + signal), or -1 on timeout.
int wait_for(pid_t pid, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

/// Pids of the processes inside the emulation's namespaces, once every host runs `per_host`.
std::vector<pid_t> processes_of(pid_t emulator, int hosts, double seconds, std::size_t per_host = 1) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    std::vector<pid_t> pids;
    int populated = 0;
    for (int h = 0; h < hosts; ++h) {
      const std::string out = shell_output("ip netns pids gradwire-" + std::to_string(emulator) +
                                           "-h" + std::to_string(h));
      std::size_t before = pids.size();
      std::istringstream in(out);
      for (pid_t p; in >> p;) pids.push_back(p);
      populated += pids.size() >= before + per_host ? 1 : 0;
    }
    if (populated == hosts) return pids;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {};
}

TEST_F(Emulate, SigintRemovesNamespacesLinksAndProcesses) {
  const std::string path = scenario("sigint", 2, {{"family", "ethernet"}, {"rate", "100Mbps"}});
  const std::string log = (dir_ / "sigint.log").string();
  const pid_t pid = start_gradwire({"emulate", path, "--max-lag", "250", "--", "/bin/sh", "-c", "sleep 60 & sleep 60; wait"}, log);
  const std::vector<pid_t> inside = processes_of(pid, 2, 20);
  ASSERT_GE(inside.size(), 4u) << shell_output("cat " + log);
  // While it runs: the TAPs live in the namespaces, each beside its loopback only, and the
  // machine's own namespace has none of them (nothing is bridged to its interfaces).
  EXPECT_EQ(shell_output("ip -o link show").find("gw" + std::to_string(pid) + "t"), std::string::npos);
  for (int h = 0; h < 2; ++h) {
    const std::string links = shell_output("ip -n gradwire-" + std::to_string(pid) + "-h" +
                                           std::to_string(h) + " -o link show");
    EXPECT_EQ(std::count(links.begin(), links.end(), '\n'), 2) << links;
    EXPECT_NE(links.find("gw" + std::to_string(pid) + "t" + std::to_string(h)), std::string::npos)
        << links;
  }
  ::kill(pid, SIGINT);
  EXPECT_EQ(wait_for(pid, 20), 130) << shell_output("cat " + log);
  expect_nothing_left(pid, inside);
}

TEST_F(Emulate, AKilledCommandStopsTheOthersAndLeavesNothing) {
  const std::string path = scenario("killed", 2, {{"family", "ethernet"}, {"rate", "100Mbps"}});
  const std::string log = (dir_ / "killed.log").string();
  const pid_t pid = start_gradwire({"emulate", path, "--max-lag", "250", "--host", "1", "--", "/bin/sh", "-c",
                                    "sleep 1; kill -9 $$", "--", "sleep", "60"},
                                   log);
  const std::vector<pid_t> inside = processes_of(pid, 2, 20);
  ASSERT_GE(inside.size(), 2u) << shell_output("cat " + log);
  EXPECT_EQ(wait_for(pid, 30), 137) << shell_output("cat " + log);
  expect_nothing_left(pid, inside);
  EXPECT_EQ(summary("killed")["outcome"], "command_failed");
}

TEST_F(Emulate, TimeoutAndLagStopTheRunAndLeaveNothing) {
  const std::string path = scenario("stops", 2, {{"family", "ethernet"}, {"rate", "100Mbps"}});
  const std::string log = (dir_ / "timeout.log").string();
  pid_t pid = start_gradwire({"emulate", path, "--timeout", "1", "--max-lag", "250", "--", "sleep", "60"}, log);
  std::vector<pid_t> inside = processes_of(pid, 2, 20);
  EXPECT_EQ(wait_for(pid, 30), 124) << shell_output("cat " + log);
  expect_nothing_left(pid, inside);
  EXPECT_EQ(summary("stops")["outcome"], "timed_out");

  // A limit no simulator can keep: the run is stopped with the reason.
  pid = start_gradwire({"emulate", path, "--max-lag", "0.000001", "--", "sleep", "60"}, log);
  EXPECT_EQ(wait_for(pid, 30), 3);
  EXPECT_NE(shell_output("cat " + log).find("behind the wall clock"), std::string::npos)
      << shell_output("cat " + log);
  expect_nothing_left(pid, {});
  EXPECT_EQ(summary("stops")["outcome"], "lagged");
}

TEST_F(Emulate, WithoutPrivilegesItRefusesAndMakesNothing) {
  const std::string path = scenario("unprivileged", 2, {{"family", "ethernet"}});
  const std::string setpriv = shell_output("command -v setpriv");
  if (setpriv.empty()) GTEST_SKIP() << "no setpriv (util-linux)";
  // setpriv execs gradwire as `nobody` in its own process, so the pid names what it would make.
  const std::string log = (dir_ / "unprivileged.log").string();
  const pid_t pid = start_gradwire({"emulate", path, "--", "true"}, log,
                                   {setpriv.substr(0, setpriv.find('\n')), "--reuid=65534",
                                    "--regid=65534", "--clear-groups"});
  EXPECT_EQ(wait_for(pid, 30), 2) << shell_output("cat " + log);
  EXPECT_NE(shell_output("cat " + log).find("needs root"), std::string::npos)
      << shell_output("cat " + log);
  expect_nothing_left(pid, {});
  // --clean too: it says why instead of failing halfway.
  const pid_t cleaner = start_gradwire({"emulate", "--clean"}, log,
                                       {setpriv.substr(0, setpriv.find('\n')), "--reuid=65534",
                                        "--regid=65534", "--clear-groups"});
  EXPECT_EQ(wait_for(cleaner, 30), 2) << shell_output("cat " + log);
  EXPECT_NE(shell_output("cat " + log).find("needs root"), std::string::npos)
      << shell_output("cat " + log);
}

/// The numbers the hosts printed after `word` ("[hN] word 1234").
std::vector<pid_t> printed_pids(const std::string& log, const std::string& word) {
  std::vector<pid_t> pids;
  const std::string key = "] " + word + " ";
  for (std::size_t at = 0; (at = log.find(key, at)) != std::string::npos; at += key.size()) {
    pids.push_back(static_cast<pid_t>(std::stol(log.substr(at + key.size()))));
  }
  return pids;
}

/// Waits up to `seconds` until the log has `count` lines with `word`; their pids.
std::vector<pid_t> wait_for_pids(const std::string& log, const std::string& word, std::size_t count,
                                 double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<pid_t> pids;
  while ((pids = printed_pids(shell_output("cat " + log), word)).size() < count &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pids;
}

bool namespaces_listed(pid_t emulator) {
  return shell_output("ip netns list").find("gradwire-" + std::to_string(emulator) + "-") !=
         std::string::npos;
}

bool running(pid_t pid) { return ::kill(pid, 0) == 0 && !ended(pid); }

// A command that detaches a child (setsid) and then waits, on every host.
const std::vector<std::string> kDetaching = {"--", "/bin/sh", "-c",
                                             "echo direct $$; setsid sleep 1000 & exec sleep 1000"};

TEST_F(Emulate, AfterSigkillTheCommandsDieAndTheNextRunOrCleanRemovesTheRest) {
  const std::string path = scenario("sigkill", 2, {{"family", "ethernet"}, {"rate", "100Mbps"}});
  const std::string live_path = scenario("live", 2, {{"family", "ethernet"}, {"rate", "100Mbps"}});
  std::vector<std::string> args{"emulate", path, "--max-lag", "250"};
  args.insert(args.end(), kDetaching.begin(), kDetaching.end());

  // A live emulator beside the killed ones: nothing of it may be touched.
  const std::string live_log = (dir_ / "live.log").string();
  const pid_t live = start_gradwire({"emulate", live_path, "--max-lag", "250", "--", "sleep", "60"}, live_log);
  const std::vector<pid_t> live_inside = processes_of(live, 2, 20);
  ASSERT_EQ(live_inside.size(), 2u) << shell_output("cat " + live_log);

  for (const std::string remover : {"clean", "next run"}) {
    SCOPED_TRACE(remover);
    const std::string log = (dir_ / "killed.log").string();
    const pid_t killed = start_gradwire(args, log);
    const std::vector<pid_t> inside = processes_of(killed, 2, 20, 2);
    const std::vector<pid_t> direct = wait_for_pids(log, "direct", 2, 10);
    ASSERT_EQ(inside.size(), 4u) << shell_output("cat " + log);
    ASSERT_EQ(direct.size(), 2u) << shell_output("cat " + log);
    ::kill(killed, SIGKILL);
    ::waitpid(killed, nullptr, 0);
    // The commands gradwire started die with it (parent-death signal); what they detached
    // stays, in namespaces no one removes, until the next emulate.
    for (pid_t p : direct) EXPECT_TRUE(ended(p)) << "command " << p << " outlived gradwire";
    EXPECT_TRUE(namespaces_listed(killed));

    const std::string remover_log = (dir_ / "remover.log").string();
    const pid_t next = remover == "clean"
                           ? start_gradwire({"emulate", "--clean"}, remover_log)
                           : start_gradwire({"emulate", path, "--max-lag", "250", "--", "true"}, remover_log);
    EXPECT_EQ(wait_for(next, 30), 0) << shell_output("cat " + remover_log);
    const std::string said = shell_output("cat " + remover_log);
    EXPECT_NE(said.find("emulator " + std::to_string(killed) + " no longer runs"), std::string::npos)
        << said;
    EXPECT_NE(said.find("gradwire-" + std::to_string(killed) + "-h1"), std::string::npos) << said;
    EXPECT_EQ(said.find("emulator " + std::to_string(live) + " "), std::string::npos) << said;
    expect_nothing_left(killed, inside);
    EXPECT_FALSE(fs::exists("/run/gradwire/emulate-" + std::to_string(killed) + ".lock"));

    EXPECT_TRUE(namespaces_listed(live));
    for (pid_t p : live_inside) EXPECT_TRUE(running(p)) << "process " << p << " of a live emulator";
  }

  // With nothing dead around, --clean says so and leaves the live one alone.
  const auto clean = testing::run_gradwire("emulate --clean");
  EXPECT_EQ(clean.code, 0) << clean.output;
  EXPECT_NE(clean.output.find("nothing left"), std::string::npos) << clean.output;
  EXPECT_TRUE(namespaces_listed(live));
  ::kill(live, SIGINT);
  EXPECT_EQ(wait_for(live, 20), 130) << shell_output("cat " + live_log);
  expect_nothing_left(live, live_inside);
}

TEST_F(Emulate, ARunThatSucceedsLeavesNoDetachedProcess) {
  const std::string path = scenario("detached", 2, {{"family", "ethernet"}, {"rate", "100Mbps"}});
  const std::string log = (dir_ / "detached.log").string();
  // The detached sleep keeps the output pipe open too: the run must not wait for it.
  const pid_t pid = start_gradwire({"emulate", path, "--max-lag", "250", "--", "/bin/sh", "-c",
                                    "setsid sleep 1000 & echo detached $!"},
                                   log);
  EXPECT_EQ(wait_for(pid, 30), 0) << shell_output("cat " + log);
  const std::vector<pid_t> detached = printed_pids(shell_output("cat " + log), "detached");
  ASSERT_EQ(detached.size(), 2u) << shell_output("cat " + log);
  expect_nothing_left(pid, detached);
  for (pid_t p : detached) {
    if (!ended(p)) ::kill(p, SIGKILL);  // not left to the machine when the check fails
  }
}

TEST_F(Emulate, AnEndlessLineIsCutAndTheRunEnds) {
  const std::string path = scenario("endless", 2, {{"family", "ethernet"}, {"rate", "100Mbps"}});
  const std::string log = (dir_ / "endless.log").string();
  const std::size_t bytes = 50000000;
  const pid_t pid = start_gradwire(
      {"emulate", path, "-q", "--max-lag", "250", "--host", "1", "--", "true", "--", "/bin/sh", "-c",
       "head -c " + std::to_string(bytes) + " /dev/zero | tr '\\0' x; echo; echo after"},
      log);
  // Generous: the whole 50 MB passes through in a few seconds; output re-scanned on every
  // read took minutes.
  EXPECT_EQ(wait_for(pid, 120), 0);
  ASSERT_LT(fs::file_size(log), 1000000u) << "the line was not cut";
  const std::string output = shell_output("cat " + log);
  const std::string cut_line = "[h0] " + std::string(64 * 1024, 'x') + "[... " +
                               std::to_string(bytes - 64 * 1024) + " bytes cut]\n";
  EXPECT_NE(output.find(cut_line), std::string::npos) << output.substr(0, 300);
  EXPECT_NE(output.find("\n[h0] after\n"), std::string::npos) << output.substr(0, 300);
}

}  // namespace
}  // namespace gradwire

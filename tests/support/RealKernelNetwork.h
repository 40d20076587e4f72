// A switched LAN made of the real Linux kernel's parts, as the reference a simulated or emulated
// network is held against: one network namespace per host, each with a veth whose peer is a
// port of one Linux bridge in a namespace of its own (the switch), and every host's egress
// shaped by a token bucket (tc tbf) to the link rate. Nothing is made in the machine's own
// namespace and nothing is bridged to its interfaces, so the traffic never leaves the
// namespaces. The destructor kills what still runs in them and removes them (with them go the
// veths and the bridge), on every exit path.
//
// Shaping: tbf charges each packet its length at the veth, i.e. the IP packet and the 14-byte
// Ethernet header; a real wire (and gradwire's simulated Ethernet) also charges the 4-byte FCS,
// 8 bytes of preamble and 12 of inter-frame gap, so at the same rate the kernel's link carries
// 1538 / 1514 = 1.6% more TCP payload than a real or simulated wire (kFrameRatio). The bucket
// holds kBurstBytes (ten full frames, 1.2 ms at 100 Mbit/s): enough that a timer firing late on
// a loaded machine does not waste tokens, little enough that the head start it gives after an
// idle period stays a bounded, stated advantage (kBurstBytes / rate). Its queue holds
// kLimitBytes, more than the socket buffer of the one connection a host sends on here
// (tcp_wmem's maximum, 4 MiB), so tbf never drops: the simulated host's NIC queue does not
// either. The switch's ports are not shaped: every host receives from one sender at a time in
// the exchanges run over it (a bulk transfer, a ring), so they never hold a queue.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

#include "CubicAllowed.h"

namespace gradwire::testing {

class RealKernelNetwork {
 public:
  static constexpr double kBurstBytes = 15140;
  static constexpr double kLimitBytes = 8 << 20;
  /// Wire bytes per full 1500-byte IP packet on real or simulated Ethernet, per byte tbf charges.
  static constexpr double kFrameRatio = 1538.0 / 1514.0;

  /// Builds `hosts` hosts at `rate_mbit`; error() says why when any step failed.
  RealKernelNetwork(int hosts, int rate_mbit) : hosts_(hosts), rate_mbit_(rate_mbit) {
    prefix_ = "gwk" + std::to_string(::getpid());
    // Namespaces an earlier run of this test left when it was killed (same pid, reused).
    run("ip netns del " + switch_ns() + " 2>/dev/null; true");
    for (int h = 0; h < hosts_; ++h) run("ip netns del " + host_ns(h) + " 2>/dev/null; true");
    made_ = true;
    const std::string sw = "ip -n " + switch_ns() + " ";
    if (!step("ip netns add " + switch_ns()) ||
        !step(sw + "link add br0 type bridge stp_state 0") || !step(sw + "link set br0 up")) {
      return;
    }
    for (int h = 0; h < hosts_; ++h) {
      const std::string hn = "ip -n " + host_ns(h) + " ";
      const std::string port = "p" + std::to_string(h);
      if (!step("ip netns add " + host_ns(h)) ||
          !step(sw + "link add " + port + " type veth peer name eth0 netns " + host_ns(h)) ||
          !step(sw + "link set " + port + " master br0 up") || !step(hn + "link set lo up") ||
          !step(hn + "addr add " + address(h) + "/24 dev eth0") || !step(hn + "link set eth0 up") ||
          !step("tc -n " + host_ns(h) + " qdisc add dev eth0 root tbf rate " +
                std::to_string(rate_mbit_) + "mbit burst " +
                std::to_string(static_cast<long>(kBurstBytes)) + " limit " +
                std::to_string(static_cast<long>(kLimitBytes))) ||
          !step(exec(h) + "true")) {
        return;
      }
      // CUBIC, Linux's default and the simulator's; a namespace may choose only what the
      // machine's own namespace allows (cubic_ adds it where it can), so Reno where CUBIC is
      // still not allowed. Without losses (tbf never drops here) both grow their window alike
      // in slow start.
      bool set = false;
      for (const std::string cc : {"cubic", "reno"}) {
        if (!set && (congestion_control_.empty() || congestion_control_ == cc) &&
            step(exec(h) + "sysctl -qw net.ipv4.tcp_congestion_control=" + cc)) {
          congestion_control_ = cc;
          set = true;
        }
      }
      if (!set) return;
      error_.clear();
    }
  }

  ~RealKernelNetwork() {
    if (!made_) return;
    for (int h = -1; h < hosts_; ++h) {
      const std::string ns = h < 0 ? switch_ns() : host_ns(h);
      run("for p in $(ip netns pids " + ns + " 2>/dev/null); do kill -9 $p; done; ip netns del " +
          ns + " 2>/dev/null; true");
    }
  }
  RealKernelNetwork(const RealKernelNetwork&) = delete;
  RealKernelNetwork& operator=(const RealKernelNetwork&) = delete;

  /// The hosts' TCP congestion control.
  const std::string& congestion_control() const { return congestion_control_; }
  /// Empty when built; otherwise the step that failed and what it said.
  const std::string& error() const { return error_; }
  std::string host_ns(int h) const { return prefix_ + "-h" + std::to_string(h); }
  std::string switch_ns() const { return prefix_ + "-sw"; }
  static std::string address(int h) { return "10.77.0." + std::to_string(h + 1); }
  /// The words that run a command on host `h`.
  std::string exec(int h) const { return "ip netns exec " + host_ns(h) + " "; }
  /// The environment torch.distributed reads (as torchrun sets it) for rank `h` of `hosts`,
  /// host 0 holding the store on `port`, gloo bound to the host's veth: words to put before a
  /// command.
  static std::string rank_environment(int h, int hosts, int port) {
    return "env RANK=" + std::to_string(h) + " WORLD_SIZE=" + std::to_string(hosts) +
           " MASTER_ADDR=" + address(0) + " MASTER_PORT=" + std::to_string(port) +
           " GLOO_SOCKET_IFNAME=eth0 ";
  }

  /// Runs `commands[h]` on every host at once (shell words, each its own process), each killed
  /// after `timeout_s`; their outputs, stdout and stderr together.
  std::vector<std::string> run_on_hosts(const std::vector<std::string>& commands, int timeout_s) const {
    std::string script;
    std::vector<std::string> logs;
    for (std::size_t h = 0; h < commands.size(); ++h) {
      logs.push_back("/tmp/" + prefix_ + "-out" + std::to_string(h));
      script += "timeout -k 2 " + std::to_string(timeout_s) + " " + exec(static_cast<int>(h)) +
                commands[h] + " > " + logs.back() + " 2>&1 & ";
    }
    run(script + "wait");
    std::vector<std::string> outputs;
    for (const std::string& log : logs) {
      outputs.push_back(run("cat " + log));
      std::remove(log.c_str());
    }
    return outputs;
  }

  /// `command`'s stdout and stderr.
  static std::string run(const std::string& command) {
    FILE* p = ::popen(("( " + command + " ) 2>&1").c_str(), "r");
    std::string out;
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    ::pclose(p);
    return out;
  }

 private:
  bool step(const std::string& command) {
    const std::string out = run(command + " && echo __ok__");
    if (out.find("__ok__") != std::string::npos) return true;
    error_ = "`" + command + "`: " + out;
    return false;
  }

  CubicAllowed cubic_;  // first: constructed before the namespaces, destroyed after them
  int hosts_;
  int rate_mbit_;
  std::string prefix_;
  bool made_ = false;
  std::string error_;
  std::string congestion_control_;
};

}  // namespace gradwire::testing

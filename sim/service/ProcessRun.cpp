#include "sim/service/ProcessRun.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ostream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ConfigError.h"
#include "common/InterruptCleanup.h"
#include "common/SelfExecutable.h"
#include "sim/service/EmulatorService.h"

extern char** environ;

namespace gradwire {

namespace {

/// The worker processes of one run; whatever happens, none outlives it.
class ChildProcesses {
 public:
  ~ChildProcesses() { stop_all(); }

  void spawn(const std::vector<std::string>& args, std::uint32_t host) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
    if (rc != 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(rc));
    InterruptCleanup::remember_child(pid);
    children_.push_back(Child{pid, host, false, 0});
  }

  /// Hosts whose process has exited since the last call.
  std::vector<std::uint32_t> newly_exited() {
    std::vector<std::uint32_t> out;
    for (Child& c : children_) {
      if (c.exited) continue;
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.exited = true;
        c.status = status;
        InterruptCleanup::forget_child(c.pid);
        out.push_back(c.host);
      }
    }
    return out;
  }

  /// Waits up to `seconds` for every process to exit, then ends the rest.
  void wait_all(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<long>(seconds * 1000));
    while (std::chrono::steady_clock::now() < deadline) {
      newly_exited();
      if (std::all_of(children_.begin(), children_.end(), [](const Child& c) { return c.exited; })) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop_all();
  }

 private:
  struct Child {
    pid_t pid;
    std::uint32_t host;
    bool exited;
    int status;
  };

  void stop_all() {
    for (Child& c : children_) {
      if (c.exited) continue;
      ::kill(c.pid, SIGKILL);  // our own child, by its pid
      int status = 0;
      ::waitpid(c.pid, &status, 0);
      c.exited = true;
      InterruptCleanup::forget_child(c.pid);
    }
  }

  std::vector<Child> children_;
};

}  // namespace

RunResult run_with_processes(const Scenario& sc, const std::string& out_dir,
                             std::ostream* progress, std::ostream& err,
                             const ProcessRunOptions& options) {
  if (!sc.topology.scheme().processes) {
    throw ConfigError("topology.kind", "--processes supports " + schemes_with_processes() +
                                           "; \"" + sc.topology.name() +
                                           "\" evaluates every worker's model in one place");
  }
  if (sc.network.transport().udp()) {
    throw ConfigError("network.transport", "--processes runs over TCP only; the udp "
                                           "transport's loss is recorded in-process (gradwire run)");
  }
  const int n = sc.training.workers;
  const bool with_server = sc.topology.with_server();
  const int processes = n + (with_server ? 1 : 0);
  // Workers share this machine's cores unless the scenario pins a thread count; measured
  // compute keeps its one thread (ComputeSpec::intra_op_threads).
  const int threads =
      sc.compute.threads > 0 || sc.compute.mode == "measured"
          ? sc.compute.intra_op_threads()
          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / processes);

  ChildProcesses children;
  ServiceOptions so;
  so.bind = "tcp://127.0.0.1:*";  // a free loopback port
  so.client_timeout_s = options.client_timeout_s;
  so.register_timeout_s = options.register_timeout_s;
  so.lost_hosts = [&children]() { return children.newly_exited(); };
  EmulatorService service(sc, so);
  const std::string endpoint = service.bind();

  const std::string exe = options.executable.empty() ? self_executable() : options.executable;
  for (int h = 0; h < processes; ++h) {
    std::vector<std::string> args{exe, "worker", "--connect", endpoint, "--threads",
                                  std::to_string(threads), "--quiet",
                                  "--exit-with-parent"};
    if (h < n) {
      args.insert(args.end(), {"--rank", std::to_string(h)});
    } else {
      args.push_back("--server");
    }
    children.spawn(args, static_cast<std::uint32_t>(h));
  }
  if (progress) {
    *progress << "[" << sc.name << "] " << processes << " worker processes on " << endpoint
              << " (" << threads << " LibTorch thread" << (threads == 1 ? "" : "s") << " each)\n";
  }

  ServiceResult served = service.serve(out_dir, progress, &err);
  children.wait_all(30.0);
  if (!served.complete) {
    throw std::runtime_error("run with worker processes failed (" + served.reason +
                             "): " + served.message);
  }
  RunResult result;
  result.summary = std::move(served.summary);
  result.metrics_jsonl = std::move(served.metrics_jsonl);
  result.directory = std::move(served.directory);
  return result;
}

}  // namespace gradwire

#include "sim/emulate/CommandRunner.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ostream>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/emulate/IpCommand.h"
#include "sim/emulate/NamespaceProcesses.h"
#include "sim/emulate/NetworkNamespace.h"
#include "sim/emulate/PipedSpawn.h"

extern char** environ;

namespace gradwire {

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kGrace = std::chrono::seconds(3);

std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  const auto key_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const auto& x : extra) replaced = replaced || key_of(x) == key_of(entry);
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

int status_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

struct CommandRunner::Child {
  pid_t pid = -1;
  int output = -1;  ///< read end of its stdout+stderr pipe; -1 once closed
  std::string pending;  ///< a line not yet ended, at most kMaxOutputLineBytes of it
  std::size_t cut = 0;  ///< bytes of that line dropped past the limit
  bool running = false;
  Clock::time_point started;
};

CommandRunner::CommandRunner(std::ostream& out, double timeout_s)
    : out_(out), timeout_s_(timeout_s) {
  if (::pipe2(control_, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw EmulationError(std::string("pipe: ") + std::strerror(errno));
  }
}

CommandRunner::~CommandRunner() {
  ::close(control_[0]);
  ::close(control_[1]);
}

void CommandRunner::post(char message) {
  // write(2) only: this is called from the signal thread too.
  while (::write(control_[1], &message, 1) < 0 && errno == EINTR) {
  }
}

void CommandRunner::notify_ready() { post('R'); }
void CommandRunner::interrupt(int signal) {
  int none = 0;
  signal_.compare_exchange_strong(none, signal);
  post('I');
}
void CommandRunner::abort() { post('A'); }

void CommandRunner::start(const std::vector<HostCommand>& commands, std::vector<Child>& children) {
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const HostCommand& command = commands[i];
    std::vector<std::string> words{"ip", "netns", "exec", command.netns};
    words.insert(words.end(), command.argv.begin(), command.argv.end());
    const std::vector<std::string> env = merged_environment(command.environment);
    // Its own process group, so stopping a host reaches everything the command started.
    const PipedProcess process = spawn_piped(words, &env, true);
    if (process.pid < 0) {
      throw EmulationError("cannot start the command of " + command.label + ": " + process.error);
    }
    children[i].pid = process.pid;
    children[i].output = process.output;
    children[i].running = true;
    children[i].started = Clock::now();
    results_[i].started = true;
  }
}

void CommandRunner::stop_all(std::vector<Child>& children, int signal) {
  for (const Child& c : children) {
    if (c.pid > 0) ::kill(-c.pid, signal);
  }
}

void CommandRunner::end_line(Child& child, const std::string& label) {
  out_ << "[" << label << "] " << child.pending;
  if (child.cut > 0) out_ << "[... " << child.cut << " bytes cut]";
  out_ << "\n";
  child.pending.clear();
  child.cut = 0;
}

void CommandRunner::pump(Child& child, const std::string& label) {
  char buffer[65536];
  const ssize_t n = ::read(child.output, buffer, sizeof buffer);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  std::lock_guard<std::mutex> lock(out_mutex_);
  if (n <= 0) {
    if (!child.pending.empty() || child.cut > 0) end_line(child, label);
    out_.flush();
    ::close(child.output);
    child.output = -1;
    return;
  }
  // Each byte is looked at once: only the new bytes are searched for a newline.
  const char* at = buffer;
  const char* const end = buffer + n;
  while (at < end) {
    const auto* newline =
        static_cast<const char*>(std::memchr(at, '\n', static_cast<std::size_t>(end - at)));
    const char* stop = newline != nullptr ? newline : end;
    const auto length = static_cast<std::size_t>(stop - at);
    const std::size_t room = kMaxOutputLineBytes - child.pending.size();
    const std::size_t kept = length < room ? length : room;
    child.pending.append(at, kept);
    child.cut += length - kept;
    if (newline != nullptr) end_line(child, label);
    at = newline != nullptr ? newline + 1 : end;
  }
  out_.flush();
}

void CommandRunner::kill_namespaces(const std::vector<HostCommand>& commands) {
  for (const HostCommand& command : commands) {
    kill_namespace_processes(NetworkNamespace::file_of(command.netns));
  }
}

void CommandRunner::run(const std::vector<HostCommand>& commands) {
  results_.assign(commands.size(), CommandResult{});
  std::vector<Child> children(commands.size());

  // Wait for the network (or a reason not to start at all).
  for (;;) {
    pollfd control{control_[0], POLLIN, 0};
    if (::poll(&control, 1, -1) < 0 && errno != EINTR) return;
    char message = 0;
    if (::read(control_[0], &message, 1) != 1) continue;
    if (message == 'R') break;
    outcome_ = message == 'I' ? RunOutcome::kInterrupted : RunOutcome::kAborted;
    return;
  }

  try {
    start(commands, children);
  } catch (...) {
    stop_all(children, SIGKILL);
    kill_namespaces(commands);
    for (Child& c : children) {
      if (c.pid > 0) ::waitpid(c.pid, nullptr, 0);
      if (c.output >= 0) ::close(c.output);
    }
    throw;
  }
  const auto begun = Clock::now();
  const bool has_deadline = timeout_s_ > 0;
  const auto deadline =
      begun + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  bool stopping = false;
  Clock::time_point kill_at;

  const auto begin_stop = [&] {
    if (stopping) return;
    stopping = true;
    stop_all(children, SIGTERM);
    kill_at = Clock::now() + kGrace;
  };

  for (;;) {
    // Reap.
    std::size_t running = 0;
    for (std::size_t i = 0; i < children.size(); ++i) {
      Child& c = children[i];
      if (!c.running) continue;
      int status = 0;
      const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
      if (r == c.pid) {
        c.running = false;
        results_[i].finished = true;
        results_[i].exit_code = status_code(status);
        results_[i].wall_s = std::chrono::duration<double>(Clock::now() - c.started).count();
        if (results_[i].exit_code != 0 && first_failure_ < 0 && !stopping) {
          first_failure_ = static_cast<int>(i);
          begin_stop();
        }
      } else {
        ++running;
      }
    }
    if (running == 0) break;

    const auto now = Clock::now();
    if (has_deadline && now >= deadline && !stopping) {
      outcome_ = RunOutcome::kTimedOut;
      begin_stop();
    }
    if (stopping && now >= kill_at) stop_all(children, SIGKILL);

    std::vector<pollfd> fds{{control_[0], POLLIN, 0}};
    std::vector<std::size_t> owners{children.size()};
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (children[i].output >= 0) {
        fds.push_back({children[i].output, POLLIN, 0});
        owners.push_back(i);
      }
    }
    // Short waits: a child's exit shows up through waitpid, not through its pipe (a
    // grandchild may still hold that open).
    if (::poll(fds.data(), fds.size(), 50) < 0 && errno != EINTR) break;
    for (std::size_t k = 1; k < fds.size(); ++k) {
      if (fds[k].revents != 0) pump(children[owners[k]], commands[owners[k]].label);
    }
    if (fds[0].revents != 0) {
      char message = 0;
      while (::read(control_[0], &message, 1) == 1) {
        if (message == 'I' && outcome_ == RunOutcome::kCompleted) outcome_ = RunOutcome::kInterrupted;
        if (message == 'A' && outcome_ == RunOutcome::kCompleted) outcome_ = RunOutcome::kAborted;
        if (message == 'I' || message == 'A') begin_stop();
      }
    }
  }

  // Everything the commands left goes too: their groups, and whatever left its group
  // (`setsid`, a daemon) but not its namespace; then the rest of their output.
  stop_all(children, SIGKILL);
  kill_namespaces(commands);
  const auto drain_until = Clock::now() + std::chrono::milliseconds(500);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> owners;
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (children[i].output >= 0) {
        fds.push_back({children[i].output, POLLIN, 0});
        owners.push_back(i);
      }
    }
    if (fds.empty() || Clock::now() >= drain_until) break;
    if (::poll(fds.data(), fds.size(), 50) < 0 && errno != EINTR) break;
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents != 0) pump(children[owners[k]], commands[owners[k]].label);
    }
  }
  for (Child& c : children) {
    if (c.output >= 0) ::close(c.output);
  }
}

}  // namespace gradwire

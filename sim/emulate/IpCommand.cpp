#include "sim/emulate/IpCommand.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace gradwire {

namespace {

struct IpResult {
  bool ok = false;
  std::string output;
};

IpResult spawn_ip(const std::vector<std::string>& args) {
  IpResult result;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    result.output = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  std::vector<std::string> words{"ip"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  // The signals InterruptCleanup blocks are blocked in every thread; `ip` gets its defaults.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, "ip", &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    result.output = std::string("cannot start ip: ") + std::strerror(spawned);
    return result;
  }
  char buffer[512];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n > 0) {
      if (result.output.size() < 4096) result.output.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  while (!result.output.empty() && (result.output.back() == '\n' || result.output.back() == ' ')) {
    result.output.pop_back();
  }
  return result;
}

std::string quoted(const std::vector<std::string>& args) {
  std::string text = "ip";
  for (const auto& a : args) text += " " + a;
  return text;
}

}  // namespace

void run_ip(const std::vector<std::string>& args) {
  const IpResult result = spawn_ip(args);
  if (!result.ok) {
    throw EmulationError("`" + quoted(args) + "` failed" +
                         (result.output.empty() ? std::string() : ": " + result.output));
  }
}

bool try_ip(const std::vector<std::string>& args) noexcept {
  try {
    return spawn_ip(args).ok;
  } catch (...) {
    return false;
  }
}

bool ip_available() {
  const IpResult result = spawn_ip({"-V"});
  return result.ok;
}

}  // namespace gradwire

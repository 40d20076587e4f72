#include "sim/emulate/IpCommand.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/emulate/PipedSpawn.h"

namespace gradwire {

namespace {

struct IpResult {
  bool ok = false;
  std::string output;
};

IpResult spawn_ip(const std::vector<std::string>& args) {
  IpResult result;
  std::vector<std::string> words{"ip"};
  words.insert(words.end(), args.begin(), args.end());
  const PipedProcess process = spawn_piped(words, nullptr, false);
  if (process.pid < 0) {
    result.output = "cannot start ip: " + process.error;
    return result;
  }
  const pid_t pid = process.pid;
  const int output = process.output;
  char buffer[512];
  for (;;) {
    const ssize_t n = ::read(output, buffer, sizeof buffer);
    if (n > 0) {
      if (result.output.size() < 4096) result.output.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(output);
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

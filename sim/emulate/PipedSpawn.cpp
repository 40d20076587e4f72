#include "sim/emulate/PipedSpawn.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace gradwire {

namespace {

std::vector<char*> pointers(std::vector<std::string>& words) {
  std::vector<char*> out;
  for (auto& w : words) out.push_back(w.data());
  out.push_back(nullptr);
  return out;
}

/// The file execvp would run for `name`, found before fork: between fork and exec a
/// multi-threaded process may only make async-signal-safe calls, and a PATH search allocates.
std::string executable_for(const std::string& name, std::string& error) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr && *path != '\0' ? path : "/usr/local/bin:/usr/bin:/bin";
  int problem = ENOENT;
  for (std::size_t begin = 0; begin <= dirs.size();) {
    std::size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > begin ? dirs.substr(begin, end - begin) : ".";
    const std::string candidate = dir + "/" + name;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      problem = EACCES;
    }
    begin = end + 1;
  }
  error = std::strerror(problem);
  return "";
}

/// In the child: errno to the parent, and the end.
[[noreturn]] void fail(int report) {
  const int error = errno;
  const ssize_t ignored = ::write(report, &error, sizeof error);
  (void)ignored;
  ::_exit(127);
}

/// In the child, before exec: async-signal-safe calls only. Reports errno on `report` and
/// exits when something fails.
[[noreturn]] void become(const char* file, char* const* args, char* const* env, int output,
                         int report, pid_t parent, bool own_group) {
  // Dies with the thread that started it, and not later than that: a parent gone before the
  // prctl would leave no one to send the signal.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(report);
  if (::getppid() != parent) ::_exit(127);
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::sigaction(s, &defaults, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (own_group && ::setpgid(0, 0) != 0) fail(report);
  const int null = ::open("/dev/null", O_RDONLY);
  if (null < 0 || ::dup2(null, 0) < 0) fail(report);
  if (null != 0) ::close(null);
  if (::dup2(output, 1) < 0 || ::dup2(output, 2) < 0) fail(report);
  ::execve(file, args, env);
  fail(report);
}

}  // namespace

PipedProcess spawn_piped(const std::vector<std::string>& argv,
                         const std::vector<std::string>* environment, bool own_group) {
  PipedProcess process;
  if (argv.empty()) {
    process.error = "no program";
    return process;
  }
  const std::string file = executable_for(argv[0], process.error);
  if (file.empty()) return process;
  std::vector<std::string> words = argv;
  std::vector<char*> args = pointers(words);
  std::vector<std::string> env_words;
  if (environment != nullptr) {
    env_words = *environment;
  } else {
    for (char** e = environ; *e != nullptr; ++e) env_words.emplace_back(*e);
  }
  std::vector<char*> env = pointers(env_words);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    process.error = std::string("pipe: ") + std::strerror(errno);
    return process;
  }
  int report[2];  // stays empty when exec succeeds (close-on-exec), else carries errno
  if (::pipe2(report, O_CLOEXEC) != 0) {
    process.error = std::string("pipe: ") + std::strerror(errno);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return process;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(report[0]);
    ::close(pipe_fds[0]);
    become(file.c_str(), args.data(), env.data(), pipe_fds[1], report[1], parent, own_group);
  }
  const int fork_error = errno;
  ::close(pipe_fds[1]);
  ::close(report[1]);
  if (pid < 0) {
    ::close(pipe_fds[0]);
    ::close(report[0]);
    process.error = std::string("fork: ") + std::strerror(fork_error);
    return process;
  }
  int child_error = 0;
  ssize_t n;
  while ((n = ::read(report[0], &child_error, sizeof child_error)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof child_error)) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    ::close(pipe_fds[0]);
    process.error = std::strerror(child_error);
    return process;
  }
  process.pid = pid;
  process.output = pipe_fds[0];
  return process;
}

}  // namespace gradwire

#include "sim/emulate/PipedSpawn.h"

#include <cerrno>
#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <spawn.h>
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

}  // namespace

PipedProcess spawn_piped(const std::vector<std::string>& argv,
                         const std::vector<std::string>* environment, bool own_group) {
  PipedProcess process;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    process.error = std::string("pipe: ") + std::strerror(errno);
    return process;
  }
  std::vector<std::string> words = argv;
  std::vector<char*> args = pointers(words);
  std::vector<std::string> env_words = environment ? *environment : std::vector<std::string>{};
  std::vector<char*> env = pointers(env_words);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (own_group) {
    posix_spawnattr_setpgroup(&attributes, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attributes, flags);
  const int spawned = ::posix_spawnp(&process.pid, args[0], &actions, &attributes, args.data(),
                                     environment ? env.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    process.pid = -1;
    process.error = std::strerror(spawned);
    return process;
  }
  process.output = pipe_fds[0];
  return process;
}

}  // namespace gradwire

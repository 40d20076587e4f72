#include "common/InterruptCleanup.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include <sys/prctl.h>
#include <unistd.h>

namespace gradwire {

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& folders() {
  static std::set<std::string> f;
  return f;
}
std::set<pid_t>& children() {
  static std::set<pid_t> c;
  return c;
}
// finish_with_commit() was called / its commit is done (both under registry_mutex()).
bool& finish_armed() {
  static bool armed = false;
  return armed;
}
bool& finished() {
  static bool done = false;
  return done;
}
std::function<void(int)>& diverted_to() {
  static std::function<void(int)> handler;
  return handler;
}

sigset_t interrupt_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

const char* signal_name(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "SIGHUP";
}

/// Returns only when the command's results are already committed (the signal is ignored).
void clean_up_and_exit(int signal) {
  // Holding the lock to the end: nothing can register, commit or rename any more.
  registry_mutex().lock();
  if (finished()) {
    registry_mutex().unlock();
    std::fprintf(stderr, "gradwire: %s ignored: the results are already in place\n",
                 signal_name(signal));
    std::fflush(stderr);
    return;
  }
  for (pid_t child : children()) ::kill(child, SIGTERM);
  std::size_t removed = 0;
  for (const std::string& folder : folders()) {
    std::error_code ignored;
    removed += std::filesystem::remove_all(folder, ignored) > 0 ? 1 : 0;
  }
  std::fprintf(stderr, "gradwire: interrupted by %s; stopped %zu child process(es), removed %zu "
                       "unfinished output folder(s)\n",
               signal_name(signal), children().size(), removed);
  std::fflush(stderr);
  std::_Exit(128 + signal);
}

}  // namespace

InterruptCleanup::Lock::Lock() { registry_mutex().lock(); }
InterruptCleanup::Lock::~Lock() { registry_mutex().unlock(); }

void InterruptCleanup::install() {
  static std::once_flag once;
  std::call_once(once, [] {
    const sigset_t set = interrupt_signals();
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
      for (;;) {
        int signal = 0;
        if (::sigwait(&set, &signal) != 0) continue;
        std::function<void(int)> handler;
        {
          std::lock_guard<std::mutex> lock(registry_mutex());
          handler = diverted_to();
        }
        if (!handler) {
          clean_up_and_exit(signal);
          continue;
        }
        handler(signal);
      }
    }).detach();
  });
}

void InterruptCleanup::remember_folder(const std::string& path) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  folders().insert(path);
}

void InterruptCleanup::forget_folder(const std::string& path) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  folders().erase(path);
}

void InterruptCleanup::remember_child(pid_t pid) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  children().insert(pid);
}

void InterruptCleanup::forget_child(pid_t pid) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  children().erase(pid);
}

void InterruptCleanup::finish_with_commit() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  finish_armed() = true;
}

void InterruptCleanup::committed_locked() {
  if (finish_armed()) finished() = true;
}

void InterruptCleanup::divert(std::function<void(int)> handler) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  diverted_to() = std::move(handler);
}

void InterruptCleanup::prepare_child() {
  const sigset_t set = interrupt_signals();
  for (int s : {SIGINT, SIGTERM, SIGHUP}) std::signal(s, SIG_DFL);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
}

}  // namespace gradwire

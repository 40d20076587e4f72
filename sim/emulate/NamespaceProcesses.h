// The processes inside a network namespace, found the way the kernel sees them: every process
// whose /proc/<pid>/ns/net is that namespace. Process groups and parent links miss what a
// command detached (`setsid`, a daemon's double fork); the namespace does not, since nothing
// started inside it can leave it without CAP_SYS_ADMIN.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace gradwire {

/// Pids whose network namespace is the one `namespace_file` refers to (a file under
/// /run/netns, or any /proc/<pid>/ns/net). Empty when the file cannot be read.
std::vector<pid_t> processes_in_namespace(const std::string& namespace_file);

/// SIGKILLs every process of the namespace, again and again until a scan finds none (a
/// process may fork between a scan and its kill), and waits for them to end (an ended
/// process leaves the namespace). Returns how many processes it signalled.
std::size_t kill_namespace_processes(const std::string& namespace_file);

}  // namespace gradwire

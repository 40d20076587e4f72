// Which clients of the service's ROUTER socket are still connected. ZeroMQ hides connections
// from a ROUTER: a client that says `hello` and then vanishes would hold its host until the
// registration deadline. A socket monitor reports each accepted and each closed TCP connection
// by its file descriptor, and every received message carries the descriptor it came from
// (ZMQ_SRCFD), so a closed connection maps to the routing id of the client that used it.
//
// Descriptors are reused by later connections. The monitor reports a connection's close before
// its descriptor is released, so once a message has been received, every close that happened
// before it was sent is already in the monitor's queue: drain() after receiving and before
// handling a message attributes each close to the right client.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <zmq.hpp>

namespace gradwire {

class PeerConnections {
 public:
  /// Starts monitoring `router`; call before it binds, so every connection is seen accepted.
  PeerConnections(zmq::context_t& context, zmq::socket_t& router);
  ~PeerConnections();
  PeerConnections(const PeerConnections&) = delete;
  PeerConnections& operator=(const PeerConnections&) = delete;

  /// Applies the monitor's queued events; returns the routing ids (given to remember) whose
  /// connection has closed since, each once.
  std::vector<std::string> drain();

  /// Whether the connection a message with descriptor `fd` came from is known to have closed
  /// (its descriptor's latest event drained so far is a close).
  bool closed(int fd) const {
    const auto it = open_.find(fd);
    return it != open_.end() && !it->second;
  }

  /// Ties `identity` to the connection `fd`: its close is reported by drain().
  void remember(const std::string& identity, int fd);
  void forget(const std::string& identity);

  /// Stops monitoring (once the clients are known: nothing more to map).
  void stop();

 private:
  zmq::socket_t& router_;
  zmq::socket_t events_;
  bool monitoring_ = false;
  std::map<int, bool> open_;  // descriptor: whether its latest event was an accept
  std::map<std::string, int> fd_of_;
};

}  // namespace gradwire

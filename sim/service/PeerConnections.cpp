#include "sim/service/PeerConnections.h"

#include <cstdint>
#include <cstring>

namespace gradwire {

namespace {

std::string monitor_address(const void* owner) {
  return "inproc://gradwire-peers-" + std::to_string(reinterpret_cast<std::uintptr_t>(owner));
}

}  // namespace

PeerConnections::PeerConnections(zmq::context_t& context, zmq::socket_t& router)
    : router_(router), events_(context, zmq::socket_type::pair) {
  const std::string address = monitor_address(this);
  if (zmq_socket_monitor(router_.handle(), address.c_str(),
                         ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0) {
    throw zmq::error_t();
  }
  events_.set(zmq::sockopt::linger, 0);
  events_.connect(address);
  monitoring_ = true;
}

PeerConnections::~PeerConnections() { stop(); }

void PeerConnections::stop() {
  if (!monitoring_) return;
  zmq_socket_monitor(router_.handle(), nullptr, 0);
  monitoring_ = false;
}

std::vector<std::string> PeerConnections::drain() {
  std::vector<std::string> closed;
  if (!monitoring_) return closed;
  for (;;) {
    // Each event is two frames: 16-bit event id and 32-bit value (the descriptor), then the
    // endpoint.
    zmq::message_t event;
    if (!events_.recv(event, zmq::recv_flags::dontwait)) break;
    while (event.more()) {
      zmq::message_t rest;
      if (!events_.recv(rest, zmq::recv_flags::none)) break;
      if (!rest.more()) break;
    }
    if (event.size() < 6) continue;
    std::uint16_t id = 0;
    std::uint32_t value = 0;
    std::memcpy(&id, event.data(), sizeof id);
    std::memcpy(&value, static_cast<const char*>(event.data()) + sizeof id, sizeof value);
    const int fd = static_cast<int>(value);
    if (id == ZMQ_EVENT_ACCEPTED) {
      open_[fd] = true;
    } else if (id == ZMQ_EVENT_DISCONNECTED) {
      open_[fd] = false;
      for (auto it = fd_of_.begin(); it != fd_of_.end();) {
        if (it->second == fd) {
          closed.push_back(it->first);
          it = fd_of_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  return closed;
}

void PeerConnections::remember(const std::string& identity, int fd) { fd_of_[identity] = fd; }

void PeerConnections::forget(const std::string& identity) { fd_of_.erase(identity); }

}  // namespace gradwire

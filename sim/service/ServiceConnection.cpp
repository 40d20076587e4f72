#include "sim/service/ServiceConnection.h"

#include "sim/service/CurveKeys.h"

namespace gradwire {

ServiceConnection::ServiceConnection(const ConnectionOptions& options)
    : options_(options), socket_(context_, zmq::socket_type::dealer) {
  if (!options_.server_public_key.empty()) {
    // Our own key pair is throwaway: the service authenticates itself to us, not us to it.
    const CurveKeyPair mine = make_curve_keypair();
    socket_.set(zmq::sockopt::curve_serverkey, options_.server_public_key);
    socket_.set(zmq::sockopt::curve_publickey, mine.public_key);
    socket_.set(zmq::sockopt::curve_secretkey, mine.secret_key);
  }
  socket_.set(zmq::sockopt::linger, 1000);
  socket_.set(zmq::sockopt::sndtimeo, 10000);
  socket_.connect(options_.endpoint);
}

void ServiceConnection::send(const nlohmann::json& header,
                             const std::vector<const std::vector<std::uint8_t>*>& payloads) {
  send_frames(socket_, nullptr, header, payloads);
}

std::optional<ProtocolMessage> ServiceConnection::receive(double timeout_s) {
  std::vector<zmq::message_t> frames;
  if (!receive_frames(socket_, static_cast<int>(timeout_s * 1000.0), frames)) return std::nullopt;
  return decode_frames(frames, options_.max_message_bytes);
}

}  // namespace gradwire

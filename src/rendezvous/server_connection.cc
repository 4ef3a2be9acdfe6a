#include "rendezvous/server_connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <span>

#include "base/errors.h"
#include "transport/frame_header.h"

namespace kolo::rendezvous {

namespace {
constexpr size_t kReadChunk = 64 * 1024;
}  // namespace

ServerConnection::ServerConnection(transport::Socket socket, std::string peer,
                                   const transport::Secret& secret,
                                   Clock::time_point handshake_deadline)
    : socket_(std::move(socket)),
      peer_(std::move(peer)),
      handshake_(secret),
      handshake_deadline_(handshake_deadline) {
  const auto& greeting = handshake_.greeting();
  outbox_.assign(reinterpret_cast<const char*>(greeting.data()), greeting.size());
}

short ServerConnection::poll_events() const {
  short events = POLLRDHUP;  // always learn when the client goes away, even while parked
  if (!outbox_.empty()) events |= POLLOUT;
  if (!authenticated_ || !busy()) events |= POLLIN;
  return events;
}

bool ServerConnection::read_into_inbox(size_t max_bytes) {
  const size_t old_size = inbox_.size();
  inbox_.resize(old_size + max_bytes);
  for (;;) {
    const ssize_t n = ::recv(socket_.fd(), inbox_.data() + old_size, max_bytes, MSG_DONTWAIT);
    if (n > 0) {
      inbox_.resize(old_size + static_cast<size_t>(n));
      return true;
    }
    inbox_.resize(old_size);
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

bool ServerConnection::on_readable() {
  if (!authenticated_) {
    // Read exactly the client's proof: nothing beyond it is looked at before it checks out.
    if (!read_into_inbox(transport::kClientProofSize - inbox_.size())) return false;
    if (inbox_.size() == transport::kClientProofSize) finish_handshake();
    return true;
  }
  if (busy()) return true;  // the parked request's reply comes first
  return read_into_inbox(kReadChunk);
}

void ServerConnection::finish_handshake() {
  const auto* bytes = reinterpret_cast<const uint8_t*>(inbox_.data());
  const auto proof = handshake_.verify(
      std::span<const uint8_t, transport::kClientProofSize>(bytes, transport::kClientProofSize),
      peer_);
  inbox_.clear();
  authenticated_ = true;
  outbox_.append(reinterpret_cast<const char*>(proof.data()), proof.size());
}

bool ServerConnection::flush() {
  while (outbox_sent_ < outbox_.size()) {
    const ssize_t n = ::send(socket_.fd(), outbox_.data() + outbox_sent_,
                             outbox_.size() - outbox_sent_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      outbox_sent_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
  outbox_.clear();
  outbox_sent_ = 0;
  return true;
}

std::optional<wire::Request> ServerConnection::next_request() {
  if (!authenticated_ || busy() || inbox_.size() < transport::kFrameHeaderSize) return std::nullopt;
  std::byte header[transport::kFrameHeaderSize];
  std::memcpy(header, inbox_.data(), sizeof(header));
  // Checked as soon as the header is in, so an oversized frame is refused before it is buffered.
  const uint64_t length = transport::decode_frame_header(header, wire::kMaxFrameSize, peer_);
  if (inbox_.size() - sizeof(header) < length) return std::nullopt;
  const std::string_view payload(inbox_.data() + sizeof(header), static_cast<size_t>(length));
  wire::Request request;
  try {
    request = wire::decode_request(payload);
  } catch (const ProtocolError& e) {
    throw ProtocolError(std::string("malformed request: ") + e.what());
  }
  inbox_.erase(0, sizeof(header) + static_cast<size_t>(length));
  return request;
}

void ServerConnection::reply(const wire::Reply& reply) {
  const std::string payload = wire::encode(reply);
  std::byte header[transport::kFrameHeaderSize];
  transport::encode_frame_header(payload.size(), header);
  outbox_.append(reinterpret_cast<const char*>(header), sizeof(header));
  outbox_.append(payload);
}

void ServerConnection::park(wire::Request request, Clock::time_point deadline) {
  parked_ = Parked{std::move(request), deadline};
}

}  // namespace kolo::rendezvous

// TcpStore: the client side of the rendezvous protocol (store_protocol.h), one request at a time.
#include "rendezvous/tcp_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "base/errors.h"
#include "rendezvous/store_protocol.h"
#include "rendezvous/timeouts.h"
#include "transport/tcp/framing.h"

namespace kolo::rendezvous {

namespace {

// The least slack for moving a request and its reply over the wire, on top of how long the
// server may hold a get/wait; a store made with a longer connect timeout allows that long. Past
// it, the server is considered hung (it once was a fixed 60 s: a store that stalled after the
// handshake held init() for minutes whatever the start timeout said).
constexpr Duration kMinTransferTimeout = std::chrono::seconds(1);

uint64_t to_millis(Duration timeout) {
  const auto clamped = clamp_timeout(timeout);
  return static_cast<uint64_t>(std::chrono::ceil<std::chrono::milliseconds>(clamped).count());
}

}  // namespace

TcpStore::TcpStore(const transport::Endpoint& server, const transport::Secret& secret,
                   Duration connect_timeout)
    : server_description_("rendezvous server " + server.to_string()),
      transfer_timeout_(std::max(connect_timeout, kMinTransferTimeout)) {
  const Deadline deadline = deadline_after(connect_timeout);
  socket_ = transport::connect_tcp(server, deadline);
  transport::set_nodelay(socket_);
  transport::authenticate_client(socket_, secret, deadline, server_description_);
}

wire::Reply TcpStore::exchange(const wire::Request& request, Duration wait_time) {
  wire::check_limits(request);
  std::lock_guard lock(mutex_);
  if (!socket_.valid()) {
    throw PeerError(-1, "cannot " + wire::describe(request) + ": the connection to " +
                            server_description_ + " broke earlier");
  }
  try {
    transport::write_frame(socket_, wire::encode(request), deadline_after(transfer_timeout_),
                           server_description_);
    const std::string payload = transport::read_frame(
        socket_, wire::kMaxFrameSize, deadline_after(clamp_timeout(wait_time) + transfer_timeout_),
        server_description_);
    return wire::decode_reply(payload);
  } catch (const TimeoutError& e) {
    // The reply may still come later and be taken for the next one's: never reuse the socket.
    socket_.reset();
    throw TimeoutError("rendezvous: " + wire::describe(request) + " got no reply from " +
                       server_description_ + ": " + e.what());
  } catch (const PeerError& e) {
    socket_.reset();
    throw PeerError(-1, "rendezvous: " + wire::describe(request) + " failed: " + e.what());
  } catch (const Error&) {
    socket_.reset();
    throw;
  }
}

namespace {

[[noreturn]] void unexpected(const wire::Request& request, const wire::Reply& reply,
                             const std::string& server) {
  if (reply.kind == wire::ReplyKind::error) {
    throw InvalidArgument("rendezvous: " + wire::describe(request) + " refused by " + server +
                          ": " + reply.text);
  }
  throw ProtocolError(fmt::format("rendezvous: unexpected reply type {} from {} to {}",
                                  static_cast<int>(reply.kind), server, wire::describe(request)));
}

}  // namespace

void TcpStore::set(const std::string& key, const std::string& value) {
  wire::Request request{wire::Op::set, {key}, value, 0, 0};
  const wire::Reply reply = exchange(request, Duration::zero());
  if (reply.kind != wire::ReplyKind::ok) unexpected(request, reply, server_description_);
}

std::string TcpStore::get(const std::string& key, Duration timeout) {
  wire::Request request{wire::Op::get, {key}, {}, 0, to_millis(timeout)};
  wire::Reply reply = exchange(request, timeout);
  if (reply.kind == wire::ReplyKind::value) return std::move(reply.text);
  if (reply.kind == wire::ReplyKind::timeout) {
    throw timeout_waiting_for({key}, timeout, server_description_);
  }
  unexpected(request, reply, server_description_);
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  wire::Request request{wire::Op::add, {key}, {}, delta, 0};
  const wire::Reply reply = exchange(request, Duration::zero());
  if (reply.kind != wire::ReplyKind::number) unexpected(request, reply, server_description_);
  return reply.number;
}

void TcpStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  wire::Request request{wire::Op::wait, keys, {}, 0, to_millis(timeout)};
  const wire::Reply reply = exchange(request, timeout);
  if (reply.kind == wire::ReplyKind::ok) return;
  if (reply.kind == wire::ReplyKind::timeout) {
    throw timeout_waiting_for(reply.missing_keys.empty() ? keys : reply.missing_keys, timeout,
                              server_description_);
  }
  unexpected(request, reply, server_description_);
}

}  // namespace kolo::rendezvous

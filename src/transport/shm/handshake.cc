#include "transport/shm/handshake.h"

#include <fmt/format.h>
#include <poll.h>

#include <cerrno>
#include <vector>

#include "base/errors.h"

namespace kolo::transport::shm::detail {

namespace {

void wait_for(Link& link, short events, const Deadline& deadline, const char* what) {
  pollfd fd{link.fd(), events, 0};
  const int ready = ::poll(&fd, 1, deadline.remaining_ms(100));
  if (ready < 0 && errno != EINTR) throw SystemError("poll", errno, link.peer_description());
  if (ready == 0 && deadline.expired()) {
    throw TimeoutError(fmt::format("timed out {} {} while setting up shared memory", what,
                                   link.peer_description()));
  }
}

}  // namespace

void send_all(Link& link, ConstBytes data, const Deadline& deadline) {
  for (size_t done = 0; done < data.size();) {
    const size_t n = link.send_some(data.subspan(done));
    done += n;
    if (n == 0) wait_for(link, POLLOUT, deadline, "sending to");
  }
}

void recv_all(Link& link, Bytes data, const Deadline& deadline) {
  for (size_t done = 0; done < data.size();) {
    const size_t n = link.recv_some(data.subspan(done));
    done += n;
    if (n == 0) wait_for(link, POLLIN, deadline, "waiting for");
  }
}

void send_byte(Link& link, uint8_t value, const Deadline& deadline) {
  const std::byte byte{value};
  send_all(link, ConstBytes(&byte, 1), deadline);
}

uint8_t recv_byte(Link& link, const Deadline& deadline) {
  std::byte value{};
  recv_all(link, Bytes(&value, 1), deadline);
  return static_cast<uint8_t>(value);
}

void send_offer(Link& link, const std::optional<std::string>& name, const Deadline& deadline) {
  std::vector<std::byte> message;
  message.push_back(std::byte{name ? kAccepted : kRefused});
  const std::string text = name.value_or("");
  message.push_back(static_cast<std::byte>(text.size()));
  for (char c : text) message.push_back(static_cast<std::byte>(c));
  send_all(link, message, deadline);
}

std::optional<std::string> recv_offer(Link& link, const Deadline& deadline) {
  const uint8_t status = recv_byte(link, deadline);
  std::string name(recv_byte(link, deadline), '\0');
  recv_all(link, Bytes(reinterpret_cast<std::byte*>(name.data()), name.size()), deadline);
  if (status != kAccepted) return std::nullopt;
  return name;
}

}  // namespace kolo::transport::shm::detail

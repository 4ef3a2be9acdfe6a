// A loopback TCP port that refuses connections for as long as the object lives.
//
// A port that was merely freed ("listen on 0, close, use the number") can be taken at once by
// another test running in parallel, which then answers the connection: a test expecting
// "refused" sees a foreign peer instead. Holding the port bound but never listening keeps every
// other socket off it while the kernel still answers each SYN with a reset.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>

#include "base/errors.h"
#include "transport/tcp/socket.h"

namespace kolo::testing {

class RefusingPort {
 public:
  RefusingPort() : socket_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (!socket_.valid()) throw SystemError("socket", errno, "a refusing test port");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(socket_.fd(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      throw SystemError("bind", errno, "127.0.0.1:0");
    }
  }

  [[nodiscard]] uint16_t port() const { return transport::local_port(socket_); }
  [[nodiscard]] transport::Endpoint endpoint() const { return {"127.0.0.1", port()}; }

 private:
  transport::Socket socket_;
};

}  // namespace kolo::testing
